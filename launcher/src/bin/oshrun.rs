//! `oshrun -np N program [args]`: see `rshmem_launcher::run`.

use rshmem_launcher::run::{self, Invocation};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some(run::KEEPER_ARG) {
        std::process::exit(run::keeper(&args[1..]));
    }
    match run::parse(&args) {
        Ok(Invocation::Run(opts)) => std::process::exit(run::run(&opts)),
        Ok(Invocation::Help) => println!("{}", run::HELP),
        Ok(Invocation::Version) => println!("oshrun (rshmem) {}", env!("CARGO_PKG_VERSION")),
        Err(e) => {
            eprintln!("oshrun: {e}");
            std::process::exit(2);
        }
    }
}
