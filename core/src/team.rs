//! Teams as the core sees them: membership, symmetric scratch, and the collective table
//! resolved per operation at creation from the stacked scoll components (best first; a slot
//! that declines a call falls through to the next provider).

use crate::runtime::Runtime;
use rshmem_plugin_api::{ScollOps, TeamDesc, RC_DECLINED, RC_OK};
use std::ffi::{c_int, c_void, CStr};

type BarrierFn = unsafe extern "C" fn(*mut c_void) -> c_int;
type BroadcastFn = unsafe extern "C" fn(*mut c_void, *mut c_void, *const c_void, usize, c_int) -> c_int;

pub struct TeamState {
    pub desc: TeamDesc,
    pub barrier: Vec<(BarrierFn, *mut c_void, String)>,
    pub broadcast: Vec<(BroadcastFn, *mut c_void, String)>,
    /// The components that enabled this team: (ops, state).
    enabled: Vec<(&'static ScollOps, *mut c_void)>,
    /// Per-component scratch descriptors, boxed so their addresses (given to the components)
    /// stay put while the vector grows.
    #[allow(clippy::vec_box)]
    _descs: Vec<Box<TeamDesc>>,
}

// SAFETY: component states are owned by the components and used under the OpenSHMEM rule that
// a team's collectives are not called concurrently from several threads.
unsafe impl Send for TeamState {}
unsafe impl Sync for TeamState {}

fn round_up(v: usize, a: usize) -> usize {
    v.div_ceil(a) * a
}

impl TeamState {
    /// Collective over the team's PEs: every member must create teams in the same order,
    /// because scratch comes from the (deterministic) symmetric heap.
    pub fn create(
        routine: &CStr,
        rt: &Runtime,
        id: c_int,
        start: c_int,
        stride: c_int,
        size: c_int,
        scolls: &[(&'static ScollOps, String)],
    ) -> TeamState {
        let my_index = if (rt.my_pe - start) % stride == 0 { (rt.my_pe - start) / stride } else { -1 };
        let needs: Vec<usize> = scolls.iter().map(|(o, _)| round_up(o.scratch_needed.max(64), 64)).collect();
        let total: usize = needs.iter().sum();
        let scratch = crate::heap::alloc_internal(rt, total, 64).unwrap_or_else(|| {
            crate::error::fatal(routine, "the symmetric heap has no room for team scratch space")
        });
        // SAFETY: freshly allocated symmetric memory of `total` bytes.
        unsafe { std::ptr::write_bytes(scratch, 0, total) };
        let mut t = TeamState {
            desc: TeamDesc { id, start, stride, size, my_index, scratch: scratch.cast(), scratch_len: total },
            barrier: Vec::new(),
            broadcast: Vec::new(),
            enabled: Vec::new(),
            _descs: Vec::new(),
        };
        let mut offset = 0;
        for ((ops, name), need) in scolls.iter().zip(needs) {
            let desc = Box::new(TeamDesc {
                scratch: scratch.wrapping_add(offset).cast(),
                scratch_len: need,
                ..t.desc
            });
            offset += need;
            // SAFETY: plugin ABI call; `desc` outlives the team.
            let state = unsafe { (ops.enable)(&*desc) };
            t._descs.push(desc);
            if state.is_null() {
                continue;
            }
            t.enabled.push((ops, state));
            if let Some(f) = ops.barrier {
                t.barrier.push((f, state, name.clone()));
            }
            if let Some(f) = ops.broadcast {
                t.broadcast.push((f, state, name.clone()));
            }
        }
        if t.barrier.is_empty() || t.broadcast.is_empty() {
            crate::error::fatal(routine, "no scoll component provides barrier and broadcast for the team");
        }
        t
    }

    fn run(routine: &CStr, op: &str, rcs: impl Iterator<Item = (c_int, String)>) {
        for (rc, name) in rcs {
            match rc {
                RC_OK => return,
                RC_DECLINED => continue,
                rc => crate::error::fatal(routine, &format!("scoll {name} {op} failed (code {rc})")),
            }
        }
        crate::error::fatal(routine, &format!("every scoll component declined {op}"))
    }

    pub fn barrier(&self, routine: &CStr) {
        // SAFETY: plugin ABI calls with the state each component returned from `enable`.
        Self::run(routine, "barrier", self.barrier.iter().map(|(f, s, n)| (unsafe { f(*s) }, n.clone())));
    }

    pub fn broadcast(
        &self,
        routine: &CStr,
        dest: *mut c_void,
        src: *const c_void,
        nbytes: usize,
        root: c_int,
    ) {
        Self::run(
            routine,
            "broadcast",
            // SAFETY: as in `barrier`; addresses were checked by the caller.
            self.broadcast.iter().map(|(f, s, n)| (unsafe { f(*s, dest, src, nbytes, root) }, n.clone())),
        );
    }
}

impl Drop for TeamState {
    fn drop(&mut self) {
        for (ops, state) in &self.enabled {
            // SAFETY: plugin ABI call releasing the state it created.
            unsafe { (ops.disable)(*state) };
        }
    }
}
