//! The extension table: the `shmemx_` routines declared in `shmemx.h` (category `ext`).
//! docs/extensions.md says which peer each one comes from and why it was chosen. Typed rows are
//! named `shmemx_TYPENAME_<op>`; every other placeholder works as in `routines.rs`.

use super::routines::{Family, Over};

/// The category of every row here: the generator puts these in `shmemx.h`, names typed
/// instances `shmemx_...`, and leaves them out of the spec-inventory check.
pub const EXT: &str = "ext";

const fn ext(
    name: &'static str,
    over: &'static [Over],
    ret: &'static str,
    params: &'static str,
    body: &'static str,
) -> Family {
    Family { category: EXT, name, suffix: "", over, ret, params, body, ctx: false, generic: None, c_attr: "" }
}

const fn plain(name: &'static str, ret: &'static str, params: &'static str, body: &'static str) -> Family {
    ext(name, &[Over::Plain], ret, params, body)
}

/// OSHMEM's fixed-width names: p/g over 16, 32 and 64 bits; AMOs over 32 and 64 bits (signed,
/// and unsigned for the bitwise ones); reductions over 16, 32 and 64 bits.
const W16_64: &[Over] = &[Over::Types(&["int16", "int32", "int64"])];
const W32_64: &[Over] = &[Over::Types(&["int32", "int64"])];
const BITS: &[Over] = &[Over::Types(&["int32", "int64", "uint32", "uint64"])];

const TO_ALL_PARAMS: &str =
    "{TYPE} *target, const {TYPE} *source, int nreduce, int PE_start, int logPE_stride, int PE_size, {TYPE} *pWrk, long *pSync";

macro_rules! to_all {
    ($name:literal, $op:literal) => {
        ext(
            $name,
            W16_64,
            "void",
            TO_ALL_PARAMS,
            concat!(
                "legacy::to_all({NAME}, target.cast(), source.cast(), nreduce, {SIZE}, {DTYPE}, ",
                $op,
                ", (PE_start, logPE_stride, PE_size), pSync)"
            ),
        )
    };
}

