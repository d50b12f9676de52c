//! MTTKRP of each mode and one CP-ALS iteration on a seeded uniform rank-3
//! tensor (`cargo bench -p csf-kernels`; `HURRAY_BENCH_NNZ` sets the
//! non-zeros, 1,000,000 by default). The figures against SPLATT come from
//! `cargo xtask bench kernels` (docs/benchmarks.md, "Kernels").

use criterion::{Criterion, Throughput};
use csf_build::{build, Coo, Duplicates, Indices, Options};
use csf_kernels::{cp_als, CpOptions, Matrix, Tensor};

fn tensor_bytes(nnz: usize) -> Vec<u8> {
    let mut state = 42u64;
    let mut next = move || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let shape = [2000u64, 2000, 2000];
    let indices: Vec<u64> = (0..nnz * 3).map(|i| next() % shape[i % 3]).collect();
    let values: Vec<f64> = (0..nnz).map(|_| (next() % 1000) as f64 / 1000.0).collect();
    let coo = Coo::new(&shape, Indices::RowMajor(&indices), &values);
    let options = Options { duplicates: Duplicates::Sum, ..Options::default() };
    build(&coo, &options).expect("a valid tensor").tensor.to_bytes().expect("encodes")
}

fn kernels(c: &mut Criterion) {
    let nnz = std::env::var("HURRAY_BENCH_NNZ").ok().and_then(|v| v.parse().ok()).unwrap_or(1_000_000);
    let bytes = tensor_bytes(nnz);
    let container = hurray_format::Container::decode(&bytes).expect("decodes");
    let view = csf_core::CsfView::from_container(&container).expect("a CSF view");
    let r = 16;
    let factors: Vec<Matrix<f64>> = view
        .shape()
        .iter()
        .map(|&e| {
            Matrix::from_rows(e as usize, r, (0..e as usize * r).map(|i| (i % 13) as f64 / 13.0).collect())
        })
        .collect::<Result<_, _>>()
        .expect("factors");
    let refs: Vec<_> = factors.iter().map(Matrix::as_ref).collect();
    let mut group = c.benchmark_group("kernels");
    group.sample_size(10).throughput(Throughput::Elements(view.nnz()));
    for parallel in [false, true] {
        let tensor = Tensor::<f64>::new(&view).expect("a tensor").with_parallel(parallel);
        let threads = if parallel { "all threads" } else { "1 thread" };
        for mode in 0..3 {
            let mut out = vec![0.0; 2000 * r];
            group.bench_function(format!("mttkrp mode {} rank {r}, {threads}", mode + 1), |b| {
                b.iter(|| tensor.mttkrp_into(&refs, mode, &mut out).expect("mttkrp"))
            });
        }
        group.bench_function(format!("cp_als iteration rank {r}, {threads}"), |b| {
            b.iter(|| cp_als(&tensor, &CpOptions { max_iters: 1, ..CpOptions::new(r) }).expect("cp_als"))
        });
    }
    group.finish();
}

// `criterion_group!`/`criterion_main!` expanded by hand (as csf-core's bench
// does): the macros define an undocumented public function.
fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    kernels(&mut criterion);
    criterion.final_summary();
}
