//! The C API generator: from the type table (`types.rs`) and the routine table (`routines.rs`)
//! it writes the Rust entry points, `shmem.h`, `shmemx.h` and the symbol list used by tests.
//! It runs from `core/build.rs`; nothing here is compiled into the library itself.

pub mod extensions;
pub mod gpu;
pub mod header;
pub mod routines;
pub mod types;

use routines::{Family, Over, FAMILIES};
use types::{rust_of_c, RMA, SIZES};

/// One generated C routine.
#[derive(Clone)]
pub struct Routine {
    pub name: String,
    pub category: &'static str,
    pub ret: String,
    /// (C type, parameter name) in order.
    pub params: Vec<(String, String)>,
    pub body: String,
    pub has_ctx: bool,
    pub c_attr: &'static str,
    /// Ends with `...` in C. The Rust entry point takes only the named parameters, which the
    /// x86-64 System V convention makes compatible (extra arguments are simply ignored).
    pub variadic: bool,
    /// The TYPENAME row, for typed instances.
    pub ty: Option<&'static types::Ty>,
    pub generic: Option<&'static str>,
}

impl Routine {
    pub fn c_prototype(&self) -> String {
        self.c_decl(&self.name)
    }

    /// The declaration under another name (the `pshmem_` twin).
    pub fn c_decl(&self, name: &str) -> String {
        let params = if self.params.is_empty() {
            "void".to_string()
        } else {
            self.params.iter().map(|(t, n)| c_param(t, n)).collect::<Vec<_>>().join(", ")
        };
        let params = if self.variadic { format!("{params}, ...") } else { params };
        format!("{} {}({});", self.ret, name, params).replace("* ", "*")
    }

    /// Long double travels in x87 registers or on the stack, which Rust cannot declare: such
    /// routines are hand-written as naked trampolines (`ffi/longdouble.rs`).
    pub fn needs_trampoline(&self) -> bool {
        self.ret == "long double" || self.params.iter().any(|(t, _)| t == "long double")
    }
}

pub fn c_param(ty: &str, name: &str) -> String {
    if ty.ends_with('*') {
        format!("{ty}{name}")
    } else {
        format!("{ty} {name}")
    }
}

fn subst(text: &str, c_ty: &str, rust_ty: &str, size: &str, name: &str) -> String {
    text.replace("{TYPE}", c_ty)
        .replace("{RTYPE}", rust_ty)
        .replace("{SIZE}", size)
        .replace("{NAME}", &format!("c\"{name}\""))
}

fn parse_params(params: &str) -> Vec<(String, String)> {
    if params.trim() == "void" {
        return Vec::new();
    }
    params
        .split(',')
        .filter(|p| p.trim() != "...")
        .map(|p| {
            let p = p.trim();
            let split = p.rfind([' ', '*']).expect("parameter has a name");
            let (ty, name) = p.split_at(split + 1);
            (normalize_c_type(ty), name.to_string())
        })
        .collect()
}

/// `const int *` style, single spaces.
fn normalize_c_type(ty: &str) -> String {
    let ty = ty.trim();
    let stars = ty.matches('*').count();
    let base = ty.trim_end_matches(['*', ' ']).trim();
    if stars == 0 {
        base.to_string()
    } else {
        format!("{base} {}", "*".repeat(stars))
    }
}

/// A C parameter name as a Rust identifier (`type` is a Rust keyword).
fn rust_ident(n: &str) -> String {
    match n {
        "type" => "r#type".to_string(),
        _ => n.to_string(),
    }
}

/// Rust type of a normalized C type.
pub fn rust_type(ty: &str) -> String {
    let stars = ty.matches('*').count();
    let base = ty.trim_end_matches(['*', ' ']).trim();
    if stars == 0 {
        return rust_of_c(base);
    }
    let (is_const, base) = match base.strip_prefix("const ") {
        Some(b) => (true, b),
        None => (false, base),
    };
    let mut out = rust_of_c(base);
    for i in 0..stars {
        let q = if i == 0 && is_const { "*const " } else { "*mut " };
        out = format!("{q}{out}");
    }
    out
}

