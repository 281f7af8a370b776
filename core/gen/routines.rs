//! The routine table: each row is one C routine or one family instantiated over types.
//!
//! Placeholders in `params`, `ret` and `body`: `{TYPE}` C type, `{RTYPE}` Rust type, `{SIZE}`
//! element size in bytes (a Rust expression), `{NAME}` the C symbol (as a string literal).
//! Every body runs with `ctx` bound (the default context for forms without a ctx argument).

/// Which instances a family has.
#[derive(Clone, Copy)]
pub enum Over {
    /// One routine, named exactly `name`.
    Plain,
    /// `shmem_{ctx}TYPENAME_{op}{suffix}` for the standard RMA types.
    RmaTypes,
    /// `shmem_{ctx}{op}{BITS}{suffix}` for SIZE in 8..128, with TYPE = void.
    Sized,
    /// `shmem_{ctx}{op}mem{suffix}` with TYPE = void, element size 1.
    Mem,
    /// `shmem_{ctx}TYPENAME_{op}{suffix}` for the named TYPENAMEs.
    Types(&'static [&'static str]),
}

pub struct Family {
    /// The spec category (c-api.tsv) the routines belong to.
    pub category: &'static str,
    /// For `Plain`, the full name; otherwise the operation (`put`).
    pub name: &'static str,
    pub suffix: &'static str,
    pub over: &'static [Over],
    pub ret: &'static str,
    pub params: &'static str,
    pub body: &'static str,
    /// Also emit `shmem_ctx_...` taking a leading `shmem_ctx_t ctx`.
    pub ctx: bool,
    /// The C11 generic macro that selects among the typed instances.
    pub generic: Option<&'static str>,
    /// Extra C qualifiers before the declaration (`_Noreturn`).
    pub c_attr: &'static str,
}

pub(super) const fn plain(
    category: &'static str,
    name: &'static str,
    ret: &'static str,
    params: &'static str,
    body: &'static str,
) -> Family {
    Family {
        category,
        name,
        suffix: "",
        over: &[Over::Plain],
        ret,
        params,
        body,
        ctx: false,
        generic: None,
        c_attr: "",
    }
}

const ALL_RMA: &[Over] = &[Over::RmaTypes, Over::Sized, Over::Mem];
const REDUCE_BITWISE_OVER: &[Over] = &[Over::Types(super::types::REDUCE_BITWISE)];
const REDUCE_MINMAX_OVER: &[Over] = &[Over::Types(super::types::REDUCE_MINMAX)];
const REDUCE_ARITH_OVER: &[Over] = &[Over::Types(super::types::REDUCE_MINMAX), Over::Types(COMPLEX)];
const COMPLEX: &[&str] = &["complexf", "complexd"];

/// A team collective over the standard RMA types (`shmem_TYPENAME_<name>`).
const fn typed_coll(
    name: &'static str,
    params: &'static str,
    body: &'static str,
    generic: &'static str,
) -> Family {
    Family {
        category: "coll",
        name,
        suffix: "",
        over: &[Over::RmaTypes],
        ret: "int",
        params,
        body,
        ctx: false,
        generic: Some(generic),
        c_attr: "",
    }
}

const TO_ALL_BITWISE: &[Over] = &[Over::Types(&["short", "int", "long", "longlong"])];
const TO_ALL_MINMAX: &[Over] =
    &[Over::Types(&["short", "int", "long", "longlong", "float", "double", "longdouble"])];
const TO_ALL_ARITH: &[Over] = &[TO_ALL_MINMAX[0], Over::Types(COMPLEX)];

/// A legacy active-set reduction (`shmem_TYPENAME_OP_to_all`).
const fn to_all(name: &'static str, over: &'static [Over], body: &'static str) -> Family {
    Family {
        category: "coll_legacy",
        name,
        suffix: "",
        over,
        ret: "void",
        params: "{TYPE} *dest, const {TYPE} *source, int nreduce, int PE_start, int logPE_stride, int PE_size, {TYPE} *pWrk, long *pSync",
        body,
        ctx: false,
        generic: None,
        c_attr: "",
    }
}

/// A team reduction or scan over its table of types.
const fn reduction(
    name: &'static str,
    over: &'static [Over],
    params: &'static str,
    body: &'static str,
    generic: &'static str,
) -> Family {
    Family { over, ..typed_coll(name, params, body, generic) }
}
const STD: &[Over] = &[Over::Types(super::types::AMO_STD)];
const EXT: &[Over] = &[Over::Types(super::types::AMO_EXT)];
const BITWISE: &[Over] = &[Over::Types(super::types::AMO_BITWISE)];

const DEP3: &[Over] = &[Over::Types(&["int", "long", "longlong"])];
const DEP5: &[Over] = &[Over::Types(&["float", "double", "int", "long", "longlong"])];

/// A deprecated (pre-1.4) AMO name, `shmem_TYPENAME_<op>`, with its deprecated C11 generic.
const fn dep(
    name: &'static str,
    generic: &'static str,
    over: &'static [Over],
    ret: &'static str,
    params: &'static str,
    body: &'static str,
) -> Family {
    Family {
        category: "deprecated",
        name,
        suffix: "",
        over,
        ret,
        params,
        body,
        ctx: false,
        generic: Some(generic),
        c_attr: "",
    }
}

/// A point-to-point synchronization family over the standard AMO types (no ctx forms).
const fn p2p(name: &'static str, ret: &'static str, params: &'static str, body: &'static str) -> Family {
    Family {
        category: "p2p",
        name,
        suffix: "",
        over: STD,
        ret,
        params,
        body,
        ctx: false,
        generic: None,
        c_attr: "",
    }
}

/// An AMO family: `shmem_[ctx_]TYPENAME_atomic_<op>`, with its C11 generic `shmem_atomic_<op>`.
const fn amo(
    category: &'static str,
    name: &'static str,
    generic: &'static str,
    over: &'static [Over],
    ret: &'static str,
    params: &'static str,
    body: &'static str,
) -> Family {
    Family {
        category,
        name,
        suffix: "",
        over,
        ret,
        params,
        body,
        ctx: true,
        generic: Some(generic),
        c_attr: "",
    }
}

