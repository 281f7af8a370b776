//! Client of a PMIx server: what Open MPI's `mpirun` and Slurm's `srun --mpi=pmix` hand each
//! process they start. Rank, size and locality come from the job data the server gives every
//! client at `PMIx_Init`; the key-value exchange is `PMIx_Put`/`Commit`, a collecting
//! `PMIx_Fence`, then `PMIx_Get`; `abort` asks the server to end the whole namespace.

use super::Bootstrap;
use rshmem_pmix_sys as sys;
use std::ffi::{c_char, c_void, CStr, CString};
use std::io;
use std::sync::Mutex;

/// Prefix of every key we publish, so ours never meet the launcher's or another library's.
const KEY_PREFIX: &str = "rshmem.";

pub struct PmixBoot {
    me: sys::pmix_proc_t,
    size: i32,
    local_rank: i32,
    /// `local[pe]`: the server places PE `pe` on this PE's node.
    local: Vec<bool>,
    /// `hosts[pe]`: the lowest PE on `pe`'s node, from the server's map of the job; None when
    /// it gives none that agrees with `local` (start-up then reads every PE's record).
    hosts: Option<Vec<i32>>,
    /// Each node's name by its lowest PE, from the same map: one entry per host, read only
    /// for messages (a peer lost on another host is named with its host).
    names: Vec<(i32, String)>,
    job: String,
    /// PMIx clients are thread-safe, but the core's exchanges are collective sequences that
    /// must not interleave between threads of one PE.
    lock: Mutex<()>,
}

// SAFETY: `pmix_proc_t` is plain data (a name and a rank); the PMIx client library is
// thread-safe and the calls that use it are serialised by `lock` where ordering matters.
unsafe impl Send for PmixBoot {}
// SAFETY: as for Send.
unsafe impl Sync for PmixBoot {}

fn err(what: &str, rc: sys::pmix_status_t) -> io::Error {
    // SAFETY: PMIx_Error_string returns a static string for any status.
    let s = unsafe { CStr::from_ptr(sys::PMIx_Error_string(rc)) }.to_string_lossy().into_owned();
    io::Error::other(format!("{what} failed: {s} ({rc})"))
}

/// Read an unsigned integer the server may store as any of PMIx's integer types.
fn value_u64(v: &sys::pmix_value_t) -> Option<u64> {
    // SAFETY: the union member read is the one `type_` names.
    unsafe {
        Some(match v.type_ as u32 {
            sys::PMIX_UINT8 => u64::from(v.data.uint8),
            sys::PMIX_UINT16 => u64::from(v.data.uint16),
            sys::PMIX_UINT32 => u64::from(v.data.uint32),
            sys::PMIX_UINT64 => v.data.uint64,
            sys::PMIX_SIZE => v.data.size as u64,
            sys::PMIX_INT => u64::try_from(v.data.integer).ok()?,
            sys::PMIX_INT32 => u64::try_from(v.data.int32).ok()?,
            sys::PMIX_UINT => u64::from(v.data.uint),
            sys::PMIX_PROC_RANK => u64::from(v.data.rank),
            _ => return None,
        })
    }
}

/// One value from the server, released when dropped.
struct Value(*mut sys::pmix_value_t);

impl Drop for Value {
    fn drop(&mut self) {
        // SAFETY: a value PMIx_Get allocated (PMIX_VALUE_RELEASE: destruct, then free).
        unsafe {
            sys::PMIx_Value_destruct(self.0);
            libc::free(self.0 as *mut c_void);
        }
    }
}

impl Value {
    fn get(&self) -> &sys::pmix_value_t {
        // SAFETY: non-null, owned by us until drop.
        unsafe { &*self.0 }
    }
}

