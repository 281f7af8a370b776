//! The arithmetic of reductions, shared by scoll components: element sizes, and
//! `acc[i] = acc[i] op x[i]` for each element type (`DT_*`) and operation (`OP_*`) of the ABI.
//! The loops are over typed slices so that the compiler vectorises them; they are the inner
//! loop of every large reduction.

use crate::{
    DT_COMPLEXD, DT_COMPLEXF, DT_F32, DT_F64, DT_I16, DT_I32, DT_I64, DT_I8, DT_LONGDOUBLE, DT_U16, DT_U32,
    DT_U64, DT_U8, OP_AND, OP_MAX, OP_MIN, OP_OR, OP_PROD, OP_SUM, OP_XOR,
};
use std::ffi::{c_int, c_uint, c_void};

extern "C" {
    fn rshmem_plugin_ld_combine(op: c_uint, acc: *mut c_void, x: *const c_void, n: usize) -> c_int;
}

/// Bytes per element of `dtype`, or None for an unknown type.
pub fn elem_size(dtype: u32) -> Option<usize> {
    Some(match dtype {
        DT_I8 | DT_U8 => 1,
        DT_I16 | DT_U16 => 2,
        DT_I32 | DT_U32 | DT_F32 => 4,
        DT_I64 | DT_U64 | DT_F64 | DT_COMPLEXF => 8,
        DT_LONGDOUBLE | DT_COMPLEXD => 16,
        _ => return None,
    })
}

/// Element range `[lo, hi)` of member `i`'s chunk when `nelems` elements of `es` bytes are
/// shared among `n` members (a reduce-scatter): equal shares of whole 64-byte cache lines, so
/// that two members never write one line; the last shares shorter or empty.
pub fn chunk(i: c_int, n: c_int, nelems: usize, es: usize) -> (usize, usize) {
    let line = (64 / es.max(1)).max(1);
    let per = nelems.div_ceil(n.max(1) as usize).div_ceil(line) * line;
    let lo = (i.max(0) as usize).saturating_mul(per).min(nelems);
    (lo, lo.saturating_add(per).min(nelems))
}

/// A zeroed buffer of at least `bytes` bytes, aligned for every element type.
pub fn buffer(bytes: usize) -> Vec<u128> {
    vec![0u128; bytes.div_ceil(16)]
}

/// Whether `op` is defined on `dtype` (bitwise operations on integers only, no order on
/// complex numbers).
pub fn supports(dtype: u32, op: u32) -> bool {
    let int = matches!(dtype, DT_I8 | DT_I16 | DT_I32 | DT_I64 | DT_U8 | DT_U16 | DT_U32 | DT_U64);
    match dtype {
        _ if int => (OP_AND..=OP_PROD).contains(&op),
        DT_F32 | DT_F64 | DT_LONGDOUBLE => (OP_MAX..=OP_PROD).contains(&op),
        DT_COMPLEXF | DT_COMPLEXD => op == OP_SUM || op == OP_PROD,
        _ => false,
    }
}

/// What a reduction or scan call (`ScollOps::reduce`) needs before anyone waits on this PE.
pub struct Shape {
    /// Bytes per element, and in all.
    pub es: usize,
    pub nbytes: usize,
    /// How many members' sources, in team order from index 0, this PE combines: all of them
    /// (`REDUCE_ALL`), up to itself (`REDUCE_INSCAN`) or up to before itself
    /// (`REDUCE_EXSCAN`, 0 on the first member, whose `dest` the component leaves alone: the
    /// core writes the spec's 0 there).
    pub upto: c_int,
}

/// The shape of a call on `nelems` elements for member `me` of `n`, or None for an unknown
/// type or kind, an operation the type does not support, or a size that overflows. Every
/// member must reject a bad call alike, before it signals anyone.
pub fn shape(dtype: u32, op: u32, kind: u32, nelems: usize, n: c_int, me: c_int) -> Option<Shape> {
    let es = elem_size(dtype)?;
    let nbytes = nelems.checked_mul(es)?;
    let upto = match kind {
        crate::REDUCE_ALL => n,
        crate::REDUCE_INSCAN => me + 1,
        crate::REDUCE_EXSCAN => me,
        _ => return None,
    };
    supports(dtype, op).then_some(Shape { es, nbytes, upto })
}

