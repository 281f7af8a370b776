//! Finding and loading plugin shared objects. Every file exports one descriptor function; a
//! file with another ABI version, no descriptor, or a bad one is skipped with a note that
//! `shmem_info` and the logs show.

use crate::config::params::{ComponentParams, Declared};
use rshmem_plugin_api::{
    c_str, Framework, ParamDecl, PluginDescriptor, ABI_VERSION, DESCRIPTOR_SYMBOL, DESCRIPTOR_SYMBOL_V1,
};
use std::path::{Path, PathBuf};

/// A loaded component. The library stays loaded for the life of the process.
pub struct Component {
    pub framework: Framework,
    pub name: String,
    pub version: String,
    pub description: String,
    pub path: PathBuf,
    pub desc: &'static PluginDescriptor,
}

impl Component {
    /// The parameters the component declares.
    pub fn params(&self) -> Vec<Declared> {
        let d = self.desc;
        if d.params.is_null() {
            return Vec::new();
        }
        // SAFETY: the descriptor promises `n_params` valid entries at `params`.
        let params: &[ParamDecl] = unsafe { std::slice::from_raw_parts(d.params, d.n_params) };
        params
            .iter()
            .map(|p| {
                // SAFETY: descriptor strings are NUL-terminated statics.
                let (name, default, doc) = unsafe { (c_str(p.name), c_str(p.default_value), c_str(p.doc)) };
                Declared {
                    name: name.unwrap_or_default(),
                    kind: p.kind,
                    default: default.unwrap_or_default(),
                    doc: doc.unwrap_or_default(),
                }
            })
            .collect()
    }
}

/// Every component's declared parameters, for [`crate::config::params::check`].
pub fn param_tables(components: &[Component]) -> Vec<ComponentParams<'_>> {
    components
        .iter()
        .map(|c| ComponentParams { framework: c.framework.name(), component: &c.name, params: c.params() })
        .collect()
}

/// The result of scanning the plugin directories.
#[derive(Default)]
pub struct Discovery {
    pub components: Vec<Component>,
    /// Files that were not loaded, with the reason.
    pub skipped: Vec<(PathBuf, String)>,
    pub dirs: Vec<PathBuf>,
    /// Directories `SHMEM_MCA_plugin_path` names that could not be read, with the reason.
    pub unreadable: Vec<(PathBuf, String)>,
    /// Components hidden by one of the same framework and name from an earlier directory
    /// (kept to say when the hiding changes the default choice: `select::shadowing_notes`).
    pub hidden: Vec<Component>,
}

/// The directories searched, in order: `SHMEM_MCA_plugin_path` entries, then the library's own
/// directory's `rshmem/` subdirectory and the directory itself (`shmem_info` loads the library,
/// so it searches the same ones); for a program with the core linked in (Rust programs), then
/// the build and install directories the core was built for (`paths::fallback_plugin_dirs`).
pub fn plugin_dirs() -> Vec<(PathBuf, bool)> {
    let mut dirs = Vec::new();
    for d in crate::config::raw("SHMEM_MCA_plugin_path").split(':').filter(|d| !d.is_empty()) {
        dirs.push((PathBuf::from(d), true));
    }
    if let Some(own) = crate::paths::own_dir() {
        dirs.push((own.join("rshmem"), true));
        // The build directory also holds unrelated libraries: only our own naming there.
        dirs.push((own, false));
    }
    if crate::paths::linked_into_program() {
        for d in crate::paths::fallback_plugin_dirs() {
            if !dirs.iter().any(|(known, _)| *known == d.0) {
                dirs.push(d);
            }
        }
    }
    dirs
}

fn candidate(path: &Path, any_name: bool) -> bool {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else { return false };
    name.ends_with(".so") && (any_name || name.starts_with("librshmem_"))
}

