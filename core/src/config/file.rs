//! Configuration files (TOML). Three are read, each overriding the one before:
//!
//! 1. the install-wide file, `PREFIX/etc/rshmem.toml` (PREFIX is the directory above the one
//!    holding `libshmem.so`), for a site's defaults;
//! 2. the user's file, `$XDG_CONFIG_HOME/rshmem/config.toml` (else `~/.config/rshmem/config.toml`);
//! 3. the file named by `SHMEM_CONFIG`, for one job.
//!
//! Environment variables override all of them. A setting `SHMEM_X` is the key `x`
//! (`symmetric_size = "1G"`); component selection and parameters live under `[mca]`:
//!
//! ```toml
//! symmetric_size = "1G"
//! [mca]
//! sshmem = "mmap"                  # SHMEM_MCA_sshmem (a string, or a list of names)
//! plugin_path = ["/opt/vendor/lib"]
//! [mca.spml]                       # a framework with parameters is a table ...
//! components = "ucx"               # ... whose `components` is the list (SHMEM_MCA_spml)
//! [mca.spml.ucx]
//! progress_thread = false          # SHMEM_MCA_spml_ucx_progress_thread
//! ```
//!
//! Every value becomes the string its variable would hold, so one parser serves both sources.
//! A value of the wrong type for its setting is an error naming the file and key; a key that
//! names no setting is a warning.

use super::{parse, Kind, SETTINGS};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The frameworks whose selection lists and parameters live under `[mca]`: the plugin ABI's.
pub fn frameworks() -> [&'static str; 4] {
    rshmem_plugin_api::Framework::ALL.map(|f| f.name())
}

/// What the files say, flattened to variable names.
#[derive(Default, Debug)]
pub struct Layer {
    /// The files read, lowest precedence first.
    pub files: Vec<PathBuf>,
    /// Variable name (`SHMEM_SYMMETRIC_SIZE`, `SHMEM_MCA_spml_ucx_progress_thread`) → value and
    /// the index in `files` of the file that set it last.
    pub values: BTreeMap<String, (String, usize)>,
    /// Keys that name no setting, as messages.
    pub warnings: Vec<String>,
}

impl Layer {
    pub fn get(&self, var: &str) -> Option<(&str, &Path)> {
        self.values.get(var).map(|(v, i)| (v.as_str(), self.files[*i].as_path()))
    }
}

/// The files to read, lowest precedence first, each with whether it must exist.
pub fn candidates() -> Vec<(PathBuf, bool)> {
    let mut out = Vec::new();
    if let Some(prefix) = crate::paths::prefix() {
        out.push((prefix.join("etc/rshmem.toml"), false));
    }
    let config_home =
        std::env::var_os("XDG_CONFIG_HOME").filter(|v| !v.is_empty()).map(PathBuf::from).or_else(|| {
            std::env::var_os("HOME").filter(|v| !v.is_empty()).map(|h| PathBuf::from(h).join(".config"))
        });
    if let Some(dir) = config_home {
        out.push((dir.join("rshmem/config.toml"), false));
    }
    if let Some(path) = std::env::var_os("SHMEM_CONFIG").filter(|v| !v.is_empty()) {
        out.push((PathBuf::from(path), true));
    }
    out
}

/// The files of this process, read once.
pub fn layer() -> &'static Result<Layer, String> {
    static LAYER: OnceLock<Result<Layer, String>> = OnceLock::new();
    LAYER.get_or_init(|| load(&candidates()))
}

pub fn load(candidates: &[(PathBuf, bool)]) -> Result<Layer, String> {
    let mut layer = Layer::default();
    for (path, required) in candidates {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !required => continue,
            Err(e) => {
                let via = if *required { "SHMEM_CONFIG names " } else { "" };
                return Err(format!("{via}configuration file {}: cannot read it: {e}", path.display()));
            }
        };
        layer.files.push(path.clone());
        let index = layer.files.len() - 1;
        read(&text, path, index, &mut layer)?;
    }
    Ok(layer)
}

/// Flatten one file's document into `layer`.
fn read(text: &str, path: &Path, index: usize, layer: &mut Layer) -> Result<(), String> {
    let at = |key: &str| format!("configuration file {}: {key}", path.display());
    let doc: toml::Table = toml::from_str(text).map_err(|e| {
        format!("configuration file {}: not valid TOML: {}", path.display(), e.to_string().trim())
    })?;
    for (key, value) in &doc {
        if key == "mca" {
            let toml::Value::Table(mca) = value else {
                return Err(format!("{}: must be a table ([mca])", at("mca")));
            };
            read_mca(mca, &at, index, layer)?;
            continue;
        }
        let var = format!("SHMEM_{}", key.to_ascii_uppercase());
        let setting = SETTINGS
            .iter()
            .find(|s| s.name == var && s.name != "SHMEM_CONFIG" && !s.name.starts_with("SHMEM_MCA_"));
        let Some(setting) = setting else {
            let near = SETTINGS
                .iter()
                .filter_map(|s| file_key(s.name))
                .map(|k| (parse::distance(key, &k), k))
                .filter(|(d, _)| *d <= 3)
                .min()
                .map(|(_, k)| format!("; did you mean {k}?"))
                .unwrap_or_else(|| " (shmem_info --all lists the settings)".into());
            layer.warnings.push(format!("{} is not an rshmem setting and is ignored{near}", at(key)));
            continue;
        };
        let v = typed(setting.kind, value).map_err(|want| format!("{} = {value}: {want}", at(key)))?;
        layer.values.insert(var, (v, index));
    }
    Ok(())
}

