//! Memory spaces (the user's two proposals, `shared/seeds/memory-spaces-*`): the predefined
//! handles and teams, created spaces with their own symmetric heap, space-aware allocation,
//! queries, and `shmem_malloc_with_hints`.
//!
//! The default space is the CPU space unless `SHMEM_DEFAULT_SPACE=GPU`: the symmetric heap
//! made at init (`SHMEM_SPACE_DEFAULT` and `SHMEM_SPACE_CPU` are the same handle, its team is
//! the world). The CPU space is always enabled:
//! read literally, "SHMEM_ENABLE_CPU_SPACE unset disables the CPU heap" together with "both
//! disabled fails init" would make every program that does not know the variables fail. The
//! memheap framework is resolved per device type (memheap "cuda" serves GPU memory where a CUDA
//! driver and device exist). Under `SHMEM_ENABLE_GPU_SPACE`, `SHMEM_SPACE_GPU` and
//! `SHMEM_TEAM_GPU` are a GPU space made at the end of init; where none can be made they are
//! invalid handles and the logs say why (no GPU memheap, with each memheap's reason, or the
//! space's own failure). A GPU space offers RMA, atomics and collectives (`crate::ops::device`;
//! collectives through a host shadow segment, unless `SHMEM_GPU_COLLECTIVES=0`). Under
//! `SHMEM_DEFAULT_SPACE=GPU` the GPU space is made whether enabled or not, its team is the
//! world team, it becomes `SHMEM_SPACE_DEFAULT` and the heap of `shmem_malloc`
//! (`Runtime::user_heap`), and init fails on every PE when it cannot be made; the CPU space
//! stays the init heap, for `shmem_space_malloc` and the library's own data.
//!
//! A created CPU space is one more symmetric segment, made exactly like the heap at init: the
//! sshmem component creates it, the spml registers it, every PE learns every other PE's record
//! (base, length, attach blob, packed key) through an fcollect on the world team, maps the ones
//! on its node, and the segment table publishes it, so RMA, atomics and collectives find it by
//! address like any symmetric memory.

mod segment;

use crate::error::{fail, fatal, ShmemError};
use crate::ops::handles::{rshmem_team_world, Team, TeamObj};
use crate::plugin::memheaps::DeviceMemory;
use crate::symm::runtime::{self, Runtime, SpaceList};
use std::ffi::{c_int, c_long, c_void, CStr};
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
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

pub struct Space {
    device: c_int,
    caps: u64,
    /// The space-associated team.
    team: Team,
    /// Teams whose `space` tag is this are the space's team and its descendants (0: the CPU
    /// space, the init heap).
    id: u64,
    /// SHMEM_SPACE_CPU or SHMEM_SPACE_GPU: never destroyed.
    predefined: bool,
    /// False once destroyed: the handle stays recognisable, so later use is a clear error.
    alive: AtomicBool,
    /// A created space's segment and heap (None for the default space, whose heap is the
    /// init heap); the lock also serialises the heap.
    owned: Mutex<Option<segment::Owned>>,
}

// A `Space` is listed in the runtime's spaces (`Runtime::spaces`) and never freed (a few
// dozen bytes each), so a stale handle is recognised rather than dereferenced.

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
/// `SHMEM_DEVICE_TEAM_SHARED` (shmemg.h; `SHMEM_DEVICE_TEAM_WORLD` is `SHMEM_TEAM_GPU`).
#[no_mangle]
pub static rshmem_device_team_shared: AtomicPtr<TeamObj> = AtomicPtr::new(std::ptr::null_mut());

/// Validate the space variables before anything is set up.
pub fn check_config() -> Result<(), String> {
    match crate::config::raw("SHMEM_DEFAULT_SPACE").trim().to_ascii_uppercase().as_str() {
        "" | "CPU" => Ok(()),
        "GPU" if !crate::config::get_bool("SHMEM_GPU_COLLECTIVES")? => Err("SHMEM_DEFAULT_SPACE=GPU with SHMEM_GPU_COLLECTIVES=0: the default space must take collectives, which a GPU space without its host shadow does not".into()),
        "GPU" => Ok(()),
        other => Err(format!("SHMEM_DEFAULT_SPACE={other} is not CPU or GPU")),
    }
}

/// `SHMEM_SPACE_GPU`: the GPU space, or NULL where none was made.
pub fn gpu_space() -> *mut c_void {
    rshmem_space_gpu.load(Ordering::Acquire)
}

