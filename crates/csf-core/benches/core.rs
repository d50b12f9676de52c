//! csf-core lookup and iteration throughput on a rank-3 tensor of 10M
//! non-zeros (uniform and power-law), against a plain COO loop over the same
//! data. Lookups run one at a time (`find`) and batched (`find_many`).
//! Results and the command are recorded in `docs/benchmarks.md`.
//!
//! `HURRAY_BENCH_NNZ` sets the number of generated entries (default
//! 10_000_000; duplicates collapse, so the stored nnz is a little lower).
//! Building the tree with the naive reference builder takes a while.
//!
//! Times are the benchmark thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`), so
//! that other processes on a shared machine do not inflate them;
//! `HURRAY_BENCH_CLOCK=wall` measures wall-clock time instead.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::measurement::{Measurement, ValueFormatter};
use criterion::{Criterion, Throughput};
use csf_core::{CsfView, Level};
use csf_testdata::{reference_csf, synthetic, Distribution, Rng};
use hurray_format::le::U64Array;
use hurray_format::ElementType;

const SHAPE: [u64; 3] = [2000, 2000, 2000];
const QUERIES: usize = 1_000_000;
/// Lookups per criterion iteration; successive iterations walk through the
/// whole query set, so the caches see random access over all of it.
const BATCH: usize = 4096;

/// One benchmark tensor: the CSF arrays (as little-endian words, which the
/// view borrows), the same non-zeros as a COO array, and the query sets.
struct Data {
    name: &'static str,
    levels: Vec<(Vec<u64>, Vec<u64>)>,
    values: Vec<u8>,
    coo_index: Vec<[u32; 3]>,
    coo_values: Vec<f32>,
    present: Vec<[u64; 3]>,
    absent: Vec<[u64; 3]>,
}

impl Data {
    fn build(name: &'static str, distribution: Distribution, nnz: usize) -> Self {
        let t = Instant::now();
        let coo = synthetic(&SHAPE, nnz, distribution, 0x5eed);
        let arrays = reference_csf(&coo, &[0, 1, 2]);
        let mut rng = Rng::new(42);
        let present = (0..QUERIES)
            .map(|_| {
                let i = rng.below(coo.len() as u64) as usize;
                let index = coo.index(i);
                [index[0], index[1], index[2]]
            })
            .collect();
        drop(coo);
        let mut data = Data {
            name,
            levels: arrays
                .levels
                .iter()
                .map(|(p, c)| (p.iter().map(|x| x.to_le()).collect(), c.iter().map(|x| x.to_le()).collect()))
                .collect(),
            values: arrays.values_f32_le(),
            coo_index: Vec::with_capacity(arrays.nnz()),
            coo_values: Vec::with_capacity(arrays.nnz()),
            present,
            absent: Vec::with_capacity(QUERIES),
        };
        drop(arrays);
        // The COO baseline holds exactly the stored non-zeros, in the same (row-major) order.
        let (mut coo_index, mut coo_values) = (Vec::new(), Vec::new());
        let mut absent = Vec::new();
        {
            let view = data.view();
            let typed = view.values().typed::<f32>().expect("f32 values");
            view.for_each(|i, leaf| {
                coo_index.push([i[0] as u32, i[1] as u32, i[2] as u32]);
                coo_values.push(typed.get(leaf).expect("a value per leaf"));
            });
            while absent.len() < QUERIES {
                let q = SHAPE.map(|e| rng.below(e));
                if view.find(&q) == Ok(None) {
                    absent.push(q);
                }
            }
        }
        data.coo_index = coo_index;
        data.coo_values = coo_values;
        data.absent = absent;
        let view = data.view();
        eprintln!(
            "{name}: shape {SHAPE:?}, nnz {} (n_L = {:?}), built in {:.1?}",
            view.nnz(),
            (0..3).map(|l| view.node_count(l)).collect::<Vec<_>>(),
            t.elapsed()
        );
        data
    }

    fn view(&self) -> CsfView<'_> {
        let levels: Vec<Level<'_>> = self
            .levels
            .iter()
            .map(|(p, c)| Level { pos: U64Array::from_le_words(p), crd: U64Array::from_le_words(c) })
            .collect();
        let nnz = self.values.len() as u64 / 4;
        CsfView::builder(ElementType::F32, &SHAPE)
            .nnz(nnz)
            .levels(&levels)
            .values(&self.values)
            .build()
            .expect("a CSF view")
    }
}