fn read_mca(
    mca: &toml::Table,
    at: &dyn Fn(&str) -> String,
    index: usize,
    layer: &mut Layer,
) -> Result<(), String> {
    for (key, value) in mca {
        let here = format!("mca.{key}");
        if key == "plugin_path" {
            let v = list(value, ":").map_err(|want| format!("{} = {value}: {want}", at(&here)))?;
            layer.values.insert("SHMEM_MCA_plugin_path".into(), (v, index));
            continue;
        }
        if !frameworks().contains(&key.as_str()) {
            layer.warnings.push(format!(
                "{} is ignored: [mca] holds plugin_path and the frameworks {}",
                at(&here),
                frameworks().join(", ")
            ));
            continue;
        }
        let toml::Value::Table(fw) = value else {
            let v = list(value, ",").map_err(|want| format!("{} = {value}: {want}", at(&here)))?;
            layer.values.insert(format!("SHMEM_MCA_{key}"), (v, index));
            continue;
        };
        for (comp, params) in fw {
            let here = format!("mca.{key}.{comp}");
            if comp == "components" {
                let v = list(params, ",").map_err(|want| format!("{} = {params}: {want}", at(&here)))?;
                layer.values.insert(format!("SHMEM_MCA_{key}"), (v, index));
                continue;
            }
            let toml::Value::Table(params) = params else {
                return Err(format!(
                    "{}: must be a table of the component's parameters ([{here}]); the {key} components to use go in mca.{key}.components",
                    at(&here)
                ));
            };
            for (name, v) in params {
                let here = format!("{here}.{name}");
                let v = scalar_or_list(v).map_err(|want| format!("{} = {v}: {want}", at(&here)))?;
                // Validated against the component's declaration once the plugins are loaded.
                layer.values.insert(format!("SHMEM_MCA_{key}_{comp}_{name}"), (v, index));
            }
        }
    }
    Ok(())
}

/// The key a setting has in a file (`SHMEM_SYMMETRIC_SIZE` → `symmetric_size`), `None` for
/// those that are not set at the top level.
pub fn file_key(var: &str) -> Option<String> {
    if var == "SHMEM_CONFIG" {
        return None;
    }
    if let Some(rest) = var.strip_prefix("SHMEM_MCA_") {
        return Some(format!("mca.{rest}"));
    }
    var.strip_prefix("SHMEM_").map(str::to_ascii_lowercase)
}

/// A value for a setting of `kind`, as its variable would spell it; `Err` says what was wanted.
fn typed(kind: Kind, v: &toml::Value) -> Result<String, &'static str> {
    use toml::Value::{Boolean, Integer, String as Str};
    match (kind, v) {
        (Kind::Bool, Boolean(b)) => Ok(b.to_string()),
        (Kind::Bool, Integer(i @ 0..=1)) => Ok(i.to_string()),
        (Kind::Bool, Str(s)) if parse::parse_bool(s).is_some() => Ok(s.clone()),
        (Kind::Bool, _) => Err("expected a boolean (true or false)"),
        (Kind::Size, Integer(i)) if *i >= 0 => Ok(i.to_string()),
        (Kind::Size, Str(s)) if s.is_empty() || parse::parse_size(s).is_some() => Ok(s.clone()),
        (Kind::Size, _) => {
            Err("expected a size (a number of bytes, or a string such as \"512M\" or \"1.5G\")")
        }
        (Kind::Int, Integer(i)) => Ok(i.to_string()),
        (Kind::Int, Str(s)) if s.trim().parse::<i64>().is_ok() => Ok(s.clone()),
        (Kind::Int, _) => Err("expected an integer"),
        (Kind::Str, Str(s)) => Ok(s.clone()),
        (Kind::Str, _) => Err("expected a string"),
    }
}

/// A list of names: a string as it is, or an array of strings joined with `sep`.
fn list(v: &toml::Value, sep: &str) -> Result<String, &'static str> {
    const WANT: &str = "expected a string or an array of strings";
    match v {
        toml::Value::String(s) => Ok(s.clone()),
        toml::Value::Array(items) => items
            .iter()
            .map(|i| i.as_str().map(str::to_owned).ok_or(WANT))
            .collect::<Result<Vec<_>, _>>()
            .map(|v| v.join(sep)),
        _ => Err(WANT),
    }
}