/// Whether `SHMEM_DEFAULT_SPACE` asks for the GPU space (checked by [`check_config`]).
pub fn gpu_is_default() -> bool {
    crate::config::raw("SHMEM_DEFAULT_SPACE").trim().eq_ignore_ascii_case("GPU")
}

/// Set the predefined handles (after the world team exists).
pub fn init(rt: &Runtime) {
    let all_mapped = !rt.needs_progress();
    let default = Box::leak(Box::new(Space {
        device: DEVICE_CPU,
        caps: CAP_RMA
            | CAP_COLLECTIVES
            | CAP_ATOMICS
            | CAP_WORLD_ACCESS
            | if all_mapped { CAP_DIRECT_ACCESS } else { 0 },
        team: &rshmem_team_world,
        id: 0,
        predefined: true,
        alive: AtomicBool::new(true),
        owned: Mutex::new(None),
    })) as *mut Space as *mut c_void;
    rshmem_space_default.store(default, Ordering::Release);
    rshmem_space_cpu.store(default, Ordering::Release);
    rshmem_team_cpu.store(&rshmem_team_world as *const TeamObj as *mut TeamObj, Ordering::Release);
    // Two symmetric words for the agreements of create and destroy (same order on every PE).
    let words = rt
        .alloc(16, 16)
        .unwrap_or_else(|| fail(c"shmem_init", ShmemError::NoRoom { what: "the space agreement words" }));
    let _ = rt.spaces.agree.set(words as usize);
}

/// Make `SHMEM_SPACE_GPU` when `SHMEM_ENABLE_GPU_SPACE` or `SHMEM_DEFAULT_SPACE=GPU` asks for
/// it: collective over the world, so init calls it once every PE has its teams ready (after
/// init's closing fence). As the default space it takes `shmem_malloc`, its team is the world
/// team, and a GPU space that cannot be made ends the job (the proposal: init fails).
/// `host_init`: `shmem_init_thread` asked for the GPU heap (`SHMEM_DEVICE_HOST_INIT`,
/// `crate::ops::gpu_aux`), which makes it too.
pub fn init_gpu(rt: &Runtime, host_init: bool) {
    let default = gpu_is_default();
    if crate::config::raw("SHMEM_ENABLE_GPU_SPACE").is_empty() && !default && !host_init {
        return;
    }
    // The same on every PE: the variables were compared at init, and a GPU memheap that some
    // PE lacks makes `make` fail on all.
    let gpu = rt.gpu.as_ref();
    // As the default space, SHMEM_GPU_SYMMETRIC_SIZE takes precedence over SHMEM_SYMMETRIC_SIZE.
    let unset = |v: &str| crate::config::source(v) == crate::config::Source::Default;
    let var = if !unset("SHMEM_DEVICE_SYMMETRIC_SIZE") {
        "SHMEM_DEVICE_SYMMETRIC_SIZE"
    } else if default && unset("SHMEM_GPU_SYMMETRIC_SIZE") && !unset("SHMEM_SYMMETRIC_SIZE") {
        "SHMEM_SYMMETRIC_SIZE"
    } else {
        "SHMEM_GPU_SYMMETRIC_SIZE"
    };
    let size = crate::config::get_size(var).unwrap_or(256 << 20);
    let made = if agree_any(rt, c"shmem_init", gpu.is_none()) {
        None
    } else {
        make(c"shmem_init", rt, gpu, size, if default { Kind::Default } else { Kind::Predefined })
    };
    let why = || match gpu {
        Some(_) => format!(
            "a GPU space of {size} bytes per PE ({var}) could not be made (the reason is logged above)"
        ),
        None => rt.gpu_note.clone(),
    };
    match made {
        Some(sp) => {
            rshmem_space_gpu.store(sp as *const Space as *mut c_void, Ordering::Release);
            rshmem_team_gpu.store(sp.team as *mut TeamObj, Ordering::Release);
            init_device_shared(rt, sp);
            crate::ops::gpu_share::check(c"shmem_init", rt);
            let kernels = crate::ops::device::probe_reduce(rt);
            crate::ops::device::set_reduce_kernels(rt, !agree_any(rt, c"shmem_init", !kernels));
            if default {
                if sp.caps & CAP_COLLECTIVES == 0 {
                    fatal(c"shmem_init", "SHMEM_DEFAULT_SPACE=GPU, but the GPU space has no collectives (its host shadow could not be made, as logged above): the default space must take them");
                }
                make_default(rt, sp, size);
            }
        }
        None if default => fatal(
            c"shmem_init",
            &format!("SHMEM_DEFAULT_SPACE=GPU, but {}: the default space must exist on every PE", why()),
        ),
        None if rt.my_pe == 0 => {
            let asked = if host_init {
                "shmem_init_thread asked for SHMEM_DEVICE_HOST_INIT"
            } else {
                "SHMEM_ENABLE_GPU_SPACE is set"
            };
            crate::log::log(
                crate::log::WARN,
                "spaces",
                &format!(
                    "{asked}, but {}: SHMEM_SPACE_GPU is SHMEM_SPACE_INVALID and there is no GPU heap",
                    why()
                ),
            )
        }
        None => {}
    }
}

