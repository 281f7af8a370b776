//! Memory spaces (the user's two proposals, `shared/seeds/memory-spaces-*`): the predefined
//! handles and teams, created spaces with their own symmetric heap, space-aware allocation,
//! queries, and `shmem_malloc_with_hints`.
//!
//! The default space is the CPU space: the symmetric heap made at init (`SHMEM_SPACE_DEFAULT`
//! and `SHMEM_SPACE_CPU` are the same handle, its team is the world). It is always enabled:
//! read literally, "SHMEM_ENABLE_CPU_SPACE unset disables the CPU heap" together with "both
//! disabled fails init" would make every program that does not know the variables fail. A GPU
//! heap does not exist yet, so `SHMEM_SPACE_GPU` and `SHMEM_TEAM_GPU` are invalid handles and
//! asking for a GPU default space fails init with a clear message.
//!
//! A created CPU space is one more symmetric segment, made exactly like the heap at init: the
//! sshmem component creates it, the spml registers it, every PE learns every other PE's record
//! (base, length, attach blob, packed key) through an fcollect on the world team, maps the ones
//! on its node, and the segment table publishes it, so RMA, atomics and collectives find it by
//! address like any symmetric memory.

use crate::error::fatal;
use crate::ffi::handles::{rshmem_team_world, Team, TeamObj};
use crate::runtime::{self, Runtime};
use crate::segments::PeerSeg;
use rshmem_plugin_api::SegmentDesc;
use std::ffi::{c_int, c_long, c_void, CStr};
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::Mutex;

/// `shmem_device_type_t` values.
pub const DEVICE_CPU: c_int = 0;
pub const DEVICE_GPU: c_int = 1;

/// `shmem_space_cap_t` bits.
pub const CAP_RMA: u64 = 0x1;
pub const CAP_COLLECTIVES: u64 = 0x2;
pub const CAP_ATOMICS: u64 = 0x4;
pub const CAP_DIRECT_ACCESS: u64 = 0x8;
pub const CAP_WORLD_ACCESS: u64 = 0x10;
pub const CAP_IDENT_ADDR: u64 = 0x20;

/// `shmem_malloc_with_hints` hints.
const MALLOC_HINTS: c_long = 0b11; // ATOMICS_REMOTE | SIGNAL_REMOTE

/// `shmem_space_config_t` (the C layout in shmem.h).
#[repr(C)]
pub struct SpaceConfig {
    pub device_type: c_int,
    pub size: usize,
    pub flags: c_int,
}

/// A created space's own resources (the default space has none: it is the init heap).
struct Owned {
    seg: u32,
    desc: Mutex<SegmentDesc>,
    heap: *mut c_void,
    lock: Mutex<()>,
    spml_reg: *mut c_void,
    /// Peers' mappings of the segment on this node, to detach at destroy.
    mapped: Vec<*mut u8>,
}

pub struct Space {
    device: c_int,
    caps: u64,
    /// The space-associated team.
    team: Team,
    owned: Option<Owned>,
}

// SAFETY: the raw pointers are plugin handles and mappings valid until `destroy`, which the
// spec makes collective and exclusive of other uses; the heap is used under `lock`.
unsafe impl Send for Space {}
// SAFETY: as for Send.
unsafe impl Sync for Space {}

/// Exported handles: `SHMEM_SPACE_DEFAULT`, `SHMEM_SPACE_CPU`, `SHMEM_SPACE_GPU`,
/// `SHMEM_TEAM_CPU`, `SHMEM_TEAM_GPU` are these variables (set at init).
#[no_mangle]
pub static rshmem_space_default: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());
#[no_mangle]
pub static rshmem_space_cpu: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());
#[no_mangle]
pub static rshmem_space_gpu: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());
#[no_mangle]
pub static rshmem_team_cpu: AtomicPtr<TeamObj> = AtomicPtr::new(std::ptr::null_mut());
#[no_mangle]
pub static rshmem_team_gpu: AtomicPtr<TeamObj> = AtomicPtr::new(std::ptr::null_mut());

