//! The `hurray` command-line tool.

fn main() {
    eprintln!("hurray: no commands yet");
    std::process::exit(2);
}
