//! The type table: every TYPENAME of the specification's type tables, once.

/// One C type the API is instantiated over.
pub struct Ty {
    /// The spec's TYPENAME (`int`, `longdouble`, `uint64`...).
    pub name: &'static str,
    /// The C type (`long double`).
    pub c: &'static str,
    /// The Rust type used in the generated entry points.
    pub rust: &'static str,
    /// Whether `_Generic` selects on it: exact-width aliases (int64_t is long on LP64) and
    /// size_t/ptrdiff_t coincide with fundamental types, so only fundamental types appear.
    pub generic: bool,
}

const fn ty(name: &'static str, c: &'static str, rust: &'static str, generic: bool) -> Ty {
    Ty { name, c, rust, generic }
}

/// Standard RMA types (1.6 Table "Standard RMA Types and Names").
pub const RMA: &[Ty] = &[
    ty("float", "float", "f32", true),
    ty("double", "double", "f64", true),
    ty("longdouble", "long double", "LongDouble", true),
    ty("char", "char", "c_char", true),
    ty("schar", "signed char", "i8", true),
    ty("short", "short", "i16", true),
    ty("int", "int", "c_int", true),
    ty("long", "long", "c_long", true),
    ty("longlong", "long long", "c_longlong", true),
    ty("uchar", "unsigned char", "u8", true),
    ty("ushort", "unsigned short", "u16", true),
    ty("uint", "unsigned int", "c_uint", true),
    ty("ulong", "unsigned long", "c_ulong", true),
    ty("ulonglong", "unsigned long long", "c_ulonglong", true),
    ty("int8", "int8_t", "i8", false),
    ty("int16", "int16_t", "i16", false),
    ty("int32", "int32_t", "i32", false),
    ty("int64", "int64_t", "i64", false),
    ty("uint8", "uint8_t", "u8", false),
    ty("uint16", "uint16_t", "u16", false),
    ty("uint32", "uint32_t", "u32", false),
    ty("uint64", "uint64_t", "u64", false),
    ty("size", "size_t", "usize", false),
    ty("ptrdiff", "ptrdiff_t", "isize", false),
];

/// Types that only reductions take (sum and prod): C99 complex numbers.
pub const COMPLEX: &[Ty] = &[
    ty("complexf", "float _Complex", "ComplexF", true),
    ty("complexd", "double _Complex", "ComplexD", true),
];

/// Any TYPENAME row.
pub fn by_name(name: &str) -> Option<&'static Ty> {
    RMA.iter().chain(COMPLEX).find(|t| t.name == name)
}

/// Team reduction types (1.6 Table "Reduction Types, Names and Supporting Operations"):
/// bitwise operations, and min/max; sum and prod take these and the complex types.
pub const REDUCE_BITWISE: &[&str] = &[
    "uchar",
    "ushort",
    "uint",
    "ulong",
    "ulonglong",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "size",
];
pub const REDUCE_MINMAX: &[&str] = &[
    "char",
    "schar",
    "short",
    "int",
    "long",
    "longlong",
    "ptrdiff",
    "uchar",
    "ushort",
    "uint",
    "ulong",
    "ulonglong",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "size",
    "float",
    "double",
    "longdouble",
];

/// The plugin ABI's element type (`DT_*`) of a TYPENAME (LP64; `char` is signed on x86-64).
pub fn dtype_of(name: &str) -> &'static str {
    match name {
        "float" => "DT_F32",
        "double" => "DT_F64",
        "longdouble" => "DT_LONGDOUBLE",
        "complexf" => "DT_COMPLEXF",
        "complexd" => "DT_COMPLEXD",
        "char" | "schar" | "int8" => "DT_I8",
        "short" | "int16" => "DT_I16",
        "int" | "int32" => "DT_I32",
        "long" | "longlong" | "int64" | "ptrdiff" => "DT_I64",
        "uchar" | "uint8" => "DT_U8",
        "ushort" | "uint16" => "DT_U16",
        "uint" | "uint32" => "DT_U32",
        "ulong" | "ulonglong" | "uint64" | "size" => "DT_U64",
        _ => "DT_NONE",
    }
}

/// Standard AMO types (1.6 Table "Standard AMO Types and Names").
pub const AMO_STD: &[&str] = &[
    "int",
    "long",
    "longlong",
    "uint",
    "ulong",
    "ulonglong",
    "int32",
    "int64",
    "uint32",
    "uint64",
    "size",
    "ptrdiff",
];
/// Extended AMO types: the standard ones plus float and double.
pub const AMO_EXT: &[&str] = &[
    "float",
    "double",
    "int",
    "long",
    "longlong",
    "uint",
    "ulong",
    "ulonglong",
    "int32",
    "int64",
    "uint32",
    "uint64",
    "size",
    "ptrdiff",
];
/// Bitwise AMO types.
pub const AMO_BITWISE: &[&str] = &["uint", "ulong", "ulonglong", "int32", "int64", "uint32", "uint64"];

/// Sizes of the `SIZE` forms (put8 ... put128), in bits.
pub const SIZES: &[usize] = &[8, 16, 32, 64, 128];

/// Map a C type (no pointer) to the Rust type used in signatures.
pub fn rust_of_c(c: &str) -> String {
    let c = c.trim();
    if let Some(t) = RMA.iter().chain(COMPLEX).find(|t| t.c == c) {
        return t.rust.to_string();
    }
    match c {
        "void" => "c_void",
        "shmem_ctx_t" => "Ctx",
        "shmem_team_t" => "Team",
        "shmem_ctx_session_config_t" => "c_void",
        "shmem_team_config_t" => "c_void",
        "shmem_space_config_t" => "c_void",
        "shmem_space_t" => "*mut c_void",
        "shmem_space_cap_t" => "u64",
        "shmem_device_type_t" => "c_int",
        other => panic!("generator: no Rust type for C type `{other}`"),
    }
    .to_string()
}
