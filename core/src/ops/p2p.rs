//! Point-to-point synchronization (spec 9.10): waiting on and testing local symmetric variables
//! that other PEs update. Reads are volatile loads of naturally aligned words, which peers'
//! stores and atomics cannot tear. A satisfied wait is followed by an acquire fence, so data
//! written before the flag is visible after it. Waits back off (`wait::backoff`): they spin,
//! then yield at once on an oversubscribed node, and drive spml progress when some peer is
//! reached only through it.

use crate::error::{fail, ShmemError};
use crate::ops::wait::{backoff, compare};
use crate::symm::runtime;
use std::ffi::{c_int, CStr};
use std::sync::atomic::{fence, Ordering};

/// The comparison value(s): one for every element, or one per element (`_vector` forms).
pub enum Values<T> {
    One(T),
    Each(*const T),
}

impl<T: Copy> Values<T> {
    /// # Safety
    /// For `Each`, the array must hold more than `i` elements.
    unsafe fn at(&self, i: usize) -> T {
        match self {
            Values::One(v) => *v,
            // SAFETY: the caller guarantees the index is in range.
            Values::Each(p) => unsafe { *p.add(i) },
        }
    }
}

fn check(routine: &'static CStr, cmp: c_int) {
    if compare(0, cmp, 0).is_none() {
        crate::error::fail(routine, crate::ops::wait::bad_cmp(cmp));
    }
}

/// The `_some` forms write up to `n` indices: `indices` must not be NULL then (issue 53: it
/// was a SIGSEGV inside the library).
fn check_indices(routine: &'static CStr, indices: *mut usize, n: usize) {
    if n > 0 && indices.is_null() {
        fail(routine, ShmemError::NullArray { what: "indices", count_arg: "nelems", count: n });
    }
}

/// Check the `n` variables at `ivars` (symmetric, aligned, not NULL when `n > 0`).
pub(crate) fn variables<T>(
    rt: &runtime::Runtime,
    routine: &'static CStr,
    what: &'static str,
    ivars: *const T,
    n: usize,
) {
    let size = std::mem::size_of::<T>();
    let len = crate::ops::rma::transfer_len(n, size).unwrap_or_else(|e| crate::error::fail(routine, e));
    crate::ops::rma::local(rt, routine, what, ivars as usize, len, size);
}

/// # Safety
/// `ivar` must be a valid, aligned local address.
#[inline(always)]
unsafe fn holds<T: Copy + PartialOrd>(ivar: *const T, cmp: c_int, value: T) -> bool {
    // SAFETY: the caller guarantees the address; peers update it concurrently, which a
    // volatile load of an aligned word tolerates (or the device memheap's copy reads it).
    compare(unsafe { read(ivar) }, cmp, value).unwrap_or(false)
}

/// The current value of local `ivar`: a volatile load, or through the device memheap for a
/// word of device memory.
///
/// # Safety
/// `ivar` must be a valid, aligned local address.
#[inline(always)]
pub(crate) unsafe fn read<T: Copy>(ivar: *const T) -> T {
    if let Some(rt) = runtime::try_get() {
        if crate::ops::device::in_device_segment(rt, ivar.cast()) {
            // SAFETY: an aligned word of a device segment (the caller's address).
            return unsafe { crate::ops::device::load(rt, c"point-to-point synchronization", ivar) };
        }
    }
    // SAFETY: the caller's contract.
    unsafe { std::ptr::read_volatile(ivar) }
}

/// Whether element `i` takes part (no status array, or status[i] == 0).
///
/// # Safety
/// `status` must be NULL or hold more than `i` elements.
unsafe fn active(status: *const c_int, i: usize) -> bool {
    // SAFETY: as documented.
    status.is_null() || unsafe { *status.add(i) } == 0
}

/// # Safety
/// `ivar` must be a valid, aligned local address.
pub unsafe fn wait_until<T: Copy + PartialOrd + std::fmt::Debug>(
    routine: &'static CStr,
    ivar: *const T,
    cmp: c_int,
    value: T,
) {
    // SAFETY: forwarded.
    unsafe { wait_until_named(routine, "ivar", ivar, cmp, value) }
}

/// [`wait_until`] naming the variable `what` in its errors (`sig_addr` for the signal wait).
///
/// # Safety
/// As [`wait_until`].
pub unsafe fn wait_until_named<T: Copy + PartialOrd + std::fmt::Debug>(
    routine: &'static CStr,
    what: &'static str,
    ivar: *const T,
    cmp: c_int,
    value: T,
) {
    check(routine, cmp);
    let rt = runtime::get(routine);
    variables(rt, routine, what, ivar, 1);
    let mut i = 0;
    let mut watch = crate::ops::stall::WaitWatch::new();
    // SAFETY: forwarded.
    while !unsafe { holds(ivar, cmp, value) } {
        backoff(&mut i, rt);
        watch.round(i > rt.spin_limit, routine, || {
            // SAFETY: as `holds`: a valid local address that peers update; `read` goes
            // through the device memheap for a word of device memory, which the CPU may not
            // touch (a plain load there was a SIGSEGV under fakecuda, seen in CI).
            let now = unsafe { read(ivar) };
            let place = rt
                .segs
                .locate(ivar as usize)
                .map(|(seg, off, _)| format!(", offset {off:#x} of symmetric segment {seg}"))
                .unwrap_or_default();
            format!(
                "{what} at {ivar:p}{place} to be {} {value:?}; it is {now:?}",
                crate::ops::stall::cmp_name(cmp)
            )
        });
    }
    fence(Ordering::Acquire);
    crate::ops::perturb::point();
}

