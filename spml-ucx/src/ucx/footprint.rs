//! The spml's part of the per-peer memory report (`SpmlOps::peer_memory`, the core's
//! `SHMEM_PEER_MEMORY`): once armed, the private memory that making each endpoint and
//! unpacking each key adds, by where the peer is. Only the cold paths that make a peer's state
//! look here (`Channel::make_ep`, `Channel::unpack`), and only when armed.

use rshmem_plugin_api::footprint;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;

static ON: AtomicBool = AtomicBool::new(false);
static ME: AtomicUsize = AtomicUsize::new(usize::MAX);
type IsLocal = Box<dyn Fn(usize) -> bool + Send + Sync>;
static IS_LOCAL: OnceLock<IsLocal> = OnceLock::new();
/// `[this host, other hosts]`.
static ENDPOINTS: [AtomicU64; 2] = [AtomicU64::new(0), AtomicU64::new(0)];
static GROWN: [AtomicU64; 2] = [AtomicU64::new(0), AtomicU64::new(0)];

/// Measure from now on. `me` is this PE (its endpoint to itself is not a peer's).
pub fn arm(me: usize, is_local: IsLocal) {
    ME.store(me, Ordering::Relaxed);
    let _ = IS_LOCAL.set(is_local);
    ON.store(true, Ordering::Release);
}

fn side(pe: usize) -> usize {
    match IS_LOCAL.get() {
        Some(local) if local(pe) => 0,
        _ => 1,
    }
}

/// Run `f`, which makes PE `pe`'s endpoint (`endpoint`) or one of its keys, counting what it
/// adds when armed.
pub fn making<R>(pe: usize, endpoint: bool, f: impl FnOnce() -> R) -> R {
    if !ON.load(Ordering::Acquire) || pe == ME.load(Ordering::Relaxed) {
        return f();
    }
    let (grown, r) = footprint::growth(f);
    let s = side(pe);
    GROWN[s].fetch_add(grown, Ordering::Relaxed);
    if endpoint {
        ENDPOINTS[s].fetch_add(1, Ordering::Relaxed);
    }
    r
}

/// Whether `pe` is on this host (for the report's count of peers).
pub fn is_local(pe: usize) -> bool {
    side(pe) == 0
}

/// `(endpoints, grown)`, each `[this host, other hosts]`, since [`arm`].
pub fn measured() -> ([u64; 2], [u64; 2]) {
    let get = |a: &[AtomicU64; 2]| [a[0].load(Ordering::Relaxed), a[1].load(Ordering::Relaxed)];
    (get(&ENDPOINTS), get(&GROWN))
}