/// `SHMEM_DEVICE_TEAM_SHARED` (the GPU auxiliary specification, shmemg.h): the PEs whose GPU
/// heap this PE maps, which `shmem_ptr` reaches on every object of the GPU heap. That is
/// `SHMEM_TEAM_SHARED` where every PE maps the GPU space of each PE of its shared team (CUDA IPC
/// between the PEs of a host), agreed by all PEs; otherwise SHMEM_TEAM_INVALID, with a warning.
/// Collective over the world, right after the GPU space is made.
fn init_device_shared(rt: &Runtime, sp: &Space) {
    let routine = c"shmem_init";
    let seg = sp.owned.lock().unwrap_or_else(|e| e.into_inner()).as_ref().map(|o| o.seg);
    let shared = &crate::ops::handles::rshmem_team_shared as *const TeamObj as *mut TeamObj;
    let mine = match (seg, crate::ops::teams::state(routine, shared)) {
        (Some(seg), Some(t)) => {
            (0..t.desc.size).all(|i| !rt.segs.device_map(t.pe_of(i) as usize, seg).is_null())
        }
        _ => false,
    };
    let all = !agree_any(rt, routine, !mine);
    rshmem_device_team_shared.store(if all { shared } else { std::ptr::null_mut() }, Ordering::Release);
    if !all && rt.my_pe == 0 {
        crate::log::log(
            crate::log::WARN,
            "spaces",
            "a PE does not map the GPU heap of every PE of its SHMEM_TEAM_SHARED (SHMEM_LOCAL_MAP=0, or CUDA IPC failed): SHMEM_DEVICE_TEAM_SHARED is SHMEM_TEAM_INVALID",
        );
    }
}

/// The alignment a GPU default space's blocks may ask for: `cuMemAlloc`'s guarantee for the
/// segment's base on every PE, so aligned offsets are aligned addresses.
const GPU_HEAP_ALIGN: usize = 256;

/// Make GPU space `sp` the default: `SHMEM_SPACE_DEFAULT`, and the heap of `shmem_malloc`
/// (`crate::ops::heap`), which reaches it through these functions under the space's lock.
fn make_default(rt: &Runtime, sp: &'static Space, size: usize) {
    fn with<R>(f: impl FnOnce(&segment::Owned) -> R) -> R {
        // SAFETY: set below to a Space that is never freed, before the program can allocate.
        let sp = unsafe { &*(rshmem_space_default.load(Ordering::Acquire) as *const Space) };
        let owned = sp.owned.lock().unwrap_or_else(|e| e.into_inner());
        f(owned.as_ref().expect("the predefined GPU space keeps its segment"))
    }
    let heap = crate::symm::runtime::UserHeap {
        alloc: |size, align| with(|o| o.alloc(size, align)),
        free: |p| {
            // SAFETY: the user heap's contract (a live block nothing uses any more) is this one's.
            with(|o| unsafe { o.free(p) })
        },
        realloc: |p, size| {
            // SAFETY: the user heap's contract (a live block nothing else uses) is this one's.
            with(|o| unsafe { o.realloc(p, size) })
        },
        usable: |p| with(|o| o.usable(p)),
        device: true,
        align: GPU_HEAP_ALIGN,
        size,
    };
    rshmem_space_default.store(sp as *const Space as *mut c_void, Ordering::Release);
    let _ = rt.user_heap.set(heap);
}

/// Collective over the world: whether any PE passed `mine = true`. Every PE gets the same
/// answer, which is what lets a routine that fails on one PE return nonzero on all.
pub(crate) fn agree_any(rt: &Runtime, routine: &'static CStr, mine: bool) -> bool {
    let w = *rt.spaces.agree.get().expect("set at init") as *mut u64;
    // SAFETY: two symmetric u64 words set aside at init; the reduction below is the only user
    // and world collectives are not called concurrently (a spec rule).
    unsafe { w.write_volatile(u64::from(mine)) };
    // SAFETY: as above: two symmetric words, one the source and one the result.
    unsafe {
        crate::ops::coll::world(routine).reduce(
            routine,
            w.wrapping_add(1).cast(),
            w.cast(),
            1,
            rshmem_plugin_api::DT_U64,
            rshmem_plugin_api::OP_MAX,
            rshmem_plugin_api::REDUCE_ALL,
        )
    };
    // SAFETY: as above; the reduction has written it.
    unsafe { w.wrapping_add(1).read_volatile() != 0 }
}

