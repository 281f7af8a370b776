//! `shmem_info`: the library version, every setting and component parameter with its value and
//! where it came from, every component found with its probe answer (available with a priority,
//! or why not) and what would be selected, and this host's topology as hwloc reports it.

const USAGE: &str = "usage: shmem_info [--all | --settings | --selection | --topology]...
  --all        everything below (the default)
  --settings   the configuration files, and every setting with its value and source
  --selection  every component found: its parameters, its probe answer on this machine and
               what a job started here would select (no job is started; also --components)
  --topology   this host's topology as hwloc reports it";

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "-h" || a == "--help") {
        println!("{USAGE}");
        return;
    }
    const KNOWN: [&str; 5] = ["--all", "--settings", "--selection", "--components", "--topology"];
    if let Some(bad) = args.iter().find(|a| !KNOWN.contains(&a.as_str())) {
        eprintln!("shmem_info: unknown option {bad}\n{USAGE}");
        std::process::exit(2);
    }
    let mut out = String::new();
    let all = args.is_empty() || args.iter().any(|a| a == "--all");
    let wants = |o: &str| all || args.iter().any(|a| a == o);
    out += &format!("rshmem {} (OpenSHMEM 1.6, vendor string \"rshmem\")\n", env!("CARGO_PKG_VERSION"));
    if wants("--settings") {
        out += &format!("\n{}", shmem::ops::info::settings_report());
    }
    if wants("--selection") || wants("--components") {
        out += &format!("\n{}", shmem::ops::info::components_report());
    }
    if wants("--topology") {
        out += "\nTopology (hwloc; what `oshrun --bind-to core|numa` binds from):\n";
        match rshmem_topology::Host::load() {
            Ok(h) => out += &h.summary(),
            Err(e) => out += &format!("{e}\n"),
        }
    }
    // A closed pipe (`shmem_info | head`) is not an error worth a panic.
    let _ = std::io::Write::write_all(&mut std::io::stdout().lock(), out.as_bytes());
}
