//! The C entry points this crate calls, as the core exports them (`core/include/shmem.h`). The
//! core is linked into the program (`use shmem as _` in lib.rs), so these resolve to it at link
//! time; every safe wrapper in this crate checks its arguments before it calls one. The
//! transfers, atomics and signals go to the core's operations instead (`crate::ops`), which
//! return their errors as values.

use std::ffi::{c_int, c_long, c_void};

/// `shmem_ctx_t` and `shmem_team_t`: pointers to the core's handle objects.
pub type RawCtx = *mut c_void;
pub type RawTeam = *mut c_void;
/// `shmem_space_t`.
pub type RawSpace = *mut c_void;

/// `shmem_space_config_t` (shmem.h's layout).
#[repr(C)]
pub struct SpaceConfig {
    pub device_type: c_int,
    pub size: usize,
    pub flags: c_int,
}
pub const DEVICE_CPU: c_int = 0;
pub const DEVICE_GPU: c_int = 1;
/// `SHMEM_DEVICE_HOST_INIT` and `SHMEM_DEVICE_KERNEL_INIT` (shmemg.h), OR'd with a thread level.
pub const DEVICE_HOST_INIT: c_int = 1 << 8;
pub const DEVICE_BITS: c_int = DEVICE_HOST_INIT | (1 << 9);
pub const SPACE_CAP_RMA: u64 = 0x1;
pub const SPACE_CAP_WORLD_ACCESS: u64 = 0x10;

pub const THREAD_SINGLE: c_int = 0;
pub const THREAD_FUNNELED: c_int = 1;
pub const THREAD_SERIALIZED: c_int = 2;
pub const THREAD_MULTIPLE: c_int = 3;
pub const CTX_SERIALIZED: c_long = 1;
pub const CTX_PRIVATE: c_long = 2;
pub const CTX_NOSTORE: c_long = 4;
pub const SIGNAL_SET: c_int = 0;
pub const SIGNAL_ADD: c_int = 1;
pub const MALLOC_ATOMICS_REMOTE: u8 = 1 << 0;
pub const MALLOC_SIGNAL_REMOTE: u8 = 1 << 1;

extern "C" {
    pub static mut rshmem_ctx_default: u8;
    pub static mut rshmem_team_world: u8;
    pub static mut rshmem_team_shared: u8;
    pub static rshmem_space_cpu: RawSpace;
    pub static rshmem_space_gpu: RawSpace;

    pub fn shmem_space_create(config: *const SpaceConfig, space: *mut RawSpace, team: *mut RawTeam) -> c_int;
    pub fn shmem_space_destroy(space: RawSpace) -> c_int;
    pub fn shmem_space_malloc(space: RawSpace, size: usize) -> *mut c_void;
    pub fn shmem_space_free(space: RawSpace, ptr: *mut c_void);
    pub fn shmem_space_calloc(space: RawSpace, count: usize, size: usize) -> *mut c_void;
    /// Zero when the space is available (a status, as the proposal has it).
    pub fn shmem_space_is_available(space: RawSpace) -> c_int;
    pub fn shmem_space_get_device_type(space: RawSpace, ty: *mut c_int) -> c_int;
    pub fn shmem_space_get_caps(space: RawSpace, caps: *mut u64) -> c_int;
    pub fn shmem_space_get_team(space: RawSpace, team: *mut RawTeam) -> c_int;
    pub fn shmem_ptr(dest: *const c_void, pe: c_int) -> *mut c_void;

    pub fn shmem_init_thread(requested: c_int, provided: *mut c_int) -> c_int;
    pub fn shmem_finalize();
    pub fn shmem_global_exit(status: c_int) -> !;
    pub fn shmem_my_pe() -> c_int;
    pub fn shmem_n_pes() -> c_int;
    pub fn shmem_malloc(size: usize) -> *mut c_void;
    pub fn shmem_align(alignment: usize, size: usize) -> *mut c_void;
    pub fn shmem_free(ptr: *mut c_void);
    pub fn shmem_malloc_with_hints(size: usize, hints: c_long) -> *mut c_void;
    pub fn shmem_barrier_all();
    pub fn shmem_set_lock(lock: *mut c_long);
    pub fn shmem_test_lock(lock: *mut c_long) -> c_int;
    pub fn shmem_clear_lock(lock: *mut c_long);
    pub fn shmem_sync_all();

    pub fn shmem_ctx_create(options: c_long, ctx: *mut RawCtx) -> c_int;
    pub fn shmem_team_create_ctx(team: RawTeam, options: c_long, ctx: *mut RawCtx) -> c_int;
    pub fn shmem_ctx_destroy(ctx: RawCtx);
    pub fn shmem_ctx_quiet(ctx: RawCtx);
    pub fn shmem_ctx_fence(ctx: RawCtx);
    pub fn shmem_signal_fetch(sig_addr: *const u64) -> u64;
    pub fn shmem_signal_wait_until(sig_addr: *mut u64, cmp: c_int, value: u64) -> u64;

    pub fn shmem_team_my_pe(team: RawTeam) -> c_int;
    pub fn shmem_team_n_pes(team: RawTeam) -> c_int;
    pub fn shmem_team_translate_pe(src: RawTeam, pe: c_int, dest: RawTeam) -> c_int;
    pub fn shmem_team_split_strided(
        parent: RawTeam,
        start: c_int,
        stride: c_int,
        size: c_int,
        config: *const c_void,
        mask: c_long,
        new_team: *mut RawTeam,
    ) -> c_int;
    pub fn shmem_team_split_2d(
        parent: RawTeam,
        xrange: c_int,
        xaxis_config: *const c_void,
        xaxis_mask: c_long,
        xaxis_team: *mut RawTeam,
        yaxis_config: *const c_void,
        yaxis_mask: c_long,
        yaxis_team: *mut RawTeam,
    ) -> c_int;
    pub fn shmem_team_destroy(team: RawTeam);
    pub fn shmem_team_sync(team: RawTeam) -> c_int;
    pub fn shmem_broadcastmem(
        team: RawTeam,
        dest: *mut c_void,
        src: *const c_void,
        nbytes: usize,
        root: c_int,
    ) -> c_int;
    pub fn shmem_fcollectmem(team: RawTeam, dest: *mut c_void, src: *const c_void, nbytes: usize) -> c_int;
    pub fn shmem_collectmem(team: RawTeam, dest: *mut c_void, src: *const c_void, nbytes: usize) -> c_int;
    pub fn shmem_alltoallmem(team: RawTeam, dest: *mut c_void, src: *const c_void, nbytes: usize) -> c_int;
    pub fn shmem_alltoallsmem(
        team: RawTeam,
        dest: *mut c_void,
        src: *const c_void,
        dst: isize,
        sst: isize,
        nelems: usize,
    ) -> c_int;
    pub fn shmem_int16_alltoalls(
        team: RawTeam,
        dest: *mut i16,
        src: *const i16,
        dst: isize,
        sst: isize,
        n: usize,
    ) -> c_int;
    pub fn shmem_int32_alltoalls(
        team: RawTeam,
        dest: *mut i32,
        src: *const i32,
        dst: isize,
        sst: isize,
        n: usize,
    ) -> c_int;
    pub fn shmem_int64_alltoalls(
        team: RawTeam,
        dest: *mut i64,
        src: *const i64,
        dst: isize,
        sst: isize,
        n: usize,
    ) -> c_int;
}