/// A component parameter: any scalar, or an array of scalars joined with commas. Its type is
/// checked later against the component's declaration.
fn scalar_or_list(v: &toml::Value) -> Result<String, &'static str> {
    fn scalar(v: &toml::Value) -> Option<String> {
        match v {
            toml::Value::String(s) => Some(s.clone()),
            toml::Value::Integer(i) => Some(i.to_string()),
            toml::Value::Float(f) => Some(f.to_string()),
            toml::Value::Boolean(b) => Some(b.to_string()),
            _ => None,
        }
    }
    match v {
        toml::Value::Array(items) => items
            .iter()
            .map(scalar)
            .collect::<Option<Vec<_>>>()
            .map(|v| v.join(","))
            .ok_or("expected scalars"),
        _ => scalar(v).ok_or("expected a string, number or boolean"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Layer, String> {
        let mut layer = Layer { files: vec![PathBuf::from("/etc/x.toml")], ..Default::default() };
        read(text, Path::new("/etc/x.toml"), 0, &mut layer).map(|()| layer)
    }

    fn value<'a>(l: &'a Layer, var: &str) -> Option<&'a str> {
        l.get(var).map(|(v, _)| v)
    }

    #[test]
    fn settings_lists_and_parameters_become_variables() {
        let l = parse(
            r#"
            symmetric_size = "1G"
            local_map = false
            exit_wait_ms = 10
            [mca]
            sshmem = ["mmap", "ucx"]
            plugin_path = ["/a", "/b"]
            scoll = "^shm"
            [mca.spml]
            components = "ucx"
            [mca.spml.ucx]
            progress_thread = false
            "#,
        )
        .unwrap();
        assert_eq!(value(&l, "SHMEM_SYMMETRIC_SIZE"), Some("1G"));
        assert_eq!(value(&l, "SHMEM_LOCAL_MAP"), Some("false"));
        assert_eq!(value(&l, "SHMEM_EXIT_WAIT_MS"), Some("10"));
        assert_eq!(value(&l, "SHMEM_MCA_sshmem"), Some("mmap,ucx"));
        assert_eq!(value(&l, "SHMEM_MCA_plugin_path"), Some("/a:/b"));
        assert_eq!(value(&l, "SHMEM_MCA_scoll"), Some("^shm"));
        assert_eq!(value(&l, "SHMEM_MCA_spml"), Some("ucx"));
        assert_eq!(value(&l, "SHMEM_MCA_spml_ucx_progress_thread"), Some("false"));
        assert!(l.warnings.is_empty(), "{:?}", l.warnings);
    }

    #[test]
    fn wrong_types_are_errors_naming_file_and_key() {
        let e = parse("symmetric_size = true").unwrap_err();
        assert!(e.contains("/etc/x.toml: symmetric_size = true: expected a size"), "{e}");
        let e = parse("symmetric_size = \"12Q\"").unwrap_err();
        assert!(e.contains("symmetric_size"), "{e}");
        let e = parse("local_map = 2").unwrap_err();
        assert!(e.contains("expected a boolean"), "{e}");
        let e = parse("[mca]\nspml = 3").unwrap_err();
        assert!(e.contains("mca.spml = 3: expected a string or an array of strings"), "{e}");
        let e = parse("[mca.spml]\nucx = 1").unwrap_err();
        assert!(e.contains("mca.spml.components"), "{e}");
        let e = parse("symmetric_size = ").unwrap_err();
        assert!(e.contains("not valid TOML"), "{e}");
    }

    #[test]
    fn unknown_keys_are_warnings_with_a_suggestion() {
        let l = parse("symetric_size = \"1G\"\nconfig = \"/x\"\nmca_spml = \"ucx\"\n[mca]\nfoo = 1").unwrap();
        let w = l.warnings.join("\n");
        assert!(
            w.contains("symetric_size is not an rshmem setting and is ignored; did you mean symmetric_size?"),
            "{w}"
        );
        // The file cannot name another file, nor spell a list outside [mca].
        assert!(w.contains("config is not an rshmem setting"), "{w}");
        assert!(w.contains("mca_spml is not an rshmem setting"), "{w}");
        assert!(w.contains("mca.foo is ignored"), "{w}");
        assert!(l.values.is_empty());
    }

    #[test]
    fn later_files_override_earlier_ones_and_a_named_file_must_exist() {
        let dir = std::env::temp_dir().join(format!("rshmemtest-config-unit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (a, b) = (dir.join("a.toml"), dir.join("b.toml"));
        std::fs::write(&a, "symmetric_size = \"1G\"\ndebug = true\n").unwrap();
        std::fs::write(&b, "symmetric_size = \"2G\"\n").unwrap();
        let l = load(&[(a.clone(), false), (dir.join("absent.toml"), false), (b.clone(), true)]).unwrap();
        assert_eq!(l.get("SHMEM_SYMMETRIC_SIZE"), Some(("2G", b.as_path())));
        assert_eq!(l.get("SHMEM_DEBUG"), Some(("true", a.as_path())));
        let e = load(&[(dir.join("absent.toml"), true)]).unwrap_err();
        assert!(e.contains("SHMEM_CONFIG names configuration file") && e.contains("absent.toml"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
