//! The C plugin header (plugins/include/shmem_plugin.h, generated from plugins/src/abi.rs by
//! cbindgen) against the Rust definitions: every field of every ABI structure at the same offset,
//! every structure of the same size, and the constants equal, as a C compiler and a C++ compiler
//! read the header. The plugin crate's own unit test checks that the committed header is what the
//! generator writes; this one checks that what it writes means, to C, what the Rust types mean.

use rshmem_plugin_api as abi;
use rshmem_tests::*;
use std::collections::BTreeMap;
use std::mem::{offset_of, size_of};
use std::process::Command;

/// `(C expression, Rust value)` pairs: `sizeof`, `offsetof` and constants.
macro_rules! layout {
    ($($rust:ident => $c:literal { $($field:ident),* $(,)? })*) => {{
        let mut v: Vec<(String, usize)> = Vec::new();
        $(
            v.push((format!("sizeof({})", $c), size_of::<abi::$rust>()));
            $(v.push((format!("offsetof({}, {})", $c, stringify!($field)), offset_of!(abi::$rust, $field)));)*
        )*
        v
    }};
}

fn expected() -> Vec<(String, usize)> {
    let mut v = layout! {
        PluginDescriptor => "shmem_plugin_descriptor_t" {
            abi_version, framework, struct_size, name, version, description, params, n_params, caps, query, open
        }
        ParamDecl => "shmem_plugin_param_t" { name, kind, default_value, doc }
        QueryResult => "shmem_plugin_query_t" { available, priority, reason }
        TransportHandle => "shmem_plugin_transport_t" { kind, context, worker }
        CoreServices => "shmem_plugin_core_t" {
            struct_size, abi_version, my_pe, n_pes, local_rank, local_size, job_id, log, param, kv_put,
            kv_get, kv_fence, abort, pe_is_local, transport, ptr, putmem, getmem, quiet, fence,
            atomic_add_u64, wait_until_u64, host_of, put_signal_u64, segment_copy, node_cpus, selection
        }
        SegmentDesc => "shmem_plugin_segment_t" { base, size, blob, blob_len, transport_memh, handle }
        SshmemOps => "shmem_plugin_sshmem_ops_t" { struct_size, create, attach, detach, unlink, destroy }
        MemheapOps => "shmem_plugin_memheap_ops_t" {
            struct_size, create, alloc, free, realloc, usable_size, destroy, device_type, segments, copy, owns,
            host_alloc, host_free, block_of
        }
        SpmlOps => "shmem_plugin_spml_ops_t" {
            struct_size, transport, default_ctx, connect, mem_register, mem_deregister, add_segment,
            remote_ptr, put, get, put_nbi, get_nbi, quiet, fence, progress, finalize, atomic,
            ctx_create, ctx_destroy, put_signal, memory_types, put_via_target, get_via_target, progress_busy,
            suspend, peer_memory
        }
        SpmlPeerMemory => "shmem_plugin_spml_peer_memory_t" {
            struct_size, table_bytes, table_resident, peers_local, peers_remote, endpoints_local,
            endpoints_remote, grown_local, grown_remote
        }
        TeamDesc => "shmem_plugin_team_t" { id, start, stride, size, my_index, scratch, scratch_len, flags }
        ScollOps => "shmem_plugin_scoll_ops_t" {
            struct_size, scratch_needed, enable, disable, barrier, broadcast, collect, alltoall, reduce,
            broadcast_keep_root
        }
    };
    let consts: &[(&str, u64)] = &[
        ("SHMEM_PLUGIN_ABI_VERSION", abi::ABI_VERSION as u64),
        ("SHMEM_PLUGIN_FRAMEWORK_SPML", abi::Framework::Spml as u64),
        ("SHMEM_PLUGIN_FRAMEWORK_SCOLL", abi::Framework::Scoll as u64),
        ("SHMEM_PLUGIN_FRAMEWORK_SSHMEM", abi::Framework::Sshmem as u64),
        ("SHMEM_PLUGIN_FRAMEWORK_MEMHEAP", abi::Framework::Memheap as u64),
        ("SHMEM_PLUGIN_PARAM_STRING", abi::PARAM_STRING as u64),
        ("SHMEM_PLUGIN_PARAM_INT", abi::PARAM_INT as u64),
        ("SHMEM_PLUGIN_PARAM_BOOL", abi::PARAM_BOOL as u64),
        ("SHMEM_PLUGIN_PARAM_SIZE", abi::PARAM_SIZE as u64),
        ("SHMEM_PLUGIN_SPML_CAP_MULTI_HOST", abi::SPML_CAP_MULTI_HOST),
        ("SHMEM_PLUGIN_SPML_CAP_THREAD_MULTIPLE", abi::SPML_CAP_THREAD_MULTIPLE),
        ("SHMEM_PLUGIN_SSHMEM_CAP_PEER_ATTACH", abi::SSHMEM_CAP_PEER_ATTACH),
        ("SHMEM_PLUGIN_SCOLL_CAP_EPHEMERAL", abi::SCOLL_CAP_EPHEMERAL),
        ("SHMEM_PLUGIN_MEMHEAP_CAP_GPU", abi::MEMHEAP_CAP_GPU),
        ("SHMEM_PLUGIN_TEAM_EPHEMERAL", abi::TEAM_EPHEMERAL as u64),
        ("SHMEM_PLUGIN_TEAM_MAPPED", abi::TEAM_MAPPED as u64),
        ("SHMEM_PLUGIN_TEAM_HOSTS_MAPPED", abi::TEAM_HOSTS_MAPPED as u64),
        ("SHMEM_PLUGIN_MEMHEAP_DEVICE_CPU", abi::MEMHEAP_DEVICE_CPU as u64),
        ("SHMEM_PLUGIN_MEMHEAP_DEVICE_GPU", abi::MEMHEAP_DEVICE_GPU as u64),
        ("SHMEM_PLUGIN_AMO_ADD", abi::AMO_ADD as u64),
        ("SHMEM_PLUGIN_AMO_XOR", abi::AMO_XOR as u64),
        ("SHMEM_PLUGIN_LOG_TRACE", abi::LOG_TRACE as u64),
        ("SHMEM_PLUGIN_CMP_GE", abi::CMP_GE as u64),
        ("SHMEM_PLUGIN_RC_DECLINED", abi::RC_DECLINED as u64),
        ("SHMEM_PLUGIN_RC_ERROR", abi::RC_ERROR as u64),
        ("SHMEM_PLUGIN_RC_UNSUPPORTED", abi::RC_UNSUPPORTED as u64),
        ("SHMEM_PLUGIN_DT_COMPLEXD", abi::DT_COMPLEXD as u64),
        ("SHMEM_PLUGIN_OP_PROD", abi::OP_PROD as u64),
        ("SHMEM_PLUGIN_REDUCE_EXSCAN", abi::REDUCE_EXSCAN as u64),
        ("SHMEM_PLUGIN_SPML_CTX_NOSTORE", abi::SPML_CTX_NOSTORE as u64),
    ];
    v.extend(consts.iter().map(|(n, x)| (n.to_string(), *x as usize)));
    v
}

