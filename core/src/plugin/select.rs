//! The one selection routine for every framework: an include list (`a,b`, in that order) or an
//! exclude list (`^a,b`), then each remaining component's own probe (`query`), then priority.

use super::loader::Component;
use rshmem_plugin_api::{CoreServices, Framework, QueryResult};

/// A component's answer to `query`.
pub struct Choice<'a> {
    pub component: &'a Component,
    pub available: bool,
    pub priority: i32,
    pub reason: String,
    /// Excluded by the user's list (not queried).
    pub excluded: bool,
}

pub struct Selection<'a> {
    pub framework: Framework,
    /// Available components, best first.
    pub ranked: Vec<&'a Component>,
    /// Every component of the framework with its answer, for reports.
    pub answers: Vec<Choice<'a>>,
}

enum Filter {
    All,
    Include(Vec<String>),
    Exclude(Vec<String>),
}

fn parse_filter(spec: &str) -> Filter {
    let spec = spec.trim();
    if spec.is_empty() {
        return Filter::All;
    }
    let (exclude, list) = match spec.strip_prefix('^') {
        Some(rest) => (true, rest),
        None => (false, spec),
    };
    let names = list.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect();
    if exclude {
        Filter::Exclude(names)
    } else {
        Filter::Include(names)
    }
}

fn query(c: &Component, core: *const CoreServices) -> QueryResult {
    let mut r = QueryResult::default();
    if let Some(q) = c.desc.query {
        // SAFETY: `query` follows the plugin ABI; `core` and `r` are valid for the call.
        let ok = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| unsafe { q(core, &mut r) }));
        if ok.is_err() {
            r = QueryResult::default();
            r.set_reason("query panicked");
        }
    }
    r
}

/// A capability the job needs from every component of a framework: the `*_CAP_*` bit, its
/// name, and why the job needs it.
#[derive(Copy, Clone, Debug)]
pub struct Need {
    pub cap: u64,
    pub name: &'static str,
    pub why: &'static str,
}

/// Select among `components` of `framework` using the user's list `spec` (the value of
/// `SHMEM_MCA_<framework>`); components lacking a capability in `needs` are unavailable, saying
/// which. Errors name the setting and list what exists.
pub fn select<'a>(
    framework: Framework,
    components: &'a [Component],
    spec: &str,
    core: *const CoreServices,
    needs: &[Need],
) -> Result<Selection<'a>, String> {
    let of_fw: Vec<&Component> = components.iter().filter(|c| c.framework == framework).collect();
    let fw = framework.name();
    let existing = || {
        let names: Vec<&str> = of_fw.iter().map(|c| c.name.as_str()).collect();
        if names.is_empty() {
            "none were found; check SHMEM_MCA_plugin_path".to_string()
        } else {
            format!("the {fw} components that exist are: {}", names.join(", "))
        }
    };
    let filter = parse_filter(spec);
    let listed: &[String] = match &filter {
        Filter::Include(n) | Filter::Exclude(n) => n,
        Filter::All => &[],
    };
    for n in listed {
        if !of_fw.iter().any(|c| &c.name == n) {
            return Err(format!(
                "SHMEM_MCA_{fw}={spec}: there is no {fw} component named '{n}'; {}",
                existing()
            ));
        }
    }
    let mut answers = Vec::new();
    for c in &of_fw {
        let excluded = match &filter {
            Filter::All => false,
            Filter::Include(n) => !n.contains(&c.name),
            Filter::Exclude(n) => n.contains(&c.name),
        };
        if excluded {
            answers.push(Choice {
                component: c,
                available: false,
                priority: 0,
                reason: format!("not selected by SHMEM_MCA_{fw}"),
                excluded,
            });
            continue;
        }
        if let Some(n) = needs.iter().find(|n| c.desc.caps & n.cap == 0) {
            answers.push(Choice {
                component: c,
                available: false,
                priority: 0,
                reason: format!("lacks {}, which this job needs ({})", n.name, n.why),
                excluded,
            });
            continue;
        }
        let r = query(c, core);
        answers.push(Choice {
            component: c,
            available: r.available != 0,
            priority: r.priority,
            reason: r.reason_str(),
            excluded,
        });
    }
    let mut ranked: Vec<&Choice> = answers.iter().filter(|a| a.available).collect();
    match &filter {
        Filter::Include(order) => ranked.sort_by_key(|a| order.iter().position(|n| *n == a.component.name)),
        _ => ranked.sort_by(|a, b| b.priority.cmp(&a.priority).then(a.component.name.cmp(&b.component.name))),
    }
    let ranked: Vec<&Component> = ranked.iter().map(|a| a.component).collect();
    if ranked.is_empty() {
        let why: Vec<String> =
            answers.iter().map(|a| format!("{}: {}", a.component.name, a.reason)).collect();
        return Err(if why.is_empty() {
            format!("no {fw} component is available: {}", existing())
        } else {
            format!("no {fw} component is available ({})", why.join("; "))
        });
    }
    Ok(Selection { framework, ranked, answers })
}

