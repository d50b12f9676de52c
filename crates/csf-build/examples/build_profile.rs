//! Builds one seeded synthetic tensor several times, for profilers:
//!
//! ```text
//! cargo build --release -p csf-build --example build_profile
//! perf record -g target/release/examples/build_profile 10M uniform 1
//! valgrind --tool=callgrind target/release/examples/build_profile 1M uniform 1
//! ```
//!
//! Arguments (all optional): the non-zero count (`10M`), `uniform`,
//! `powerlaw` or `sorted` (the uniform entries in storage order), each over
//! 2000^3 or, after a colon, a shape such as `powerlaw:500x5000x50000x500000`,
//! or the path of a `.tns` file (then the count is ignored), the number of threads (`1`: `Options { parallel: false }`;
//! more: `parallel: true` on a rayon pool of that size; default: all cores),
//! the number of builds (5), and `floor` to time, after each build, the
//! memory floor of its output: fresh arrays of the built tensor's sizes
//! written once from the input (no walk, no sort: what writing that many
//! bytes to new memory costs on this machine), or `owned` to build with
//! `build_owned` from one owned array per dimension (copied from the input
//! before each build, outside the timing), or `-` for neither; and the mode
//! order, `auto` or a list such as `0,2,1` (default: the identity). Prints
//! each build's wall-clock and CPU time.

use std::time::Instant;

use csf_build::{build, build_owned, Coo, Duplicates, Indices, ModeOrderPolicy, Options, OwnedCoo};
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
    let (kind, shape) =
        arg(1).and_then(|a| a.split_once(':')).map_or((arg(1), None), |(k, s)| (Some(k), Some(s)));
    let shape: Vec<u64> =
        shape.map_or(vec![2000; 3], |s| s.split('x').map(|e| e.parse().expect("an extent")).collect());
    let distribution = match kind {
        Some("powerlaw") => Distribution::PowerLaw { skew: 3.0 },
        _ => Distribution::Uniform,
    };
    let threads: usize = arg(2).map_or(0, |s| s.parse().expect("a thread count"));
    let builds: usize = arg(3).map_or(5, |s| s.parse().expect("a build count"));

    let file = arg(1).filter(|a| a.contains(".tns"));
    let mut coo = match file {
        Some(path) => csf_testdata::read_tns(std::path::Path::new(path)).expect("a readable .tns file"),
        None => synthetic(&shape, nnz, distribution, 0x5eed ^ nnz as u64),
    };
    let nnz = coo.len();
    if kind == Some("sorted") {
        // The same entries in storage order: the presorted path.
        let mut entries: Vec<usize> = (0..coo.len()).collect();
        entries.sort_by(|&a, &b| coo.index(a).cmp(coo.index(b)));
        let indices = entries.iter().flat_map(|&e| coo.index(e).to_vec()).collect();
        let values = entries.iter().map(|&e| coo.values[e]).collect();
        coo = csf_testdata::TestTensor { shape: coo.shape.clone(), indices, values };
    }
    let input = Coo::new(&coo.shape, Indices::RowMajor(&coo.indices), &coo.values);
    let mode_order = match arg(5) {
        None => ModeOrderPolicy::Identity,
        Some("auto") => ModeOrderPolicy::Auto,
        Some(list) => {
            ModeOrderPolicy::Explicit(list.split(',').map(|d| d.parse().expect("a dimension")).collect())
        }
    };
    let options =
        Options { duplicates: Duplicates::Sum, parallel: threads != 1, mode_order, ..Options::default() };
    let run = || {
        for _ in 0..builds {
            let owned = (arg(4) == Some("owned")).then(|| OwnedCoo {
                shape: coo.shape.clone(),
                columns: (0..coo.shape.len()).map(|d| (0..nnz).map(|e| coo.index(e)[d]).collect()).collect(),
                element_type: input.element_type,
                values: input.values.to_vec(),
            });
            let (start, cpu) = (Instant::now(), csf_testdata::process_cpu_time().as_secs_f64());
            let built = match owned {
                Some(owned) => build_owned(owned, &options),
                None => build(&input, &options),
            }
            .expect("build");
            let (time, cpu) = (start.elapsed(), csf_testdata::process_cpu_time().as_secs_f64() - cpu);
            println!(
                "{nnz} non-zeros in {:.4} s ({:.1} M/s), CPU {:.4} s",
                time.as_secs_f64(),
                nnz as f64 / time.as_secs_f64() / 1e6,
                cpu
            );
            if arg(4) == Some("floor") {
                let view = built.tensor.view();
                let mut sizes: Vec<usize> =
                    view.levels().iter().flat_map(|l| [l.pos.len(), l.crd.len()]).collect();
                sizes.push(view.nnz() as usize); // f64 values: one word each
                drop(built);
                let cpu = csf_testdata::process_cpu_time().as_secs_f64();
                let floor: Vec<Vec<u64>> =
                    sizes.iter().map(|&n| coo.indices.iter().copied().cycle().take(n).collect()).collect();
                let cpu = csf_testdata::process_cpu_time().as_secs_f64() - cpu;
                let bytes: usize = floor.iter().map(|a| a.len() * 8).sum();
                println!("  floor: {:.1} MB of fresh arrays written, CPU {cpu:.4} s", bytes as f64 / 1e6);
            }
        }
    };
    if threads > 1 {
        rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("a thread pool").install(run);
    } else {
        run();
    }
}
