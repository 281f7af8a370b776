//! `oshcxx` (`oshc++`): the C++ compiler wrapper.

fn main() {
    std::process::exit(rshmem_launcher::wrapper::main(rshmem_launcher::wrapper::Lang::Cxx));
}
