//! The type table: every TYPENAME of the specification's type tables, once.

/// One C type the API is instantiated over.
pub struct Ty {
    /// The spec's TYPENAME (`int`, `longdouble`, `uint64`...).
    pub name: &'static str,
    /// The C type (`long double`).
    pub c: &'static str,
    /// The Rust type used in the generated entry points.
    pub rust: &'static str,
    /// For a typedef (`int64_t`, `size_t`...), the TYPENAME of the fundamental C type it is on
    /// LP64 Linux (`long`, `ulong`...); `None` for a fundamental type. `_Generic` rejects two
    /// associations of compatible types and C++ two overloads of the same signature, so a
    /// generic interface lists each fundamental type once (see `Ty::underlying`).
    pub alias_of: Option<&'static str>,
}

impl Ty {
    /// The TYPENAME of the fundamental C type this type is (itself unless it is a typedef).
    pub fn underlying(&self) -> &'static str {
        self.alias_of.unwrap_or(self.name)
    }
}

const fn ty(name: &'static str, c: &'static str, rust: &'static str) -> Ty {
    Ty { name, c, rust, alias_of: None }
}

/// A typedef of the fundamental type `of` (a TYPENAME) on LP64 Linux.
const fn alias(name: &'static str, c: &'static str, rust: &'static str, of: &'static str) -> Ty {
    Ty { name, c, rust, alias_of: Some(of) }
}

/// Standard RMA types (1.6 Table "Standard RMA Types and Names").
pub const RMA: &[Ty] = &[
    ty("float", "float", "f32"),
    ty("double", "double", "f64"),
    ty("longdouble", "long double", "LongDouble"),
    ty("char", "char", "c_char"),
    ty("schar", "signed char", "i8"),
    ty("short", "short", "i16"),
    ty("int", "int", "c_int"),
    ty("long", "long", "c_long"),
    ty("longlong", "long long", "c_longlong"),
    ty("uchar", "unsigned char", "u8"),
    ty("ushort", "unsigned short", "u16"),
    ty("uint", "unsigned int", "c_uint"),
    ty("ulong", "unsigned long", "c_ulong"),
    ty("ulonglong", "unsigned long long", "c_ulonglong"),
    // LP64 glibc: int8_t is signed char (not char), int64_t is long (not
    // long long), size_t is unsigned long; the header checks these at compile time.
    alias("int8", "int8_t", "i8", "schar"),
    alias("int16", "int16_t", "i16", "short"),
    alias("int32", "int32_t", "i32", "int"),
    alias("int64", "int64_t", "i64", "long"),
    alias("uint8", "uint8_t", "u8", "uchar"),
    alias("uint16", "uint16_t", "u16", "ushort"),
    alias("uint32", "uint32_t", "u32", "uint"),
    alias("uint64", "uint64_t", "u64", "ulong"),
    alias("size", "size_t", "usize", "ulong"),
    alias("ptrdiff", "ptrdiff_t", "isize", "long"),
];

/// Types that only reductions take (sum and prod): C99 complex numbers.
pub const COMPLEX: &[Ty] =
    &[ty("complexf", "float _Complex", "ComplexF"), ty("complexd", "double _Complex", "ComplexD")];

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
        // A GPU stream (CUDA's `cudaStream_t`/`CUstream`), passed on to the device memheap.
        "struct CUstream_st" => "c_void",
        other => panic!("generator: no Rust type for C type `{other}`"),
    }
    .to_string()
}
