//! Reductions on the device: one kernel, generated as PTX text for a type and an operation and
//! compiled by the driver (`cuModuleLoadData`), that combines up to [`MAX_SOURCES`] source
//! arrays element by element into a destination. The core gives it the sources of a team's
//! members where it maps them (CUDA IPC on one host), so a reduction on GPU buffers reads every
//! member's copy directly instead of going through host shadows.
//!
//! Supported: 32- and 64-bit integers and floats; sum, product, min, max, and the bitwise
//! operations on integers. Everything else (8- and 16-bit integers, long double, complex) is
//! declined, and the core uses the host shadow for it.

use rshmem_plugin_api::{
    DT_F32, DT_F64, DT_I32, DT_I64, DT_U32, DT_U64, OP_AND, OP_MAX, OP_MIN, OP_OR, OP_PROD, OP_SUM, OP_XOR,
};
use std::fmt::Write;

/// Sources one launch combines (the kernel's parameters `s0`..`s7`).
pub const MAX_SOURCES: usize = 8;

/// The kernel's name in every module.
pub const KERNEL: &std::ffi::CStr = c"rshmem_reduce";

/// (register type, element bytes, signedness suffix for min/max and arithmetic) of `dtype`.
fn type_of(dtype: u32) -> Option<(&'static str, usize, &'static str)> {
    Some(match dtype {
        DT_I32 => ("b32", 4, "s32"),
        DT_U32 => ("b32", 4, "u32"),
        DT_I64 => ("b64", 8, "s64"),
        DT_U64 => ("b64", 8, "u64"),
        DT_F32 => ("f32", 4, "f32"),
        DT_F64 => ("f64", 8, "f64"),
        _ => return None,
    })
}

/// The PTX instruction that combines two registers for `op` on `dtype`.
fn instruction(dtype: u32, op: u32) -> Option<String> {
    let (reg, _, t) = type_of(dtype)?;
    let float = reg.starts_with('f');
    Some(match op {
        OP_SUM => format!("add.{t}"),
        OP_PROD if float => format!("mul.{t}"),
        OP_PROD => format!("mul.lo.{t}"),
        OP_MAX => format!("max.{t}"),
        OP_MIN => format!("min.{t}"),
        OP_AND | OP_OR | OP_XOR if float => return None,
        OP_AND => format!("and.{reg}"),
        OP_OR => format!("or.{reg}"),
        OP_XOR => format!("xor.{reg}"),
        _ => return None,
    })
}

/// The element size of `dtype` where a kernel exists for it and `op`.
pub fn supported(dtype: u32, op: u32) -> Option<usize> {
    instruction(dtype, op)?;
    type_of(dtype).map(|(_, size, _)| size)
}

/// The PTX module of the kernel `rshmem_reduce(dst, s0..s7, n, count)` for `dtype` and `op`:
/// `dst[i] = s0[i] op s1[i] op ... op s(n-1)[i]` for i below count, a grid-stride loop with
/// generic addressing. A first comment line names type and operation (the test driver reads
/// it: it cannot run PTX).
pub fn ptx(dtype: u32, op: u32) -> Option<String> {
    let (reg, size, _) = type_of(dtype)?;
    let combine = instruction(dtype, op)?;
    let mut p = String::new();
    let _ = writeln!(p, "// rshmem_reduce dtype={dtype} op={op} size={size}");
    p.push_str(".version 7.0\n.target sm_70\n.address_size 64\n\n");
    p.push_str(".visible .entry rshmem_reduce(\n\t.param .u64 p_dst,\n");
    for k in 0..MAX_SOURCES {
        let _ = writeln!(p, "\t.param .u64 p_s{k},");
    }
    p.push_str("\t.param .u32 p_n,\n\t.param .u64 p_count\n)\n{\n");
    let _ = writeln!(p, "\t.reg .pred %p;\n\t.reg .u32 %r<5>;\n\t.reg .u64 %rd<16>;\n\t.reg .{reg} %v<2>;");
    p.push_str("\tld.param.u64 %rd0, [p_dst];\n");
    for k in 0..MAX_SOURCES {
        let _ = writeln!(p, "\tld.param.u64 %rd{}, [p_s{k}];", k + 1);
    }
    p.push_str(
        "\tld.param.u32 %r0, [p_n];\n\
         \tld.param.u64 %rd9, [p_count];\n\
         \tmov.u32 %r1, %ctaid.x;\n\
         \tmov.u32 %r2, %ntid.x;\n\
         \tmov.u32 %r3, %tid.x;\n\
         \tmov.u32 %r4, %nctaid.x;\n\
         \tmul.wide.u32 %rd10, %r1, %r2;\n\
         \tcvt.u64.u32 %rd11, %r3;\n\
         \tadd.u64 %rd10, %rd10, %rd11;\n\
         \tmul.wide.u32 %rd12, %r4, %r2;\n\
         LOOP:\n\
         \tsetp.ge.u64 %p, %rd10, %rd9;\n\
         \t@%p bra DONE;\n",
    );
    let _ = writeln!(p, "\tmul.lo.u64 %rd13, %rd10, {size};");
    let _ = writeln!(p, "\tadd.u64 %rd14, %rd1, %rd13;\n\tld.{reg} %v0, [%rd14];");
    for k in 1..MAX_SOURCES {
        let _ = writeln!(p, "\tsetp.le.u32 %p, %r0, {k};\n\t@%p bra STORE;");
        let _ = writeln!(p, "\tadd.u64 %rd14, %rd{}, %rd13;\n\tld.{reg} %v1, [%rd14];", k + 1);
        let _ = writeln!(p, "\t{combine} %v0, %v0, %v1;");
    }
    p.push_str("STORE:\n\tadd.u64 %rd14, %rd0, %rd13;\n");
    let _ = writeln!(p, "\tst.{reg} [%rd14], %v0;");
    p.push_str("\tadd.u64 %rd10, %rd10, %rd12;\n\tbra LOOP;\nDONE:\n\tret;\n}\n");
    Some(p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rshmem_plugin_api::{DT_COMPLEXD, DT_I8, DT_LONGDOUBLE};

    #[test]
    fn kernels_exist_for_wide_integers_and_floats_only() {
        assert_eq!(supported(DT_F32, OP_SUM), Some(4));
        assert_eq!(supported(DT_U64, OP_XOR), Some(8));
        assert_eq!(supported(DT_F64, OP_AND), None, "no bitwise operations on floats");
        for t in [DT_I8, DT_LONGDOUBLE, DT_COMPLEXD] {
            assert_eq!(supported(t, OP_SUM), None, "type {t} goes through the host shadow");
        }
    }

    #[test]
    fn the_ptx_names_its_kernel_type_and_operation_and_combines_every_source() {
        let p = ptx(DT_I64, OP_PROD).expect("a kernel");
        assert!(p.starts_with("// rshmem_reduce dtype=3 op=6 size=8\n"), "{p}");
        assert!(p.contains(".visible .entry rshmem_reduce("), "{p}");
        assert_eq!(p.matches("mul.lo.s64 %v0, %v0, %v1;").count(), MAX_SOURCES - 1, "{p}");
        assert!(p.contains("ld.b64 %v0, [%rd14];") && p.contains("st.b64 [%rd14], %v0;"), "{p}");
        let f = ptx(DT_F32, OP_MIN).expect("a kernel");
        assert!(f.contains("min.f32 %v0, %v0, %v1;") && f.contains("mul.lo.u64 %rd13, %rd10, 4;"), "{f}");
    }
}
