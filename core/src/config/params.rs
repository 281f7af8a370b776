//! Component parameters: `SHMEM_MCA_<framework>_<component>_<name>` in the environment, or
//! `name` in a file's `[mca.<framework>.<component>]` table. Each component declares its
//! parameters (name, kind, default, doc) in its descriptor; at init every value given for a
//! component is checked against that declaration: a value of the wrong kind ends init naming
//! the variable, its origin and the declaration, and a name the component does not declare (or
//! a component that does not exist) is warned about.

use super::{file, lookup_var, parse, Source};
use rshmem_plugin_api::{PARAM_BOOL, PARAM_INT, PARAM_SIZE, PARAM_STRING};
use std::ffi::{c_char, CString};
use std::sync::{Mutex, OnceLock};

/// One parameter a component declares.
#[derive(Clone, Debug)]
pub struct Declared {
    pub name: String,
    /// A `PARAM_*` value (read as a plain number: a C plugin may put anything there).
    pub kind: u32,
    pub default: String,
    pub doc: String,
}

/// A component with its declared parameters.
pub struct ComponentParams<'a> {
    pub framework: &'a str,
    pub component: &'a str,
    pub params: Vec<Declared>,
}

pub fn kind_name(kind: u32) -> &'static str {
    match kind {
        PARAM_STRING => "string",
        PARAM_INT => "integer",
        PARAM_BOOL => "boolean",
        PARAM_SIZE => "size",
        _ => "unknown kind",
    }
}

/// The kind's name with its article: "an integer", "a size".
pub fn a_kind(kind: u32) -> String {
    let n = kind_name(kind);
    let article = if n.starts_with(['a', 'e', 'i', 'o', 'u']) { "an" } else { "a" };
    format!("{article} {n}")
}

/// Whether `v` is a valid value of `kind`.
pub fn valid(kind: u32, v: &str) -> bool {
    match kind {
        PARAM_BOOL => parse::parse_bool(v).is_some(),
        PARAM_INT => v.trim().parse::<i64>().is_ok(),
        PARAM_SIZE => parse::parse_size(v).is_some(),
        _ => true,
    }
}

/// The variable of a parameter.
pub fn var(framework: &str, component: &str, name: &str) -> String {
    format!("SHMEM_MCA_{framework}_{component}_{name}")
}

/// A parameter's value and origin (environment, else the files), `None` when unset.
pub fn value(framework: &str, component: &str, name: &str) -> Option<(String, Source)> {
    lookup_var(&var(framework, component, name))
}

/// `SHMEM_MCA_<framework>_<component>_<param>` as a C string owned for the job's lifetime
/// (plugins keep the pointer).
pub fn component_param(framework: &str, component: &str, param: &str) -> Option<*const c_char> {
    static CACHE: OnceLock<Mutex<Vec<(String, CString)>>> = OnceLock::new();
    let key = var(framework, component, param);
    let (value, _) = lookup_var(&key)?;
    let kind = KINDS.lock().unwrap_or_else(|e| e.into_inner()).iter().find(|(k, _)| *k == key).map(|e| e.1);
    let value = match kind {
        Some(k) => normalized(k, &value),
        None => value,
    };
    let mut cache = CACHE.get_or_init(|| Mutex::new(Vec::new())).lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, v)) = cache.iter().find(|(k, v)| *k == key && v.to_str() == Ok(value.as_str())) {
        return Some(v.as_ptr());
    }
    let c = CString::new(value).ok()?;
    // The CString's heap buffer does not move when the Vec grows, so the pointer stays valid.
    let ptr = c.as_ptr();
    cache.push((key, c));
    Some(ptr)
}