pub const FAMILIES: &[Family] = &[
    // --- setup, query, exit (spec 9.1) ---
    plain("setup", "shmem_init", "void", "void", "setup::init({NAME}, crate::ops::THREAD_SINGLE);"),
    plain(
        "setup",
        "shmem_init_thread",
        "int",
        "int requested, int *provided",
        "setup::init_thread({NAME}, requested, provided)",
    ),
    plain("setup", "shmem_query_thread", "void", "int *provided", "setup::query_thread({NAME}, provided)"),
    plain(
        "setup",
        "shmem_query_initialized",
        "void",
        "int *initialized",
        "setup::query_initialized({NAME}, initialized)",
    ),
    plain("setup", "shmem_finalize", "void", "void", "setup::finalize({NAME})"),
    plain("setup", "shmem_my_pe", "int", "void", "setup::my_pe({NAME})"),
    plain("setup", "shmem_n_pes", "int", "void", "setup::n_pes({NAME})"),
    Family {
        c_attr: "RSHMEM_NORETURN ",
        ..plain("setup", "shmem_global_exit", "void", "int status", "setup::global_exit({NAME}, status)")
    },
    plain("setup", "shmem_pe_accessible", "int", "int pe", "setup::pe_accessible({NAME}, pe)"),
    plain(
        "setup",
        "shmem_addr_accessible",
        "int",
        "const void *addr, int pe",
        "setup::addr_accessible({NAME}, addr, pe)",
    ),
    plain("setup", "shmem_ptr", "void *", "const void *dest, int pe", "rma::ptr({NAME}, dest, pe)"),
    plain(
        "setup",
        "shmem_info_get_version",
        "void",
        "int *major, int *minor",
        "setup::info_get_version({NAME}, major, minor)",
    ),
    plain("setup", "shmem_info_get_name", "void", "char *name", "setup::info_get_name({NAME}, name)"),
    plain("deprecated", "start_pes", "void", "int npes", "setup::start_pes({NAME}, npes)"),
    plain("deprecated", "_my_pe", "int", "void", "setup::my_pe({NAME})"),
    plain("deprecated", "_num_pes", "int", "void", "setup::n_pes({NAME})"),
    // --- memory management (spec 9.3) ---
    plain("memory", "shmem_malloc", "void *", "size_t size", "heap::malloc({NAME}, size)"),
    plain(
        "memory",
        "shmem_calloc",
        "void *",
        "size_t count, size_t size",
        "heap::calloc({NAME}, count, size)",
    ),
    plain("memory", "shmem_realloc", "void *", "void *ptr, size_t size", "heap::realloc({NAME}, ptr, size)"),
    plain(
        "memory",
        "shmem_align",
        "void *",
        "size_t alignment, size_t size",
        "heap::align({NAME}, alignment, size)",
    ),
    plain("memory", "shmem_free", "void", "void *ptr", "heap::free({NAME}, ptr)"),
    plain("deprecated", "shmalloc", "void *", "size_t size", "heap::malloc({NAME}, size)"),
    plain("deprecated", "shfree", "void", "void *ptr", "heap::free({NAME}, ptr)"),
    plain("deprecated", "shrealloc", "void *", "void *ptr, size_t size", "heap::realloc({NAME}, ptr, size)"),
    plain(
        "deprecated",
        "shmemalign",
        "void *",
        "size_t alignment, size_t size",
        "heap::align({NAME}, alignment, size)",
    ),
    // --- RMA (spec 9.5) ---
    Family {
        category: "rma",
        name: "put",
        suffix: "",
        over: ALL_RMA,
        ret: "void",
        params: "{TYPE} *dest, const {TYPE} *source, size_t nelems, int pe",
        body: "rma::put({NAME}, ctx, dest.cast(), source.cast(), nelems, {SIZE}, pe)",
        ctx: true,
        generic: Some("shmem_put"),
        c_attr: "",
    },
    Family {
        category: "rma",
        name: "get",
        suffix: "",
        over: ALL_RMA,
        ret: "void",
        params: "{TYPE} *dest, const {TYPE} *source, size_t nelems, int pe",
        body: "rma::get({NAME}, ctx, dest.cast(), source.cast(), nelems, {SIZE}, pe)",
        ctx: true,
        generic: Some("shmem_get"),
        c_attr: "",
    },
    Family {
        category: "rma",
        name: "p",
        suffix: "",
        over: &[Over::RmaTypes],
        ret: "void",
        params: "{TYPE} *dest, {TYPE} value, int pe",
        body: "rma::p({NAME}, ctx, dest, value, pe)",
        ctx: true,
        generic: Some("shmem_p"),
        c_attr: "",
    },
    Family {
        category: "rma",
        name: "g",
        suffix: "",
        over: &[Over::RmaTypes],
        ret: "{TYPE}",
        params: "const {TYPE} *source, int pe",
        body: "rma::g({NAME}, ctx, source, pe)",
        ctx: true,
        generic: Some("shmem_g"),
        c_attr: "",
    },
    Family {
        category: "rma",
        name: "iput",
        suffix: "",
        over: &[Over::RmaTypes, Over::Sized],
        ret: "void",
        params: "{TYPE} *dest, const {TYPE} *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe",
        body: "rma::iput({NAME}, ctx, dest.cast(), source.cast(), dst, sst, nelems, {SIZE}, pe)",
        ctx: true,
        generic: Some("shmem_iput"),
        c_attr: "",
    },
    Family {
        category: "rma",
        name: "iget",
        suffix: "",
        over: &[Over::RmaTypes, Over::Sized],
        ret: "void",
        params: "{TYPE} *dest, const {TYPE} *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe",
        body: "rma::iget({NAME}, ctx, dest.cast(), source.cast(), dst, sst, nelems, {SIZE}, pe)",
        ctx: true,
        generic: Some("shmem_iget"),
        c_attr: "",
    },
    Family {
        category: "rma",
        name: "ibput",
        suffix: "",
        over: &[Over::RmaTypes, Over::Sized],
        ret: "void",
        params: "{TYPE} *dest, const {TYPE} *source, ptrdiff_t dst, ptrdiff_t sst, size_t bsize, size_t nblocks, int pe",
        body: "rma::ibput({NAME}, ctx, dest.cast(), source.cast(), dst, sst, bsize, nblocks, {SIZE}, pe)",
        ctx: true,
        generic: Some("shmem_ibput"),
        c_attr: "",
    },
    Family {
        category: "rma",
        name: "ibget",
        suffix: "",
        over: &[Over::RmaTypes, Over::Sized],
        ret: "void",
        params: "{TYPE} *dest, const {TYPE} *source, ptrdiff_t dst, ptrdiff_t sst, size_t bsize, size_t nblocks, int pe",
        body: "rma::ibget({NAME}, ctx, dest.cast(), source.cast(), dst, sst, bsize, nblocks, {SIZE}, pe)",
        ctx: true,
        generic: Some("shmem_ibget"),
        c_attr: "",
    },
    Family {
        category: "rma_nbi",
        name: "put",
        suffix: "_nbi",
        over: ALL_RMA,
        ret: "void",
        params: "{TYPE} *dest, const {TYPE} *source, size_t nelems, int pe",
        body: "rma::put_nbi({NAME}, ctx, dest.cast(), source.cast(), nelems, {SIZE}, pe)",
        ctx: true,
        generic: Some("shmem_put_nbi"),
        c_attr: "",
    },
    Family {
        category: "rma_nbi",
        name: "get",
        suffix: "_nbi",
        over: ALL_RMA,
        ret: "void",
        params: "{TYPE} *dest, const {TYPE} *source, size_t nelems, int pe",
        body: "rma::get_nbi({NAME}, ctx, dest.cast(), source.cast(), nelems, {SIZE}, pe)",
        ctx: true,
        generic: Some("shmem_get_nbi"),
        c_attr: "",
    },
    // --- atomic memory operations (spec 9.7) ---
    amo(
        "amo",
        "atomic_fetch",
        "shmem_atomic_fetch",
        EXT,
        "{TYPE}",
        "const {TYPE} *source, int pe",
        "amo::fetch({NAME}, ctx, source, pe)",
    ),
    amo(
        "amo",
        "atomic_set",
        "shmem_atomic_set",
        EXT,
        "void",
        "{TYPE} *dest, {TYPE} value, int pe",
        "amo::set({NAME}, ctx, dest, value, pe)",
    ),
    amo(
        "amo",
        "atomic_swap",
        "shmem_atomic_swap",
        EXT,
        "{TYPE}",
        "{TYPE} *dest, {TYPE} value, int pe",
        "amo::rmw({NAME}, ctx, dest, amo::SWAP, value, pe)",
    ),
    amo(
        "amo",
        "atomic_compare_swap",
        "shmem_atomic_compare_swap",
        STD,
        "{TYPE}",
        "{TYPE} *dest, {TYPE} cond, {TYPE} value, int pe",
        "amo::compare_swap({NAME}, ctx, dest, cond, value, pe)",
    ),
    amo(
        "amo",
        "atomic_fetch_inc",
        "shmem_atomic_fetch_inc",
        STD,
        "{TYPE}",
        "{TYPE} *dest, int pe",
        "amo::fetch_inc({NAME}, ctx, dest, pe)",
    ),
    amo(
        "amo",
        "atomic_inc",
        "shmem_atomic_inc",
        STD,
        "void",
        "{TYPE} *dest, int pe",
        "amo::post({NAME}, ctx, dest, amo::ADD, 1, pe)",
    ),
    amo(
        "amo",
        "atomic_fetch_add",
        "shmem_atomic_fetch_add",
        STD,
        "{TYPE}",
        "{TYPE} *dest, {TYPE} value, int pe",
        "amo::rmw({NAME}, ctx, dest, amo::ADD, value, pe)",
    ),
    amo(
        "amo",
        "atomic_add",
        "shmem_atomic_add",
        STD,
        "void",
        "{TYPE} *dest, {TYPE} value, int pe",
        "amo::post({NAME}, ctx, dest, amo::ADD, value, pe)",
    ),
    amo(
        "amo",
        "atomic_fetch_and",
        "shmem_atomic_fetch_and",
        BITWISE,
        "{TYPE}",
        "{TYPE} *dest, {TYPE} value, int pe",
        "amo::rmw({NAME}, ctx, dest, amo::AMO_AND, value, pe)",
    ),
    amo(
        "amo",
        "atomic_and",
        "shmem_atomic_and",
        BITWISE,
        "void",
        "{TYPE} *dest, {TYPE} value, int pe",
        "amo::post({NAME}, ctx, dest, amo::AMO_AND, value, pe)",
    ),
    amo(
        "amo",
        "atomic_fetch_or",
        "shmem_atomic_fetch_or",
        BITWISE,
        "{TYPE}",
        "{TYPE} *dest, {TYPE} value, int pe",
        "amo::rmw({NAME}, ctx, dest, amo::AMO_OR, value, pe)",
    ),
    amo(
        "amo",
        "atomic_or",
        "shmem_atomic_or",
        BITWISE,
        "void",
        "{TYPE} *dest, {TYPE} value, int pe",
        "amo::post({NAME}, ctx, dest, amo::AMO_OR, value, pe)",
    ),
    amo(
        "amo",
        "atomic_fetch_xor",
        "shmem_atomic_fetch_xor",
        BITWISE,
        "{TYPE}",
        "{TYPE} *dest, {TYPE} value, int pe",
        "amo::rmw({NAME}, ctx, dest, amo::AMO_XOR, value, pe)",
    ),
    amo(
        "amo",
        "atomic_xor",
        "shmem_atomic_xor",
        BITWISE,
        "void",
        "{TYPE} *dest, {TYPE} value, int pe",
        "amo::post({NAME}, ctx, dest, amo::AMO_XOR, value, pe)",
    ),
    // Non-blocking fetching AMOs complete at once here (allowed: completion by quiet is a bound).
    amo(
        "amo_nbi",
        "atomic_fetch_nbi",
        "shmem_atomic_fetch_nbi",
        EXT,
        "void",
        "{TYPE} *fetch, const {TYPE} *source, int pe",
        "*fetch = amo::fetch({NAME}, ctx, source, pe)",
    ),
    amo(
        "amo_nbi",
        "atomic_swap_nbi",
        "shmem_atomic_swap_nbi",
        EXT,
        "void",
        "{TYPE} *fetch, {TYPE} *dest, {TYPE} value, int pe",
        "*fetch = amo::rmw({NAME}, ctx, dest, amo::SWAP, value, pe)",
    ),
    amo(
        "amo_nbi",
        "atomic_compare_swap_nbi",
        "shmem_atomic_compare_swap_nbi",
        STD,
        "void",
        "{TYPE} *fetch, {TYPE} *dest, {TYPE} cond, {TYPE} value, int pe",
        "*fetch = amo::compare_swap({NAME}, ctx, dest, cond, value, pe)",
    ),
    amo(
        "amo_nbi",
        "atomic_fetch_inc_nbi",
        "shmem_atomic_fetch_inc_nbi",
        STD,
        "void",
        "{TYPE} *fetch, {TYPE} *dest, int pe",
        "*fetch = amo::fetch_inc({NAME}, ctx, dest, pe)",
    ),
    amo(
        "amo_nbi",
        "atomic_fetch_add_nbi",
        "shmem_atomic_fetch_add_nbi",
        STD,
        "void",
        "{TYPE} *fetch, {TYPE} *dest, {TYPE} value, int pe",
        "*fetch = amo::rmw({NAME}, ctx, dest, amo::ADD, value, pe)",
    ),
    amo(
        "amo_nbi",
        "atomic_fetch_and_nbi",
        "shmem_atomic_fetch_and_nbi",
        BITWISE,
        "void",
        "{TYPE} *fetch, {TYPE} *dest, {TYPE} value, int pe",
        "*fetch = amo::rmw({NAME}, ctx, dest, amo::AMO_AND, value, pe)",
    ),
    amo(
        "amo_nbi",
        "atomic_fetch_or_nbi",
        "shmem_atomic_fetch_or_nbi",
        BITWISE,
        "void",
        "{TYPE} *fetch, {TYPE} *dest, {TYPE} value, int pe",
        "*fetch = amo::rmw({NAME}, ctx, dest, amo::AMO_OR, value, pe)",
    ),
    amo(
        "amo_nbi",
        "atomic_fetch_xor_nbi",
        "shmem_atomic_fetch_xor_nbi",
        BITWISE,
        "void",
        "{TYPE} *fetch, {TYPE} *dest, {TYPE} value, int pe",
        "*fetch = amo::rmw({NAME}, ctx, dest, amo::AMO_XOR, value, pe)",
    ),
    // --- deprecated AMO names (1.3 and earlier), same semantics on the default context ---
    dep(
        "fetch",
        "shmem_fetch",
        DEP5,
        "{TYPE}",
        "const {TYPE} *source, int pe",
        "amo::fetch({NAME}, ctx, source, pe)",
    ),
    dep(
        "set",
        "shmem_set",
        DEP5,
        "void",
        "{TYPE} *dest, {TYPE} value, int pe",
        "amo::set({NAME}, ctx, dest, value, pe)",
    ),
    dep(
        "swap",
        "shmem_swap",
        DEP5,
        "{TYPE}",
        "{TYPE} *dest, {TYPE} value, int pe",
        "amo::rmw({NAME}, ctx, dest, amo::SWAP, value, pe)",
    ),
    dep(
        "cswap",
        "shmem_cswap",
        DEP3,
        "{TYPE}",
        "{TYPE} *dest, {TYPE} cond, {TYPE} value, int pe",
        "amo::compare_swap({NAME}, ctx, dest, cond, value, pe)",
    ),
    dep(
        "finc",
        "shmem_finc",
        DEP3,
        "{TYPE}",
        "{TYPE} *dest, int pe",
        "amo::fetch_inc({NAME}, ctx, dest, pe)",
    ),
    dep("inc", "shmem_inc", DEP3, "void", "{TYPE} *dest, int pe", "amo::post({NAME}, ctx, dest, amo::ADD, 1, pe)"),
    dep(
        "fadd",
        "shmem_fadd",
        DEP3,
        "{TYPE}",
        "{TYPE} *dest, {TYPE} value, int pe",
        "amo::rmw({NAME}, ctx, dest, amo::ADD, value, pe)",
    ),
    dep(
        "add",
        "shmem_add",
        DEP3,
        "void",
        "{TYPE} *dest, {TYPE} value, int pe",
        "amo::post({NAME}, ctx, dest, amo::ADD, value, pe)",
    ),
    // --- point-to-point synchronization (spec 9.10) ---
    Family { generic: Some("shmem_wait_until"), ..p2p("wait_until", "void", "{TYPE} *ivar, int cmp, {TYPE} cmp_value", "p2p::wait_until({NAME}, ivar, cmp, cmp_value)") },
    Family { generic: Some("shmem_test"), ..p2p("test", "int", "{TYPE} *ivar, int cmp, {TYPE} cmp_value", "p2p::test({NAME}, ivar, cmp, cmp_value)") },
    Family { generic: Some("shmem_wait_until_all"), ..p2p("wait_until_all", "void", "{TYPE} *ivars, size_t nelems, const int *status, int cmp, {TYPE} cmp_value", "p2p::wait_all({NAME}, ivars, nelems, status, cmp, p2p::Values::One(cmp_value))") },
    Family { generic: Some("shmem_wait_until_all_vector"), ..p2p("wait_until_all_vector", "void", "{TYPE} *ivars, size_t nelems, const int *status, int cmp, const {TYPE} *cmp_values", "p2p::wait_all({NAME}, ivars, nelems, status, cmp, p2p::Values::Each(cmp_values))") },
    Family { generic: Some("shmem_wait_until_any"), ..p2p("wait_until_any", "size_t", "{TYPE} *ivars, size_t nelems, const int *status, int cmp, {TYPE} cmp_value", "p2p::wait_any({NAME}, ivars, nelems, status, cmp, p2p::Values::One(cmp_value))") },
    Family { generic: Some("shmem_wait_until_any_vector"), ..p2p("wait_until_any_vector", "size_t", "{TYPE} *ivars, size_t nelems, const int *status, int cmp, const {TYPE} *cmp_values", "p2p::wait_any({NAME}, ivars, nelems, status, cmp, p2p::Values::Each(cmp_values))") },
    Family { generic: Some("shmem_wait_until_some"), ..p2p("wait_until_some", "size_t", "{TYPE} *ivars, size_t nelems, size_t *indices, const int *status, int cmp, {TYPE} cmp_value", "p2p::wait_some({NAME}, ivars, nelems, indices, status, cmp, p2p::Values::One(cmp_value))") },
    Family { generic: Some("shmem_wait_until_some_vector"), ..p2p("wait_until_some_vector", "size_t", "{TYPE} *ivars, size_t nelems, size_t *indices, const int *status, int cmp, const {TYPE} *cmp_values", "p2p::wait_some({NAME}, ivars, nelems, indices, status, cmp, p2p::Values::Each(cmp_values))") },
    Family { generic: Some("shmem_test_all"), ..p2p("test_all", "int", "{TYPE} *ivars, size_t nelems, const int *status, int cmp, {TYPE} cmp_value", "p2p::test_all({NAME}, ivars, nelems, status, cmp, p2p::Values::One(cmp_value))") },
    Family { generic: Some("shmem_test_all_vector"), ..p2p("test_all_vector", "int", "{TYPE} *ivars, size_t nelems, const int *status, int cmp, const {TYPE} *cmp_values", "p2p::test_all({NAME}, ivars, nelems, status, cmp, p2p::Values::Each(cmp_values))") },
    Family { generic: Some("shmem_test_any"), ..p2p("test_any", "size_t", "{TYPE} *ivars, size_t nelems, const int *status, int cmp, {TYPE} cmp_value", "p2p::test_any({NAME}, ivars, nelems, status, cmp, p2p::Values::One(cmp_value))") },
    Family { generic: Some("shmem_test_any_vector"), ..p2p("test_any_vector", "size_t", "{TYPE} *ivars, size_t nelems, const int *status, int cmp, const {TYPE} *cmp_values", "p2p::test_any({NAME}, ivars, nelems, status, cmp, p2p::Values::Each(cmp_values))") },
    Family { generic: Some("shmem_test_some"), ..p2p("test_some", "size_t", "{TYPE} *ivars, size_t nelems, size_t *indices, const int *status, int cmp, {TYPE} cmp_value", "p2p::test_some({NAME}, ivars, nelems, indices, status, cmp, p2p::Values::One(cmp_value))") },
    Family { generic: Some("shmem_test_some_vector"), ..p2p("test_some_vector", "size_t", "{TYPE} *ivars, size_t nelems, size_t *indices, const int *status, int cmp, const {TYPE} *cmp_values", "p2p::test_some({NAME}, ivars, nelems, indices, status, cmp, p2p::Values::Each(cmp_values))") },
    // deprecated forms: short/ushort, the untyped long wait_until, and shmem_TYPENAME_wait (wait while equal)
    Family { category: "deprecated", over: &[Over::Types(&["short", "ushort"])], generic: Some("shmem_wait_until"),
        ..p2p("wait_until", "void", "{TYPE} *ivar, int cmp, {TYPE} cmp_value", "p2p::wait_until({NAME}, ivar, cmp, cmp_value)") },
    Family { category: "deprecated", over: &[Over::Types(&["short", "ushort"])], generic: Some("shmem_test"),
        ..p2p("test", "int", "{TYPE} *ivar, int cmp, {TYPE} cmp_value", "p2p::test({NAME}, ivar, cmp, cmp_value)") },
    plain("deprecated", "shmem_wait_until", "void", "long *ivar, int cmp, long cmp_value", "p2p::wait_until({NAME}, ivar, cmp, cmp_value)"),
    plain("deprecated", "shmem_wait", "void", "long *ivar, long cmp_value", "p2p::wait_until({NAME}, ivar, crate::ops::wait::CMP_NE, cmp_value)"),
    Family { category: "deprecated", over: &[Over::Types(&["short", "int", "long", "longlong"])],
        ..p2p("wait", "void", "{TYPE} *ivar, {TYPE} cmp_value", "p2p::wait_until({NAME}, ivar, crate::ops::wait::CMP_NE, cmp_value)") },
    // --- locks (spec 9.11) ---
    plain("lock", "shmem_set_lock", "void", "long *lock", "lock::set_lock({NAME}, lock)"),
    plain("lock", "shmem_test_lock", "int", "long *lock", "lock::test_lock({NAME}, lock)"),
    plain("lock", "shmem_clear_lock", "void", "long *lock", "lock::clear_lock({NAME}, lock)"),
    // --- profiling (spec 9.13): rshmem has no profiling levels to switch ---
    plain("profiling", "shmem_pcontrol", "void", "int level, ...", "setup::no_op({NAME})"),
    // --- SHMEM_CACHE (deprecated in 1.3): caches are coherent here, nothing to do ---
    plain("cache", "shmem_clear_cache_inv", "void", "void", "setup::no_op({NAME})"),
    plain("cache", "shmem_set_cache_inv", "void", "void", "setup::no_op({NAME})"),
    plain("cache", "shmem_clear_cache_line_inv", "void", "void *dest", "setup::no_op({NAME})"),
    plain("cache", "shmem_set_cache_line_inv", "void", "void *dest", "setup::no_op({NAME})"),
    plain("cache", "shmem_udcflush", "void", "void", "setup::no_op({NAME})"),
    plain("cache", "shmem_udcflush_line", "void", "void *dest", "setup::no_op({NAME})"),
    // --- contexts (spec 9.4) ---
    plain("ctx", "shmem_ctx_create", "int", "long options, shmem_ctx_t *ctx", "ctx::create({NAME}, options, ctx)"),
    plain("ctx", "shmem_ctx_destroy", "void", "shmem_ctx_t ctx", "ctx::destroy({NAME}, ctx)"),
    plain("ctx", "shmem_ctx_get_team", "int", "shmem_ctx_t ctx, shmem_team_t *team", "ctx::get_team({NAME}, ctx, team)"),
    plain(
        "ctx",
        "shmem_ctx_session_start",
        "void",
        "shmem_ctx_t ctx, long options, const shmem_ctx_session_config_t *config, long config_mask",
        "ctx::session_start({NAME}, ctx, options, config, config_mask)",
    ),
    plain("ctx", "shmem_ctx_session_stop", "void", "shmem_ctx_t ctx", "ctx::session_stop({NAME}, ctx)"),
    // --- signals (spec 9.8) ---
    Family {
        category: "signal",
        name: "put",
        suffix: "_signal",
        over: ALL_RMA,
        ret: "void",
        params: "{TYPE} *dest, const {TYPE} *source, size_t nelems, uint64_t *sig_addr, uint64_t signal, int sig_op, int pe",
        body: "signal::put_signal::<false, true>({NAME}, ctx, dest.cast(), source.cast(), nelems, {SIZE}, sig_addr, signal, sig_op, pe).or_end({NAME})",
        ctx: true,
        generic: Some("shmem_put_signal"),
        c_attr: "",
    },
    Family {
        category: "signal",
        name: "put",
        suffix: "_signal_nbi",
        over: ALL_RMA,
        ret: "void",
        params: "{TYPE} *dest, const {TYPE} *source, size_t nelems, uint64_t *sig_addr, uint64_t signal, int sig_op, int pe",
        body: "signal::put_signal::<true, true>({NAME}, ctx, dest.cast(), source.cast(), nelems, {SIZE}, sig_addr, signal, sig_op, pe).or_end({NAME})",
        ctx: true,
        generic: Some("shmem_put_signal_nbi"),
        c_attr: "",
    },
    Family {
        ctx: true,
        ..plain("signal", "shmem_signal_add", "void", "uint64_t *sig_addr, uint64_t signal, int pe", "signal::update({NAME}, ctx, sig_addr, signal, signal::SIGNAL_ADD, pe)")
    },
    Family {
        ctx: true,
        ..plain("signal", "shmem_signal_set", "void", "uint64_t *sig_addr, uint64_t signal, int pe", "signal::update({NAME}, ctx, sig_addr, signal, signal::SIGNAL_SET, pe)")
    },
    plain("signal", "shmem_signal_fetch", "uint64_t", "const uint64_t *sig_addr", "signal::fetch({NAME}, sig_addr)"),
    plain("signal", "shmem_signal_wait_until", "uint64_t", "uint64_t *sig_addr, int cmp, uint64_t cmp_value", "signal::wait_until({NAME}, sig_addr, cmp, cmp_value)"),
    // --- ordering (spec 9.12) ---
    Family { ctx: true, ..plain("ordering", "shmem_quiet", "void", "void", "ctx::quiet({NAME}, ctx)") },
    Family { ctx: true, ..plain("ordering", "shmem_fence", "void", "void", "ctx::fence({NAME}, ctx)") },
    // Completing everything on the context is a correct (if stronger) pe_quiet.
    Family { ctx: true, ..plain("ordering", "shmem_pe_quiet", "void", "const int *target_pes, size_t npes", "ctx::pe_quiet({NAME}, ctx, target_pes, npes)") },
    // --- teams (spec 9.5) ---
    plain("teams", "shmem_team_my_pe", "int", "shmem_team_t team", "teams::my_pe({NAME}, team)"),
    plain("teams", "shmem_team_n_pes", "int", "shmem_team_t team", "teams::n_pes({NAME}, team)"),
    plain(
        "teams",
        "shmem_team_get_config",
        "int",
        "shmem_team_t team, long config_mask, shmem_team_config_t *config",
        "teams::get_config({NAME}, team, config_mask, config.cast())",
    ),
    plain(
        "teams",
        "shmem_team_translate_pe",
        "int",
        "shmem_team_t src_team, int src_pe, shmem_team_t dest_team",
        "teams::translate_pe({NAME}, src_team, src_pe, dest_team)",
    ),
    plain(
        "teams",
        "shmem_team_split_strided",
        "int",
        "shmem_team_t parent_team, int start, int stride, int size, const shmem_team_config_t *config, long config_mask, shmem_team_t *new_team",
        "teams::split_strided({NAME}, parent_team, start, stride, size, config.cast(), config_mask, new_team)",
    ),
    plain(
        "teams",
        "shmem_team_split_2d",
        "int",
        "shmem_team_t parent_team, int xrange, const shmem_team_config_t *xaxis_config, long xaxis_mask, shmem_team_t *xaxis_team, const shmem_team_config_t *yaxis_config, long yaxis_mask, shmem_team_t *yaxis_team",
        "teams::split_2d({NAME}, parent_team, xrange, xaxis_config.cast(), xaxis_mask, xaxis_team, yaxis_config.cast(), yaxis_mask, yaxis_team)",
    ),
    plain("teams", "shmem_team_destroy", "void", "shmem_team_t team", "teams::destroy({NAME}, team)"),
    plain(
        "teams",
        "shmem_team_create_ctx",
        "int",
        "shmem_team_t team, long options, shmem_ctx_t *ctx",
        "teams::create_ctx({NAME}, team, options, ctx)",
    ),
    plain(
        "teams",
        "shmem_team_ptr",
        "void *",
        "shmem_team_t team, const void *dest, int pe",
        "teams::ptr({NAME}, team, dest, pe)",
    ),
    // --- collectives (spec 9.9) ---
    plain("coll", "shmem_team_sync", "int", "shmem_team_t team", "teams::sync({NAME}, team)"),
    plain("coll", "shmem_barrier_all", "void", "void", "coll::barrier_all({NAME})"),
    plain("coll", "shmem_sync_all", "void", "void", "coll::sync_all({NAME})"),
    plain(
        "coll",
        "shmem_broadcastmem",
        "int",
        "shmem_team_t team, void *dest, const void *source, size_t nelems, int PE_root",
        "coll::broadcast({NAME}, team, dest.cast(), source.cast(), nelems, 1, PE_root)",
    ),
    Family {
        category: "coll",
        name: "broadcast",
        suffix: "",
        over: &[Over::RmaTypes],
        ret: "int",
        params: "shmem_team_t team, {TYPE} *dest, const {TYPE} *source, size_t nelems, int PE_root",
        body: "coll::broadcast({NAME}, team, dest.cast(), source.cast(), nelems, {SIZE}, PE_root)",
        ctx: false,
        generic: Some("shmem_broadcast"),
        c_attr: "",
    },
    plain("coll", "shmem_fcollectmem", "int", "shmem_team_t team, void *dest, const void *source, size_t nelems", "coll::collect({NAME}, team, dest.cast(), source.cast(), nelems, 1, true)"),
    plain("coll", "shmem_collectmem", "int", "shmem_team_t team, void *dest, const void *source, size_t nelems", "coll::collect({NAME}, team, dest.cast(), source.cast(), nelems, 1, false)"),
    typed_coll("fcollect", "shmem_team_t team, {TYPE} *dest, const {TYPE} *source, size_t nelems", "coll::collect({NAME}, team, dest.cast(), source.cast(), nelems, {SIZE}, true)", "shmem_fcollect"),
    typed_coll("collect", "shmem_team_t team, {TYPE} *dest, const {TYPE} *source, size_t nelems", "coll::collect({NAME}, team, dest.cast(), source.cast(), nelems, {SIZE}, false)", "shmem_collect"),
    plain("coll", "shmem_alltoallmem", "int", "shmem_team_t team, void *dest, const void *source, size_t nelems", "coll::alltoall({NAME}, team, dest.cast(), source.cast(), nelems, 1, 1, 1)"),
    typed_coll("alltoall", "shmem_team_t team, {TYPE} *dest, const {TYPE} *source, size_t nelems", "coll::alltoall({NAME}, team, dest.cast(), source.cast(), nelems, {SIZE}, 1, 1)", "shmem_alltoall"),
    plain("coll", "shmem_alltoallsmem", "int", "shmem_team_t team, void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems", "coll::alltoall({NAME}, team, dest.cast(), source.cast(), nelems, 1, dst, sst)"),
    typed_coll("alltoalls", "shmem_team_t team, {TYPE} *dest, const {TYPE} *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems", "coll::alltoall({NAME}, team, dest.cast(), source.cast(), nelems, {SIZE}, dst, sst)", "shmem_alltoalls"),
    reduction("and_reduce", REDUCE_BITWISE_OVER, "shmem_team_t team, {TYPE} *dest, const {TYPE} *source, size_t nreduce", "coll::reduce({NAME}, team, dest.cast(), source.cast(), nreduce, {SIZE}, {DTYPE}, OP_AND, REDUCE_ALL)", "shmem_and_reduce"),
    reduction("or_reduce", REDUCE_BITWISE_OVER, "shmem_team_t team, {TYPE} *dest, const {TYPE} *source, size_t nreduce", "coll::reduce({NAME}, team, dest.cast(), source.cast(), nreduce, {SIZE}, {DTYPE}, OP_OR, REDUCE_ALL)", "shmem_or_reduce"),
    reduction("xor_reduce", REDUCE_BITWISE_OVER, "shmem_team_t team, {TYPE} *dest, const {TYPE} *source, size_t nreduce", "coll::reduce({NAME}, team, dest.cast(), source.cast(), nreduce, {SIZE}, {DTYPE}, OP_XOR, REDUCE_ALL)", "shmem_xor_reduce"),
    reduction("max_reduce", REDUCE_MINMAX_OVER, "shmem_team_t team, {TYPE} *dest, const {TYPE} *source, size_t nreduce", "coll::reduce({NAME}, team, dest.cast(), source.cast(), nreduce, {SIZE}, {DTYPE}, OP_MAX, REDUCE_ALL)", "shmem_max_reduce"),
    reduction("min_reduce", REDUCE_MINMAX_OVER, "shmem_team_t team, {TYPE} *dest, const {TYPE} *source, size_t nreduce", "coll::reduce({NAME}, team, dest.cast(), source.cast(), nreduce, {SIZE}, {DTYPE}, OP_MIN, REDUCE_ALL)", "shmem_min_reduce"),
    reduction("sum_reduce", REDUCE_ARITH_OVER, "shmem_team_t team, {TYPE} *dest, const {TYPE} *source, size_t nreduce", "coll::reduce({NAME}, team, dest.cast(), source.cast(), nreduce, {SIZE}, {DTYPE}, OP_SUM, REDUCE_ALL)", "shmem_sum_reduce"),
    reduction("prod_reduce", REDUCE_ARITH_OVER, "shmem_team_t team, {TYPE} *dest, const {TYPE} *source, size_t nreduce", "coll::reduce({NAME}, team, dest.cast(), source.cast(), nreduce, {SIZE}, {DTYPE}, OP_PROD, REDUCE_ALL)", "shmem_prod_reduce"),
    reduction("sum_inscan", REDUCE_ARITH_OVER, "shmem_team_t team, {TYPE} *dest, const {TYPE} *source, size_t nelems", "coll::reduce({NAME}, team, dest.cast(), source.cast(), nelems, {SIZE}, {DTYPE}, OP_SUM, REDUCE_INSCAN)", "shmem_sum_inscan"),
    reduction("sum_exscan", REDUCE_ARITH_OVER, "shmem_team_t team, {TYPE} *dest, const {TYPE} *source, size_t nelems", "coll::reduce({NAME}, team, dest.cast(), source.cast(), nelems, {SIZE}, {DTYPE}, OP_SUM, REDUCE_EXSCAN)", "shmem_sum_exscan"),
    plain("coll_legacy", "shmem_barrier", "void", "int PE_start, int logPE_stride, int PE_size, long *pSync", "legacy::barrier({NAME}, PE_start, logPE_stride, PE_size, pSync, true)"),
    plain("coll_legacy", "shmem_sync", "void", "int PE_start, int logPE_stride, int PE_size, long *pSync", "legacy::barrier({NAME}, PE_start, logPE_stride, PE_size, pSync, false)"),
    plain("coll_legacy", "shmem_broadcast32", "void", "void *dest, const void *source, size_t nelems, int PE_root, int PE_start, int logPE_stride, int PE_size, long *pSync", "legacy::broadcast({NAME}, dest, source, nelems, 4, PE_root, (PE_start, logPE_stride, PE_size), pSync)"),
    plain("coll_legacy", "shmem_collect32", "void", "void *dest, const void *source, size_t nelems, int PE_start, int logPE_stride, int PE_size, long *pSync", "legacy::collect({NAME}, dest, source, nelems, 4, false, (PE_start, logPE_stride, PE_size), pSync)"),
    plain("coll_legacy", "shmem_fcollect32", "void", "void *dest, const void *source, size_t nelems, int PE_start, int logPE_stride, int PE_size, long *pSync", "legacy::collect({NAME}, dest, source, nelems, 4, true, (PE_start, logPE_stride, PE_size), pSync)"),
    plain("coll_legacy", "shmem_alltoall32", "void", "void *dest, const void *source, size_t nelems, int PE_start, int logPE_stride, int PE_size, long *pSync", "legacy::alltoall({NAME}, dest, source, (1, 1), nelems, 4, (PE_start, logPE_stride, PE_size), pSync)"),
    plain("coll_legacy", "shmem_alltoalls32", "void", "void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int PE_start, int logPE_stride, int PE_size, long *pSync", "legacy::alltoall({NAME}, dest, source, (dst, sst), nelems, 4, (PE_start, logPE_stride, PE_size), pSync)"),
    plain("coll_legacy", "shmem_broadcast64", "void", "void *dest, const void *source, size_t nelems, int PE_root, int PE_start, int logPE_stride, int PE_size, long *pSync", "legacy::broadcast({NAME}, dest, source, nelems, 8, PE_root, (PE_start, logPE_stride, PE_size), pSync)"),
    plain("coll_legacy", "shmem_collect64", "void", "void *dest, const void *source, size_t nelems, int PE_start, int logPE_stride, int PE_size, long *pSync", "legacy::collect({NAME}, dest, source, nelems, 8, false, (PE_start, logPE_stride, PE_size), pSync)"),
    plain("coll_legacy", "shmem_fcollect64", "void", "void *dest, const void *source, size_t nelems, int PE_start, int logPE_stride, int PE_size, long *pSync", "legacy::collect({NAME}, dest, source, nelems, 8, true, (PE_start, logPE_stride, PE_size), pSync)"),
    plain("coll_legacy", "shmem_alltoall64", "void", "void *dest, const void *source, size_t nelems, int PE_start, int logPE_stride, int PE_size, long *pSync", "legacy::alltoall({NAME}, dest, source, (1, 1), nelems, 8, (PE_start, logPE_stride, PE_size), pSync)"),
    plain("coll_legacy", "shmem_alltoalls64", "void", "void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int PE_start, int logPE_stride, int PE_size, long *pSync", "legacy::alltoall({NAME}, dest, source, (dst, sst), nelems, 8, (PE_start, logPE_stride, PE_size), pSync)"),
    to_all("and_to_all", TO_ALL_BITWISE, "legacy::to_all({NAME}, dest.cast(), source.cast(), nreduce, {SIZE}, {DTYPE}, OP_AND, (PE_start, logPE_stride, PE_size), pSync)"),
    to_all("or_to_all", TO_ALL_BITWISE, "legacy::to_all({NAME}, dest.cast(), source.cast(), nreduce, {SIZE}, {DTYPE}, OP_OR, (PE_start, logPE_stride, PE_size), pSync)"),
    to_all("xor_to_all", TO_ALL_BITWISE, "legacy::to_all({NAME}, dest.cast(), source.cast(), nreduce, {SIZE}, {DTYPE}, OP_XOR, (PE_start, logPE_stride, PE_size), pSync)"),
    to_all("max_to_all", TO_ALL_MINMAX, "legacy::to_all({NAME}, dest.cast(), source.cast(), nreduce, {SIZE}, {DTYPE}, OP_MAX, (PE_start, logPE_stride, PE_size), pSync)"),
    to_all("min_to_all", TO_ALL_MINMAX, "legacy::to_all({NAME}, dest.cast(), source.cast(), nreduce, {SIZE}, {DTYPE}, OP_MIN, (PE_start, logPE_stride, PE_size), pSync)"),
    to_all("sum_to_all", TO_ALL_ARITH, "legacy::to_all({NAME}, dest.cast(), source.cast(), nreduce, {SIZE}, {DTYPE}, OP_SUM, (PE_start, logPE_stride, PE_size), pSync)"),
    to_all("prod_to_all", TO_ALL_ARITH, "legacy::to_all({NAME}, dest.cast(), source.cast(), nreduce, {SIZE}, {DTYPE}, OP_PROD, (PE_start, logPE_stride, PE_size), pSync)"),
    // --- memory spaces and hints (shared/seeds) ---
    plain("memory", "shmem_malloc_with_hints", "void *", "size_t size, long hints", "spaces::malloc_with_hints({NAME}, size, hints)"),
    plain("spaces", "shmem_space_create", "int", "const shmem_space_config_t *config, shmem_space_t *space, shmem_team_t *team", "spaces::create({NAME}, config.cast(), space, team)"),
    plain("spaces", "shmem_space_destroy", "int", "shmem_space_t space", "spaces::destroy({NAME}, space)"),
    plain("spaces", "shmem_space_malloc", "void *", "shmem_space_t space, size_t size", "spaces::malloc({NAME}, space, size)"),
    plain("spaces", "shmem_space_calloc", "void *", "shmem_space_t space, size_t count, size_t size", "spaces::calloc({NAME}, space, count, size)"),
    plain("spaces", "shmem_space_free", "void", "shmem_space_t space, void *ptr", "spaces::free({NAME}, space, ptr)"),
    plain("spaces", "shmem_space_get_team", "int", "shmem_space_t space, shmem_team_t *team", "spaces::get_team({NAME}, space, team)"),
    plain("spaces", "shmem_space_get_device_type", "int", "shmem_space_t space, shmem_device_type_t *type", "spaces::get_device_type({NAME}, space, r#type)"),
    plain("spaces", "shmem_space_get_caps", "int", "shmem_space_t space, shmem_space_cap_t *caps", "spaces::get_caps({NAME}, space, caps)"),
    plain("spaces", "shmem_space_is_available", "int", "shmem_space_t space", "spaces::is_available({NAME}, space)"),
    plain("spaces", "shmem_team_is_valid", "int", "shmem_team_t team", "spaces::team_is_valid({NAME}, team)"),
];