/// Validate the space variables before anything is set up.
pub fn check_config() -> Result<(), String> {
    match crate::config::raw("SHMEM_DEFAULT_SPACE").trim().to_ascii_uppercase().as_str() {
        "" | "CPU" => Ok(()),
        "GPU" => Err("SHMEM_DEFAULT_SPACE=GPU: rshmem has no GPU symmetric heap yet; use CPU".into()),
        other => Err(format!("SHMEM_DEFAULT_SPACE={other} is not CPU or GPU")),
    }
}

/// Set the predefined handles (after the world team exists).
pub fn init(rt: &Runtime) {
    let all_mapped = !rt.needs_progress;
    let default = Box::leak(Box::new(Space {
        device: DEVICE_CPU,
        caps: CAP_RMA
            | CAP_COLLECTIVES
            | CAP_ATOMICS
            | CAP_WORLD_ACCESS
            | if all_mapped { CAP_DIRECT_ACCESS } else { 0 },
        team: &rshmem_team_world,
        owned: None,
    })) as *mut Space as *mut c_void;
    rshmem_space_default.store(default, Ordering::Release);
    rshmem_space_cpu.store(default, Ordering::Release);
    rshmem_team_cpu.store(&rshmem_team_world as *const TeamObj as *mut TeamObj, Ordering::Release);
    if !crate::config::raw("SHMEM_ENABLE_GPU_SPACE").is_empty() && rt.my_pe == 0 {
        crate::log::log(
            crate::log::WARN,
            "spaces",
            "SHMEM_ENABLE_GPU_SPACE is set, but rshmem has no GPU symmetric heap yet: SHMEM_SPACE_GPU is SHMEM_SPACE_INVALID",
        );
    }
}

/// The space behind a handle, or None for SHMEM_SPACE_INVALID. Handles come from C, where a
/// space handle is valid by the caller's contract.
#[allow(clippy::not_unsafe_ptr_arg_deref)]
fn space<'a>(space: *mut c_void) -> Option<&'a Space> {
    // SAFETY: non-null space handles point at live Space values (leaked until destroy).
    (!space.is_null()).then(|| unsafe { &*(space as *const Space) })
}

pub fn is_available(routine: &CStr, s: *mut c_void) -> c_int {
    runtime::get(routine);
    c_int::from(space(s).is_none())
}

pub fn team_is_valid(routine: &CStr, team: Team) -> c_int {
    runtime::get(routine);
    c_int::from(crate::teams::is_live(team))
}

/// # Safety
/// `team` must be writable.
pub unsafe fn get_team(routine: &CStr, s: *mut c_void, team: *mut Team) -> c_int {
    runtime::get(routine);
    let Some(sp) = space(s) else { return -1 };
    if team.is_null() {
        fatal(routine, "team is NULL");
    }
    // SAFETY: checked non-null; writable by contract.
    unsafe { *team = sp.team };
    0
}

/// # Safety
/// `ty` must be writable.
pub unsafe fn get_device_type(routine: &CStr, s: *mut c_void, ty: *mut c_int) -> c_int {
    runtime::get(routine);
    let Some(sp) = space(s) else { return -1 };
    if ty.is_null() {
        fatal(routine, "type is NULL");
    }
    // SAFETY: checked non-null; writable by contract.
    unsafe { *ty = sp.device };
    0
}

/// # Safety
/// `caps` must be writable.
pub unsafe fn get_caps(routine: &CStr, s: *mut c_void, caps: *mut u64) -> c_int {
    runtime::get(routine);
    let Some(sp) = space(s) else { return -1 };
    if caps.is_null() {
        fatal(routine, "caps is NULL");
    }
    // SAFETY: checked non-null; writable by contract.
    unsafe { *caps = sp.caps };
    0
}

/// Bytes of each PE's record in the exchange, and what fits in it.
const RECORD: usize = 2048;