fn get_raw(proc_: &sys::pmix_proc_t, key: &CStr) -> Result<Value, sys::pmix_status_t> {
    let mut v: *mut sys::pmix_value_t = std::ptr::null_mut();
    // SAFETY: valid proc and key; PMIx allocates `v` on success.
    let rc = unsafe { sys::PMIx_Get(proc_, key.as_ptr(), std::ptr::null(), 0, &mut v) };
    if rc != sys::PMIX_SUCCESS as i32 || v.is_null() {
        return Err(rc);
    }
    Ok(Value(v))
}

fn key_cstr(k: &[u8]) -> &CStr {
    CStr::from_bytes_with_nul(k).expect("PMIx key constants end in NUL")
}

/// Names made from the namespace go into `/dev/shm` object names: keep them portable.
fn sanitize(ns: &str) -> String {
    let s: String = ns.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
    format!("p{s}")
}

/// `"0,2,5"` (PMIX_LOCAL_PEERS) as a membership vector; None when malformed or out of range.
pub fn parse_local_peers(list: &str, size: usize) -> Option<Vec<bool>> {
    let mut local = vec![false; size];
    for r in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let r: usize = r.parse().ok()?;
        *local.get_mut(r)? = true;
    }
    Some(local)
}

/// Each rank's node leader, and each node's name by its leader.
type HostMap = (Vec<i32>, Vec<(i32, String)>);

/// Every process's node, named by its lowest rank, from the server's map of the job: the node
/// list and each node's processes, which every client holds from `PMIx_Init` on (resolved
/// locally, no exchange), with each node's name by its lowest rank. None when the server gives
/// no usable map, or one that leaves a rank out or puts one on two nodes.
fn host_map(ns: *const c_char, size: usize) -> Option<HostMap> {
    let mut list: *mut c_char = std::ptr::null_mut();
    // SAFETY: `ns` is our NUL-terminated namespace; PMIx allocates the list on success.
    let rc = unsafe { sys::PMIx_Resolve_nodes(ns, &mut list) };
    if rc != sys::PMIX_SUCCESS as i32 || list.is_null() {
        return None;
    }
    // SAFETY: a NUL-terminated string PMIx allocated with malloc; ours to free.
    let nodes = unsafe {
        let s = CStr::from_ptr(list).to_string_lossy().into_owned();
        libc::free(list.cast());
        s
    };
    let mut of = vec![-1i32; size];
    let mut names = Vec::new();
    for node in nodes.split(',').filter(|s| !s.is_empty()) {
        let name = CString::new(node).ok()?;
        let (mut procs, mut n): (*mut sys::pmix_proc_t, usize) = (std::ptr::null_mut(), 0);
        // SAFETY: valid strings; PMIx allocates `n` procs on success.
        let rc = unsafe { sys::PMIx_Resolve_peers(name.as_ptr(), ns, &mut procs, &mut n) };
        if rc != sys::PMIX_SUCCESS as i32 {
            return None;
        }
        let ranks: Vec<u32> = if procs.is_null() {
            Vec::new()
        } else {
            // SAFETY: `n` procs PMIx allocated with malloc (PMIX_PROC_FREE is a free); ours.
            unsafe {
                let r = std::slice::from_raw_parts(procs, n).iter().map(|p| p.rank).collect();
                libc::free(procs.cast());
                r
            }
        };
        let Some(&leader) = ranks.iter().min() else { continue };
        names.push((i32::try_from(leader).ok()?, node.to_string()));
        for r in ranks {
            let slot = of.get_mut(r as usize)?;
            if *slot >= 0 {
                return None;
            }
            *slot = i32::try_from(leader).ok()?;
        }
    }
    of.iter().all(|&h| h >= 0).then_some((of, names))
}