/// The space behind a handle: None for SHMEM_SPACE_INVALID; a clear error, ending the job, for
/// a destroyed space or a pointer that is no space handle. Handles come from C.
fn space(rt: &Runtime, routine: &'static CStr, handle: *mut c_void) -> Option<&'static Space> {
    let predefined = [&rshmem_space_default, &rshmem_space_cpu].map(|h| h.load(Ordering::Acquire));
    resolve(&rt.spaces, &predefined, handle).unwrap_or_else(|e| crate::error::fail(routine, e))
}

/// The space behind `handle`: None for SHMEM_SPACE_INVALID (NULL); an error for a handle that
/// is neither one of the `predefined` nor listed as made, or a destroyed space. Only a listed
/// handle is dereferenced.
fn resolve(
    spaces: &SpaceList,
    predefined: &[*mut c_void],
    handle: *mut c_void,
) -> Result<Option<&'static Space>, ShmemError> {
    if handle.is_null() {
        return Ok(None);
    }
    let addr = handle as usize;
    let known =
        predefined.contains(&handle) || spaces.made.lock().unwrap_or_else(|e| e.into_inner()).contains(&addr);
    if !known {
        return Err(ShmemError::NotASpace { addr });
    }
    // SAFETY: known handles point at Space values that are never freed.
    let sp = unsafe { &*(handle as *const Space) };
    if !sp.alive.load(Ordering::Acquire) {
        return Err(ShmemError::SpaceDestroyed { addr });
    }
    Ok(Some(sp))
}

pub fn is_available(routine: &'static CStr, s: *mut c_void) -> c_int {
    let rt = runtime::get(routine);
    c_int::from(space(rt, routine, s).is_none())
}

pub fn team_is_valid(routine: &'static CStr, team: Team) -> c_int {
    runtime::get(routine);
    c_int::from(crate::ops::teams::is_live(team))
}

/// # Safety
/// `team` must be writable.
pub unsafe fn get_team(routine: &'static CStr, s: *mut c_void, team: *mut Team) -> c_int {
    let rt = runtime::get(routine);
    let Some(sp) = space(rt, routine, s) else { return -1 };
    if team.is_null() {
        fail(routine, ShmemError::NullArg { what: "team" });
    }
    // SAFETY: checked non-null; writable by contract.
    unsafe { *team = sp.team };
    0
}

/// # Safety
/// `ty` must be writable.
pub unsafe fn get_device_type(routine: &'static CStr, s: *mut c_void, ty: *mut c_int) -> c_int {
    let rt = runtime::get(routine);
    let Some(sp) = space(rt, routine, s) else { return -1 };
    if ty.is_null() {
        fail(routine, ShmemError::NullArg { what: "type" });
    }
    // SAFETY: checked non-null; writable by contract.
    unsafe { *ty = sp.device };
    0
}

/// # Safety
/// `caps` must be writable.
pub unsafe fn get_caps(routine: &'static CStr, s: *mut c_void, caps: *mut u64) -> c_int {
    let rt = runtime::get(routine);
    let Some(sp) = space(rt, routine, s) else { return -1 };
    if caps.is_null() {
        fail(routine, ShmemError::NullArg { what: "caps" });
    }
    // SAFETY: checked non-null; writable by contract.
    unsafe { *caps = sp.caps };
    0
}

