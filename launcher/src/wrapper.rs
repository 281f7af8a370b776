//! `oshcc` / `oshcxx` (`oshc++`): run the system compiler with rshmem's include directory, and
//! when linking, its library directory, an rpath (so programs run with no environment set up)
//! and `-lshmem`. `--showme` and its `:compile`, `:link`, `:version`... forms (Open MPI's) print instead of running.

use std::path::{Path, PathBuf};
use std::process::Command;

#[derive(Copy, Clone, PartialEq, Eq)]
pub enum Lang {
    C,
    Cxx,
}

fn exe_dir() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|p| std::fs::canonicalize(p).ok())
        .and_then(|p| p.parent().map(Path::to_path_buf))
        .unwrap_or_else(|| PathBuf::from("."))
}

/// Headers: an install's `../include`, else the source tree this tool was built from.
pub fn include_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("RSHMEM_INCLUDE") {
        return PathBuf::from(d);
    }
    let installed = exe_dir().join("../include");
    let dir = if installed.join("shmem.h").exists() {
        installed
    } else {
        PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../core/include"))
    };
    std::fs::canonicalize(&dir).unwrap_or(dir)
}

/// Library: beside the tools (a cargo build), or an install's `../lib`.
pub fn lib_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("RSHMEM_LIBDIR") {
        return PathBuf::from(d);
    }
    let here = exe_dir();
    if here.join("libshmem.so").exists() {
        return here;
    }
    let lib = here.join("../lib");
    std::fs::canonicalize(&lib).unwrap_or(lib)
}

fn compiler(lang: Lang) -> String {
    let (var, default) = match lang {
        Lang::C => ("OSHCC_CC", "cc"),
        Lang::Cxx => ("OSHCXX_CXX", "c++"),
    };
    std::env::var(var).unwrap_or_else(|_| default.to_string())
}

/// The flags a compile step needs.
pub fn compile_flags() -> Vec<String> {
    vec![format!("-I{}", include_dir().display())]
}

/// The flags a link step needs: the library directory, an rpath to it, the library.
pub fn link_flags() -> Vec<String> {
    let lib = lib_dir();
    vec![format!("-L{}", lib.display()), format!("-Wl,-rpath,{}", lib.display()), "-lshmem".into()]
}

pub fn command(lang: Lang, args: &[String]) -> Command {
    let links = !args.iter().any(|a| matches!(a.as_str(), "-c" | "-E" | "-S" | "-M" | "-MM"));
    let mut cmd = Command::new(compiler(lang));
    cmd.args(compile_flags());
    cmd.args(args);
    if links {
        cmd.args(link_flags());
    }
    cmd
}

/// What a `--showme`-style option asks for (Open MPI's wrapper options, and MPICH's `-show`,
/// `-compile_info`, `-link_info`).
#[derive(Debug, PartialEq, Eq)]
pub enum Show {
    /// The whole command, with the other arguments.
    Command,
    Compile,
    Link,
    Compiler,
    IncDirs,
    LibDirs,
    Libs,
    Version,
    Help,
}

/// Parses a wrapper option; None for an argument that goes to the compiler.
pub fn show_option(arg: &str) -> Option<Result<Show, String>> {
    let what = match arg {
        "--showme" | "-showme" | "-show" => Show::Command,
        "--showme:compile" | "-compile_info" => Show::Compile,
        "--showme:link" | "-link_info" => Show::Link,
        "--showme:command" => Show::Compiler,
        "--showme:incdirs" => Show::IncDirs,
        "--showme:libdirs" => Show::LibDirs,
        "--showme:libs" => Show::Libs,
        "--showme:version" => Show::Version,
        "--showme:help" => Show::Help,
        other if other.starts_with("--showme:") => {
            return Some(Err(format!(
                "unknown option {other} (known: --showme, --showme:compile, --showme:link, --showme:command, --showme:incdirs, --showme:libdirs, --showme:libs, --showme:version, --showme:help)"
            )))
        }
        _ => return None,
    };
    Some(Ok(what))
}

fn shell_join<I: IntoIterator<Item = String>>(parts: I) -> String {
    parts.into_iter().collect::<Vec<_>>().join(" ")
}