impl PmixBoot {
    /// Connect to the server that started this process. `launcher` names it in errors.
    pub fn init(launcher: &str) -> io::Result<PmixBoot> {
        let mut me = sys::pmix_proc_t::default();
        // SAFETY: `me` is a valid out-parameter; no info array.
        let rc = unsafe { sys::PMIx_Init(&mut me, std::ptr::null_mut(), 0) };
        if rc != sys::PMIX_SUCCESS as i32 {
            return Err(io::Error::other(format!(
                "the process was started by {launcher}, but its PMIx server does not answer ({})",
                err("PMIx_Init", rc)
            )));
        }
        let ns = {
            // SAFETY: the namespace is a NUL-terminated array filled by PMIx_Init.
            unsafe { CStr::from_ptr(me.nspace.as_ptr()) }.to_string_lossy().into_owned()
        };
        let mut job = me;
        job.rank = sys::RANK_WILDCARD;
        let bad = |what: &str| {
            io::Error::other(format!("{launcher}'s PMIx server (namespace {ns}) gave no usable {what}"))
        };
        let size = get_raw(&job, key_cstr(sys::PMIX_JOB_SIZE))
            .ok()
            .and_then(|v| value_u64(v.get()))
            .filter(|&s| s >= 1 && s <= i32::MAX as u64)
            .ok_or_else(|| bad("job size (pmix.job.size)"))? as i32;
        if me.rank >= size as u32 {
            return Err(bad(&format!("rank ({} of {size})", me.rank)));
        }
        let peers =
            get_raw(&job, key_cstr(sys::PMIX_LOCAL_PEERS)).map_err(|_| bad("local peers (pmix.lpeers)"))?;
        let local = {
            let v = peers.get();
            if v.type_ as u32 != sys::PMIX_STRING {
                return Err(bad("local peer list (pmix.lpeers is not a string)"));
            }
            // SAFETY: a PMIX_STRING value holds a NUL-terminated string.
            let s = unsafe { CStr::from_ptr(v.data.string) }.to_string_lossy().into_owned();
            parse_local_peers(&s, size as usize).ok_or_else(|| bad(&format!("local peer list ({s:?})")))?
        };
        if !local[me.rank as usize] {
            return Err(bad("local peer list (it leaves this process out)"));
        }
        // The local rank is this PE's index among its node's PEs, whatever the server says
        // about other jobs on the node.
        let local_rank = local[..me.rank as usize].iter().filter(|&&l| l).count() as i32;
        let (hosts, names) = match host_map(me.nspace.as_ptr(), size as usize)
            .filter(|(of, _)| (0..size as usize).all(|pe| local[pe] == (of[pe] == of[me.rank as usize])))
        {
            Some((of, names)) => (Some(of), names),
            None => (None, Vec::new()),
        };
        Ok(PmixBoot { me, size, local_rank, local, hosts, names, job: sanitize(&ns), lock: Mutex::new(()) })
    }

    fn key(key: &str) -> CString {
        CString::new(format!("{KEY_PREFIX}{key}")).expect("keys have no NUL")
    }
}

