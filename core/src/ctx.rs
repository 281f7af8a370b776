//! OpenSHMEM contexts. This slice has the default context; `shmem_ctx_create` arrives with the
//! point-to-point issue, on the same `CtxObj`.

use crate::ffi::handles::{rshmem_ctx_default, Ctx};

#[inline(always)]
pub fn default() -> Ctx {
    &rshmem_ctx_default
}
