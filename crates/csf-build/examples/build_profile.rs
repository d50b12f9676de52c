//! Builds one seeded synthetic tensor several times, for profilers:
//!
//! ```text
//! cargo build --release -p csf-build --example build_profile
//! perf record -g target/release/examples/build_profile 10M uniform 1
//! valgrind --tool=callgrind target/release/examples/build_profile 1M uniform 1
//! ```
//!
//! Arguments (all optional): the non-zero count (`10M`), `uniform`,
//! `powerlaw` or `sorted` (the uniform entries in storage order), the number of threads (`1`: `Options { parallel: false }`;
//! more: `parallel: true` on a rayon pool of that size; default: all cores),
//! and the number of builds (5). Prints each build's wall-clock time.

use std::time::Instant;

use csf_build::{build, Coo, Duplicates, Indices, Options};
use csf_testdata::{synthetic, Distribution};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize| args.get(i).map(String::as_str);
    let nnz = arg(0).map_or(10_000_000, |s| {
        let (digits, scale) = match s.strip_suffix(['M', 'm']) {
            Some(d) => (d, 1_000_000),
            None => s.strip_suffix(['k', 'K']).map_or((s, 1), |d| (d, 1000)),
        };
        digits.parse::<usize>().expect("a count such as 10M") * scale
    });
    let distribution = match arg(1) {
        Some("powerlaw") => Distribution::PowerLaw { skew: 3.0 },
        _ => Distribution::Uniform,
    };
    let threads: usize = arg(2).map_or(0, |s| s.parse().expect("a thread count"));
    let builds: usize = arg(3).map_or(5, |s| s.parse().expect("a build count"));

    let mut coo = synthetic(&[2000, 2000, 2000], nnz, distribution, 0x5eed ^ nnz as u64);
    if arg(1) == Some("sorted") {
        // The same entries in storage order: the presorted path.
        let mut entries: Vec<usize> = (0..coo.len()).collect();
        entries.sort_by(|&a, &b| coo.index(a).cmp(coo.index(b)));
        let indices = entries.iter().flat_map(|&e| coo.index(e).to_vec()).collect();
        let values = entries.iter().map(|&e| coo.values[e]).collect();
        coo = csf_testdata::TestTensor { shape: coo.shape.clone(), indices, values };
    }
    let input = Coo::new(&coo.shape, Indices::RowMajor(&coo.indices), &coo.values);
    let options = Options { duplicates: Duplicates::Sum, parallel: threads != 1, ..Options::default() };
    let run = || {
        for _ in 0..builds {
            let (start, cpu) = (Instant::now(), csf_testdata::process_cpu_time().as_secs_f64());
            let built = build(&input, &options).expect("build");
            let (time, cpu) = (start.elapsed(), csf_testdata::process_cpu_time().as_secs_f64() - cpu);
            println!(
                "{nnz} non-zeros in {:.4} s ({:.1} M/s), CPU {:.4} s",
                time.as_secs_f64(),
                nnz as f64 / time.as_secs_f64() / 1e6,
                cpu
            );
            drop(built);
        }
    };
    if threads > 1 {
        rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("a thread pool").install(run);
    } else {
        run();
    }
}
