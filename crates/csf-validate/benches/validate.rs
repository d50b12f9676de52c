//! Validation throughput, in bytes of buffers checked per second.
//!
//! The tensor: rank 3, `HURRAY_BENCH_NNZ` uniform random non-zeros (default
//! 10 million) in a cube of side `cbrt(100 * nnz)` (density about 1 %),
//! built by `csf_testdata::synthetic` and `reference_csf`, `f32` values,
//! identity mode order. Throughput counts every buffer byte (values, `pos`,
//! `crd`).
//!
//! Features are fixed at compile time, so the sequential and the parallel
//! level checks are measured by running this bench twice:
//!
//! ```text
//! cargo bench -p csf-validate --bench validate
//! cargo bench -p csf-validate --bench validate --features parallel
//! ```
//!
//! Results and the machine they were measured on: `docs/benchmarks.md`.

// `criterion_group!` defines an undocumented public function.
#![allow(missing_docs)]

use std::hint::black_box;
use std::time::Instant;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use csf_testdata::{reference_csf, synthetic, Distribution};
use csf_validate::{report, validate, validate_permissive, Mode};
use hurray_format::{Container, Descriptor, ElementType};

fn nnz() -> usize {
    match std::env::var("HURRAY_BENCH_NNZ") {
        Ok(v) => v.parse().unwrap_or_else(|_| panic!("HURRAY_BENCH_NNZ={v:?} is not a count")),
        Err(_) => 10_000_000,
    }
}

/// The benchmark tensor as a container.
fn tensor_file(nnz: usize) -> Vec<u8> {
    let side = ((100.0 * nnz as f64).cbrt().ceil() as u64).max(1);
    let started = Instant::now();
    let coo = synthetic(&[side; 3], nnz, Distribution::Uniform, 0x5eed);
    let csf = reference_csf(&coo, &[0, 1, 2]);
    drop(coo);
    let mut buffers = vec![csf.values_f32_le()];
    for (pos, crd) in &csf.levels {
        buffers.push(pos.iter().flat_map(|w| w.to_le_bytes()).collect());
        buffers.push(crd.iter().flat_map(|w| w.to_le_bytes()).collect());
    }
    let d = Descriptor::csf(ElementType::F32, &[side; 3], &[0, 1, 2], csf.nnz() as u64).expect("rank 3");
    let slices: Vec<&[u8]> = buffers.iter().map(Vec::as_slice).collect();
    let file = hurray_format::encode_to_vec(&d, &slices).expect("encodes");
    let nodes: Vec<usize> = csf.levels.iter().map(|(_, crd)| crd.len()).collect();
    eprintln!(
        "validate bench: shape [{side}; 3], nnz {}, nodes per level {nodes:?}, {} buffer bytes, built in {:.1}s",
        csf.nnz(),
        buffer_bytes(&file),
        started.elapsed().as_secs_f64()
    );
    file
}

fn buffer_bytes(file: &[u8]) -> u64 {
    let c = Container::decode(file).expect("decodes");
    (0..c.buffer_count()).map(|i| c.buffer(i).map_or(0, |b| b.len() as u64)).sum()
}

/// On-CPU time of every thread of this process so far, in nanoseconds, from
/// `/proc/self/task/*/schedstat` (Linux; `None` elsewhere). Unlike wall-clock
/// time it is not inflated by other processes competing for the cores.
fn process_cpu_ns() -> Option<u64> {
    let mut total = 0u64;
    for task in std::fs::read_dir("/proc/self/task").ok()? {
        let stat = std::fs::read_to_string(task.ok()?.path().join("schedstat")).ok()?;
        total += stat.split_whitespace().next()?.parse::<u64>().ok()?;
    }
    Some(total)
}

/// Wall-clock and CPU time of `iterations` runs of `f`, printed as throughput
/// of `bytes` per run: a check on criterion's wall-clock figures when the
/// machine is shared.
fn cpu_throughput(name: &str, bytes: u64, iterations: u32, mut f: impl FnMut() -> bool) {
    let (Some(cpu0), wall0) = (process_cpu_ns(), Instant::now()) else { return };
    for _ in 0..iterations {
        black_box(f());
    }
    let wall = wall0.elapsed().as_secs_f64();
    let Some(cpu1) = process_cpu_ns() else { return };
    let cpu = cpu1.saturating_sub(cpu0) as f64 / 1e9;
    let gb = (bytes as f64 * f64::from(iterations)) / 1e9;
    eprintln!(
        "{name}: {iterations} runs, wall {:.2} ms/run = {:.2} GB/s; CPU {:.2} ms/run = {:.2} GB/s per CPU-second",
        wall * 1e3 / f64::from(iterations),
        gb / wall,
        cpu * 1e3 / f64::from(iterations),
        gb / cpu
    );
}

fn bench(c: &mut Criterion) {
    let file = tensor_file(nnz());
    let container = Container::decode(&file).expect("decodes");
    let view = validate_permissive(&container).expect("structurally sound");
    assert!(
        view.levels().iter().all(|l| l.pos.as_native().is_some() && l.crd.as_native().is_some()),
        "the buffers are not 8-aligned in memory: this would measure the byte-wise path"
    );
    assert!(validate(&container).is_ok(), "the benchmark tensor is valid");

    // The same file at an odd address: every u64 array is read byte-wise
    // (always sequential), for comparison.
    let mut odd_storage = vec![0u8; file.len() + 1];
    odd_storage[1..].copy_from_slice(&file);
    let odd = Container::decode(&odd_storage[1..]).expect("decodes");

    let bytes = buffer_bytes(&file);
    let label = if cfg!(feature = "parallel") { "cpu-time parallel" } else { "cpu-time sequential" };
    cpu_throughput(&format!("{label} strict"), bytes, 50, || validate(black_box(&container)).is_ok());
    cpu_throughput(&format!("{label} strict-unaligned"), bytes, 20, || validate(black_box(&odd)).is_ok());

    let mut group =
        c.benchmark_group(if cfg!(feature = "parallel") { "validate-parallel" } else { "validate" });
    group.throughput(Throughput::Bytes(bytes));
    group.sample_size(10);
    group.bench_function("strict", |b| b.iter(|| validate(black_box(&container)).is_ok()));
    group.bench_function("strict-report", |b| b.iter(|| report(black_box(&container), Mode::Strict, 100)));
    group.bench_function("strict-unaligned", |b| b.iter(|| validate(black_box(&odd)).is_ok()));
    group.bench_function("permissive", |b| b.iter(|| validate_permissive(black_box(&container)).is_ok()));
    group.bench_function("decode+strict", |b| {
        b.iter(|| validate(&Container::decode(black_box(&file)).expect("decodes")).is_ok())
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
