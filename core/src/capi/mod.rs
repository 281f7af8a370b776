//! Layer 4, the C entry points: the generated routines (`entry`, from the table in `core/gen/`),
//! the panic boundary every one of them runs inside, the long-double trampolines, and the two
//! entry points of rshmem's own tools (`tools`). Each entry point is one call into `ops`;
//! nothing below this layer imports it.

mod entry;
#[cfg(target_arch = "x86_64")]
mod longdouble;
pub mod tools;

pub use entry::SYMBOLS;

/// `long double` as storage: the library only moves its bytes.
#[repr(C, align(16))]
#[derive(Copy, Clone)]
pub struct LongDouble(pub [u8; 16]);

/// C `float _Complex` and `double _Complex` (real, imaginary), as reductions see them.
pub type ComplexF = [f32; 2];
pub type ComplexD = [f64; 2];

/// The panic boundary: a panic inside the library never unwinds into C; it is reported and the
/// whole job ends. Free on the non-panicking path.
#[inline(always)]
pub fn boundary<R>(routine: &'static std::ffi::CStr, f: impl FnOnce() -> R) -> R {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(e) => panic_abort(routine, e),
    }
}

#[cold]
#[inline(never)]
fn panic_abort(routine: &'static std::ffi::CStr, e: Box<dyn std::any::Any + Send>) -> ! {
    let what = e
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| e.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into());
    crate::error::fatal(routine, &format!("internal error: {what}"))
}
