//! [`scoll_component!`](crate::scoll_component): the whole C surface of a Rust scoll component
//! (not part of the C ABI). A component writes its team state and its algorithms; the macro
//! writes what every component otherwise repeats: keeping the core's table from `open`, the
//! `enable`/`disable` pair boxing the team, one `extern "C"` slot per collective that forwards
//! to the algorithm inside the panic boundary (`boundary::slot`: a panic mid-collective ends
//! the job, since peers would wait for it), the ops table, `query` and the descriptor.
//!
//! Expected of the invoking crate: a type `$team` and `$new: fn(&CoreServices, &TeamDesc) ->
//! Option<$team>` (None declines the team), and a module `$algo` with `barrier`, `broadcast`
//! (with a `keep_root` flag), `collect` (with a `fixed` flag), `alltoall` and `reduce`, each
//! taking `(&CoreServices, &$team, ...)` with the slot's arguments and returning a `c_int`.

/// See the module documentation.
#[macro_export]
macro_rules! scoll_component {
    (
        name: $name:literal,
        description: $desc:literal,
        priority: $prio:expr,
        caps: $caps:expr,
        params: $params:expr,
        reason: $reason:literal,
        scratch: $scratch:expr,
        team: $team:ty,
        new: $new:expr,
        algo: $algo:path $(,)?
    ) => {
        mod __rshmem_scoll {
            use super::*;
            use ::std::ffi::{c_int, c_void};
            use $algo as algo;
            use $crate::boundary::{self, slot};
            use $crate::{CoreServices, QueryResult, ScollOps, TeamDesc};

            const COMPONENT: &str = concat!("scoll ", $name);

            /// Collective `name` on the team `state`: a panic ends the job.
            fn collective(
                name: &str,
                state: *mut c_void,
                body: impl FnOnce(&CoreServices, &$team) -> c_int,
            ) -> c_int {
                slot(COMPONENT, name, || {
                    // SAFETY: the core passes back the pointer `enable` returned, until `disable`.
                    let t = unsafe { &*(state as *const $team) };
                    // The core's table is recorded before `open`, so before any team exists.
                    let c = boundary::core().expect("the core's table");
                    body(c, t)
                })
            }

            unsafe extern "C" fn enable(desc: *const TeamDesc) -> *mut c_void {
                slot(COMPONENT, "enable", || {
                    // SAFETY: the core passes NULL or a valid team description.
                    let (Some(c), Some(desc)) = (boundary::core(), unsafe { desc.as_ref() }) else {
                        return ::std::ptr::null_mut();
                    };
                    let new: fn(&CoreServices, &TeamDesc) -> Option<$team> = $new;
                    new(c, desc).map_or(::std::ptr::null_mut(), |t| Box::into_raw(Box::new(t)) as *mut c_void)
                })
            }

            unsafe extern "C" fn disable(state: *mut c_void) {
                slot(COMPONENT, "disable", || {
                    if !state.is_null() {
                        // SAFETY: `state` came from `enable`; the core does not use it after.
                        drop(unsafe { Box::from_raw(state as *mut $team) });
                    }
                })
            }

            // Every slot: the core passes buffers valid for the sizes it checked, and this
            // team's state.
            #[allow(unused_unsafe)]
            unsafe extern "C" fn barrier(state: *mut c_void) -> c_int {
                // SAFETY: see above.
                collective("barrier", state, |c, t| unsafe { algo::barrier(c, t) })
            }

            unsafe extern "C" fn broadcast(
                state: *mut c_void,
                dest: *mut c_void,
                src: *const c_void,
                nbytes: usize,
                root: c_int,
            ) -> c_int {
                // SAFETY: see above.
                collective("broadcast", state, |c, t| unsafe {
                    algo::broadcast(c, t, dest, src, nbytes, root, false)
                })
            }

            unsafe extern "C" fn broadcast_keep_root(
                state: *mut c_void,
                dest: *mut c_void,
                src: *const c_void,
                nbytes: usize,
                root: c_int,
            ) -> c_int {
                // SAFETY: see above.
                collective("broadcast_keep_root", state, |c, t| unsafe {
                    algo::broadcast(c, t, dest, src, nbytes, root, true)
                })
            }

            unsafe extern "C" fn collect(
                state: *mut c_void,
                dest: *mut c_void,
                src: *const c_void,
                nbytes: usize,
                fixed: c_int,
            ) -> c_int {
                // SAFETY: see above.
                collective("collect", state, |c, t| unsafe {
                    algo::collect(c, t, dest, src, nbytes, fixed != 0)
                })
            }

            #[allow(clippy::too_many_arguments)]
            unsafe extern "C" fn alltoall(
                state: *mut c_void,
                dest: *mut c_void,
                src: *const c_void,
                elem_size: usize,
                nelems: usize,
                dst: isize,
                sst: isize,
            ) -> c_int {
                // SAFETY: see above.
                collective("alltoall", state, |c, t| unsafe {
                    algo::alltoall(c, t, dest, src, elem_size, nelems, dst, sst)
                })
            }

            #[allow(clippy::too_many_arguments)]
            unsafe extern "C" fn reduce(
                state: *mut c_void,
                dest: *mut c_void,
                src: *const c_void,
                nelems: usize,
                dtype: u32,
                op: u32,
                kind: u32,
            ) -> c_int {
                // SAFETY: see above.
                collective("reduce", state, |c, t| unsafe {
                    algo::reduce(c, t, dest, src, nelems, dtype, op, kind)
                })
            }

            static OPS: ScollOps = ScollOps {
                struct_size: ::std::mem::size_of::<ScollOps>(),
                scratch_needed: $scratch,
                enable,
                disable,
                barrier: Some(barrier),
                broadcast: Some(broadcast),
                collect: Some(collect),
                alltoall: Some(alltoall),
                reduce: Some(reduce),
                broadcast_keep_root: Some(broadcast_keep_root),
            };

            pub fn query(_core: &'static CoreServices, r: &mut QueryResult) {
                r.available = 1;
                r.priority = $prio;
                r.set_reason($reason);
            }

            pub fn open(_core: &'static CoreServices) -> *const c_void {
                &OPS as *const ScollOps as *const c_void
            }
        }
        pub use __rshmem_scoll::{open, query};

        $crate::export_plugin! {
            framework: $crate::Framework::Scoll,
            name: $name,
            description: $desc,
            params: $params,
            caps: $caps,
            query: query,
            open: open,
        }
    };
}
