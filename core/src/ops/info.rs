//! Reports for `SHMEM_INFO` and the `shmem_info` tool: the settings table with values, and every
//! component found with its probe answer.

use crate::config::{self, SETTINGS};
use crate::ops::services;
use crate::plugin;
use rshmem_plugin_api::Framework;
use std::fmt::Write;

pub fn settings_report() -> String {
    let mut s = String::from(
        "Configuration files (each overrides the one before; the environment overrides them all):\n",
    );
    for (path, required) in config::file::candidates() {
        let state = match config::file::layer() {
            Ok(l) if l.files.contains(&path) => "read",
            _ if required => "named by SHMEM_CONFIG",
            Ok(_) => "absent",
            Err(_) => "not read",
        };
        let _ = writeln!(s, "  {} ({state})", path.display());
    }
    match config::file::layer() {
        Err(e) => {
            let _ = writeln!(s, "  error (a job would not start): {e}");
        }
        Ok(l) => {
            for w in &l.warnings {
                let _ = writeln!(s, "  warning: {w}");
            }
        }
    }
    s.push_str("\nSettings (environment > files > default):\n");
    for st in SETTINGS {
        let legacy =
            if st.legacy.is_empty() { String::new() } else { format!(" (also {})", st.legacy.join(", ")) };
        let key = config::file::file_key(st.name).map(|k| format!(", file key {k}")).unwrap_or_default();
        let (value, from) = config::resolve(st.name);
        let _ = writeln!(s, "  {}{legacy} = {value:?}  [{from}{key}]\n      {}", st.name, st.doc);
    }
    s
}

/// Discover and probe every component as `shmem_init` would in a one-PE job.
pub fn components_report() -> String {
    let mut s = String::new();
    // What would stop a job before any component is chosen (a broken configuration file, a
    // bad value): the selection below is then not what a job would get.
    if let Err(e) = config::check() {
        let _ = writeln!(s, "error (a job would not start): {e}\n");
    }
    let found = plugin::discover();
    let _ = writeln!(s, "Plugin directories searched:");
    for d in crate::plugin::loader::plugin_dirs() {
        let _ = writeln!(s, "  {}", d.0.display());
    }
    let core = services::table(0, 1, 0, 1, &format!("info{}", std::process::id()));
    crate::symm::runtime::use_singleton_bootstrap();
    for fw in Framework::ALL {
        let (spec, from) = config::resolve(&format!("SHMEM_MCA_{}", fw.name()));
        let _ = writeln!(s, "\n{} components (SHMEM_MCA_{}={:?} [{from}]):", fw.name(), fw.name(), spec);
        match plugin::select(fw, &found.components, &spec, core, &[]) {
            Ok(sel) => {
                for a in &sel.answers {
                    let c = a.component;
                    let state = if a.available {
                        format!("available, priority {}", a.priority)
                    } else {
                        "unavailable".into()
                    };
                    let _ = writeln!(
                        s,
                        "  {} {} ({}): {state}{}",
                        c.name,
                        c.version,
                        c.path.display(),
                        if a.reason.is_empty() { String::new() } else { format!(" - {}", a.reason) }
                    );
                    if !c.description.is_empty() {
                        let _ = writeln!(s, "      {}", c.description);
                    }
                    let caps = rshmem_plugin_api::cap_names(fw, c.desc.caps);
                    let _ = writeln!(
                        s,
                        "      capabilities: {}",
                        if caps.is_empty() { "none".to_string() } else { caps.join(", ") }
                    );
                    for p in c.params() {
                        let (value, from) = config::params::value(fw.name(), &c.name, &p.name)
                            .unwrap_or_else(|| (p.default.clone(), config::Source::Default));
                        let _ = writeln!(
                            s,
                            "      {} = {value:?}  [{from}; {}, default {:?}, file key mca.{}.{}.{}]\n          {}",
                            config::params::var(fw.name(), &c.name, &p.name),
                            config::params::kind_name(p.kind),
                            p.default,
                            fw.name(),
                            c.name,
                            p.name,
                            p.doc
                        );
                    }
                }
                let names: Vec<&str> = sel.ranked.iter().map(|c| c.name.as_str()).collect();
                let chosen = match fw {
                    Framework::Scoll => names.join(", "),
                    // One per device type (opening a memheap only hands out its table).
                    // SAFETY: `core` is the services table built above.
                    Framework::Memheap => match unsafe { plugin::memheaps::resolve(&sel, core) } {
                        Ok(heaps) => heaps
                            .iter()
                            .map(|d| {
                                format!("{} for {} memory", d.name, plugin::memheaps::device_name(d.device))
                            })
                            .collect::<Vec<_>>()
                            .join(", "),
                        Err(e) => format!("none ({e})"),
                    },
                    _ => names[0].to_string(),
                };
                let _ = writeln!(s, "  => selected: {chosen}");
                for note in plugin::select::shadowing_notes(&sel, &found.hidden, &spec, core) {
                    let _ = writeln!(s, "  note: {note}");
                }
                if fw == Framework::Spml {
                    // SAFETY: `core` is the services table built above.
                    unsafe { crate::symm::runtime::open_spml_for_tools(&sel, core) };
                }
            }
            Err(e) => {
                let _ = writeln!(s, "  error (a job would not start): {e}");
            }
        }
    }
    for (dir, why) in &found.unreadable {
        let _ = writeln!(
            s,
            "\nwarning: SHMEM_MCA_plugin_path names {}, which cannot be read ({why})",
            dir.display()
        );
    }
    for (path, why) in &found.skipped {
        let _ = writeln!(s, "\nskipped {}: {why}", path.display());
    }
    match config::params::check(&plugin::loader::param_tables(&found.components)) {
        Ok(warnings) => {
            for w in warnings {
                let _ = writeln!(s, "\nwarning: {w}");
            }
        }
        Err(e) => {
            let _ = writeln!(s, "\nerror (a job would not start): {e}");
        }
    }
    s
}