/// `shmem_space_create`: collective on the world team. Whatever fails on one PE (a size the
/// machine cannot back, no segment slot left, a component refusing) makes it return nonzero on
/// every PE, with the reason logged where it happened.
///
/// # Safety
/// `config` must be readable, `space_out` and `team_out` writable.
pub unsafe fn create(
    routine: &'static CStr,
    config: *const SpaceConfig,
    space_out: *mut *mut c_void,
    team_out: *mut Team,
) -> c_int {
    let rt = runtime::get(routine);
    for (what, null) in
        [("config", config.is_null()), ("space", space_out.is_null()), ("team", team_out.is_null())]
    {
        if null {
            fail(routine, ShmemError::NullArg { what });
        }
    }
    // SAFETY: checked non-null; readable by contract.
    let cfg = unsafe { &*config };
    // SAFETY: checked non-null above; the invalid handles until success.
    unsafe {
        *space_out = std::ptr::null_mut();
        *team_out = std::ptr::null();
    }
    // The same answer on every PE (the same config everywhere, the same library): no PE can
    // be left in a collective the others skipped.
    let device = match cfg.device_type {
        DEVICE_CPU => None,
        DEVICE_GPU if rt.gpu.is_some() => rt.gpu.as_ref(),
        DEVICE_GPU => {
            if rt.my_pe == 0 {
                crate::log::log(
                    crate::log::INFO,
                    "spaces",
                    &format!("GPU spaces cannot be created: {}", rt.gpu_note),
                );
            }
            return 1;
        }
        _ => return 1,
    };
    if cfg.size == 0 || cfg.flags != 0 {
        return 1;
    }
    let Some(sp) = make(routine, rt, device, cfg.size, Kind::Created) else { return 1 };
    // SAFETY: checked non-null above.
    unsafe {
        *space_out = sp as *const Space as *mut c_void;
        *team_out = sp.team;
    }
    0
}

/// What a space is made as.
#[derive(Copy, Clone, PartialEq, Eq)]
enum Kind {
    /// By `shmem_space_create`, with a team of its own split from the world.
    Created,
    /// `SHMEM_SPACE_GPU`, made at init and never destroyed, with a team of its own.
    Predefined,
    /// `SHMEM_SPACE_GPU` as the default space: its team is the world team (the proposal).
    Default,
}

/// Make a space of `size` bytes per PE of `device`'s memory (host memory for None): collective
/// over the world; None on every PE when any PE failed (the reason logged where it happened).
fn make(
    routine: &'static CStr,
    rt: &Runtime,
    device: Option<&DeviceMemory>,
    size: usize,
    kind: Kind,
) -> Option<&'static Space> {
    let made = segment::prepare(rt, size, device);
    let mut owned = connect_agreed(routine, rt, made, "; the space is not created (nonzero on every PE)")?;
    if !owned.reachable {
        // Agreed: every PE gathered the same flags.
        if rt.my_pe == 0 {
            crate::log::log(
                crate::log::WARN,
                &routine.to_string_lossy(),
                &format!(
                    "some PE cannot map every peer's {} memory (they are on other hosts, or SHMEM_LOCAL_MAP=0), and spml {} neither moves device memory nor, on every PE, offers transfers that the target's CPU copies (spml ucx: SHMEM_MCA_spml_ucx_via_target), or it opened no transport between the PEs of this host (spml ucx: SHMEM_MCA_spml_ucx_one_host_tcp); the space is not created (nonzero on every PE)",
                    crate::plugin::memheaps::device_name(device.map_or(0, |d| d.device)),
                    rt.selected.first().and_then(|s| s.1.first()).map_or("", String::as_str)
                ),
            );
        }
        segment::release(routine, rt, owned);
        return None;
    }
    // Collectives on device memory run on a host shadow (`crate::ops::device::Shadow`).
    let collectives = device.is_none()
        || crate::config::get_bool("SHMEM_GPU_COLLECTIVES").unwrap_or(true)
            && make_shadow(routine, rt, &mut owned);
    // Load/store access only when every PE maps every peer's copy (agreed by `connect`), and
    // never for device memory, which the CPU cannot load or store.
    let direct = owned.all_mapped && device.is_none();
    let ident = owned.ident;
    // The space-associated team: every PE reaches the space, so it has the world's members
    // (the world team itself for the default space).
    let mut team: Team = &rshmem_team_world;
    let rc = if kind == Kind::Default {
        0
    } else {
        team = std::ptr::null();
        // SAFETY: the world handle is live; `team` is writable.
        unsafe {
            crate::ops::teams::split_strided(
                routine,
                &rshmem_team_world,
                0,
                1,
                rt.n_pes,
                std::ptr::null(),
                0,
                &mut team,
            )
        }
    };
    if rc != 0 {
        // No team slot left: the same on every PE (the slot agreement is collective).
        segment::release(routine, rt, owned);
        return None;
    }
    let id = rt.spaces.next_id.fetch_add(1, Ordering::Relaxed);
    if kind != Kind::Default {
        if let Some(t) = crate::ops::teams::state(routine, team) {
            t.space.store(id, Ordering::Release);
        }
    }
    // Device memory: RMA, AMOs and collectives through `crate::ops::device`.
    let caps = CAP_RMA
        | CAP_ATOMICS
        | CAP_WORLD_ACCESS
        | if collectives { CAP_COLLECTIVES } else { 0 }
        | if direct { CAP_DIRECT_ACCESS } else { 0 }
        | if ident { CAP_IDENT_ADDR } else { 0 };
    owned.record_heap(rt);
    let sp: &'static Space = Box::leak(Box::new(Space {
        device: if device.is_some() { DEVICE_GPU } else { DEVICE_CPU },
        caps,
        team,
        id,
        predefined: kind != Kind::Created,
        alive: AtomicBool::new(true),
        owned: Mutex::new(Some(owned)),
    }));
    rt.spaces.made.lock().unwrap_or_else(|e| e.into_inner()).push(sp as *const Space as usize);
    Some(sp)
}