/// `acc[i] = f(acc[i], x[i])` for `n` elements of `T`, through slices when both pointers are
/// aligned for `T` (the vectorised path), element by element otherwise.
///
/// # Safety
/// `acc` must be valid for reading and writing, and `x` for reading, `n` elements of `T`; any
/// bit pattern must be a valid `T`. They may be the same array but must not partly overlap.
unsafe fn zip<T: Copy>(acc: *mut u8, x: *const u8, n: usize, f: impl Fn(T, T) -> T) {
    let align = std::mem::align_of::<T>();
    if (acc as usize).is_multiple_of(align) && (x as usize).is_multiple_of(align) {
        if std::ptr::eq(acc, x) {
            // SAFETY: one aligned array of `n` elements (caller).
            let a = unsafe { std::slice::from_raw_parts_mut(acc.cast::<T>(), n) };
            for v in a.iter_mut() {
                *v = f(*v, *v);
            }
            return;
        }
        // SAFETY: two aligned, non-overlapping arrays of `n` elements (caller).
        let (a, b) = unsafe {
            (std::slice::from_raw_parts_mut(acc.cast::<T>(), n), std::slice::from_raw_parts(x.cast::<T>(), n))
        };
        for (a, b) in a.iter_mut().zip(b) {
            *a = f(*a, *b);
        }
    } else {
        for i in 0..n {
            // SAFETY: element `i` of arrays valid for `n` elements (caller), read unaligned.
            unsafe {
                let p = acc.cast::<T>().add(i);
                p.write_unaligned(f(p.read_unaligned(), x.cast::<T>().add(i).read_unaligned()));
            }
        }
    }
}

macro_rules! int_op {
    ($t:ty, $op:expr, $acc:expr, $x:expr, $n:expr) => {
        match $op {
            OP_AND => zip::<$t>($acc, $x, $n, |a, b| a & b),
            OP_OR => zip::<$t>($acc, $x, $n, |a, b| a | b),
            OP_XOR => zip::<$t>($acc, $x, $n, |a, b| a ^ b),
            OP_MAX => zip::<$t>($acc, $x, $n, |a, b| a.max(b)),
            OP_MIN => zip::<$t>($acc, $x, $n, |a, b| a.min(b)),
            OP_SUM => zip::<$t>($acc, $x, $n, |a, b| a.wrapping_add(b)),
            OP_PROD => zip::<$t>($acc, $x, $n, |a, b| a.wrapping_mul(b)),
            _ => return false,
        }
    };
}

macro_rules! float_op {
    ($t:ty, $op:expr, $acc:expr, $x:expr, $n:expr) => {
        match $op {
            OP_MAX => zip::<$t>($acc, $x, $n, |a, b| if b > a { b } else { a }),
            OP_MIN => zip::<$t>($acc, $x, $n, |a, b| if b < a { b } else { a }),
            OP_SUM => zip::<$t>($acc, $x, $n, |a, b| a + b),
            OP_PROD => zip::<$t>($acc, $x, $n, |a, b| a * b),
            _ => return false,
        }
    };
}

macro_rules! complex_op {
    ($t:ty, $op:expr, $acc:expr, $x:expr, $n:expr) => {
        match $op {
            OP_SUM => zip::<[$t; 2]>($acc, $x, $n, |a, b| [a[0] + b[0], a[1] + b[1]]),
            OP_PROD => {
                zip::<[$t; 2]>($acc, $x, $n, |a, b| [a[0] * b[0] - a[1] * b[1], a[0] * b[1] + a[1] * b[0]])
            }
            _ => return false,
        }
    };
}