/// `shmem_space_create`: collective on the world team.
///
/// # Safety
/// `config` must be readable, `space_out` and `team_out` writable.
pub unsafe fn create(
    routine: &CStr,
    config: *const SpaceConfig,
    space_out: *mut *mut c_void,
    team_out: *mut Team,
) -> c_int {
    let rt = runtime::get(routine);
    if config.is_null() || space_out.is_null() || team_out.is_null() {
        fatal(routine, "config, space and team must not be NULL");
    }
    // SAFETY: checked non-null; readable by contract.
    let cfg = unsafe { &*config };
    let invalid = || {
        // SAFETY: checked non-null above.
        unsafe {
            *space_out = std::ptr::null_mut();
            *team_out = std::ptr::null();
        }
        1
    };
    // The same answer on every PE (the same config everywhere, the same library): no PE can
    // be left in a collective the others skipped.
    if cfg.device_type != DEVICE_CPU || cfg.size == 0 || cfg.flags != 0 {
        if cfg.device_type == DEVICE_GPU {
            crate::log::log(
                crate::log::INFO,
                "spaces",
                "no GPU symmetric heap: GPU spaces cannot be created",
            );
        }
        return invalid();
    }
    let size = cfg.size.div_ceil(1 << 16) << 16;
    let owned = match make_segment(routine, rt, size) {
        Ok(o) => o,
        Err(e) => fatal(routine, &e),
    };
    // The space-associated team: every PE reaches CPU memory, so it has the world's members.
    let mut team: Team = std::ptr::null();
    // SAFETY: the world handle is live; `team` is writable.
    unsafe {
        crate::teams::split_strided(
            routine,
            &rshmem_team_world,
            0,
            1,
            rt.n_pes,
            std::ptr::null(),
            0,
            &mut team,
        )
    };
    let ident = owned_ident(rt, owned.seg);
    let caps = CAP_RMA
        | CAP_COLLECTIVES
        | CAP_ATOMICS
        | CAP_WORLD_ACCESS
        | if rt.needs_progress { 0 } else { CAP_DIRECT_ACCESS }
        | if ident { CAP_IDENT_ADDR } else { 0 };
    let sp = Box::new(Space { device: DEVICE_CPU, caps, team, owned: Some(owned) });
    // SAFETY: checked non-null above.
    unsafe {
        *space_out = Box::into_raw(sp) as *mut c_void;
        *team_out = team;
    }
    0
}

/// Whether every PE's copy of segment `seg` starts at the same address.
fn owned_ident(rt: &Runtime, seg: u32) -> bool {
    let mine = rt.segs.local(seg).base as u64;
    (0..rt.n_pes as usize).all(|pe| rt.segs.peer(pe, seg).remote_base == mine)
}

