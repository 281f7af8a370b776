//! `long double` by value (x86-64 System V): arguments travel on the stack and results in the
//! x87 register st(0), which Rust cannot declare. These naked trampolines pass a pointer to the
//! value instead and call ordinary Rust functions. Pointer-only `long double` routines
//! (put/get...) are generated normally.

use super::{boundary, LongDouble};
use crate::ops::handles::Ctx;
use crate::ops::{ctx, rma};
use std::ffi::c_int;

unsafe extern "C" fn p_impl(dest: *mut LongDouble, pe: c_int, value: *const LongDouble) {
    // SAFETY: the C caller passes valid pointers (the spec's contract for these routines).
    boundary(c"shmem_longdouble_p", || unsafe {
        rma::p(c"shmem_longdouble_p", ctx::default(), dest, *value, pe)
    })
}

unsafe extern "C" fn ctx_p_impl(ctx: Ctx, dest: *mut LongDouble, pe: c_int, value: *const LongDouble) {
    // SAFETY: the C caller passes valid pointers (the spec's contract for these routines).
    boundary(c"shmem_ctx_longdouble_p", || unsafe {
        rma::p(c"shmem_ctx_longdouble_p", ctx, dest, *value, pe)
    })
}

unsafe extern "C" fn g_impl(source: *const LongDouble, pe: c_int, out: *mut LongDouble) {
    // SAFETY: the C caller passes valid pointers (the spec's contract for these routines).
    boundary(c"shmem_longdouble_g", || unsafe {
        *out = rma::g(c"shmem_longdouble_g", ctx::default(), source, pe)
    })
}

unsafe extern "C" fn ctx_g_impl(ctx: Ctx, source: *const LongDouble, pe: c_int, out: *mut LongDouble) {
    // SAFETY: the C caller passes valid pointers (the spec's contract for these routines).
    boundary(c"shmem_ctx_longdouble_g", || unsafe {
        *out = rma::g(c"shmem_ctx_longdouble_g", ctx, source, pe)
    })
}

/// `void shmem_longdouble_p(long double *dest, long double value, int pe)`:
/// dest in rdi, pe in esi, value at [rsp+8].
#[unsafe(naked)]
#[no_mangle]
pub unsafe extern "C" fn shmem_longdouble_p() {
    std::arch::naked_asm!("lea rdx, [rsp + 8]", "jmp {f}", f = sym p_impl)
}

/// `void shmem_ctx_longdouble_p(shmem_ctx_t ctx, long double *dest, long double value, int pe)`.
#[unsafe(naked)]
#[no_mangle]
pub unsafe extern "C" fn shmem_ctx_longdouble_p() {
    std::arch::naked_asm!("lea rcx, [rsp + 8]", "jmp {f}", f = sym ctx_p_impl)
}

/// `long double shmem_longdouble_g(const long double *source, int pe)`: the value is built in a
/// stack slot and loaded into st(0).
#[unsafe(naked)]
#[no_mangle]
pub unsafe extern "C" fn shmem_longdouble_g() {
    std::arch::naked_asm!(
        "sub rsp, 24",
        "mov rdx, rsp",
        "call {f}",
        "fld tbyte ptr [rsp]",
        "add rsp, 24",
        "ret",
        f = sym g_impl
    )
}

/// `long double shmem_ctx_longdouble_g(shmem_ctx_t ctx, const long double *source, int pe)`.
#[unsafe(naked)]
#[no_mangle]
pub unsafe extern "C" fn shmem_ctx_longdouble_g() {
    std::arch::naked_asm!(
        "sub rsp, 24",
        "mov rcx, rsp",
        "call {f}",
        "fld tbyte ptr [rsp]",
        "add rsp, 24",
        "ret",
        f = sym ctx_g_impl
    )
}

/// Profiling twins (`pshmem_`): the same trampolines.
#[unsafe(naked)]
#[no_mangle]
pub unsafe extern "C" fn pshmem_longdouble_p() {
    std::arch::naked_asm!("lea rdx, [rsp + 8]", "jmp {f}", f = sym p_impl)
}

#[unsafe(naked)]
#[no_mangle]
pub unsafe extern "C" fn pshmem_ctx_longdouble_p() {
    std::arch::naked_asm!("lea rcx, [rsp + 8]", "jmp {f}", f = sym ctx_p_impl)
}

#[unsafe(naked)]
#[no_mangle]
pub unsafe extern "C" fn pshmem_longdouble_g() {
    std::arch::naked_asm!("sub rsp, 24", "mov rdx, rsp", "call {f}", "fld tbyte ptr [rsp]", "add rsp, 24", "ret", f = sym g_impl)
}

#[unsafe(naked)]
#[no_mangle]
pub unsafe extern "C" fn pshmem_ctx_longdouble_g() {
    std::arch::naked_asm!("sub rsp, 24", "mov rcx, rsp", "call {f}", "fld tbyte ptr [rsp]", "add rsp, 24", "ret", f = sym ctx_g_impl)
}