impl Bootstrap for PmixBoot {
    fn rank(&self) -> i32 {
        self.me.rank as i32
    }
    fn size(&self) -> i32 {
        self.size
    }
    fn local_rank(&self) -> i32 {
        self.local_rank
    }
    fn local_size(&self) -> i32 {
        self.local.iter().filter(|&&l| l).count() as i32
    }
    fn is_local(&self, pe: i32) -> bool {
        usize::try_from(pe).ok().and_then(|p| self.local.get(p).copied()).unwrap_or(false)
    }
    fn host_of(&self, pe: i32) -> Option<i32> {
        self.hosts.as_ref().and_then(|of| of.get(usize::try_from(pe).ok()?).copied())
    }
    fn host_name(&self, pe: i32) -> Option<String> {
        let leader = self.host_of(pe)?;
        self.names.iter().find(|(l, _)| *l == leader).map(|(_, n)| n.clone())
    }
    fn job_id(&self) -> &str {
        &self.job
    }
    fn put(&self, key: &str, value: &[u8]) -> io::Result<()> {
        let _g = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        let k = Self::key(key);
        let mut v = sys::pmix_value_t { type_: sys::PMIX_BYTE_OBJECT as _, ..Default::default() };
        v.data.bo = sys::pmix_byte_object_t { bytes: value.as_ptr() as *mut c_char, size: value.len() };
        // SAFETY: PMIx_Put copies the value; `value` outlives the call.
        let rc = unsafe { sys::PMIx_Put(sys::PMIX_GLOBAL as _, k.as_ptr(), &mut v) };
        if rc != sys::PMIX_SUCCESS as i32 {
            return Err(err("PMIx_Put", rc));
        }
        Ok(())
    }
    fn fence(&self) -> io::Result<()> {
        let _g = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: no arguments.
        let rc = unsafe { sys::PMIx_Commit() };
        if rc != sys::PMIX_SUCCESS as i32 {
            return Err(err("PMIx_Commit", rc));
        }
        let mut info = sys::pmix_info_t::default();
        let yes = true;
        // SAFETY: loads a bool into `info` (the key is copied).
        unsafe {
            sys::PMIx_Info_load(
                &mut info,
                key_cstr(sys::PMIX_COLLECT_DATA).as_ptr(),
                &yes as *const bool as *const c_void,
                sys::PMIX_BOOL as _,
            )
        };
        // SAFETY: NULL procs means every process of our namespace; one info entry.
        let rc = unsafe { sys::PMIx_Fence(std::ptr::null(), 0, &info, 1) };
        if rc != sys::PMIX_SUCCESS as i32 {
            return Err(err("PMIx_Fence", rc));
        }
        Ok(())
    }
    fn get(&self, pe: i32, key: &str) -> io::Result<Option<Vec<u8>>> {
        let mut p = self.me;
        p.rank = u32::try_from(pe).map_err(|_| io::Error::other(format!("no PE {pe}")))?;
        let k = Self::key(key);
        let v = match get_raw(&p, &k) {
            Ok(v) => v,
            Err(rc) if rc == sys::PMIX_ERR_NOT_FOUND => return Ok(None),
            Err(rc) => return Err(err(&format!("PMIx_Get of {key} from PE {pe}"), rc)),
        };
        let v = v.get();
        if v.type_ as u32 != sys::PMIX_BYTE_OBJECT {
            return Err(io::Error::other(format!("PE {pe}'s {key} is not a byte object")));
        }
        // SAFETY: a PMIX_BYTE_OBJECT value; `bytes` holds `size` bytes (or is NULL when empty).
        let bo = unsafe { v.data.bo };
        if bo.size == 0 {
            return Ok(Some(Vec::new()));
        }
        // SAFETY: as above.
        Ok(Some(unsafe { std::slice::from_raw_parts(bo.bytes as *const u8, bo.size) }.to_vec()))
    }
    fn abort(&self, code: i32, msg: &str) -> ! {
        let m = CString::new(msg.replace('\0', " ")).unwrap_or_default();
        // SAFETY: NULL procs: every process of our namespace. The server kills the job; the
        // call may return first, so leave at once after it.
        unsafe { sys::PMIx_Abort(code, m.as_ptr(), std::ptr::null_mut(), 0) };
        std::process::exit(code)
    }
    fn finalize(&self) {
        // SAFETY: no info array. The server now treats this process's exit as normal.
        unsafe { sys::PMIx_Finalize(std::ptr::null(), 0) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_peer_lists() {
        assert_eq!(parse_local_peers("0,2", 4), Some(vec![true, false, true, false]));
        assert_eq!(parse_local_peers("3", 4), Some(vec![false, false, false, true]));
        assert_eq!(parse_local_peers("", 2), Some(vec![false, false]));
        assert_eq!(parse_local_peers("0,4", 4), None);
        assert_eq!(parse_local_peers("0,x", 4), None);
    }

    #[test]
    fn namespace_names_are_portable() {
        assert_eq!(sanitize("prterun-host-1234@1"), "pprterun_host_1234_1");
        assert_eq!(sanitize("slurm.pmix.12.0"), "pslurm_pmix_12_0");
    }
}