/// Create, register, exchange and map a new symmetric segment of `size` bytes with a heap.
fn make_segment(routine: &CStr, rt: &Runtime, size: usize) -> Result<Owned, String> {
    let mut desc = SegmentDesc::default();
    // SAFETY: plugin ABI call with a valid out-pointer.
    if unsafe { (rt.sshmem.create)(size, std::ptr::null_mut(), &mut desc) } != 0 {
        return Err(format!("the sshmem component could not create a {size}-byte segment for the space"));
    }
    // SAFETY: the segment sshmem just created and mapped.
    unsafe { crate::placement::place("a space's segment", desc.base.cast(), desc.size) };
    // SAFETY: plugin ABI call over the segment just created.
    let heap = unsafe { (rt.memheap.create)(desc.base, desc.size) };
    if heap.is_null() {
        return Err("the memheap component could not manage the space's segment".into());
    }
    let seg = rt.segs.reserve().ok_or("no room for another symmetric segment (16 at most)")?;
    let mut rkey = vec![0u8; RECORD];
    let (mut rkey_len, mut reg) = (0usize, std::ptr::null_mut());
    // SAFETY: plugin ABI call; buffers valid for their capacities.
    let rc = unsafe {
        (rt.spml.mem_register)(
            desc.base,
            desc.size,
            desc.transport_memh,
            rkey.as_mut_ptr(),
            rkey.len(),
            &mut rkey_len,
            &mut reg,
        )
    };
    if rc != 0 {
        return Err("the spml could not register the space's segment".into());
    }
    let mut rec = (seg as u64).to_le_bytes().to_vec();
    rec.extend(crate::runtime::encode_segment(
        desc.base as u64,
        desc.size as u64,
        &desc.blob[..desc.blob_len],
        &rkey[..rkey_len],
    ));
    if rec.len() + 4 > RECORD {
        return Err(format!("the space's segment record needs {} bytes, more than {RECORD}", rec.len()));
    }
    let n = rt.n_pes as usize;
    let all = crate::heap::alloc_internal(rt, n * RECORD, 64).ok_or("no room in the symmetric heap")?;
    let mut mine = vec![0u8; RECORD];
    mine[..4].copy_from_slice(&(rec.len() as u32).to_le_bytes());
    mine[4..4 + rec.len()].copy_from_slice(&rec);
    let world = crate::coll::world(routine);
    world.collect(routine, all.cast(), mine.as_ptr().cast(), RECORD, true);
    let mut mapped = Vec::new();
    for pe in 0..n {
        // SAFETY: the fcollect filled `n` records of RECORD bytes.
        let r = unsafe { std::slice::from_raw_parts(all.add(pe * RECORD), RECORD) };
        let len = u32::from_le_bytes(r[..4].try_into().expect("4 bytes")) as usize;
        let body = r.get(4..4 + len).ok_or_else(|| format!("PE {pe}: malformed space record"))?;
        let their_seg = u64::from_le_bytes(body[..8].try_into().expect("8 bytes")) as u32;
        let (base, slen, blob, key) = crate::runtime::decode_segment(&body[8..])
            .ok_or_else(|| format!("PE {pe}: malformed space record"))?;
        if their_seg != seg || slen as usize != desc.size {
            return Err(format!(
                "PE {pe} made segment {their_seg} of {slen} bytes for this space, this PE segment {seg} of {} bytes: spaces must be created and destroyed in the same order with the same sizes on every PE",
                desc.size
            ));
        }
        // SAFETY: plugin ABI call with the peer's packed key.
        if unsafe { (rt.spml.add_segment)(pe as c_int, seg, base, slen as usize, key.as_ptr(), key.len()) }
            != 0
        {
            return Err(format!("the spml could not unpack PE {pe}'s key for the space"));
        }
        let at: *mut u8 = if pe == rt.my_pe as usize {
            desc.base as *mut u8
        } else if rt.local_map && rt.boot.is_local(pe as c_int) {
            let p = crate::runtime::map_peer(rt.sshmem, rt.spml, pe as c_int, seg, base, slen as usize, blob);
            if !p.is_null() {
                mapped.push(p);
            }
            p
        } else {
            std::ptr::null_mut()
        };
        rt.segs.set_peer(pe, seg, PeerSeg { remote_base: base, mapped: at });
    }
    rt.segs.publish(seg, desc.base as usize, desc.size);
    // Everyone has mapped everyone's segment: the names can go.
    world.barrier(routine);
    // SAFETY: plugin ABI calls on our own segment and on the exchange buffer.
    unsafe {
        (rt.sshmem.unlink)(&mut desc);
        (rt.memheap.free)(rt.heap, all.cast());
    }
    Ok(Owned { seg, desc: Mutex::new(desc), heap, lock: Mutex::new(()), spml_reg: reg, mapped })
}

