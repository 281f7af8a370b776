//! `oshcc` / `oshcxx` (`oshc++`): run the system compiler with rshmem's include directory, and
//! when linking, its library directory, an rpath (so programs run with no environment set up)
//! and `-lshmem`. `--showme` prints the command instead of running it.

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
    if installed.join("shmem.h").exists() {
        return installed;
    }
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../core/include"))
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
    here.join("../lib")
}

pub fn command(lang: Lang, args: &[String]) -> Command {
    let (var, default) = match lang {
        Lang::C => ("OSHCC_CC", "cc"),
        Lang::Cxx => ("OSHCXX_CXX", "c++"),
    };
    let compiler = std::env::var(var).unwrap_or_else(|_| default.to_string());
    let links = !args.iter().any(|a| matches!(a.as_str(), "-c" | "-E" | "-S" | "-M" | "-MM"));
    let mut cmd = Command::new(compiler);
    cmd.arg(format!("-I{}", include_dir().display()));
    cmd.args(args);
    if links {
        let lib = lib_dir();
        cmd.arg(format!("-L{}", lib.display())).arg(format!("-Wl,-rpath,{}", lib.display())).arg("-lshmem");
    }
    cmd
}

/// Entry point shared by both wrappers.
pub fn main(lang: Lang) -> i32 {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let show = args.iter().any(|a| a == "--showme");
    args.retain(|a| a != "--showme");
    let mut cmd = command(lang, &args);
    if show {
        let parts: Vec<String> = std::iter::once(cmd.get_program().to_string_lossy().into_owned())
            .chain(cmd.get_args().map(|a| a.to_string_lossy().into_owned()))
            .collect();
        println!("{}", parts.join(" "));
        return 0;
    }
    match cmd.status() {
        Ok(s) => s.code().unwrap_or(1),
        Err(e) => {
            eprintln!("oshcc: cannot run {}: {e}", cmd.get_program().to_string_lossy());
            127
        }
    }
}
