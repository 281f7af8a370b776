//! `shmem_info`: the library version, every setting with its value and documentation, every
//! component found with its probe answer (available with a priority, or why not), and this
//! host's topology as hwloc reports it.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "-h" || a == "--help") {
        println!("usage: shmem_info [--settings | --components | --topology]");
        return;
    }
    let all = args.is_empty();
    println!("rshmem {} (OpenSHMEM 1.6, vendor string \"rshmem\")", env!("CARGO_PKG_VERSION"));
    if all || args.iter().any(|a| a == "--settings") {
        print!("\n{}", shmem::info::settings_report());
    }
    if all || args.iter().any(|a| a == "--components") {
        print!("\n{}", shmem::info::components_report());
    }
    if all || args.iter().any(|a| a == "--topology") {
        println!("\nTopology (hwloc; what `oshrun --bind-to core|numa` binds from):");
        match rshmem_topology::Host::load() {
            Ok(h) => print!("{}", h.summary()),
            Err(e) => println!("{e}"),
        }
    }
}