fn lookups(c: &mut Criterion<Clock>, data: &Data) {
    let view = data.view();
    let mut group = c.benchmark_group(format!("lookup/{}", data.name));
    group.throughput(Throughput::Elements(BATCH as u64));
    for (kind, queries, want_hit) in [("present", &data.present, true), ("absent", &data.absent, false)] {
        let mut offset = 0;
        group.bench_function(kind, |b| {
            b.iter(|| {
                let batch = &queries[offset..offset + BATCH];
                offset = (offset + BATCH) % (queries.len() - queries.len() % BATCH);
                let mut hits = 0usize;
                for q in batch {
                    if let Ok(Some(leaf)) = view.find(black_box(q)) {
                        hits += 1;
                        black_box(leaf);
                    }
                }
                assert_eq!(hits, if want_hit { BATCH } else { 0 });
                hits
            })
        });
        // The same queries through `find_many`, which runs groups of them in
        // lockstep so that their cache misses overlap.
        let mut offset = 0;
        let mut out = vec![Ok(None); BATCH];
        group.bench_function(format!("{kind}_batched"), |b| {
            b.iter(|| {
                let batch = &queries[offset..offset + BATCH];
                offset = (offset + BATCH) % (queries.len() - queries.len() % BATCH);
                assert_eq!(view.find_many(black_box(batch.as_flattened()), &mut out), BATCH);
                let hits = out.iter().filter(|r| matches!(r, Ok(Some(_)))).count();
                assert_eq!(hits, if want_hit { BATCH } else { 0 });
                hits
            })
        });
    }
    group.finish();
}

fn iteration(c: &mut Criterion<Clock>, data: &Data) {
    let view = data.view();
    let nnz = data.coo_values.len();
    let typed = view.values().typed::<f32>().expect("f32 values");
    let expected: f32 = data.coo_values.iter().sum();
    let mut group = c.benchmark_group(format!("iterate/{}", data.name));
    group.throughput(Throughput::Elements(nnz as u64));

    // The sum of the values: CSF for_each (typed f32 access by leaf) vs a COO loop.
    group.bench_function("csf_for_each_sum", |b| {
        b.iter(|| {
            let mut sum = 0.0f32;
            view.for_each(|_, leaf| sum += typed.get(leaf).unwrap_or(0.0));
            assert_eq!(sum, expected);
            sum
        })
    });
    group.bench_function("coo_loop_sum", |b| {
        b.iter(|| {
            let mut sum = 0.0f32;
            for (index, value) in black_box(&data.coo_index).iter().zip(black_box(&data.coo_values)) {
                black_box(index);
                sum += value;
            }
            assert_eq!(sum, expected);
            sum
        })
    });

    // The same, with the logical index used too (a checksum over it).
    let checksum = |i0: u64, i1: u64, i2: u64| i0.wrapping_mul(4_000_037) ^ i1.wrapping_mul(2003) ^ i2;
    group.bench_function("csf_for_each_index_sum", |b| {
        b.iter(|| {
            let (mut sum, mut chk) = (0.0f32, 0u64);
            view.for_each(|i, leaf| {
                if let [i0, i1, i2] = *i {
                    chk = chk.wrapping_add(checksum(i0, i1, i2));
                }
                sum += typed.get(leaf).unwrap_or(0.0);
            });
            (sum, chk)
        })
    });
    group.bench_function("coo_loop_index_sum", |b| {
        b.iter(|| {
            let (mut sum, mut chk) = (0.0f32, 0u64);
            for (&[i0, i1, i2], value) in black_box(&data.coo_index).iter().zip(black_box(&data.coo_values)) {
                chk = chk.wrapping_add(checksum(u64::from(i0), u64::from(i1), u64::from(i2)));
                sum += value;
            }
            (sum, chk)
        })
    });

    // The same entries sub-tree by sub-tree (`subtree` then its `for_each`):
    // under each level-0 coordinate (2,000 sub-trees of about 5,000 entries),
    // and under each stored (i, j) (about 4M of 2.5 entries on the uniform
    // tensor: the per-sub-tree cost, two searches and the walk's set-up).
    group.bench_function("csf_subtree_i_index_sum", |b| {
        b.iter(|| {
            let (mut sum, mut chk) = (0.0f32, 0u64);
            for i in 0..SHAPE[0] {
                view.for_each_under(&[i], |i, leaf| {
                    if let [i0, i1, i2] = *i {
                        chk = chk.wrapping_add(checksum(i0, i1, i2));
                    }
                    sum += typed.get(leaf).unwrap_or(0.0);
                })
                .expect("in the shape");
            }
            (sum, chk)
        })
    });
    group.bench_function("csf_subtree_ij_index_sum", |b| {
        b.iter(|| {
            let (mut sum, mut chk) = (0.0f32, 0u64);
            for (node, i) in view.fiber(0, 0).iter() {
                for (_, j) in view.fiber(1, node).iter() {
                    let subtree = view.subtree(&[i, j]).expect("in the shape").expect("stored");
                    subtree.for_each(|i, leaf| {
                        if let [i0, i1, i2] = *i {
                            chk = chk.wrapping_add(checksum(i0, i1, i2));
                        }
                        sum += typed.get(leaf).unwrap_or(0.0);
                    });
                }
            }
            (sum, chk)
        })
    });

    // The cursor (the general, resumable API).
    group.bench_function("csf_cursor_sum", |b| {
        b.iter(|| {
            let mut sum = 0.0f32;
            let mut cursor = view.cursor();
            while cursor.advance() {
                sum += typed.get(cursor.leaf()).unwrap_or(0.0);
            }
            sum
        })
    });
    group.finish();
}