/// The default choice of `sel` (no `SHMEM_MCA_<framework>` list) when a component hides
/// another of the same name from a later directory (a vendor's plugin named like a built-in)
/// and would not be chosen where the hidden one would, or the other way round: a vendor's
/// `mmap` at priority 5 over the built-in's 30 made `ucx` the default sshmem without a word.
/// One note per such hiding, naming both files, priorities and choices.
pub fn shadowing_notes(
    sel: &Selection,
    hidden: &[Component],
    spec: &str,
    core: *const CoreServices,
) -> Vec<String> {
    let fw = sel.framework.name();
    if !spec.trim().is_empty() || sel.ranked.is_empty() {
        return Vec::new();
    }
    let chosen = &sel.ranked[0].name;
    let mut notes = Vec::new();
    for h in hidden.iter().filter(|h| h.framework == sel.framework) {
        let Some(shown) = sel.answers.iter().find(|a| a.component.name == h.name) else { continue };
        let r = query(h, core);
        // The best available answer with the hidden component's in place of the shown one's.
        let best = sel
            .answers
            .iter()
            .map(|a| {
                if a.component.name == h.name {
                    (r.available != 0, r.priority, &h.name)
                } else {
                    (a.available, a.priority, &a.component.name)
                }
            })
            .filter(|(available, _, _)| *available)
            .max_by(|a, b| a.1.cmp(&b.1).then(b.2.cmp(a.2)));
        let Some((_, _, instead)) = best else { continue };
        if instead != chosen {
            let said = |available: bool, priority: i32| {
                if available {
                    format!("priority {priority}")
                } else {
                    "unavailable".to_string()
                }
            };
            notes.push(format!(
                "{fw} {} from {} ({}) hides the one from {} ({}): {fw} {chosen} is the default choice where it would be {fw} {instead}; SHMEM_MCA_{fw} chooses explicitly",
                h.name,
                shown.component.path.display(),
                said(shown.available, shown.priority),
                h.path.display(),
                said(r.available != 0, r.priority),
            ));
        }
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_parse() {
        assert!(matches!(parse_filter(""), Filter::All));
        assert!(matches!(parse_filter("a,b"), Filter::Include(v) if v == ["a", "b"]));
        assert!(matches!(parse_filter("^ucx"), Filter::Exclude(v) if v == ["ucx"]));
    }

    #[test]
    fn unknown_name_is_an_error_listing_what_exists() {
        let err = select(Framework::Spml, &[], "nonexistent", std::ptr::null(), &[]).err().unwrap();
        assert!(err.contains("SHMEM_MCA_spml=nonexistent"), "{err}");
        assert!(err.contains("no spml component named 'nonexistent'"), "{err}");
    }
}
