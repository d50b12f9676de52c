//! Writes a seeded synthetic tensor as a FROSTT `.tns` file, for measuring
//! `hurray convert` (see docs/benchmarks.md).
//!
//! ```text
//! cargo run --release -p hurray-cli --example gen_tns -- OUT.tns [NNZ] [SHAPE] [RANK] [int|real] [SEED] [uniform|powerlaw]
//! ```
//!
//! Defaults: 10,000,000 non-zeros, uniform over 2000^3, integer values
//! 1..=255 (as csf-testdata's `synthetic`), seed 42. `SHAPE` is one extent
//! repeated `RANK` times, or the extents themselves joined by `x` (such as
//! `5000x50000x500000`; `RANK` must then be their count). `real` writes
//! values with six significant decimals in (0, 1) instead, which exercises
//! the float parser harder. `powerlaw` draws each coordinate as
//! `floor(extent * u^3)`, the skewed tensors of csf-build's benchmark.
//! Duplicate coordinates are possible (about 0.06% at the defaults, far more
//! under `powerlaw`): convert them with `--duplicates last` or `sum`.

use std::io::{BufWriter, Write};
use std::process::exit;

use csf_testdata::{synthetic, Distribution, Rng};

const USAGE: &str = "usage: gen_tns OUT.tns [NNZ] [SHAPE] [RANK] [int|real] [SEED] [uniform|powerlaw]";

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize, default: u64| args.get(i).and_then(|a| a.parse().ok()).unwrap_or(default);
    let Some(out) = args.first() else { fail(USAGE) };
    let nnz = arg(1, 10_000_000) as usize;
    let rank = arg(3, 3) as usize;
    let shape = shape(args.get(2).map_or("2000", String::as_str), rank);
    let real = args.get(4).is_some_and(|a| a == "real");
    let seed = arg(5, 42);
    let distribution = match args.get(6).map(String::as_str) {
        None | Some("uniform") => Distribution::Uniform,
        Some("powerlaw") => Distribution::PowerLaw { skew: 3.0 },
        Some(other) => fail(&format!("unknown distribution `{other}`; {USAGE}")),
    };
    let coo = synthetic(&shape, nnz, distribution, seed);
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

/// `SHAPE` as extents: one extent `rank` times, or `AxBxC...` of `rank` extents.
fn shape(text: &str, rank: usize) -> Vec<u64> {
    let extents: Option<Vec<u64>> = text.split('x').map(|e| e.parse().ok().filter(|&e| e > 0)).collect();
    match extents {
        Some(e) if e.len() == 1 => vec![e[0]; rank],
        Some(e) if e.len() == rank => e,
        Some(e) => fail(&format!("SHAPE `{text}` has {} extents but RANK is {rank}", e.len())),
        None => fail(&format!("SHAPE `{text}` is not positive extents joined by `x`; {USAGE}")),
    }
}

fn fail(message: &str) -> ! {
    eprintln!("gen_tns: {message}");
    exit(2)
}