/// Give device segment `owned` its host shadow, of its size plus the words variable-size
/// collects gather their sizes in: collective over the world; false on every PE when some PE
/// could not make it (the space is then made without collectives, with a warning).
fn make_shadow(routine: &'static CStr, rt: &Runtime, owned: &mut segment::Owned) -> bool {
    let slots = crate::ops::team::MAX_TEAMS + crate::ops::team::ACTIVE_SET_SLOTS + 1;
    let made = match crate::ops::device::shadow_len(owned.len(), rt.n_pes as usize, slots) {
        Some(len) => segment::prepare(rt, len, None),
        None => Err(format!("a host shadow for {} bytes per PE cannot be represented", owned.len())),
    };
    let then = " (a GPU space's host shadow, for collectives); the space is made without SHMEM_SPACE_CAP_COLLECTIVES on every PE";
    match connect_agreed(routine, rt, made, then) {
        Some(shadow) => {
            owned.set_shadow(rt, shadow);
            true
        }
        None => false,
    }
}

/// Connect the segment every PE prepared (collective over the world), or None on every PE
/// when some PE could not prepare it: its reason is logged there, followed by `then`.
fn connect_agreed(
    routine: &'static CStr,
    rt: &Runtime,
    made: Result<segment::Prepared, String>,
    then: &str,
) -> Option<segment::Owned> {
    if agree_any(rt, routine, made.is_err()) {
        match made {
            Ok(p) => segment::discard(rt, p),
            Err(why) => {
                crate::log::log(crate::log::WARN, &routine.to_string_lossy(), &format!("{why}{then}"))
            }
        }
        return None;
    }
    match segment::connect(routine, rt, made.expect("agreed: made everywhere")) {
        Ok(o) => Some(o),
        Err(e) => fatal(routine, &e),
    }
}

/// `shmem_space_destroy`: collective on the space's team. Refuses (nonzero, the space intact)
/// while the space's team or any team split from it exists on any PE.
///
/// # Safety
/// `s` must be SHMEM_SPACE_INVALID or a space handle.
pub unsafe fn destroy(routine: &'static CStr, s: *mut c_void) -> c_int {
    let rt = runtime::get(routine);
    let Some(sp) = space(rt, routine, s) else { return 0 };
    if sp.predefined {
        fail(routine, ShmemError::CannotDestroy { what: "the predefined spaces" });
    }
    // Teams exist per member: one PE may hold a sub-team the others do not, so agree.
    let here = crate::ops::teams::live_in_space(sp.id);
    if agree_any(rt, routine, here > 0) {
        if here > 0 {
            crate::log::log(
                crate::log::INFO,
                &routine.to_string_lossy(),
                &format!("{here} team(s) made from the space's team still exist here: destroy them first; the space is kept"),
            );
        }
        return 1;
    }
    // Nobody may still use the memory (the space's team was the world).
    // SAFETY: the default context is always live.
    unsafe { crate::ops::ctx::quiet(routine, crate::ops::ctx::default()) };
    crate::ops::coll::barrier_all(routine);
    let owned = sp.owned.lock().unwrap_or_else(|e| e.into_inner()).take();
    sp.alive.store(false, Ordering::Release);
    if let Some(o) = owned {
        segment::release(routine, rt, o);
    }
    0
}