/// The C entry points of one integer type's waits and tests on this PE's own elements, as a
/// table of function pointers (`crate::amo::AtomicInt::C`): one type, one row. (The atomics
/// themselves go to the core directly, `crate::ops`.)
pub struct AmoFns<T> {
    pub wait_until: unsafe extern "C" fn(*mut T, c_int, T),
    pub test: unsafe extern "C" fn(*mut T, c_int, T) -> c_int,
}

macro_rules! amo_fns {
    ($($t:ty, $name:ident: $wait:ident $test:ident;)*) => {
        extern "C" {
            $(
                fn $wait(ivar: *mut $t, cmp: c_int, v: $t);
                fn $test(ivar: *mut $t, cmp: c_int, v: $t) -> c_int;
            )*
        }
        $(
            pub const $name: AmoFns<$t> = AmoFns { wait_until: $wait, test: $test };
        )*
    };
}
amo_fns! {
    i32, AMO_I32: shmem_int32_wait_until shmem_int32_test;
    i64, AMO_I64: shmem_int64_wait_until shmem_int64_test;
    u32, AMO_U32: shmem_uint32_wait_until shmem_uint32_test;
    u64, AMO_U64: shmem_uint64_wait_until shmem_uint64_test;
}

/// A reduction entry point: `int shmem_<type>_<op>_reduce(team, dest, source, nreduce)`.
pub type ReduceFn<T> = unsafe extern "C" fn(RawTeam, *mut T, *const T, usize) -> c_int;

/// The reductions of one element type: sum, prod, min, max, and the bitwise ones for integers.
pub struct ReduceFns<T> {
    pub sum: ReduceFn<T>,
    pub prod: ReduceFn<T>,
    pub min: ReduceFn<T>,
    pub max: ReduceFn<T>,
    pub and: Option<ReduceFn<T>>,
    pub or: Option<ReduceFn<T>>,
    pub xor: Option<ReduceFn<T>>,
    /// `shmem_<type>_sum_inscan` and `_exscan` (1.6 scans sums only).
    pub inscan: ReduceFn<T>,
    pub exscan: ReduceFn<T>,
}

