//! The generated C entry points (see `core/gen/`). Each is one line calling a generic core
//! function inside the panic boundary.
#![allow(
    clippy::missing_safety_doc,
    clippy::too_many_arguments,
    non_snake_case,
    unused_unsafe,
    unused_variables
)]

use super::handles::{Ctx, Team};
use super::{boundary, LongDouble};
use crate::{amo, coll, ctx, heap, lock, p2p, rma, setup, signal, teams};
#[allow(unused_imports)]
use std::ffi::{c_char, c_int, c_long, c_longlong, c_uint, c_ulong, c_ulonglong, c_void};

include!(concat!(env!("OUT_DIR"), "/capi.rs"));