/// Every component-parameter variable given (environment and files), with its value and origin.
fn given() -> Vec<(String, String, Source)> {
    let mut out: Vec<(String, String, Source)> = Vec::new();
    let is_param = |k: &str| file::frameworks().iter().any(|f| k.starts_with(&format!("SHMEM_MCA_{f}_")));
    for (k, v) in std::env::vars_os() {
        if let (Some(k), Some(v)) = (k.to_str(), v.to_str()) {
            if is_param(k) {
                out.push((k.to_string(), v.to_string(), Source::Env(k.to_string())));
            }
        }
    }
    if let Ok(layer) = file::layer() {
        for (k, _) in layer.values.iter().filter(|(k, _)| is_param(k)) {
            if out.iter().all(|(o, _, _)| o != k) {
                if let Some((v, p)) = layer.get(k) {
                    out.push((k.clone(), v.to_string(), Source::File(p)));
                }
            }
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// Check every given parameter against the components found. `Ok` carries warnings (names no
/// component declares); `Err` is the first value of the wrong kind.
pub fn check(components: &[ComponentParams]) -> Result<Vec<String>, String> {
    // Remember each declared kind, so that `component_param` hands C plugins one spelling.
    let mut kinds = KINDS.lock().unwrap_or_else(|e| e.into_inner());
    for c in components {
        for p in &c.params {
            kinds.push((var(c.framework, c.component, &p.name), p.kind));
        }
    }
    drop(kinds);
    check_given(components, &given())
}

/// The declared kind of each component-parameter variable (see [`check`]).
static KINDS: Mutex<Vec<(String, u32)>> = Mutex::new(Vec::new());

/// A valid value of `kind` in the one spelling a plugin gets: booleans as `1` or `0`
/// (whatever of true/yes/on the user wrote), integers and sizes as plain decimal numbers (a
/// size in bytes: `64K` is `65536`), strings as given. Anything else is left as given (the
/// check at init has refused invalid values already).
pub fn normalized(kind: u32, v: &str) -> String {
    let n = match kind {
        PARAM_BOOL => parse::parse_bool(v).map(|b| if b { "1" } else { "0" }.to_string()),
        PARAM_INT => v.trim().parse::<i64>().ok().map(|n| n.to_string()),
        PARAM_SIZE => parse::parse_size(v).map(|n| n.to_string()),
        _ => None,
    };
    n.unwrap_or_else(|| v.to_string())
}

fn check_given(
    components: &[ComponentParams],
    given: &[(String, String, Source)],
) -> Result<Vec<String>, String> {
    let mut warnings = Vec::new();
    for (var, v, from) in given {
        let Some(fw) = file::frameworks().into_iter().find(|f| var.starts_with(&format!("SHMEM_MCA_{f}_")))
        else {
            continue;
        };
        let rest = &var[format!("SHMEM_MCA_{fw}_").len()..];
        let of_fw: Vec<&ComponentParams> = components.iter().filter(|c| c.framework == fw).collect();
        // The longest component name that prefixes the rest (names may hold underscores).
        let comp = of_fw
            .iter()
            .filter(|c| rest.starts_with(&format!("{}_", c.component)))
            .max_by_key(|c| c.component.len());
        let Some(comp) = comp else {
            let names: Vec<&str> = of_fw.iter().map(|c| c.component).collect();
            warnings.push(format!(
                "{var} ({from}) names no {fw} component that was found and is ignored (the {fw} components are: {})",
                if names.is_empty() { "none".to_string() } else { names.join(", ") }
            ));
            continue;
        };
        let name = &rest[comp.component.len() + 1..];
        let Some(decl) = comp.params.iter().find(|p| p.name == name) else {
            let near = comp
                .params
                .iter()
                .map(|p| (parse::distance(name, &p.name), p.name.as_str()))
                .filter(|(d, _)| *d <= 3)
                .min()
                .map(|(_, n)| format!("; did you mean {}?", self::var(fw, comp.component, n)))
                .unwrap_or_default();
            let declared: Vec<&str> = comp.params.iter().map(|p| p.name.as_str()).collect();
            warnings.push(format!(
                "{var} ({from}) is not a parameter of {fw} {} and is ignored{near} (its parameters: {})",
                comp.component,
                if declared.is_empty() { "none".to_string() } else { declared.join(", ") }
            ));
            continue;
        };
        if !valid(decl.kind, v) {
            return Err(format!(
                "{var}={v} ({from}) is not {}: {fw} {} declares {name} as {} ({})",
                a_kind(decl.kind),
                comp.component,
                a_kind(decl.kind),
                decl.doc
            ));
        }
    }
    Ok(warnings)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ucx() -> Vec<ComponentParams<'static>> {
        vec![ComponentParams {
            framework: "spml",
            component: "ucx",
            params: vec![Declared {
                name: "progress_thread".into(),
                kind: PARAM_BOOL,
                default: "1".into(),
                doc: "a thread".into(),
            }],
        }]
    }

    fn env(var: &str, v: &str) -> (String, String, Source) {
        (var.to_string(), v.to_string(), Source::Env(var.to_string()))
    }

    #[test]
    fn values_are_checked_against_the_declared_kind() {
        assert!(check_given(&ucx(), &[env("SHMEM_MCA_spml_ucx_progress_thread", "off")]).unwrap().is_empty());
        let e = check_given(&ucx(), &[env("SHMEM_MCA_spml_ucx_progress_thread", "maybe")]).unwrap_err();
        assert!(
            e.starts_with("SHMEM_MCA_spml_ucx_progress_thread=maybe (environment (SHMEM_MCA_spml_ucx_progress_thread)) is not a boolean: spml ucx declares progress_thread as a boolean"),
            "{e}"
        );
        let mut int = ucx();
        int[0].params[0].kind = PARAM_INT;
        let e = check_given(&int, &[env("SHMEM_MCA_spml_ucx_progress_thread", "x")]).unwrap_err();
        assert!(e.contains(") is not an integer: spml ucx declares progress_thread as an integer"), "{e}");
    }

    #[test]
    fn plugins_get_one_spelling_of_each_kind() {
        for (kind, given, got) in [
            (PARAM_BOOL, "true", "1"),
            (PARAM_BOOL, "off", "0"),
            (PARAM_BOOL, "1", "1"),
            (PARAM_SIZE, "64K", "65536"),
            (PARAM_SIZE, "4096", "4096"),
            (PARAM_INT, " 7 ", "7"),
            (PARAM_STRING, " as is ", " as is "),
        ] {
            assert_eq!(normalized(kind, given), got, "{given}");
        }
    }

    #[test]
    fn unknown_components_and_parameters_are_warned_about() {
        let w = check_given(
            &ucx(),
            &[env("SHMEM_MCA_spml_ucx_progres_thread", "1"), env("SHMEM_MCA_spml_verbs_x", "1")],
        )
        .unwrap();
        assert!(w[0].contains("is not a parameter of spml ucx and is ignored; did you mean SHMEM_MCA_spml_ucx_progress_thread?"), "{w:?}");
        assert!(w[1].contains("names no spml component that was found"), "{w:?}");
        assert!(w[1].contains("the spml components are: ucx"), "{w:?}");
    }

    #[test]
    fn kinds_validate() {
        assert!(valid(PARAM_SIZE, "64K") && !valid(PARAM_SIZE, "lots"));
        assert!(valid(PARAM_INT, "-3") && !valid(PARAM_INT, "3x"));
        assert!(valid(PARAM_STRING, "anything"));
    }
}
