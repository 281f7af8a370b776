//! rshmem core: `libshmem.so`.
//!
//! Layers, each importing only the ones below it (`layering` test below; docs/architecture.md):
//!
//! 4. `capi`: the C entry points, generated from one table in `core/gen/`, each a panic boundary
//!    around one call into `ops`.
//! 3. `ops`: the operations (RMA, atomics, waits, contexts, teams, collectives, memory spaces),
//!    start-up and shutdown (`ops::lifecycle`), and the services table plugins call back into.
//! 2. `symm`: the symmetric memory and peer table (segments, how each peer's copy is reached,
//!    hosts), the runtime state the operations read, and the memory-mapping modules.
//! 1. `plugin`: finding, checking and choosing the component plugins; the core never names one.
//! 0. `config`, `log`, `error`, `paths`: settings, logging, fatal errors, install paths.
//!
//! The bootstrap (oshrun, PMIx, singleton) is a crate of its own, `rshmem-boot`.

// Layer 4.
pub mod capi;
// Layer 3.
pub mod ops;
// Layer 2.
pub mod symm;
// Layer 1.
pub mod plugin;
// Layer 0.
pub mod config;
pub mod error;
pub mod log;
pub mod paths;

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

    /// The layers of the crate doc: no module imports one of a higher rung, and the modules of
    /// one layer import each other without a cycle. Read from the sources (code lines outside
    /// test modules), as `crate::` paths and, inside a layer, `super::` paths.
    #[test]
    fn layers_import_only_downwards_and_without_cycles() {
        use std::collections::{BTreeMap, BTreeSet};
        // Rungs, low to high; a directory is one layer.
        const RUNGS: [&str; 8] = ["paths", "config", "log", "error", "plugin", "symm", "ops", "capi"];
        let rung = |m: &str| RUNGS.iter().position(|r| *r == m);
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = Vec::new();
        let mut dirs = vec![root.clone()];
        while let Some(d) = dirs.pop() {
            for e in std::fs::read_dir(&d).unwrap().flatten() {
                let p = e.path();
                if p.is_dir() {
                    dirs.push(p);
                } else if p.extension().is_some_and(|x| x == "rs") {
                    files.push(p);
                }
            }
        }
        let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        let mut upward = Vec::new();
        for f in &files {
            let rel = f.strip_prefix(&root).unwrap().with_extension("");
            let parts: Vec<String> = rel.iter().map(|c| c.to_string_lossy().into_owned()).collect();
            let Some(top) = rung(&parts[0]) else { continue };
            // The module within its layer (`ops/spaces/segment.rs` is `ops::spaces`).
            let unit = match parts.get(1).filter(|p| *p != "mod") {
                Some(m) => format!("{}::{m}", parts[0]),
                None => parts[0].clone(),
            };
            let text = std::fs::read_to_string(f).unwrap();
            let code = text.split("#[cfg(test)]").next().unwrap();
            for line in code.lines().filter(|l| !l.trim_start().starts_with("//")) {
                for (i, _) in line.match_indices("crate::") {
                    let path: Vec<&str> = line[i + 7..]
                        .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                        .next()
                        .unwrap()
                        .split("::")
                        .collect();
                    let Some(to) = rung(path[0]) else { continue };
                    if to > top {
                        upward.push(format!("{}: {}", rel.display(), line.trim()));
                    } else if to == top && path.len() > 1 && parts.len() > 1 {
                        let target = format!("{}::{}", path[0], path[1]);
                        if target != unit {
                            graph.entry(unit.clone()).or_default().insert(target);
                        }
                    }
                }
                // `super::x` from a layer's own module files names a sibling.
                if parts.len() == 2 {
                    for (i, _) in line.match_indices("super::") {
                        let name: String =
                            line[i + 7..].chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                        if !name.is_empty() && name != unit.rsplit("::").next().unwrap() {
                            graph.entry(unit.clone()).or_default().insert(format!("{}::{name}", parts[0]));
                        }
                    }
                }
            }
        }
        assert!(upward.is_empty(), "imports of a higher layer:\n{}", upward.join("\n"));
        // A cycle shows as a module reached again while still on the search path.
        fn visit(
            m: &str,
            g: &BTreeMap<String, BTreeSet<String>>,
            path: &mut Vec<String>,
            done: &mut BTreeSet<String>,
        ) -> Option<Vec<String>> {
            if let Some(i) = path.iter().position(|p| p == m) {
                let mut c = path[i..].to_vec();
                c.push(m.to_string());
                return Some(c);
            }
            if !done.insert(m.to_string()) {
                return None;
            }
            path.push(m.to_string());
            for n in g.get(m).into_iter().flatten() {
                if let Some(c) = visit(n, g, path, done) {
                    return Some(c);
                }
            }
            path.pop();
            None
        }
        let mut done = BTreeSet::new();
        for m in graph.keys() {
            let cycle = visit(m, &graph, &mut Vec::new(), &mut done);
            assert!(cycle.is_none(), "an import cycle inside a layer: {}", cycle.unwrap().join(" -> "));
        }
        // The check sees the layers at all.
        assert!(graph.get("ops::rma").is_some_and(|d| d.contains("ops::ctx")), "{graph:?}");
    }

    /// Where the spec inventory is: `shared/spec/c-api.tsv` beside the repository (as in CI),
    /// or beside the repository a local clone was made from (a fresh clone in a scratch
    /// directory).
    fn spec_inventory() -> Option<std::path::PathBuf> {
        let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let origin = std::process::Command::new("git")
            .arg("-C")
            .arg(&repo)
            .args(["config", "--get", "remote.origin.url"])
            .output()
            .ok()
            .map(|o| std::path::PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()))
            .filter(|p| p.is_absolute());
        [Some(repo), origin]
            .into_iter()
            .flatten()
            .map(|r| r.join("../shared/spec/c-api.tsv"))
            .find(|p| p.is_file())
    }

    /// Every generated routine is in the spec inventory with the same prototype. Without the
    /// inventory the test fails rather than pass having checked nothing.
    #[test]
    fn generated_prototypes_match_the_spec_inventory() {
        let path = spec_inventory().unwrap_or_else(|| {
            panic!("shared/spec/c-api.tsv is neither beside the repository nor beside its origin: the prototypes were not checked")
        });
        let tsv = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("the spec inventory {} cannot be read: {e}", path.display()));
        let norm = |s: &str| {
            s.split_whitespace().collect::<Vec<_>>().join(" ").replace("* ", "*").replace("_Noreturn ", "")
        };
        // Extensions (`shmemx_`, category "ext") and the GPU auxiliary specification's routines
        // (`shmemg_`, category "gpu") are not in the 1.6 inventory.
        for (name, _cat, proto) in
            crate::capi::SYMBOLS.iter().filter(|(_, cat, _)| *cat != "ext" && *cat != "gpu")
        {
            let row = tsv.lines().find(|l| l.split('\t').next() == Some(name));
            let row = row.unwrap_or_else(|| panic!("{name} is not in shared/spec/c-api.tsv"));
            let spec_proto = row.split('\t').nth(3).unwrap();
            assert_eq!(norm(proto), norm(spec_proto), "prototype of {name}");
        }
    }
}