/// `shmem_space_destroy`: collective on the space's team, which must have been destroyed.
///
/// # Safety
/// `s` must be SHMEM_SPACE_INVALID or a live space handle.
pub unsafe fn destroy(routine: &CStr, s: *mut c_void) -> c_int {
    let rt = runtime::get(routine);
    let Some(sp) = space(s) else { return 0 };
    let Some(owned) = &sp.owned else {
        fatal(routine, "the predefined spaces cannot be destroyed");
    };
    if crate::teams::is_live(sp.team) {
        return 1;
    }
    // Nobody may still use the memory (the space's team was the world).
    crate::coll::barrier_all(routine);
    rt.segs.remove(owned.seg);
    let mut desc = owned.desc.lock().unwrap_or_else(|e| e.into_inner());
    // SAFETY: plugin ABI calls releasing what `make_segment` made, now unused everywhere.
    unsafe {
        (rt.spml.mem_deregister)(owned.spml_reg);
        for &p in &owned.mapped {
            (rt.sshmem.detach)(p.cast(), desc.size);
        }
        (rt.memheap.destroy)(owned.heap);
        (rt.sshmem.destroy)(&mut *desc);
    }
    drop(desc);
    // SAFETY: a handle `create` made, destroyed once (by contract); nothing refers to it now.
    drop(unsafe { Box::from_raw(s as *mut Space) });
    0
}

/// Allocate from a space: the default space's heap or a created space's.
fn alloc(routine: &CStr, sp: &Space, size: usize, zero: bool) -> *mut c_void {
    let rt = runtime::get(routine);
    if size == 0 {
        return std::ptr::null_mut();
    }
    let p = match &sp.owned {
        None => crate::heap::alloc_internal(rt, size, 16).unwrap_or(std::ptr::null_mut()),
        Some(o) => {
            let _g = o.lock.lock().unwrap_or_else(|e| e.into_inner());
            // SAFETY: plugin ABI call on the space's heap.
            (unsafe { (rt.memheap.alloc)(o.heap, size, 16) }) as *mut u8
        }
    };
    if zero && !p.is_null() {
        // SAFETY: a fresh allocation of `size` bytes.
        unsafe { std::ptr::write_bytes(p, 0, size) };
    }
    crate::coll::barrier_all(routine);
    p.cast()
}

pub fn malloc(routine: &CStr, s: *mut c_void, size: usize) -> *mut c_void {
    match space(s) {
        Some(sp) => alloc(routine, sp, size, false),
        None => {
            runtime::get(routine);
            std::ptr::null_mut()
        }
    }
}

pub fn calloc(routine: &CStr, s: *mut c_void, count: usize, size: usize) -> *mut c_void {
    let Some(sp) = space(s) else {
        runtime::get(routine);
        return std::ptr::null_mut();
    };
    match count.checked_mul(size) {
        Some(n) => alloc(routine, sp, n, true),
        None => {
            runtime::get(routine);
            std::ptr::null_mut()
        }
    }
}

/// # Safety
/// `ptr` must be NULL or a block this space's allocation routines returned.
pub unsafe fn free(routine: &CStr, s: *mut c_void, ptr: *mut c_void) {
    let rt = runtime::get(routine);
    let Some(sp) = space(s) else { return };
    if ptr.is_null() {
        return;
    }
    let Some(o) = &sp.owned else {
        // SAFETY: forwarded (the default space is the heap of shmem_malloc).
        return unsafe { crate::heap::free(routine, ptr) };
    };
    let inside = rt.segs.lookup(ptr as usize).is_some_and(|(seg, _)| seg == o.seg);
    // SAFETY: plugin ABI call; only looks the pointer up.
    if !inside || unsafe { (rt.memheap.usable_size)(o.heap, ptr) } == 0 {
        fatal(routine, &format!("ptr {ptr:p} was not allocated from this space (or was already freed)"));
    }
    crate::coll::barrier_all(routine);
    let _g = o.lock.lock().unwrap_or_else(|e| e.into_inner());
    // SAFETY: plugin ABI call on a live allocation of this space.
    unsafe { (rt.memheap.free)(o.heap, ptr) };
}

/// `shmem_malloc_with_hints`: the hints describe remote atomics and signals; every access path
/// already suits them (see docs/architecture.md), so this is `shmem_malloc` after checking them.
pub fn malloc_with_hints(routine: &CStr, size: usize, hints: c_long) -> *mut c_void {
    let rt = runtime::get(routine);
    if hints & !MALLOC_HINTS != 0 && rt.debug {
        fatal(routine, &format!("hints {hints:#x} has bits that are not SHMEM_MALLOC_* hints"));
    }
    crate::heap::malloc(routine, size)
}
