//! Writes a seeded synthetic tensor as a FROSTT `.tns` file, for measuring
//! `hurray convert` (see docs/benchmarks.md).
//!
//! ```text
//! cargo run --release -p hurray-cli --example gen_tns -- OUT.tns [NNZ] [EXTENT] [RANK] [int|real] [SEED]
//! ```
//!
//! Defaults: 10,000,000 non-zeros, uniform over 2000^3, integer values
//! 1..=255 (as csf-testdata's `synthetic`), seed 42. `real` writes values
//! with six significant decimals in (0, 1) instead, which exercises the
//! float parser harder. Duplicate coordinates are possible (about 0.06% at
//! the defaults): convert them with `--duplicates last` or `sum`.

use std::io::{BufWriter, Write};

use csf_testdata::{synthetic, Distribution, Rng};

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize, default: u64| args.get(i).and_then(|a| a.parse().ok()).unwrap_or(default);
    let Some(out) = args.first() else {
        eprintln!("usage: gen_tns OUT.tns [NNZ] [EXTENT] [RANK] [int|real] [SEED]");
        std::process::exit(2);
    };
    let nnz = arg(1, 10_000_000) as usize;
    let extent = arg(2, 2000);
    let rank = arg(3, 3) as usize;
    let real = args.get(4).is_some_and(|a| a == "real");
    let seed = arg(5, 42);
    let coo = synthetic(&vec![extent; rank], nnz, Distribution::Uniform, seed);
    let mut rng = Rng::new(seed ^ 0x5eed);
    let mut w = BufWriter::with_capacity(1 << 20, std::fs::File::create(out)?);
    for i in 0..coo.len() {
        for c in coo.index(i) {
            write!(w, "{} ", c + 1)?;
        }
        if real {
            writeln!(w, "{:.6}", rng.next_f64().max(1e-6))?;
        } else {
            writeln!(w, "{}", coo.values[i])?;
        }
    }
    w.flush()
}