pub const EXTENSIONS: &[Family] = &[
    // --- stream-ordered operations (NVSHMEM's nvshmemx_*_on_stream; crate::ops::on_stream) ---
    plain(
        "shmemx_putmem_on_stream",
        "void",
        "void *dest, const void *source, size_t nelems, int pe, struct CUstream_st *stream",
        "on_stream::putmem({NAME}, dest, source, nelems, pe, stream)",
    ),
    plain(
        "shmemx_getmem_on_stream",
        "void",
        "void *dest, const void *source, size_t nelems, int pe, struct CUstream_st *stream",
        "on_stream::getmem({NAME}, dest, source, nelems, pe, stream)",
    ),
    plain(
        "shmemx_putmem_signal_on_stream",
        "void",
        "void *dest, const void *source, size_t nelems, uint64_t *sig_addr, uint64_t signal, int sig_op, int pe, struct CUstream_st *stream",
        "on_stream::putmem_signal({NAME}, dest, source, nelems, sig_addr, signal, sig_op, pe, stream)",
    ),
    plain(
        "shmemx_signal_op_on_stream",
        "void",
        "uint64_t *sig_addr, uint64_t signal, int sig_op, int pe, struct CUstream_st *stream",
        "on_stream::signal_op({NAME}, sig_addr, signal, sig_op, pe, stream)",
    ),
    plain(
        "shmemx_signal_wait_until_on_stream",
        "void",
        "uint64_t *sig_addr, int cmp, uint64_t cmp_value, struct CUstream_st *stream",
        "on_stream::signal_wait_until({NAME}, sig_addr, cmp, cmp_value, stream)",
    ),
    ext(
        "put_on_stream",
        &[Over::RmaTypes],
        "void",
        "{TYPE} *dest, const {TYPE} *source, size_t nelems, int pe, struct CUstream_st *stream",
        "on_stream::putmem({NAME}, dest.cast(), source.cast(), on_stream::bytes({NAME}, nelems, {SIZE}), pe, stream)",
    ),
    ext(
        "get_on_stream",
        &[Over::RmaTypes],
        "void",
        "{TYPE} *dest, const {TYPE} *source, size_t nelems, int pe, struct CUstream_st *stream",
        "on_stream::getmem({NAME}, dest.cast(), source.cast(), on_stream::bytes({NAME}, nelems, {SIZE}), pe, stream)",
    ),
    ext(
        "put_signal_on_stream",
        &[Over::RmaTypes],
        "void",
        "{TYPE} *dest, const {TYPE} *source, size_t nelems, uint64_t *sig_addr, uint64_t signal, int sig_op, int pe, struct CUstream_st *stream",
        "on_stream::putmem_signal({NAME}, dest.cast(), source.cast(), on_stream::bytes({NAME}, nelems, {SIZE}), sig_addr, signal, sig_op, pe, stream)",
    ),
    plain("shmemx_quiet_on_stream", "void", "struct CUstream_st *stream", "on_stream::quiet({NAME}, stream)"),
    plain(
        "shmemx_barrier_all_on_stream",
        "void",
        "struct CUstream_st *stream",
        "on_stream::barrier_all({NAME}, stream)",
    ),
    // --- time, place and heap (Sandia OpenSHMEM; heap queries are rshmem's) ---
    plain("shmemx_wtime", "double", "void", "ext::wtime({NAME})"),
    plain("shmemx_nodename", "char *", "void", "ext::nodename({NAME})"),
    plain("shmemx_heap_size", "size_t", "void", "ext::heap_size({NAME})"),
    plain("shmemx_heap_used", "size_t", "void", "ext::heap_used({NAME})"),
    // --- OSHMEM's hint-based allocation ---
    plain(
        "shmemx_malloc_with_hint",
        "void *",
        "size_t size, long hint",
        "ext::malloc_with_hint({NAME}, size, hint)",
    ),
    // --- OSHMEM's fixed-width RMA and AMO names (default context) ---
    ext("p", W16_64, "void", "{TYPE} *addr, {TYPE} value, int pe", "rma::p({NAME}, ctx, addr, value, pe)"),
    ext("g", W16_64, "{TYPE}", "const {TYPE} *addr, int pe", "rma::g({NAME}, ctx, addr, pe)"),
    ext(
        "swap",
        W32_64,
        "{TYPE}",
        "{TYPE} *target, {TYPE} value, int pe",
        "amo::rmw({NAME}, ctx, target, amo::SWAP, value, pe)",
    ),
    ext(
        "set",
        W32_64,
        "void",
        "{TYPE} *target, {TYPE} value, int pe",
        "amo::set({NAME}, ctx, target, value, pe)",
    ),
    ext(
        "cswap",
        W32_64,
        "{TYPE}",
        "{TYPE} *target, {TYPE} cond, {TYPE} value, int pe",
        "amo::compare_swap({NAME}, ctx, target, cond, value, pe)",
    ),
    ext(
        "fadd",
        W32_64,
        "{TYPE}",
        "{TYPE} *target, {TYPE} value, int pe",
        "amo::rmw({NAME}, ctx, target, amo::ADD, value, pe)",
    ),
    ext("fetch", W32_64, "{TYPE}", "const {TYPE} *target, int pe", "amo::fetch({NAME}, ctx, target, pe)"),
    ext("finc", W32_64, "{TYPE}", "{TYPE} *target, int pe", "amo::fetch_inc({NAME}, ctx, target, pe)"),
    ext(
        "add",
        W32_64,
        "void",
        "{TYPE} *target, {TYPE} value, int pe",
        "amo::post({NAME}, ctx, target, amo::ADD, value, pe)",
    ),
    ext("inc", W32_64, "void", "{TYPE} *target, int pe", "amo::post({NAME}, ctx, target, amo::ADD, 1, pe)"),
    ext(
        "atomic_fetch_and",
        BITS,
        "{TYPE}",
        "{TYPE} *target, {TYPE} value, int pe",
        "amo::rmw({NAME}, ctx, target, amo::AMO_AND, value, pe)",
    ),
    ext(
        "atomic_fetch_or",
        BITS,
        "{TYPE}",
        "{TYPE} *target, {TYPE} value, int pe",
        "amo::rmw({NAME}, ctx, target, amo::AMO_OR, value, pe)",
    ),
    ext(
        "atomic_fetch_xor",
        BITS,
        "{TYPE}",
        "{TYPE} *target, {TYPE} value, int pe",
        "amo::rmw({NAME}, ctx, target, amo::AMO_XOR, value, pe)",
    ),
    ext(
        "atomic_and",
        BITS,
        "void",
        "{TYPE} *target, {TYPE} value, int pe",
        "amo::post({NAME}, ctx, target, amo::AMO_AND, value, pe)",
    ),
    ext(
        "atomic_or",
        BITS,
        "void",
        "{TYPE} *target, {TYPE} value, int pe",
        "amo::post({NAME}, ctx, target, amo::AMO_OR, value, pe)",
    ),
    ext(
        "atomic_xor",
        BITS,
        "void",
        "{TYPE} *target, {TYPE} value, int pe",
        "amo::post({NAME}, ctx, target, amo::AMO_XOR, value, pe)",
    ),
    // --- OSHMEM's fixed-width waits (`wait`: while the value equals `value`) ---
    ext(
        "wait",
        W32_64,
        "void",
        "{TYPE} *addr, {TYPE} value",
        "p2p::wait_until({NAME}, addr, crate::ops::wait::CMP_NE, value)",
    ),
    ext(
        "wait_until",
        W32_64,
        "void",
        "{TYPE} *addr, int cmp, {TYPE} value",
        "p2p::wait_until({NAME}, addr, cmp, value)",
    ),
    // --- OSHMEM's fixed-width active-set reductions ---
    to_all!("and_to_all", "OP_AND"),
    to_all!("or_to_all", "OP_OR"),
    to_all!("xor_to_all", "OP_XOR"),
    to_all!("max_to_all", "OP_MAX"),
    to_all!("min_to_all", "OP_MIN"),
    to_all!("sum_to_all", "OP_SUM"),
    to_all!("prod_to_all", "OP_PROD"),
];
