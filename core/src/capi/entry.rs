//! The generated C entry points (see `core/gen/`). Each is one line calling a generic core
//! function inside the panic boundary.
#![allow(
    clippy::missing_safety_doc,
    clippy::too_many_arguments,
    non_snake_case,
    unused_unsafe,
    unused_variables
)]

use super::{boundary, ComplexD, ComplexF, LongDouble};
use crate::error::OrEnd;
use crate::ops::handles::{Ctx, Team};
use crate::ops::{
    amo, coll, ctx, ext, gpu_aux, heap, legacy, lock, on_stream, p2p, rma, setup, signal, spaces, teams,
};
#[allow(unused_imports)]
use rshmem_plugin_api::{
    DT_COMPLEXD, DT_COMPLEXF, DT_F32, DT_F64, DT_I16, DT_I32, DT_I64, DT_I8, DT_LONGDOUBLE, DT_U16, DT_U32,
    DT_U64, DT_U8, OP_AND, OP_MAX, OP_MIN, OP_OR, OP_PROD, OP_SUM, OP_XOR, REDUCE_ALL, REDUCE_EXSCAN,
    REDUCE_INSCAN,
};
#[allow(unused_imports)]
use std::ffi::{c_char, c_int, c_long, c_longlong, c_uint, c_ulong, c_ulonglong, c_void};

include!(concat!(env!("OUT_DIR"), "/capi.rs"));