macro_rules! reduce_fns {
    (int $($t:ty, $name:ident: $sum:ident $prod:ident $min:ident $max:ident $and:ident $or:ident $xor:ident
        $inscan:ident $exscan:ident;)*) => {
        extern "C" {
            $(
                fn $sum(team: RawTeam, d: *mut $t, s: *const $t, n: usize) -> c_int;
                fn $prod(team: RawTeam, d: *mut $t, s: *const $t, n: usize) -> c_int;
                fn $min(team: RawTeam, d: *mut $t, s: *const $t, n: usize) -> c_int;
                fn $max(team: RawTeam, d: *mut $t, s: *const $t, n: usize) -> c_int;
                fn $and(team: RawTeam, d: *mut $t, s: *const $t, n: usize) -> c_int;
                fn $or(team: RawTeam, d: *mut $t, s: *const $t, n: usize) -> c_int;
                fn $xor(team: RawTeam, d: *mut $t, s: *const $t, n: usize) -> c_int;
                fn $inscan(team: RawTeam, d: *mut $t, s: *const $t, n: usize) -> c_int;
                fn $exscan(team: RawTeam, d: *mut $t, s: *const $t, n: usize) -> c_int;
            )*
        }
        $(
            pub const $name: ReduceFns<$t> = ReduceFns {
                sum: $sum, prod: $prod, min: $min, max: $max, and: Some($and), or: Some($or), xor: Some($xor),
                inscan: $inscan, exscan: $exscan,
            };
        )*
    };
    (float $($t:ty, $name:ident: $sum:ident $prod:ident $min:ident $max:ident $inscan:ident $exscan:ident;)*) => {
        extern "C" {
            $(
                fn $sum(team: RawTeam, d: *mut $t, s: *const $t, n: usize) -> c_int;
                fn $prod(team: RawTeam, d: *mut $t, s: *const $t, n: usize) -> c_int;
                fn $min(team: RawTeam, d: *mut $t, s: *const $t, n: usize) -> c_int;
                fn $max(team: RawTeam, d: *mut $t, s: *const $t, n: usize) -> c_int;
                fn $inscan(team: RawTeam, d: *mut $t, s: *const $t, n: usize) -> c_int;
                fn $exscan(team: RawTeam, d: *mut $t, s: *const $t, n: usize) -> c_int;
            )*
        }
        $(
            pub const $name: ReduceFns<$t> = ReduceFns {
                sum: $sum, prod: $prod, min: $min, max: $max, and: None, or: None, xor: None,
                inscan: $inscan, exscan: $exscan,
            };
        )*
    };
}
reduce_fns! { int
    i8, RED_I8: shmem_int8_sum_reduce shmem_int8_prod_reduce shmem_int8_min_reduce shmem_int8_max_reduce
        shmem_int8_and_reduce shmem_int8_or_reduce shmem_int8_xor_reduce shmem_int8_sum_inscan shmem_int8_sum_exscan;
    i16, RED_I16: shmem_int16_sum_reduce shmem_int16_prod_reduce shmem_int16_min_reduce shmem_int16_max_reduce
        shmem_int16_and_reduce shmem_int16_or_reduce shmem_int16_xor_reduce shmem_int16_sum_inscan shmem_int16_sum_exscan;
    i32, RED_I32: shmem_int32_sum_reduce shmem_int32_prod_reduce shmem_int32_min_reduce shmem_int32_max_reduce
        shmem_int32_and_reduce shmem_int32_or_reduce shmem_int32_xor_reduce shmem_int32_sum_inscan shmem_int32_sum_exscan;
    i64, RED_I64: shmem_int64_sum_reduce shmem_int64_prod_reduce shmem_int64_min_reduce shmem_int64_max_reduce
        shmem_int64_and_reduce shmem_int64_or_reduce shmem_int64_xor_reduce shmem_int64_sum_inscan shmem_int64_sum_exscan;
    u8, RED_U8: shmem_uint8_sum_reduce shmem_uint8_prod_reduce shmem_uint8_min_reduce shmem_uint8_max_reduce
        shmem_uint8_and_reduce shmem_uint8_or_reduce shmem_uint8_xor_reduce shmem_uint8_sum_inscan shmem_uint8_sum_exscan;
    u16, RED_U16: shmem_uint16_sum_reduce shmem_uint16_prod_reduce shmem_uint16_min_reduce
        shmem_uint16_max_reduce shmem_uint16_and_reduce shmem_uint16_or_reduce shmem_uint16_xor_reduce shmem_uint16_sum_inscan shmem_uint16_sum_exscan;
    u32, RED_U32: shmem_uint32_sum_reduce shmem_uint32_prod_reduce shmem_uint32_min_reduce
        shmem_uint32_max_reduce shmem_uint32_and_reduce shmem_uint32_or_reduce shmem_uint32_xor_reduce shmem_uint32_sum_inscan shmem_uint32_sum_exscan;
    u64, RED_U64: shmem_uint64_sum_reduce shmem_uint64_prod_reduce shmem_uint64_min_reduce
        shmem_uint64_max_reduce shmem_uint64_and_reduce shmem_uint64_or_reduce shmem_uint64_xor_reduce shmem_uint64_sum_inscan shmem_uint64_sum_exscan;
}
reduce_fns! { float
    f32, RED_F32: shmem_float_sum_reduce shmem_float_prod_reduce shmem_float_min_reduce shmem_float_max_reduce shmem_float_sum_inscan shmem_float_sum_exscan;
    f64, RED_F64: shmem_double_sum_reduce shmem_double_prod_reduce shmem_double_min_reduce shmem_double_max_reduce shmem_double_sum_inscan shmem_double_sum_exscan;
}