#[test]
fn the_c_header_matches_the_rust_definitions_field_by_field() {
    let want = expected();
    let scratch = Scratch::new("plugin-header");
    let src = scratch.0.join("layout.c");
    let mut c = String::from(
        "#include <stdio.h>\n#include <stddef.h>\n#include \"shmem_plugin.h\"\nint main(void) {\n",
    );
    for (expr, _) in &want {
        c += &format!("    printf(\"%s=%llu\\n\", \"{expr}\", (unsigned long long)({expr}));\n");
    }
    c += "    return 0;\n}\n";
    std::fs::write(&src, c).unwrap();
    let include = source_dir().join("../plugins/include");
    for (compiler, std) in [("cc", "-std=c11"), ("c++", "-std=c++17")] {
        let exe = scratch.0.join(format!("layout-{compiler}"));
        let mut cmd = Command::new(compiler);
        if compiler == "c++" {
            cmd.args(["-x", "c++"]);
        }
        let o =
            cmd.args([std, "-Wall", "-Wextra", "-Werror", "-I"]).arg(&include).arg(&src).arg("-o").arg(&exe);
        let o = o.output().unwrap();
        assert!(o.status.success(), "{compiler}: {}", String::from_utf8_lossy(&o.stderr));
        let out = Command::new(&exe).output().unwrap();
        let got: BTreeMap<String, usize> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.rsplit_once('='))
            .map(|(k, v)| (k.to_string(), v.parse().unwrap()))
            .collect();
        let wrong: Vec<String> = want
            .iter()
            .filter(|(k, v)| got.get(k) != Some(v))
            .map(|(k, v)| format!("{k}: {compiler} says {:?}, Rust {v}", got.get(k)))
            .collect();
        assert!(wrong.is_empty(), "shmem_plugin.h differs from plugins/src/abi.rs:\n{}", wrong.join("\n"));
    }
}