/// At the last finalize: give back the device memory of every GPU space still alive (the predefined
/// one, and created ones the program did not destroy), which the process would otherwise hold
/// until it exits, where a program may go on using its GPU. Host segments stay, as the init
/// heap does (their pages go with the process). Peers' mappings are detached first, and
/// `fence` waits until every PE has detached before any PE frees its own copy: CUDA forbids
/// freeing memory another process still has open by IPC handle. Spaces are made and destroyed
/// collectively, so every PE has the same ones and either every PE fences or none does.
/// Without `free` (the implicit finalize at exit) it only fences, so that PEs finalizing
/// either way still meet in the same number of fences.
///
/// With `host_too` (a finalize after which the library may be initialized again) it releases
/// the created CPU spaces as well, and the predefined GPU space is made anew at the next
/// initialization: that one then starts with the spaces the first one had.
pub fn release_at_finalize(
    routine: &'static CStr,
    rt: &Runtime,
    free: bool,
    host_too: bool,
    fence: impl FnOnce(),
) {
    // The next initialization judges the GPUs' sharing and kernels again.
    crate::ops::device::set_shared_without_mps(rt, false);
    crate::ops::device::set_reduce_kernels(rt, false);
    let handles = rt.spaces.made.lock().unwrap_or_else(|e| e.into_inner()).clone();
    if host_too {
        // Invalid until the next initialization makes the GPU space again.
        rshmem_space_gpu.store(std::ptr::null_mut(), Ordering::Release);
        rshmem_team_gpu.store(std::ptr::null_mut(), Ordering::Release);
        rshmem_device_team_shared.store(std::ptr::null_mut(), Ordering::Release);
    }
    let mut owned: Vec<segment::Owned> = handles
        .into_iter()
        .filter_map(|h| {
            // SAFETY: the runtime's list holds pointers to Space values that are never freed.
            let sp = unsafe { &*(h as *const Space) };
            if (sp.device == DEVICE_CPU && !host_too) || !sp.alive.swap(false, Ordering::AcqRel) {
                return None;
            }
            sp.owned.lock().unwrap_or_else(|e| e.into_inner()).take()
        })
        .collect();
    if owned.is_empty() {
        return;
    }
    if !free {
        drop(owned); // no driver call: the process's exit gives the memory back
        fence();
        return;
    }
    for o in &mut owned {
        o.detach_peers();
    }
    // Only device memory needs the fence (host memory outlives a peer's mapping by itself).
    // Fencing exactly when a GPU space is alive keeps the count the same on PEs that finalize
    // with `host_too` and PEs that finalize at exit, which release GPU spaces only.
    if owned.iter().any(segment::Owned::is_device) {
        fence();
    }
    for o in owned {
        segment::release(routine, rt, o);
    }
}

/// Allocate from a space: the default space's heap or a created space's.
fn alloc(routine: &'static CStr, sp: &Space, size: usize, align: usize, zero: bool) -> *mut c_void {
    let rt = runtime::get(routine);
    if size == 0 {
        return std::ptr::null_mut();
    }
    let (p, device) = match &*sp.owned.lock().unwrap_or_else(|e| e.into_inner()) {
        None => (rt.alloc_user(size, align).unwrap_or(std::ptr::null_mut()), false),
        Some(o) => (o.alloc(size, align), o.is_device()),
    };
    if zero && !p.is_null() {
        if device {
            // SAFETY: a fresh block of `size` bytes of the space's device heap.
            unsafe { crate::ops::device::zero(rt, routine, p, size) };
        } else {
            // SAFETY: a fresh allocation of `size` bytes.
            unsafe { std::ptr::write_bytes(p, 0, size) };
        }
    }
    crate::ops::coll::barrier_all(routine);
    p.cast()
}

pub fn malloc(routine: &'static CStr, s: *mut c_void, size: usize) -> *mut c_void {
    let rt = runtime::get(routine);
    match space(rt, routine, s) {
        Some(sp) => alloc(routine, sp, size, 16, false),
        None => std::ptr::null_mut(),
    }
}

/// An allocation of `size` bytes aligned to `align` (a power of two, checked by the caller).
pub fn align(routine: &'static CStr, s: *mut c_void, align: usize, size: usize) -> *mut c_void {
    let rt = runtime::get(routine);
    match space(rt, routine, s) {
        Some(sp) => alloc(routine, sp, size, align.max(16), false),
        None => std::ptr::null_mut(),
    }
}

pub fn calloc(routine: &'static CStr, s: *mut c_void, count: usize, size: usize) -> *mut c_void {
    let rt = runtime::get(routine);
    let Some(sp) = space(rt, routine, s) else { return std::ptr::null_mut() };
    match count.checked_mul(size) {
        Some(n) => alloc(routine, sp, n, 16, true),
        None => std::ptr::null_mut(),
    }
}