/// Load one plugin file.
pub fn load(path: &Path) -> Result<Component, String> {
    use libloading::os::unix::{Library, RTLD_LOCAL, RTLD_NOW};
    // SAFETY: loading runs the object's initialisers; plugins are trusted code by design.
    let lib = unsafe { Library::open(Some(path), RTLD_NOW | RTLD_LOCAL) }
        .map_err(|e| format!("dlopen failed: {e}"))?;
    type DescFn = unsafe extern "C" fn() -> *const PluginDescriptor;
    // SAFETY: the symbol, when present, has this signature by the ABI contract.
    let f = match unsafe { lib.get::<DescFn>(DESCRIPTOR_SYMBOL.as_bytes()) } {
        Ok(f) => f,
        // SAFETY: only looked up, never called.
        Err(_) if unsafe { lib.get::<DescFn>(DESCRIPTOR_SYMBOL_V1.as_bytes()) }.is_ok() => {
            return Err(format!(
                "plugin ABI version 1 (this library speaks {ABI_VERSION}): rebuild it against this shmem_plugin.h"
            ))
        }
        Err(_) => return Err(format!("no {DESCRIPTOR_SYMBOL} symbol (not an rshmem plugin)")),
    };
    // SAFETY: calling the descriptor function has no preconditions.
    let desc = unsafe { f() };
    if desc.is_null() {
        return Err("descriptor function returned NULL".into());
    }
    // The library must outlive every pointer into it: keep it loaded for good.
    std::mem::forget(lib);
    // Every ABI version starts the descriptor with its version: read that alone first.
    // SAFETY: a non-NULL descriptor of a library that stays loaded.
    let abi = unsafe { desc.cast::<u32>().read() };
    if abi != ABI_VERSION {
        return Err(format!("plugin ABI version {abi} (this library speaks {ABI_VERSION})"));
    }
    // SAFETY: the descriptor is of this ABI, so struct_size follows at its offset.
    let size = unsafe { std::ptr::addr_of!((*desc).struct_size).read() };
    if size < std::mem::size_of::<PluginDescriptor>() {
        return Err(format!(
            "its descriptor is {size} bytes (struct_size), shorter than ABI {ABI_VERSION}'s {}",
            std::mem::size_of::<PluginDescriptor>()
        ));
    }
    // SAFETY: a whole descriptor of this ABI (query and open are Option, so NULL is valid).
    let desc: &'static PluginDescriptor = unsafe { &*desc };
    let framework = Framework::from_u32(desc.framework)
        .ok_or_else(|| format!("unknown framework number {}", desc.framework))?;
    if desc.query.is_none() || desc.open.is_none() {
        let slot = if desc.query.is_none() { "query" } else { "open" };
        return Err(format!("the required slot shmem_plugin_descriptor_t.{slot} is NULL"));
    }
    // SAFETY: descriptor strings are NUL-terminated statics of the loaded library.
    let (name, version, description) =
        unsafe { (c_str(desc.name), c_str(desc.version), c_str(desc.description)) };
    let name = name.filter(|n| !n.is_empty()).ok_or("descriptor has no name")?;
    Ok(Component {
        framework,
        name,
        version: version.unwrap_or_default(),
        description: description.unwrap_or_default(),
        path: path.to_path_buf(),
        desc,
    })
}

/// Scan every plugin directory. A component name seen twice in one framework keeps the first
/// (earlier directories win, so `SHMEM_MCA_plugin_path` can override a built-in component).
pub fn discover() -> Discovery {
    let mut out = Discovery::default();
    let named = crate::config::raw("SHMEM_MCA_plugin_path");
    let named: Vec<&str> = named.split(':').filter(|d| !d.is_empty()).collect();
    for (dir, any_name) in plugin_dirs() {
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            // The library's own directories need not exist; a directory the user named must.
            Err(e) if named.iter().any(|n| Path::new(n) == dir) => {
                out.unreadable.push((dir, e.to_string()));
                continue;
            }
            Err(_) => continue,
        };
        out.dirs.push(dir.clone());
        let mut files: Vec<PathBuf> =
            entries.flatten().map(|e| e.path()).filter(|p| candidate(p, any_name)).collect();
        files.sort();
        for path in files {
            match load(&path) {
                Ok(c) => {
                    if let Some(o) =
                        out.components.iter().find(|o| o.framework == c.framework && o.name == c.name)
                    {
                        // A vendor's component named like a built-in hides it: say so.
                        out.skipped.push((
                            path,
                            format!(
                                "{} {} is shadowed by {} (an earlier directory wins)",
                                c.framework.name(),
                                c.name,
                                o.path.display()
                            ),
                        ));
                        out.hidden.push(c);
                    } else {
                        out.components.push(c);
                    }
                }
                Err(why) => out.skipped.push((path, why)),
            }
        }
    }
    out
}
