//! Reports for `SHMEM_INFO` and the `shmem_info` tool: the settings table with values, and every
//! component found with its probe answer.

use crate::config::{self, SETTINGS};
use crate::plugin::{self, services};
use rshmem_plugin_api::Framework;
use std::fmt::Write;

pub fn settings_report() -> String {
    let mut s = String::from("Settings (environment > default):\n");
    for st in SETTINGS {
        let legacy = st.legacy.map(|l| format!(" (also {l})")).unwrap_or_default();
        let _ = writeln!(
            s,
            "  {}{legacy} = {:?}  [{}]\n      {}",
            st.name,
            config::raw(st.name),
            config::source(st.name),
            st.doc
        );
    }
    s
}

/// Discover and probe every component as `shmem_init` would in a one-PE job.
pub fn components_report() -> String {
    let mut s = String::new();
    let found = plugin::discover();
    let _ = writeln!(s, "Plugin directories searched:");
    for d in crate::plugin::loader::plugin_dirs() {
        let _ = writeln!(s, "  {}", d.0.display());
    }
    let core = services::table(0, 1, 0, 1, &format!("info{}", std::process::id()));
    crate::runtime::use_singleton_bootstrap();
    for fw in Framework::ALL {
        let spec = config::raw(&format!("SHMEM_MCA_{}", fw.name()));
        let _ = writeln!(s, "\n{} components (SHMEM_MCA_{}={:?}):", fw.name(), fw.name(), spec);
        match plugin::select(fw, &found.components, &spec, core) {
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
                    for (name, default, doc) in c.params() {
                        let _ = writeln!(
                            s,
                            "      SHMEM_MCA_{}_{}_{name} (default {default:?}): {doc}",
                            fw.name(),
                            c.name
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
                if fw == Framework::Spml {
                    // SAFETY: `core` is the services table built above.
                    unsafe { crate::runtime::open_spml_for_tools(&sel, core) };
                }
            }
            Err(e) => {
                let _ = writeln!(s, "  error: {e}");
            }
        }
    }
    for (path, why) in &found.skipped {
        let _ = writeln!(s, "\nskipped {}: {why}", path.display());
    }
    s
}