/// `acc[i] = acc[i] op x[i]` for `n` elements of `dtype`; false (nothing changed) when the type
/// does not support `op`. Integers wrap, as C's unsigned arithmetic and every implementation's
/// signed sums do.
///
/// # Safety
/// `acc` must be valid for reading and writing, and `x` for reading, `n` elements of `dtype`;
/// they may be the same array but must not partly overlap. A long double array must be
/// 16-byte aligned.
pub unsafe fn combine_raw(dtype: u32, op: u32, acc: *mut u8, x: *const u8, n: usize) -> bool {
    if !supports(dtype, op) {
        return false;
    }
    // SAFETY: the caller's contract, forwarded.
    unsafe {
        match dtype {
            DT_I8 => int_op!(i8, op, acc, x, n),
            DT_I16 => int_op!(i16, op, acc, x, n),
            DT_I32 => int_op!(i32, op, acc, x, n),
            DT_I64 => int_op!(i64, op, acc, x, n),
            DT_U8 => int_op!(u8, op, acc, x, n),
            DT_U16 => int_op!(u16, op, acc, x, n),
            DT_U32 => int_op!(u32, op, acc, x, n),
            DT_U64 => int_op!(u64, op, acc, x, n),
            DT_F32 => float_op!(f32, op, acc, x, n),
            DT_F64 => float_op!(f64, op, acc, x, n),
            DT_COMPLEXF => complex_op!(f32, op, acc, x, n),
            DT_COMPLEXD => complex_op!(f64, op, acc, x, n),
            DT_LONGDOUBLE => return rshmem_plugin_ld_combine(op, acc.cast(), x.cast(), n) == 0,
            _ => return false,
        }
    }
    true
}