/// # Safety
/// `ptr` must be NULL or a block this space's allocation routines returned.
pub unsafe fn free(routine: &'static CStr, s: *mut c_void, ptr: *mut c_void) {
    let rt = runtime::get(routine);
    let Some(sp) = space(rt, routine, s) else { return };
    if ptr.is_null() {
        return;
    }
    if sp.id == 0 && rt.user_heap.get().is_some() {
        // SAFETY: forwarded (the CPU space's heap is the init heap, not shmem_malloc's).
        return unsafe { crate::ops::heap::free_in_init_heap(routine, ptr) };
    }
    if sp.id == 0 {
        // SAFETY: forwarded (the CPU space is the default space: the heap of shmem_malloc).
        return unsafe { crate::ops::heap::free(routine, ptr) };
    }
    let guard = sp.owned.lock().unwrap_or_else(|e| e.into_inner());
    let o = guard.as_ref().expect("a live created space owns its segment");
    if !o.owns(rt, ptr) {
        fail(routine, ShmemError::NotFromSpace { addr: ptr as usize });
    }
    drop(guard);
    crate::ops::coll::barrier_all(routine);
    if let Some(o) = &*sp.owned.lock().unwrap_or_else(|e| e.into_inner()) {
        // SAFETY: a live block of this space (checked by `owns`), unused everywhere (the barrier).
        unsafe { o.free(ptr) };
    }
}

/// `shmem_malloc_with_hints`. Both defined hints say remote PEs will update the block with
/// atomics or signals, and what hurts such words most on a host is false sharing with data
/// the owner writes nearby: a hinted block gets cache lines of its own
/// ([`crate::ops::heap::malloc_isolated`]). The choice depends only on the arguments, which the spec
/// requires to be equal on every PE, so the heap stays symmetric. Bits that are no defined
/// hint are ignored with a warning, once per process: the spec says hints only optimize and
/// the call otherwise behaves as `shmem_malloc`, and public test suites pass such bits.
pub fn malloc_with_hints(routine: &'static CStr, size: usize, hints: c_long) -> *mut c_void {
    static WARNED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    runtime::get(routine);
    if hints & !MALLOC_HINTS != 0 && !WARNED.swap(true, std::sync::atomic::Ordering::Relaxed) {
        crate::log::log(
            crate::log::WARN,
            &routine.to_string_lossy(),
            &format!(
                "hints {hints:#x} has bits that are no SHMEM_MALLOC_* hint (defined: SHMEM_MALLOC_ATOMICS_REMOTE 0x1, SHMEM_MALLOC_SIGNAL_REMOTE 0x2); they are ignored (said once)"
            ),
        );
    }
    let hints = hints & MALLOC_HINTS;
    if hints == 0 {
        crate::ops::heap::malloc(routine, size)
    } else {
        crate::ops::heap::malloc_isolated(routine, size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaked(alive: bool) -> *mut c_void {
        let sp = Box::leak(Box::new(Space {
            device: DEVICE_CPU,
            caps: 0,
            team: std::ptr::null(),
            id: 7,
            predefined: false,
            alive: AtomicBool::new(alive),
            owned: Mutex::new(None),
        }));
        sp as *mut Space as *mut c_void
    }

    #[test]
    fn a_handle_is_resolved_only_when_listed_and_alive() {
        let spaces = SpaceList::new();
        let (live, dead, predefined) = (leaked(true), leaked(false), leaked(true));
        spaces.made.lock().unwrap().extend([live as usize, dead as usize]);
        let cpu = [predefined];
        assert!(matches!(resolve(&spaces, &cpu, std::ptr::null_mut()), Ok(None)), "SHMEM_SPACE_INVALID");
        assert_eq!(resolve(&spaces, &cpu, live).unwrap().map(|s| s.id), Some(7));
        assert!(resolve(&spaces, &cpu, predefined).unwrap().is_some(), "a predefined space");
        let e = resolve(&spaces, &cpu, dead).err();
        assert_eq!(e, Some(ShmemError::SpaceDestroyed { addr: dead as usize }));
        assert!(e.unwrap().to_string().contains("was destroyed by shmem_space_destroy"));
        // Never listed: refused without being read (an address of nothing at all).
        let stray = 0x10 as *mut c_void;
        let e = resolve(&spaces, &cpu, stray).err();
        assert_eq!(e, Some(ShmemError::NotASpace { addr: 0x10 }));
        assert_eq!(e.unwrap().to_string(), "space 0x10 is not a memory space handle");
    }

    #[test]
    fn created_spaces_are_numbered_from_one() {
        let spaces = SpaceList::new();
        assert_eq!(spaces.next_id.fetch_add(1, Ordering::Relaxed), 1, "0 is the CPU space's");
        assert!(spaces.agree.get().is_none() && spaces.made.lock().unwrap().is_empty());
    }
}
