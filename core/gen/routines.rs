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

const fn plain(
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

pub const FAMILIES: &[Family] = &[
    // --- setup, query, exit (spec 9.1) ---
    plain("setup", "shmem_init", "void", "void", "setup::init({NAME}, crate::ffi::THREAD_SINGLE);"),
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
    // --- ordering (spec 9.12) ---
    Family { ctx: true, ..plain("ordering", "shmem_quiet", "void", "void", "rma::quiet({NAME}, ctx)") },
    Family { ctx: true, ..plain("ordering", "shmem_fence", "void", "void", "rma::fence({NAME}, ctx)") },
    // --- collectives (spec 9.9) ---
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
];
