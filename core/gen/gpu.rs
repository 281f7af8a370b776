//! The GPU table: the host-side routines of the OpenSHMEM Auxiliary Specification for GPU
//! Support (draft v0.1), declared in `shmemg.h` (category `gpu`; `crate::ops::gpu_aux`).

use super::routines::Family;

/// The category of every row here: the generator puts these in `shmemg.h` only.
pub const GPU: &str = "gpu";

const fn plain(name: &'static str, ret: &'static str, params: &'static str, body: &'static str) -> Family {
    super::routines::plain(GPU, name, ret, params, body)
}

pub const GPU_ROUTINES: &[Family] = &[
    plain("shmemg_malloc", "void *", "size_t size", "gpu_aux::malloc({NAME}, size)"),
    plain("shmemg_calloc", "void *", "size_t count, size_t size", "gpu_aux::calloc({NAME}, count, size)"),
    plain(
        "shmemg_align",
        "void *",
        "size_t alignment, size_t size",
        "gpu_aux::align({NAME}, alignment, size)",
    ),
    plain("shmemg_free", "void", "void *ptr", "gpu_aux::free({NAME}, ptr)"),
];
