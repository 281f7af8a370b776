//! `oshcc`: the C compiler wrapper (also `oshc++` when invoked under a name with `++`).

fn main() {
    let argv0 = std::env::args().next().unwrap_or_default();
    let lang = if argv0.ends_with("++") || argv0.ends_with("cxx") {
        rshmem_launcher::wrapper::Lang::Cxx
    } else {
        rshmem_launcher::wrapper::Lang::C
    };
    std::process::exit(rshmem_launcher::wrapper::main(lang));
}