fn instances(f: &'static Family) -> Vec<Routine> {
    let mut out = Vec::new();
    for ctx in [false, true] {
        if ctx && !f.ctx {
            continue;
        }
        let c = if ctx { "ctx_" } else { "" };
        // Typed extensions are `shmemx_TYPENAME_<op>` (OSHMEM's and Sandia's convention).
        let x = if f.category == extensions::EXT { "x" } else { "" };
        for over in f.over {
            let mut push =
                |name: String, c_ty: &str, rust_ty: &str, size: String, ty: Option<&'static types::Ty>| {
                    let mut params = parse_params(&subst(f.params, c_ty, rust_ty, &size, &name));
                    let dtype = ty.map_or("DT_NONE", |t| types::dtype_of(t.name));
                    if ctx {
                        params.insert(0, ("shmem_ctx_t".to_string(), "ctx".to_string()));
                    }
                    let variadic = f.params.trim_end().ends_with("...");
                    out.push(Routine {
                        variadic,
                        ret: normalize_c_type(&subst(f.ret, c_ty, rust_ty, &size, &name)),
                        body: subst(f.body, c_ty, rust_ty, &size, &name).replace("{DTYPE}", dtype),
                        name,
                        category: f.category,
                        params,
                        has_ctx: ctx,
                        c_attr: f.c_attr,
                        ty,
                        generic: f.generic,
                    });
                };
            match over {
                Over::Plain => {
                    let name =
                        if ctx { f.name.replacen("shmem_", "shmem_ctx_", 1) } else { f.name.to_string() };
                    push(name, "void", "c_void", "1".into(), None);
                }
                Over::Types(names) => {
                    for n in *names {
                        let t = types::by_name(n).unwrap_or_else(|| panic!("unknown TYPENAME {n}"));
                        let name = format!("shmem{x}_{c}{}_{}{}", t.name, f.name, f.suffix);
                        push(name, t.c, t.rust, format!("::core::mem::size_of::<{}>()", t.rust), Some(t));
                    }
                }
                Over::RmaTypes => {
                    for t in RMA {
                        let name = format!("shmem{x}_{c}{}_{}{}", t.name, f.name, f.suffix);
                        push(name, t.c, t.rust, format!("::core::mem::size_of::<{}>()", t.rust), Some(t));
                    }
                }
                Over::Sized => {
                    for bits in SIZES {
                        let name = format!("shmem_{c}{}{bits}{}", f.name, f.suffix);
                        push(name, "void", "c_void", (bits / 8).to_string(), None);
                    }
                }
                Over::Mem => {
                    let name = format!("shmem_{c}{}mem{}", f.name, f.suffix);
                    push(name, "void", "c_void", "1".into(), None);
                }
            }
        }
    }
    out
}

/// Every routine, in table order: the specification's, then the extensions.
pub fn routines() -> Vec<Routine> {
    FAMILIES.iter().chain(extensions::EXTENSIONS).chain(gpu::GPU_ROUTINES).flat_map(instances).collect()
}

/// The Rust source of the entry points.
pub fn rust_entry_points(all: &[Routine]) -> String {
    let mut s = String::from("// @generated by core/build.rs from core/gen/: do not edit.\n\n");
    for r in all.iter().filter(|r| !r.needs_trampoline()) {
        let params: Vec<String> =
            r.params.iter().map(|(t, n)| format!("{}: {}", rust_ident(n), rust_type(t))).collect();
        let ret = if r.ret == "void" { String::new() } else { format!(" -> {}", rust_type(&r.ret)) };
        let named_ctx = r.params.iter().any(|(_, n)| n == "ctx");
        let ctx = if named_ctx || !r.body.contains("ctx") { "" } else { "let ctx = ctx::default(); " };
        // The body lives in a private function that both the `shmem_` and the `pshmem_` (profiling)
        // symbols call. Calling it directly, not through the exported name, means a tool that
        // interposes `shmem_X` and calls `pshmem_X` cannot recurse into itself.
        let args: Vec<String> = r.params.iter().map(|(_, n)| rust_ident(n)).collect();
        s.push_str(&format!(
            "#[inline(always)]\nunsafe fn impl_{name}({params}){ret} {{\n    boundary(c\"{name}\", || {{ {ctx}{body} }})\n}}\n\n",
            name = r.name,
            params = params.join(", "),
            body = r.body,
        ));
        for prefix in ["", "p"] {
            s.push_str(&format!(
                "#[no_mangle]\npub unsafe extern \"C\" fn {prefix}{name}({params}){ret} {{\n    impl_{name}({args})\n}}\n\n",
                name = r.name,
                params = params.join(", "),
                args = args.join(", "),
            ));
        }
    }
    s.push_str("/// Every exported routine: (symbol, category, C prototype).\npub const SYMBOLS: &[(&str, &str, &str)] = &[\n");
    for r in all {
        s.push_str(&format!("    ({:?}, {:?}, {:?}),\n", r.name, r.category, r.c_prototype()));
    }
    s.push_str("];\n");
    s
}
