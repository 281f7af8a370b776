//! `oshrun -np N program [args]`: see `rshmem_launcher::run`.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some(rshmem_launcher::run::KEEPER_ARG) {
        std::process::exit(rshmem_launcher::run::keeper(&args[1..]));
    }
    let opts = match rshmem_launcher::run::parse(&args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("oshrun: {e}");
            std::process::exit(2);
        }
    };
    std::process::exit(rshmem_launcher::run::run(&opts));
}