/// # Safety
/// `ivar` must be a valid, aligned local address.
pub unsafe fn test<T: Copy + PartialOrd>(
    routine: &'static CStr,
    ivar: *const T,
    cmp: c_int,
    value: T,
) -> c_int {
    check(routine, cmp);
    let rt = runtime::get(routine);
    variables(rt, routine, "ivar", ivar, 1);
    // SAFETY: forwarded.
    let ok = unsafe { holds(ivar, cmp, value) };
    if ok {
        fence(Ordering::Acquire);
    }
    ok as c_int
}

thread_local! {
    /// Where this thread's next `test_any` / `wait_until_any` starts looking: just after the
    /// index it returned last, so that repeated calls return every index that holds in turn
    /// (the spec's fairness rule) rather than always the lowest.
    static ANY_CURSOR: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// The "any" answer of a scan: the first holding index at or after the cursor (wrapping
/// around), and the cursor moved past it.
fn take_any(first_from: Option<usize>, first: Option<usize>) -> Option<usize> {
    let idx = first_from.or(first)?;
    ANY_CURSOR.with(|c| c.set(idx + 1));
    Some(idx)
}

/// One pass over the array: the number of active elements, and of those that hold; when
/// `found` is given, the indices that hold are written there. The third value is the first
/// index that holds, the fourth the first at or after this thread's "any" cursor.
///
/// # Safety
/// `ivars` (and `status`, a `Values::Each` array and `found`) must hold `n` elements.
unsafe fn scan<T: Copy + PartialOrd>(
    ivars: *const T,
    n: usize,
    status: *const c_int,
    cmp: c_int,
    values: &Values<T>,
    mut found: Option<*mut usize>,
) -> (usize, usize, Option<usize>, Option<usize>) {
    let (mut active_n, mut holding, mut first, mut first_from) = (0, 0, None, None);
    let from = ANY_CURSOR.with(|c| c.get());
    for i in 0..n {
        // SAFETY: all arrays hold `n` elements by contract.
        unsafe {
            if !active(status, i) {
                continue;
            }
            active_n += 1;
            if holds(ivars.add(i), cmp, values.at(i)) {
                first.get_or_insert(i);
                if i >= from {
                    first_from.get_or_insert(i);
                }
                if let Some(out) = found.as_mut() {
                    *out.add(holding) = i;
                }
                holding += 1;
            }
        }
    }
    (active_n, holding, first, first_from)
}

/// `wait_until_all(_vector)`.
///
/// # Safety
/// As [`scan`].
pub unsafe fn wait_all<T: Copy + PartialOrd>(
    routine: &'static CStr,
    ivars: *const T,
    n: usize,
    status: *const c_int,
    cmp: c_int,
    values: Values<T>,
) {
    check(routine, cmp);
    let rt = runtime::get(routine);
    variables(rt, routine, "ivars", ivars, n);
    let mut i = 0;
    loop {
        // SAFETY: forwarded.
        let (active_n, holding, _, _) = unsafe { scan(ivars, n, status, cmp, &values, None) };
        if holding == active_n {
            break;
        }
        backoff(&mut i, rt);
    }
    fence(Ordering::Acquire);
}

/// `wait_until_any(_vector)`: the index of an element that holds, or SIZE_MAX when no element
/// takes part.
///
/// # Safety
/// As [`scan`].
pub unsafe fn wait_any<T: Copy + PartialOrd>(
    routine: &'static CStr,
    ivars: *const T,
    n: usize,
    status: *const c_int,
    cmp: c_int,
    values: Values<T>,
) -> usize {
    check(routine, cmp);
    let rt = runtime::get(routine);
    variables(rt, routine, "ivars", ivars, n);
    let mut i = 0;
    loop {
        // SAFETY: forwarded.
        let (active_n, _, first, first_from) = unsafe { scan(ivars, n, status, cmp, &values, None) };
        if active_n == 0 {
            return usize::MAX;
        }
        if let Some(idx) = take_any(first_from, first) {
            fence(Ordering::Acquire);
            return idx;
        }
        backoff(&mut i, rt);
    }
}

/// `wait_until_some(_vector)`: waits until at least one element holds; writes the indices of
/// all that hold to `indices` and returns their number (0 when no element takes part).
///
/// # Safety
/// As [`scan`]; `indices` holds `n` elements.
#[allow(clippy::too_many_arguments)]
pub unsafe fn wait_some<T: Copy + PartialOrd>(
    routine: &'static CStr,
    ivars: *const T,
    n: usize,
    indices: *mut usize,
    status: *const c_int,
    cmp: c_int,
    values: Values<T>,
) -> usize {
    check(routine, cmp);
    let rt = runtime::get(routine);
    variables(rt, routine, "ivars", ivars, n);
    check_indices(routine, indices, n);
    let mut i = 0;
    loop {
        // SAFETY: forwarded.
        match unsafe { scan(ivars, n, status, cmp, &values, Some(indices)) } {
            (0, _, _, _) => return 0,
            (_, k, _, _) if k > 0 => {
                fence(Ordering::Acquire);
                return k;
            }
            _ => backoff(&mut i, rt),
        }
    }
}

/// `test_all(_vector)`: 1 when every active element holds (also when none is active).
///
/// # Safety
/// As [`scan`].
pub unsafe fn test_all<T: Copy + PartialOrd>(
    routine: &'static CStr,
    ivars: *const T,
    n: usize,
    status: *const c_int,
    cmp: c_int,
    values: Values<T>,
) -> c_int {
    check(routine, cmp);
    let rt = runtime::get(routine);
    variables(rt, routine, "ivars", ivars, n);
    // SAFETY: forwarded.
    let (active_n, holding, _, _) = unsafe { scan(ivars, n, status, cmp, &values, None) };
    fence(Ordering::Acquire);
    (holding == active_n) as c_int
}

/// `test_any(_vector)`: an index that holds, or SIZE_MAX.
///
/// # Safety
/// As [`scan`].
pub unsafe fn test_any<T: Copy + PartialOrd>(
    routine: &'static CStr,
    ivars: *const T,
    n: usize,
    status: *const c_int,
    cmp: c_int,
    values: Values<T>,
) -> usize {
    check(routine, cmp);
    let rt = runtime::get(routine);
    variables(rt, routine, "ivars", ivars, n);
    // SAFETY: forwarded.
    let (_, _, first, first_from) = unsafe { scan(ivars, n, status, cmp, &values, None) };
    fence(Ordering::Acquire);
    take_any(first_from, first).unwrap_or(usize::MAX)
}

/// `test_some(_vector)`: the indices that hold go to `indices`; returns their number.
///
/// # Safety
/// As [`scan`]; `indices` holds `n` elements.
#[allow(clippy::too_many_arguments)]
pub unsafe fn test_some<T: Copy + PartialOrd>(
    routine: &'static CStr,
    ivars: *const T,
    n: usize,
    indices: *mut usize,
    status: *const c_int,
    cmp: c_int,
    values: Values<T>,
) -> usize {
    check(routine, cmp);
    let rt = runtime::get(routine);
    variables(rt, routine, "ivars", ivars, n);
    check_indices(routine, indices, n);
    // SAFETY: forwarded.
    let (_, k, _, _) = unsafe { scan(ivars, n, status, cmp, &values, Some(indices)) };
    fence(Ordering::Acquire);
    k
}

#[cfg(test)]
mod tests {
    use super::*;
    use rshmem_plugin_api::{CMP_EQ, CMP_GE, CMP_LT};

    #[test]
    fn scan_counts_active_and_holding_elements() {
        let v = [1i64, 5, 3, 7];
        let status = [0, 0, 1, 0];
        let mut found = [usize::MAX; 4];
        // SAFETY: local arrays of the given length.
        let r = unsafe {
            scan(v.as_ptr(), 4, status.as_ptr(), CMP_GE, &Values::One(3), Some(found.as_mut_ptr()))
        };
        assert_eq!(r, (3, 2, Some(1), Some(1)));
        assert_eq!(&found[..2], &[1, 3]);
        let each = [1i64, 0, 0, 8];
        // SAFETY: as above.
        let r = unsafe { scan(v.as_ptr(), 4, std::ptr::null(), CMP_EQ, &Values::Each(each.as_ptr()), None) };
        assert_eq!(r, (4, 1, Some(0), Some(0)));
        // SAFETY: as above.
        let r = unsafe { scan(v.as_ptr(), 4, [1, 1, 1, 1].as_ptr(), CMP_LT, &Values::One(0), None) };
        assert_eq!(r, (0, 0, None, None));
    }

    #[test]
    fn repeated_any_answers_visit_every_index_that_holds() {
        let v = [9i64, 0, 9, 9];
        let mut seen = Vec::new();
        for _ in 0..6 {
            // SAFETY: a local array of the given length.
            let (_, _, first, from) =
                unsafe { scan(v.as_ptr(), 4, std::ptr::null(), CMP_EQ, &Values::One(9), None) };
            seen.push(take_any(from, first).unwrap());
        }
        assert_eq!(seen, [0, 2, 3, 0, 2, 3]);
    }

    #[test]
    fn unsigned_comparisons_are_unsigned() {
        let v = [u64::MAX];
        // SAFETY: a local array.
        assert!(unsafe { holds(v.as_ptr(), CMP_GE, 1u64) });
        let s = [-1i32];
        // SAFETY: a local array.
        assert!(unsafe { holds(s.as_ptr(), CMP_LT, 0i32) });
    }
}