fn core(c: &mut Criterion<Clock>) {
    let nnz = std::env::var("HURRAY_BENCH_NNZ").ok().and_then(|v| v.parse().ok()).unwrap_or(10_000_000);
    for (name, distribution) in
        [("uniform", Distribution::Uniform), ("powerlaw3", Distribution::PowerLaw { skew: 3.0 })]
    {
        let data = Data::build(name, distribution, nnz);
        lookups(c, &data);
        iteration(c, &data);
    }
}

/// Thread CPU time, or wall-clock time, as a criterion measurement.
struct Clock {
    cpu: bool,
    epoch: Instant,
}

impl Clock {
    fn from_env() -> Self {
        let wall = std::env::var("HURRAY_BENCH_CLOCK").is_ok_and(|v| v == "wall");
        let cpu = !wall && thread_cpu_time().is_some();
        eprintln!("measuring {}", if cpu { "thread CPU time" } else { "wall-clock time" });
        Self { cpu, epoch: Instant::now() }
    }

    fn now(&self) -> Duration {
        match self.cpu {
            true => thread_cpu_time().unwrap_or_default(),
            false => self.epoch.elapsed(),
        }
    }
}

#[cfg(unix)]
fn thread_cpu_time() -> Option<Duration> {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec that clock_gettime only writes.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    (rc == 0).then(|| Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
}

#[cfg(not(unix))]
fn thread_cpu_time() -> Option<Duration> {
    None
}

impl Measurement for Clock {
    type Intermediate = Duration;
    type Value = Duration;

    fn start(&self) -> Duration {
        self.now()
    }
    fn end(&self, start: Duration) -> Duration {
        self.now().saturating_sub(start)
    }
    fn add(&self, a: &Duration, b: &Duration) -> Duration {
        *a + *b
    }
    fn zero(&self) -> Duration {
        Duration::ZERO
    }
    fn to_f64(&self, value: &Duration) -> f64 {
        value.as_nanos() as f64
    }
    fn formatter(&self) -> &dyn ValueFormatter {
        &Nanoseconds
    }
}

/// Formats nanoseconds and elements (or bytes) per second, like criterion's own.
struct Nanoseconds;

impl ValueFormatter for Nanoseconds {
    fn scale_values(&self, typical: f64, values: &mut [f64]) -> &'static str {
        let (factor, unit) = match typical {
            t if t < 1e3 => (1.0, "ns"),
            t if t < 1e6 => (1e-3, "µs"),
            t if t < 1e9 => (1e-6, "ms"),
            _ => (1e-9, "s"),
        };
        values.iter_mut().for_each(|v| *v *= factor);
        unit
    }

    fn scale_throughputs(&self, typical: f64, throughput: &Throughput, values: &mut [f64]) -> &'static str {
        let (per_iter, units) = match *throughput {
            Throughput::Elements(n) => (n as f64, [" elem/s", "Kelem/s", "Melem/s", "Gelem/s"]),
            Throughput::Bytes(n) | Throughput::BytesDecimal(n) => {
                (n as f64, ["  B/s", "KB/s", "MB/s", "GB/s"])
            }
        };
        let rate = per_iter * 1e9 / typical;
        let (divisor, unit) = match rate {
            r if r < 1e3 => (1.0, units[0]),
            r if r < 1e6 => (1e3, units[1]),
            r if r < 1e9 => (1e6, units[2]),
            _ => (1e9, units[3]),
        };
        values.iter_mut().for_each(|v| *v = per_iter * 1e9 / *v / divisor);
        unit
    }

    fn scale_for_machines(&self, _values: &mut [f64]) -> &'static str {
        "ns"
    }
}

// `criterion_group!`/`criterion_main!` expanded by hand: the macros define an
// undocumented public function, which the workspace's `missing_docs` flags.
fn main() {
    let mut criterion = Criterion::default()
        .with_measurement(Clock::from_env())
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5))
        .configure_from_args();
    core(&mut criterion);
    criterion.final_summary();
}
