//! Phase 2 of `shmem_init`: find the component plugins, select one spml, one sshmem, the
//! memheaps (one per device type) and the stack of scolls, and open them.

use super::job::Job;
use super::InitError;
use crate::plugin::memheaps::{DeviceHeap, DeviceMemory};
use crate::plugin::{self, Selection};
use rshmem_plugin_api::{
    CoreServices, Framework, MemheapOps, ScollOps, SpmlOps, SshmemOps, MEMHEAP_DEVICE_CPU,
};

/// The opened components of this job.
pub struct Components {
    pub spml: &'static SpmlOps,
    pub spml_name: String,
    pub spml_thread_multiple: bool,
    pub sshmem: &'static SshmemOps,
    pub sshmem_name: String,
    /// Without SSHMEM_CAP_PEER_ATTACH, same-host peers' heaps are reached through the spml.
    pub peer_attach: bool,
    /// The CPU space's memheap.
    pub memheap: &'static MemheapOps,
    pub memheap_name: String,
    /// Every memheap opened, best first, one per device type.
    pub memheaps: Vec<DeviceHeap>,
    pub memheap_names: Vec<String>,
    /// The GPU memory a memheap serves, or why there is none.
    pub gpu: Option<Result<DeviceMemory, String>>,
    /// Why there is (or is no) GPU space here, for the logs.
    pub gpu_note: String,
    /// Every scoll opened, best first; those that keep the active-set contract.
    pub scolls: Vec<(&'static ScollOps, String)>,
    pub ephemeral: Vec<(&'static ScollOps, String)>,
    /// What discovery found (the scolls' parameters are among the agreed settings).
    pub found: &'static plugin::loader::Discovery,
}

impl Components {
    pub fn open(job: &Job, requested: i32) -> Result<Components, InitError> {
        let found: &'static plugin::loader::Discovery = Box::leak(Box::new(plugin::discover()));
        report_discovery(job, found)?;
        let choose = |fw: Framework| choose(job, found, fw, &needs(job, requested, fw));
        // The memheaps first: whether one serves device memory decides, with SHMEM_LOCAL_MAP,
        // whether the spml may leave out a transport between this host's PEs, which it
        // chooses when it opens (`CoreServices::maps_host_peers`).
        let memheap_sel = choose(Framework::Memheap)?;
        // SAFETY: `core` is the services table built with the job, alive for it.
        let memheaps =
            unsafe { plugin::memheaps::resolve(&memheap_sel, job.core) }.map_err(InitError::Component)?;
        let gpu = memheaps
            .iter()
            .find(|d| d.device == rshmem_plugin_api::MEMHEAP_DEVICE_GPU)
            .map(plugin::memheaps::device_memory);
        let gpu_heap = gpu.as_ref().is_some_and(Result::is_ok);
        // The sshmem probes run a second time later; skip them where the answer is no anyway.
        let maps = job.local_map
            && !gpu_heap
            && sshmem_maps_alone(found, &crate::config::raw("SHMEM_MCA_sshmem"), job.core);
        crate::ops::services::set_maps_host_peers(maps);
        let spml_sel = choose(Framework::Spml)?;
        let (spml, spml_name): (&'static SpmlOps, _) = open_first(&spml_sel, job.core)?;
        let has_cap = |sel: &Selection, name: &str, cap: u64| {
            sel.ranked.iter().find(|c| c.name == name).is_some_and(|c| c.desc.caps & cap != 0)
        };
        let spml_thread_multiple =
            has_cap(&spml_sel, &spml_name, rshmem_plugin_api::SPML_CAP_THREAD_MULTIPLE);
        crate::symm::runtime::set_transport(spml.transport);
        let sshmem_sel = choose(Framework::Sshmem)?;
        let (sshmem, sshmem_name): (&'static SshmemOps, _) = open_first(&sshmem_sel, job.core)?;
        let peer_attach = has_cap(&sshmem_sel, &sshmem_name, rshmem_plugin_api::SSHMEM_CAP_PEER_ATTACH);
        let cpu_heap =
            memheaps.iter().find(|d| d.device == MEMHEAP_DEVICE_CPU).expect("resolve requires one");
        let (memheap, memheap_name) = (cpu_heap.ops, cpu_heap.name.clone());
        let gpu_note = gpu_note(&gpu, &memheap_sel);
        let memheap_names = memheaps
            .iter()
            .map(|d| format!("{} ({} memory)", d.name, plugin::memheaps::device_name(d.device)))
            .collect();
        let (scolls, ephemeral) = open_scolls(job, &choose(Framework::Scoll)?)?;
        Ok(Components {
            spml,
            spml_name,
            spml_thread_multiple,
            sshmem,
            sshmem_name,
            peer_attach,
            memheap,
            memheap_name,
            memheaps,
            memheap_names,
            gpu,
            gpu_note,
            scolls,
            ephemeral,
            found,
        })
    }
}

/// Whether the sshmem that start-up will choose maps this host's peers by itself, without the
/// spml, as far as can be told before the spml opens (`CoreServices::maps_host_peers`). The
/// choice is made once the spml is open, since a component may need its transport (sshmem
/// ucx); ranked now, such a component is not available yet. So this holds only where the best
/// component now is `mmap`, which attaches peers by itself (`SSHMEM_CAP_PEER_ATTACH`) and
/// outranks sshmem ucx, and no plugin hides an sshmem of the same name (a vendor's `mmap` may
/// rank below sshmem ucx). A user's list that names ucx first is the spml's to see
/// (`selection`). Wrong only for a vendor's sshmem that needs the transport and outranks
/// `mmap`: start-up then ends naming the setting that opens a transport.
fn sshmem_maps_alone(found: &plugin::loader::Discovery, spec: &str, core: *const CoreServices) -> bool {
    if found.hidden.iter().any(|h| h.framework == Framework::Sshmem) {
        return false;
    }
    let Ok(sel) = plugin::select(Framework::Sshmem, &found.components, spec, core, &[]) else {
        return false;
    };
    sel.ranked
        .first()
        .is_some_and(|c| c.name == "mmap" && c.desc.caps & rshmem_plugin_api::SSHMEM_CAP_PEER_ATTACH != 0)
}

/// Every file in a plugin directory is meant to be a plugin: one that did not load (another
/// ABI version, a short descriptor, a library of its own missing) or is hidden by one of the
/// same name is a warning, said once (by PE 0). The components' parameters are checked here.
fn report_discovery(job: &Job, found: &plugin::loader::Discovery) -> Result<(), InitError> {
    if crate::log::enabled(crate::log::DEBUG, "plugin loader") {
        for c in &found.components {
            crate::log::log(
                crate::log::DEBUG,
                "plugin loader",
                &format!("found {} {} in {}", c.framework.name(), c.name, c.path.display()),
            );
        }
    }
    let param_warnings = crate::config::params::check(&plugin::loader::param_tables(&found.components))
        .map_err(InitError::Setting)?;
    if job.my_pe == 0 {
        for w in &param_warnings {
            crate::log::log(crate::log::WARN, "settings", w);
        }
    }
    let lvl = if job.my_pe == 0 { crate::log::WARN } else { crate::log::DEBUG };
    for (dir, why) in &found.unreadable {
        crate::log::log(
            lvl,
            "plugin loader",
            &format!(
                "SHMEM_MCA_plugin_path names {}, which cannot be read ({why}): no plugins come from there",
                dir.display()
            ),
        );
    }
    for (path, why) in &found.skipped {
        crate::log::log(lvl, "plugin loader", &format!("skipped {}: {why}", path.display()));
    }
    Ok(())
}

/// What the job needs of a framework's components, by capability bit.
fn needs(job: &Job, requested: i32, fw: Framework) -> Vec<plugin::select::Need> {
    let mut needs = Vec::new();
    if fw != Framework::Spml {
        return needs;
    }
    if job.boot.local_size() < job.n_pes {
        needs.push(plugin::select::Need {
            cap: rshmem_plugin_api::SPML_CAP_MULTI_HOST,
            name: "SPML_CAP_MULTI_HOST",
            why: "its PEs span several hosts",
        });
    }
    if requested >= crate::ops::THREAD_MULTIPLE {
        needs.push(plugin::select::Need {
            cap: rshmem_plugin_api::SPML_CAP_THREAD_MULTIPLE,
            name: "SPML_CAP_THREAD_MULTIPLE",
            why: "it was initialised with SHMEM_THREAD_MULTIPLE",
        });
    }
    needs
}

/// The framework's components the user's `SHMEM_MCA_<framework>` and their probes leave, best
/// first. When none is left, a component that exists but did not load (a missing or broken
/// library of its own, say) is the likely reason: the error says why, not only that none was
/// found (files named for this framework first; else any file that did not load, since a
/// vendor's plugin may be named anyhow).
fn choose(
    job: &Job,
    found: &'static plugin::loader::Discovery,
    fw: Framework,
    needs: &[plugin::select::Need],
) -> Result<Selection<'static>, InitError> {
    let spec = crate::config::raw(&format!("SHMEM_MCA_{}", fw.name()));
    let chosen = plugin::select(fw, &found.components, &spec, job.core, needs).map_err(|e| {
        let tag = format!("{}_", fw.name());
        let failed = || found.skipped.iter().filter(|(_, why)| !why.contains(" is shadowed by "));
        let mut why: Vec<String> = failed()
            .filter(|(p, _)| p.file_name().is_some_and(|n| n.to_string_lossy().contains(&tag)))
            .map(|(p, why)| format!("{}: {why}", p.display()))
            .collect();
        if why.is_empty() {
            why = failed().map(|(p, why)| format!("{}: {why}", p.display())).collect();
        }
        InitError::Component(if why.is_empty() { e } else { format!("{e}; skipped: {}", why.join("; ")) })
    })?;
    if job.my_pe == 0 {
        for note in plugin::select::shadowing_notes(&chosen, &found.hidden, &spec, job.core) {
            crate::log::log(crate::log::WARN, "plugin select", &note);
        }
    }
    Ok(chosen)
}

/// The first of the selected components that opens; the others' errors are warnings then.
fn open_first<T: rshmem_plugin_api::OpsTable>(
    sel: &Selection,
    core: *const CoreServices,
) -> Result<(&'static T, String), InitError> {
    let mut errors = Vec::new();
    for c in &sel.ranked {
        // SAFETY: `core` is the services table; `c` is of T's framework.
        match unsafe { plugin::bind::open::<T>(c, core) } {
            Ok(ops) => {
                for e in &errors {
                    crate::log::log(
                        crate::log::WARN,
                        "plugin select",
                        &format!("using {} instead: {e}", c.name),
                    );
                }
                return Ok((ops, c.name.clone()));
            }
            Err(e) => errors.push(e),
        }
    }
    Err(InitError::Component(format!(
        "no {} component could be opened ({})",
        sel.framework.name(),
        errors.join("; ")
    )))
}

type Scolls = Vec<(&'static ScollOps, String)>;

/// Every selected scoll that opens (they stack), and among them those that serve pSync teams
/// (`SCOLL_CAP_EPHEMERAL`: they keep the active-set contract).
fn open_scolls(job: &Job, sel: &Selection) -> Result<(Scolls, Scolls), InitError> {
    let (mut scolls, mut ephemeral, mut errors) = (Vec::new(), Vec::new(), Vec::new());
    for c in &sel.ranked {
        // SAFETY: `core` is the services table; `c` is an scoll component.
        match unsafe { plugin::bind::open::<ScollOps>(c, job.core) } {
            Ok(ops) => {
                scolls.push((ops, c.name.clone()));
                if c.desc.caps & rshmem_plugin_api::SCOLL_CAP_EPHEMERAL != 0 {
                    ephemeral.push((ops, c.name.clone()));
                }
            }
            Err(e) => {
                if job.my_pe == 0 {
                    crate::log::log(crate::log::WARN, "plugin select", &e);
                }
                errors.push(e);
            }
        }
    }
    if scolls.is_empty() {
        return Err(InitError::Component(format!(
            "no scoll component could be opened ({})",
            errors.join("; ")
        )));
    }
    Ok((scolls, ephemeral))
}

/// The GPU memheap's own account of its device (which one, and why that one), or why no
/// memheap serves GPU memory here.
fn gpu_note(gpu: &Option<Result<DeviceMemory, String>>, sel: &Selection) -> String {
    match gpu {
        Some(Ok(g)) => {
            let said = sel.answers.iter().find(|a| a.available && a.component.name == g.name);
            format!("memheap {}: {}", g.name, said.map_or("serves GPU memory", |a| a.reason.as_str()))
        }
        Some(Err(e)) => e.clone(),
        None => {
            let why: Vec<String> = sel
                .answers
                .iter()
                .filter(|a| !a.available)
                .map(|a| format!("{}: {}", a.component.name, a.reason))
                .collect();
            format!(
                "no memheap component serves GPU memory here{}",
                if why.is_empty() { String::new() } else { format!(" ({})", why.join("; ")) }
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::sshmem_maps_alone;
    use crate::plugin::loader::{Component, Discovery};
    use rshmem_plugin_api::{
        CoreServices, Framework, PluginDescriptor, QueryResult, ABI_VERSION, FRAMEWORK_SSHMEM,
        SSHMEM_CAP_PEER_ATTACH,
    };

    unsafe extern "C" fn available_at_30(_: *const CoreServices, r: *mut QueryResult) {
        // SAFETY: the selection passes a valid result.
        let r = unsafe { &mut *r };
        r.available = 1;
        r.priority = 30;
    }

    unsafe extern "C" fn available_at_5(_: *const CoreServices, r: *mut QueryResult) {
        // SAFETY: the selection passes a valid result.
        let r = unsafe { &mut *r };
        r.available = 1;
        r.priority = 5;
    }

    /// As sshmem ucx before the spml is open: no transport to allocate with yet.
    unsafe extern "C" fn needs_the_transport(_: *const CoreServices, r: *mut QueryResult) {
        // SAFETY: the selection passes a valid result.
        unsafe { &mut *r }.available = 0;
    }

    type Query = unsafe extern "C" fn(*const CoreServices, *mut QueryResult);

    fn sshmem(name: &str, caps: u64, query: Query) -> Component {
        let desc: &'static PluginDescriptor = Box::leak(Box::new(PluginDescriptor {
            abi_version: ABI_VERSION,
            framework: FRAMEWORK_SSHMEM,
            struct_size: std::mem::size_of::<PluginDescriptor>(),
            name: c"test".as_ptr(),
            version: c"0".as_ptr(),
            description: c"test".as_ptr(),
            params: std::ptr::null(),
            n_params: 0,
            caps,
            query: Some(query),
            open: None,
        }));
        Component {
            framework: Framework::Sshmem,
            name: name.into(),
            version: "0".into(),
            description: String::new(),
            path: format!("/plugins/{name}.so").into(),
            desc,
        }
    }

    fn found(components: Vec<Component>, hidden: Vec<Component>) -> Discovery {
        Discovery { components, skipped: Vec::new(), dirs: Vec::new(), unreadable: Vec::new(), hidden }
    }

    fn built_ins() -> Vec<Component> {
        vec![
            sshmem("mmap", SSHMEM_CAP_PEER_ATTACH, available_at_30),
            sshmem("ucx", SSHMEM_CAP_PEER_ATTACH, needs_the_transport),
        ]
    }

    #[test]
    fn only_the_built_in_mmap_chosen_unhidden_lets_the_spml_leave_out_a_host_transport() {
        let core = std::ptr::null();
        // The defaults, and lists that keep mmap first.
        for spec in ["", "mmap", "^ucx", "mmap,ucx"] {
            assert!(sshmem_maps_alone(&found(built_ins(), Vec::new()), spec, core), "{spec:?}");
        }
        // sshmem ucx asked for (available only once the spml is open), or mmap excluded.
        for spec in ["ucx", "^mmap"] {
            assert!(!sshmem_maps_alone(&found(built_ins(), Vec::new()), spec, core), "{spec:?}");
        }
        // A vendor's mmap hides the built-in one (and may rank below sshmem ucx).
        let vendor = vec![sshmem("mmap", SSHMEM_CAP_PEER_ATTACH, available_at_5), built_ins().remove(1)];
        let hidden = vec![built_ins().remove(0)];
        assert!(!sshmem_maps_alone(&found(vendor, hidden), "", core));
        // A component that does not attach peers, chosen by the user's list or by priority.
        let mut anon = built_ins();
        anon.push(sshmem("anon", 0, available_at_30));
        assert!(!sshmem_maps_alone(&found(anon, Vec::new()), "anon", core));
        let mmap_without_attach = vec![sshmem("mmap", 0, available_at_30)];
        assert!(!sshmem_maps_alone(&found(mmap_without_attach, Vec::new()), "", core));
    }
}