/// The text a `--showme` option prints, given the other arguments.
pub fn show(lang: Lang, what: &Show, args: &[String], tool: &str) -> String {
    match what {
        Show::Command => {
            let cmd = command(lang, args);
            shell_join(
                std::iter::once(cmd.get_program().to_string_lossy().into_owned())
                    .chain(cmd.get_args().map(|a| a.to_string_lossy().into_owned())),
            )
        }
        // As Open MPI's wrappers do, the user's other arguments follow the flags.
        Show::Compile => shell_join(compile_flags().into_iter().chain(args.iter().cloned())),
        Show::Link => shell_join(link_flags().into_iter().chain(args.iter().cloned())),
        Show::Compiler => compiler(lang),
        Show::IncDirs => include_dir().display().to_string(),
        Show::LibDirs => lib_dir().display().to_string(),
        Show::Libs => "shmem".into(),
        Show::Version => format!(
            "{tool}: rshmem {} (OpenSHMEM 1.6), language {}, compiler {}",
            env!("CARGO_PKG_VERSION"),
            if lang == Lang::C { "C" } else { "C++" },
            compiler(lang)
        ),
        Show::Help => format!(
            "usage: {tool} [--showme[:compile|:link|:command|:incdirs|:libdirs|:libs|:version|:help]] compiler-arguments...\n\
             Runs {} with rshmem's include directory and, when linking, its library (-lshmem) and an rpath.\n\
             OSHCC_CC / OSHCXX_CXX choose the compiler; RSHMEM_INCLUDE and RSHMEM_LIBDIR override the directories.",
            compiler(lang)
        ),
    }
}

/// Entry point shared by both wrappers.
pub fn main(lang: Lang) -> i32 {
    let tool = if lang == Lang::C { "oshcc" } else { "oshc++" };
    let mut asked = None;
    let mut rest = Vec::new();
    for a in std::env::args().skip(1) {
        match show_option(&a) {
            Some(Ok(w)) => asked = asked.or(Some(w)),
            Some(Err(e)) => {
                eprintln!("{tool}: {e}");
                return 2;
            }
            None => rest.push(a),
        }
    }
    if let Some(w) = asked {
        println!("{}", show(lang, &w, &rest, tool));
        return 0;
    }
    let mut cmd = command(lang, &rest);
    match cmd.status() {
        Ok(s) => s.code().unwrap_or(1),
        Err(e) => {
            eprintln!("{tool}: cannot run {}: {e}", cmd.get_program().to_string_lossy());
            127
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn showme_options_are_recognised_and_unknown_ones_named() {
        assert_eq!(show_option("--showme"), Some(Ok(Show::Command)));
        assert_eq!(show_option("-show"), Some(Ok(Show::Command)));
        assert_eq!(show_option("--showme:compile"), Some(Ok(Show::Compile)));
        assert_eq!(show_option("-link_info"), Some(Ok(Show::Link)));
        assert_eq!(show_option("--showme:version"), Some(Ok(Show::Version)));
        assert_eq!(show_option("-O2"), None);
        let e = show_option("--showme:bogus").unwrap().unwrap_err();
        assert!(e.contains("--showme:bogus"), "{e}");
    }

    #[test]
    fn compile_flags_have_no_link_flags_and_the_reverse() {
        let c = show(Lang::C, &Show::Compile, &[], "oshcc");
        let l = show(Lang::C, &Show::Link, &[], "oshcc");
        assert!(c.starts_with("-I") && !c.contains("-lshmem"), "{c}");
        assert!(l.contains("-lshmem") && l.contains("-Wl,-rpath,") && !l.contains("-I"), "{l}");
        let whole = show(Lang::C, &Show::Command, &["-c".into(), "x.c".into()], "oshcc");
        assert!(whole.contains("x.c") && !whole.contains("-lshmem"), "{whole}");
    }

    #[test]
    fn showme_compile_and_link_keep_the_user_s_arguments() {
        let args = ["-c".to_string(), "x.c".to_string()];
        let c = show(Lang::C, &Show::Compile, &args, "oshcc");
        assert!(c.starts_with("-I") && c.ends_with(" -c x.c"), "{c}");
        let l = show(Lang::C, &Show::Link, &["x.o".to_string()], "oshcc");
        assert!(l.ends_with("-lshmem x.o"), "{l}");
    }
}