/// The safe form of [`combine_raw`] over buffers from [`buffer`]: false when the type does not
/// support `op` or a buffer is shorter than `n` elements.
pub fn combine(dtype: u32, op: u32, acc: &mut [u128], x: &[u128], n: usize) -> bool {
    let Some(es) = elem_size(dtype) else { return false };
    let fits = |len: usize| n.checked_mul(es).is_some_and(|b| b <= len * 16);
    if !fits(acc.len()) || !fits(x.len()) {
        return false;
    }
    // SAFETY: both buffers hold `n` elements (checked), are 16-byte aligned, and are distinct
    // borrows, so they do not overlap.
    unsafe { combine_raw(dtype, op, acc.as_mut_ptr().cast(), x.as_ptr().cast(), n) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_tile_the_elements_in_whole_lines() {
        for (n, nelems, es) in
            [(1, 0, 8), (2, 1, 4), (3, 100, 8), (4, 511, 8), (7, 4099, 4), (5, 3, 16), (8, 1000, 1)]
        {
            let mut next = 0;
            for i in 0..n {
                let (lo, hi) = chunk(i, n, nelems, es);
                assert_eq!(lo, next, "n={n} nelems={nelems}: chunks follow each other");
                assert!(hi <= nelems);
                if hi < nelems {
                    assert_eq!((hi * es) % 64, 0, "a chunk ends on a line boundary");
                }
                next = hi;
            }
            assert_eq!(next, nelems, "n={n}: every element in some chunk");
        }
    }

    fn view<T>(b: &mut [u128], n: usize) -> &mut [T] {
        assert!(n * std::mem::size_of::<T>() <= b.len() * 16);
        // SAFETY: in bounds (checked) and 16-aligned; plain numeric T.
        unsafe { std::slice::from_raw_parts_mut(b.as_mut_ptr().cast::<T>(), n) }
    }

    fn buf_of<T: Copy>(v: &[T]) -> Vec<u128> {
        let mut b = buffer(std::mem::size_of_val(v));
        view::<T>(&mut b, v.len()).copy_from_slice(v);
        b
    }

    #[test]
    fn integers_wrap_and_compare_as_their_type() {
        let mut acc = buf_of(&[i8::MAX, -3, 0b1100]);
        assert!(combine(DT_I8, OP_SUM, &mut acc, &buf_of(&[1i8, -4, 0]), 3));
        assert_eq!(view::<i8>(&mut acc, 3), &[i8::MIN, -7, 0b1100]);
        assert!(combine(DT_I8, OP_MIN, &mut acc, &buf_of(&[0i8, 0, 0]), 3));
        assert_eq!(view::<i8>(&mut acc, 3), &[i8::MIN, -7, 0]);
        let mut u = buf_of(&[0xf0u16, 0xff]);
        assert!(combine(DT_U16, OP_XOR, &mut u, &buf_of(&[0xffu16, 0x0f]), 2));
        assert_eq!(view::<u16>(&mut u, 2), &[0x0f, 0xf0]);
        assert!(combine(DT_U64, OP_MAX, &mut u, &buf_of(&[u64::MAX]), 1));
    }

    #[test]
    fn floating_point_complex_and_long_double() {
        let mut d = buf_of(&[1.5f64, -2.0]);
        assert!(combine(DT_F64, OP_PROD, &mut d, &buf_of(&[2.0f64, 0.25]), 2));
        assert_eq!(view::<f64>(&mut d, 2), &[3.0, -0.5]);
        assert!(!combine(DT_F64, OP_AND, &mut d, &buf_of(&[0.0f64]), 1), "no bitwise floats");
        let mut c = buf_of(&[[1.0f64, 2.0]]);
        assert!(combine(DT_COMPLEXD, OP_PROD, &mut c, &buf_of(&[[3.0f64, -1.0]]), 1));
        assert_eq!(view::<[f64; 2]>(&mut c, 1), &[[5.0, 5.0]]); // (1+2i)(3-i) = 5+5i
        assert!(!combine(DT_COMPLEXF, OP_MAX, &mut c, &buf_of(&[[0.0f32; 2]]), 1), "complex has no order");
        // x87 extended: 1 + 2^-60 is exact in long double (64-bit mantissa), not in double.
        let one = 0x3fff_8000_0000_0000_0000_0000_0000_0000u128 >> 48; // sign/exp 0x3fff, mantissa 1<<63
        let tiny = (0x3fc3u128 << 64) | (1u128 << 63); // 2^-60
        let mut ld = vec![one];
        assert!(combine(DT_LONGDOUBLE, OP_SUM, &mut ld, &[tiny], 1));
        assert_eq!(ld[0] & ((1u128 << 80) - 1), (0x3fffu128 << 64) | (1u128 << 63) | (1u128 << 3));
        assert!(combine(DT_LONGDOUBLE, OP_MAX, &mut ld, &[one], 1));
        assert!(!combine(DT_LONGDOUBLE, OP_XOR, &mut ld, &[one], 1));
        assert!(!combine(99, OP_SUM, &mut ld, &[one], 1));
    }

    #[test]
    fn call_shapes_and_rejections() {
        let s = shape(DT_F64, OP_SUM, crate::REDUCE_ALL, 3, 4, 1).unwrap();
        assert_eq!((s.es, s.nbytes, s.upto), (8, 24, 4));
        assert_eq!(shape(DT_I32, OP_XOR, crate::REDUCE_INSCAN, 1, 4, 2).unwrap().upto, 3);
        assert_eq!(shape(DT_I32, OP_SUM, crate::REDUCE_EXSCAN, 1, 4, 0).unwrap().upto, 0);
        assert!(shape(DT_F32, OP_AND, crate::REDUCE_ALL, 1, 2, 0).is_none(), "no bitwise floats");
        assert!(shape(99, OP_SUM, crate::REDUCE_ALL, 1, 2, 0).is_none());
        assert!(shape(DT_I8, OP_SUM, 7, 1, 2, 0).is_none(), "unknown kind");
        assert!(shape(DT_I64, OP_SUM, crate::REDUCE_ALL, usize::MAX, 2, 0).is_none(), "overflow");
    }

    #[test]
    fn unaligned_and_in_place_arrays() {
        let mut raw = [0u8; 17];
        for (i, b) in raw.iter_mut().enumerate() {
            *b = i as u8;
        }
        let x = [1u32, 2, 3, 4];
        // SAFETY: 4 u32 at offset 1 of a 17-byte array (unaligned path), and a 4-element array.
        assert!(unsafe { combine_raw(DT_U32, OP_SUM, raw.as_mut_ptr().add(1), x.as_ptr().cast(), 4) });
        let got: Vec<u32> =
            (0..4).map(|i| u32::from_ne_bytes(raw[1 + 4 * i..5 + 4 * i].try_into().unwrap())).collect();
        let want: Vec<u32> =
            (0..4).map(|i| u32::from_ne_bytes([1, 2, 3, 4].map(|b: u8| b + 4 * i as u8)) + x[i]).collect();
        assert_eq!(got, want);
        let mut same = [3.0f64, -1.5];
        let p = same.as_mut_ptr().cast::<u8>();
        // SAFETY: one array used as both operands.
        assert!(unsafe { combine_raw(DT_F64, OP_PROD, p, p, 2) });
        assert_eq!(same, [9.0, 2.25]);
        assert!(!supports(DT_F32, OP_XOR) && supports(DT_I8, OP_XOR) && !supports(DT_COMPLEXD, OP_MIN));
    }
}
