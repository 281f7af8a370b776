//! `shmem_info`: the library version, every setting and component parameter with its value and
//! where it came from, every component found with its probe answer (available with a priority,
//! or why not) and what would be selected, and this host's topology as hwloc reports it.
//!
//! The reports come from the library itself, loaded with `dlopen` (`rshmem_info_report`): the
//! one beside this tool (`../lib/libshmem.so.0` in an install, the same directory in a build
//! tree), else whichever `libshmem.so.0` the loader finds. So they describe what that library
//! would do, with its own plugins and configuration files.

use std::ffi::{c_char, c_int, c_uint, CStr};
use std::path::PathBuf;

const USAGE: &str = "usage: shmem_info [--all | --settings | --selection | --topology]... | --version
  --all        everything below (the default)
  --settings   the configuration files, and every setting with its value and source
  --selection  every component found: its parameters, its probe answer on this machine and
               what a job started here would select (no job is started; also --components)
  --topology   this host's topology as hwloc reports it
  --version    the library's name and the OpenSHMEM version it implements, as the library
               itself answers (shmem_info_get_name, shmem_info_get_version)";

/// The sections of `rshmem_info_report` (core/src/capi/tools.rs).
const INFO_SETTINGS: c_uint = 1;
const INFO_COMPONENTS: c_uint = 2;

/// The library to ask: the candidates beside this tool first, then the loader's search.
fn open_library() -> Result<libloading::Library, String> {
    let mut tried = Vec::new();
    let exe_dir =
        std::env::current_exe().ok().and_then(|e| e.canonicalize().ok()?.parent().map(PathBuf::from));
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(d) = exe_dir {
        candidates.extend([d.join("../lib/libshmem.so.0"), d.join("libshmem.so.0"), d.join("libshmem.so")]);
    }
    for path in candidates.iter().filter(|p| p.exists()) {
        // SAFETY: loading libshmem runs no initialisation of a job; its constructors only set
        // up statics.
        match unsafe { libloading::Library::new(path) } {
            Ok(lib) => return Ok(lib),
            Err(e) => tried.push(format!("{}: {e}", path.display())),
        }
    }
    // SAFETY: as above, for the loader's choice.
    match unsafe { libloading::Library::new("libshmem.so.0") } {
        Ok(lib) => Ok(lib),
        Err(e) => {
            tried.push(format!("libshmem.so.0 on the loader's path: {e}"));
            Err(format!("cannot load the rshmem library:\n  {}", tried.join("\n  ")))
        }
    }
}

/// The library's report of `sections`.
fn report(lib: &libloading::Library, sections: c_uint) -> Result<String, String> {
    type Report = unsafe extern "C" fn(c_uint) -> *mut c_char;
    type Free = unsafe extern "C" fn(*mut c_char);
    let missing = |e: libloading::Error| format!("the library loaded is not rshmem's ({e})");
    // SAFETY: the symbols have these signatures in rshmem's library (capi/tools.rs).
    let (rep, free) = unsafe {
        (
            lib.get::<Report>(b"rshmem_info_report\0").map_err(missing)?,
            lib.get::<Free>(b"rshmem_info_free\0").map_err(missing)?,
        )
    };
    // SAFETY: the report is a NUL-terminated string the library allocated, handed back once.
    unsafe {
        let p = rep(sections);
        if p.is_null() {
            return Err("the library gave no report".into());
        }
        let text = CStr::from_ptr(p).to_string_lossy().into_owned();
        free(p);
        Ok(text)
    }
}

/// The library's own answer to `shmem_info_get_name` and `shmem_info_get_version`, which the
/// specification allows before `shmem_init`.
fn version(lib: &libloading::Library) -> Result<String, String> {
    type Name = unsafe extern "C" fn(*mut c_char);
    type Version = unsafe extern "C" fn(*mut c_int, *mut c_int);
    let missing = |e: libloading::Error| format!("the library loaded is no OpenSHMEM library ({e})");
    // SAFETY: the OpenSHMEM API's signatures for these two routines.
    let (name, ver) = unsafe {
        (
            lib.get::<Name>(b"shmem_info_get_name\0").map_err(missing)?,
            lib.get::<Version>(b"shmem_info_get_version\0").map_err(missing)?,
        )
    };
    // SHMEM_MAX_NAME_LEN (256) bytes, NUL-terminated by the library; one more zero for safety.
    let mut buf = [0 as c_char; 257];
    let (mut major, mut minor) = (0, 0);
    // SAFETY: a buffer of SHMEM_MAX_NAME_LEN bytes and two valid out-pointers, as the routines ask.
    unsafe {
        name(buf.as_mut_ptr());
        ver(&mut major, &mut minor);
    }
    // SAFETY: the last byte is never written, so the buffer holds a NUL-terminated string.
    let n = unsafe { CStr::from_ptr(buf.as_ptr()) }.to_string_lossy().into_owned();
    Ok(format!("{n} (OpenSHMEM {major}.{minor})"))
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "-h" || a == "--help") {
        println!("{USAGE}");
        return;
    }
    if args.iter().any(|a| a == "--version" || a == "-V") {
        match open_library().and_then(|l| version(&l)) {
            Ok(v) => println!("{v}; shmem_info {}", env!("CARGO_PKG_VERSION")),
            Err(e) => {
                eprintln!("shmem_info: {e}");
                std::process::exit(1);
            }
        }
        return;
    }
    const KNOWN: [&str; 5] = ["--all", "--settings", "--selection", "--components", "--topology"];
    if let Some(bad) = args.iter().find(|a| !KNOWN.contains(&a.as_str())) {
        eprintln!("shmem_info: unknown option {bad}\n{USAGE}");
        std::process::exit(2);
    }
    let all = args.is_empty() || args.iter().any(|a| a == "--all");
    let wants = |o: &str| all || args.iter().any(|a| a == o);
    let mut sections = 0;
    if wants("--settings") {
        sections |= INFO_SETTINGS;
    }
    if wants("--selection") || wants("--components") {
        sections |= INFO_COMPONENTS;
    }
    let lib = open_library();
    let mut out = match lib.as_ref().map_err(Clone::clone).and_then(|l| report(l, sections)) {
        Ok(text) => text,
        Err(e) => {
            eprintln!("shmem_info: {e}");
            std::process::exit(1);
        }
    };
    if wants("--topology") {
        out += "\nTopology (hwloc; what `oshrun --bind-to core|numa` binds from):\n";
        match rshmem_topology::Host::load() {
            Ok(h) => out += &h.summary(),
            Err(e) => out += &format!("{e}\n"),
        }
    }
    // A closed pipe (`shmem_info | head`) is not an error worth a panic.
    let _ = std::io::Write::write_all(&mut std::io::stdout().lock(), out.as_bytes());
    // What a job would refuse (a broken configuration file, a bad value) fails here too.
    if out.contains("error (a job would not start): ") {
        std::process::exit(1);
    }
}
