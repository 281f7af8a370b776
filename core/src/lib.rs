//! rshmem core: `libshmem.so`.
//!
//! The C API (generated from one table in `gen/`) calls into generic core routines
//! (`rma`, `heap`, `coll`, `setup`), which reach peers either by direct loads and stores into
//! mapped segments or through the selected spml component. Components are plugins found and
//! chosen at `shmem_init` (`plugin`); the core never names a component. See docs/architecture.md.

pub mod active_sets;
pub mod amo;
pub mod bootstrap;
pub mod coll;
pub mod config;
pub mod ctx;
pub mod error;
pub mod ext;
pub mod ffi;
pub mod heap;
pub mod hosts;
pub mod info;
pub mod legacy;
pub mod lock;
pub mod log;
pub mod p2p;
pub mod paths;
pub mod placement;
pub mod plugin;
pub mod rma;
pub mod runtime;
pub mod segments;
pub mod setup;
pub mod signal;
pub mod spaces;
mod static_data;
pub mod team;
pub mod teams;
pub mod wait;

#[cfg(test)]
mod tests {
    /// The committed headers must be exactly what the generator produces.
    #[test]
    fn committed_headers_match_the_generator() {
        for (name, generated) in [
            ("shmem.h", include_str!(concat!(env!("OUT_DIR"), "/shmem.h"))),
            ("shmemx.h", include_str!(concat!(env!("OUT_DIR"), "/shmemx.h"))),
            ("pshmem.h", include_str!(concat!(env!("OUT_DIR"), "/pshmem.h"))),
        ] {
            let committed =
                std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/include/").to_string() + name)
                    .unwrap_or_default();
            assert!(
                committed == generated,
                "core/include/{name} is stale: run `RSHMEM_REGEN_HEADERS=1 cargo build -p rshmem-core` and commit it"
            );
        }
    }

    /// Every generated routine is in the spec inventory with the same prototype.
    #[test]
    fn generated_prototypes_match_the_spec_inventory() {
        let tsv =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/spec/c-api.tsv"));
        let Ok(tsv) = tsv else {
            eprintln!("shared/spec/c-api.tsv not found beside the repository: prototype check skipped");
            return;
        };
        let norm = |s: &str| {
            s.split_whitespace().collect::<Vec<_>>().join(" ").replace("* ", "*").replace("_Noreturn ", "")
        };
        // Extensions (`shmemx_`, category "ext") are no spec routines.
        for (name, _cat, proto) in crate::ffi::SYMBOLS.iter().filter(|(_, cat, _)| *cat != "ext") {
            let row = tsv.lines().find(|l| l.split('\t').next() == Some(name));
            let row = row.unwrap_or_else(|| panic!("{name} is not in shared/spec/c-api.tsv"));
            let spec_proto = row.split('\t').nth(3).unwrap();
            assert_eq!(norm(proto), norm(spec_proto), "prototype of {name}");
        }
    }
}
