//! COO -> CSF build benchmark: `cargo bench -p csf-build --bench build`.
//!
//! A custom harness (not criterion: a 10M-entry build takes a good fraction of
//! a second and criterion's 100 samples would take minutes per tensor). Each
//! configuration runs once to warm up, then is timed until it has run at least
//! 3 times and for at least 0.3 s; the best time is reported, both wall-clock
//! and CPU time (of the process, all threads: on a shared machine the
//! wall-clock time includes waiting for a core, the CPU time does not).
//!
//! Per tensor it measures
//! - our builder single-threaded (`Options { parallel: false }`),
//! - our builder on all cores (`parallel: true` on rayon's global pool),
//! - a naive builder: a `Vec<([u64; R], f64)>`, `sort_unstable`, then a
//!   straightforward level build, as the baseline (its time is `naive s`, and
//!   `x naive` is our single-threaded speed over it, measured in the same run),
//! - the peak heap memory of each build above the input, with a counting
//!   global allocator, checked against the budget "output CSF + one key array +
//!   one permutation array" (plus 1 MiB for bookkeeping; the input COO is
//!   allocated before the peak is reset),
//! - for the real tensors in `../shared/data`, `ModeOrderPolicy::Auto`: its order and
//!   the bytes of `pos`/`crd` it stores against the identity order and SPLATT's
//!   shortest-extent-first order, all three measured on built tensors, and its
//!   time as a multiple of the identity build on all cores (`x identity`). The
//!   bench panics if `Auto` stores more than the smaller of the two. (The
//!   example `auto_cost` measures that multiple on the synthetic tensors too,
//!   interleaving the two builds.)
//!
//! Environment:
//! - `HURRAY_BENCH_NNZ`: comma-separated non-zero counts for the synthetic
//!   tensors (`1M,10M` by default; `100k`, `2.5M` and plain numbers work).
//! - `HURRAY_BENCH_QUICK`: no warm-up, one timed run each, `1M` by default.
//! - `HURRAY_BENCH_FILTER` (or a positional argument): only tensors whose
//!   name contains this text (`uniform-r3`, `real/`, ...) or one of several
//!   separated by `|` (`uniform-r3|500000`: the narrow and wide references).
//!
//! The synthetic tensors are seeded (`csf_testdata::synthetic`) and take
//! `Duplicates::Sum` (random coordinates collide now and then); values are `f64`.

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::time::{Duration, Instant};

use csf_build::{build, Built, Coo, Duplicates, Indices, ModeOrderPolicy, Options};
use csf_testdata::{read_tns, shared_data, synthetic, Distribution};

// ---------------------------------------------------------------------------
// Peak memory: a global allocator that counts live bytes and their maximum.

struct Counting;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(bytes: usize) {
    let now = CURRENT.fetch_add(bytes, Relaxed) + bytes;
    PEAK.fetch_max(now, Relaxed);
}

// SAFETY: every method forwards to `System` with the caller's arguments
// unchanged, so `System`'s guarantees carry over; the counters have no effect
// on the memory handed out.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract, which we pass on.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as `alloc`.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` and `layout` come from the caller, who got `ptr` from us (= `System`).
        unsafe { System.dealloc(ptr, layout) };
        CURRENT.fetch_sub(layout.size(), Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as `dealloc`, and the caller upholds `realloc`'s size contract.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            // Counted as a resize: the copy of a moving realloc is brief, and
            // glibc moves large blocks with mremap, without a copy. (Heap
            // profilers such as DHAT count it the same way.)
            if new_size >= layout.size() {
                grew(new_size - layout.size());
            } else {
                CURRENT.fetch_sub(layout.size() - new_size, Relaxed);
            }
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// A run's wall-clock time, CPU time (all threads), and peak heap bytes above
/// what was live when it started.
#[derive(Clone, Copy, Debug)]
struct Sample {
    wall: Duration,
    cpu: Duration,
    peak: usize,
}

/// Runs `f` and returns its result and its [`Sample`].
fn measure<T>(f: impl FnOnce() -> T) -> (T, Sample) {
    let base = CURRENT.load(Relaxed);
    PEAK.store(base, Relaxed);
    let cpu = csf_testdata::process_cpu_time();
    let start = Instant::now();
    let out = black_box(f());
    let wall = start.elapsed();
    let cpu = csf_testdata::process_cpu_time().saturating_sub(cpu);
    (out, Sample { wall, cpu, peak: PEAK.load(Relaxed).saturating_sub(base) })
}

// ---------------------------------------------------------------------------
// Settings.

struct Settings {
    nnz: Vec<usize>,
    quick: bool,
    filter: Option<String>,
}

impl Settings {
    fn from_env() -> Self {
        let quick = std::env::var_os("HURRAY_BENCH_QUICK").is_some_and(|v| v != "0" && !v.is_empty());
        let nnz_list = std::env::var("HURRAY_BENCH_NNZ").unwrap_or_else(|_| {
            if quick {
                "1M".into()
            } else {
                "1M,10M".into()
            }
        });
        let nnz = nnz_list
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| parse_count(s).unwrap_or_else(|| panic!("HURRAY_BENCH_NNZ: cannot read `{s}`")))
            .collect();
        // `cargo bench` passes `--bench`; a positional argument filters like libtest's.
        let positional = std::env::args().skip(1).find(|a| !a.starts_with('-'));
        let filter =
            positional.or_else(|| std::env::var("HURRAY_BENCH_FILTER").ok()).filter(|f| !f.is_empty());
        Self { nnz, quick, filter }
    }

    /// The filter is a `|`-separated list of alternatives.
    fn wants(&self, name: &str) -> bool {
        self.filter.as_ref().map_or(true, |f| f.split('|').any(|f| name.contains(f)))
    }

    /// [`Settings::best`] of two builders run alternately (`f`, `g`, `f`,
    /// ...), so that both meet the allocator in the same state: at the
    /// sizes of the small real tensors, where the allocator's heap happens
    /// to be (fresh pages or reused ones) costs as much as the build.
    fn best_pair<T, U>(
        &self,
        mut f: impl FnMut() -> T,
        mut g: impl FnMut() -> U,
    ) -> ((T, Sample), (U, Sample)) {
        let (min_runs, min_total) =
            if self.quick { (1, Duration::ZERO) } else { (3, Duration::from_millis(300)) };
        if !self.quick {
            drop(f());
            drop(g());
        }
        // Each builder's samples come from its own turns only.
        let (mut fa, mut fb) = (Vec::new(), Vec::new());
        let mut total = Duration::ZERO;
        let (mut a, mut b) = (None, None);
        while fa.len() < min_runs || total < min_total {
            let (out, sample) = measure(&mut f);
            (a, total) = (Some(out), total + sample.wall);
            fa.push(sample);
            let (out, sample) = measure(&mut g);
            (b, total) = (Some(out), total + sample.wall);
            fb.push(sample);
        }
        let best = |samples: &[Sample]| Sample {
            wall: samples.iter().map(|s| s.wall).min().unwrap_or_default(),
            cpu: samples.iter().map(|s| s.cpu).min().unwrap_or_default(),
            peak: samples.iter().map(|s| s.peak).max().unwrap_or_default(),
        };
        let (a, b) = (a.expect("f ran"), b.expect("g ran"));
        ((a, best(&fa)), (b, best(&fb)))
    }

    /// The last result of several timed runs (after a warm-up), with the
    /// best wall-clock and CPU times and the largest peak seen.
    fn best<T>(&self, mut f: impl FnMut() -> T) -> (T, Sample) {
        let (min_runs, min_total) =
            if self.quick { (1, Duration::ZERO) } else { (3, Duration::from_millis(300)) };
        if !self.quick {
            drop(f());
        }
        let mut best = Sample { wall: Duration::MAX, cpu: Duration::MAX, peak: 0 };
        let (mut total, mut runs) = (Duration::ZERO, 0);
        loop {
            let (out, sample) = measure(&mut f);
            best.wall = best.wall.min(sample.wall);
            best.cpu = best.cpu.min(sample.cpu);
            best.peak = best.peak.max(sample.peak);
            total += sample.wall;
            runs += 1;
            if runs >= min_runs && total >= min_total {
                return (out, best);
            }
            drop(out);
        }
    }
}

// ---------------------------------------------------------------------------
// Parsing.

fn parse_count(s: &str) -> Option<usize> {
    let (number, scale) = match s.as_bytes().last()? {
        b'k' | b'K' => (&s[..s.len() - 1], 1e3),
        b'm' | b'M' => (&s[..s.len() - 1], 1e6),
        _ => (s, 1.0),
    };
    let n: f64 = number.parse().ok()?;
    Some((n * scale).round() as usize)
}

// ---------------------------------------------------------------------------
// The naive baseline.

/// `levels[L] = (pos_L, crd_L)` and the values in leaf order.
type Arrays = (Vec<(Vec<u64>, Vec<u64>)>, Vec<f64>);

/// The obvious builder: pair each coordinate tuple with its value, sort the
/// pairs with `sort_unstable`, add up duplicates, and emit each level in one
/// pass (an entry opens a node at every level from the first coordinate where
/// it differs from the previous entry). Identity mode order, no bounds checks.
fn naive<const R: usize>(indices: &[u64], values: &[f64]) -> Arrays {
    let mut entries: Vec<([u64; R], f64)> = indices
        .chunks_exact(R)
        .zip(values)
        .map(|(c, &v)| (<[u64; R]>::try_from(c).expect("R coordinates"), v))
        .collect();
    entries.sort_unstable_by_key(|e| e.0);
    let mut levels: Vec<(Vec<u64>, Vec<u64>)> = (0..R).map(|_| (Vec::new(), Vec::new())).collect();
    let mut vals: Vec<f64> = Vec::with_capacity(entries.len());
    let mut prev: Option<[u64; R]> = None;
    for (c, v) in entries {
        let split = match prev {
            None => 0,
            Some(p) => match (0..R).find(|&l| p[l] != c[l]) {
                Some(split) => split,
                None => {
                    *vals.last_mut().expect("a previous entry") += v;
                    continue;
                }
            },
        };
        for (l, (pos, crd)) in levels.iter_mut().enumerate().skip(split) {
            if l > split {
                pos.push(crd.len() as u64);
            }
            crd.push(c[l]);
        }
        vals.push(v);
        prev = Some(c);
    }
    let roots = levels[0].1.len() as u64;
    for (l, (pos, crd)) in levels.iter_mut().enumerate() {
        if l == 0 {
            *pos = vec![0, roots];
        } else {
            pos.push(crd.len() as u64);
        }
    }
    (levels, vals)
}

fn naive_any(rank: usize, indices: &[u64], values: &[f64]) -> Option<Arrays> {
    Some(match rank {
        3 => naive::<3>(indices, values),
        4 => naive::<4>(indices, values),
        5 => naive::<5>(indices, values),
        6 => naive::<6>(indices, values),
        _ => return None,
    })
}

// ---------------------------------------------------------------------------
// Measurements.

fn arrays_of(built: &Built) -> Arrays {
    let view = built.tensor.view();
    let levels = view.levels().iter().map(|l| (l.pos.iter().collect(), l.crd.iter().collect())).collect();
    let values = view.values().typed::<f64>().expect("f64 values").as_native().expect("aligned").to_vec();
    (levels, values)
}

/// Bytes of `pos`/`crd`.
fn index_bytes(built: &Built) -> u64 {
    built.tensor.view().levels().iter().map(|l| 8 * (l.pos.len() + l.crd.len()) as u64).sum()
}

/// Bytes of the whole output: `pos`/`crd` and values.
fn output_bytes(built: &Built) -> u64 {
    index_bytes(built) + built.tensor.view().values().as_bytes().len() as u64
}

/// Bytes per key the builder packs for this shape (`u64` when the coordinate
/// bits fit 64, else `u128`; the entry position goes in only where it fits).
fn key_bytes(shape: &[u64]) -> u64 {
    let bits: u32 = shape.iter().map(|&e| 64 - e.saturating_sub(1).leading_zeros()).sum();
    if bits <= 64 {
        8
    } else {
        16
    }
}

/// What the budget allows on top of the arrays proportional to the input:
/// bucket tables, per-chunk and per-thread buffers (about 0.5 MiB at 10M
/// entries on 2 threads).
const BOOKKEEPING: u64 = 1 << 20;

struct Row {
    name: String,
    nnz_in: usize,
    nnz_out: u64,
    /// Single-threaded, all cores, and the naive builder (for ranks it has).
    one: Sample,
    all: Sample,
    naive: Option<Sample>,
    /// Output + one key array + one permutation array + `BOOKKEEPING`.
    budget: u64,
    input_bytes: u64,
    output_bytes: u64,
}

impl Row {
    fn peak(&self) -> usize {
        self.one.peak.max(self.all.peak)
    }
}

fn mnz(nnz: usize, t: Duration) -> f64 {
    nnz as f64 / t.as_secs_f64() / 1e6
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1 << 20) as f64
}

fn secs(t: Duration) -> f64 {
    t.as_secs_f64()
}

/// Milliseconds, with three significant figures or so.
fn ms(t: Duration) -> String {
    let ms = t.as_secs_f64() * 1e3;
    match ms {
        m if m >= 100.0 => format!("{m:.0}"),
        m if m >= 10.0 => format!("{m:.1}"),
        m if m >= 0.1 => format!("{m:.3}"),
        m => format!("{m:.5}"),
    }
}

fn run_tensor(settings: &Settings, name: &str, coo: &csf_testdata::TestTensor) -> Row {
    let input = Coo::new(&coo.shape, Indices::RowMajor(&coo.indices), &coo.values);
    let options = |parallel| Options { duplicates: Duplicates::Sum, parallel, ..Options::default() };
    // Ours on one thread and the naive builder, alternately (when it has the rank).
    let has_naive = naive_any(coo.rank(), &[], &[]).is_some();
    let ((ours_one, one), (naive_out, naive)) = settings.best_pair(
        || build(&input, &options(false)).expect("build"),
        || has_naive.then(|| naive_any(coo.rank(), &coo.indices, &coo.values)).flatten(),
    );
    let output_bytes = output_bytes(&ours_one);
    let entries = coo.len() as u64;
    let budget = output_bytes + key_bytes(&coo.shape) * entries + 8 * entries + BOOKKEEPING;
    let nnz_out = ours_one.tensor.view().nnz();
    let ours = arrays_of(&ours_one);
    drop(ours_one);
    let (ours_all, all) = settings.best(|| build(&input, &options(true)).expect("build"));
    assert!(arrays_of(&ours_all) == ours, "{name}: the parallel build differs from the single-threaded one");
    drop(ours_all);
    if let Some(naive_out) = &naive_out {
        assert!(*naive_out == ours, "{name}: the naive builder disagrees with ours");
    }
    let naive = has_naive.then_some(naive);
    let input_bytes = 8 * (coo.indices.len() + coo.values.len()) as u64;
    Row {
        name: name.to_string(),
        nnz_in: coo.len(),
        nnz_out,
        one,
        all,
        naive,
        budget,
        input_bytes,
        output_bytes,
    }
}

/// `ModeOrderPolicy::Auto` on a real tensor against identity and SPLATT's order.
struct AutoRow {
    name: String,
    time: Duration,
    /// The identity build's time on all cores, from the same tensor's row.
    identity: Duration,
    order: Vec<u32>,
    auto_bytes: u64,
    identity_bytes: u64,
    splatt_order: Vec<u32>,
    splatt_bytes: u64,
}

fn run_auto(
    settings: &Settings,
    name: &str,
    coo: &csf_testdata::TestTensor,
    identity_time: Duration,
) -> AutoRow {
    let input = Coo::new(&coo.shape, Indices::RowMajor(&coo.indices), &coo.values);
    let options = |mode_order| Options { mode_order, duplicates: Duplicates::Sum, ..Options::default() };
    let (auto, sample) =
        settings.best(|| build(&input, &options(ModeOrderPolicy::Auto)).expect("auto build"));
    let rank = coo.rank() as u32;
    let identity: Vec<u32> = (0..rank).collect();
    // SPLATT orders the modes by extent, smallest first (ties in mode order).
    let mut splatt = identity.clone();
    splatt.sort_by_key(|&d| coo.shape[d as usize]);
    let bytes_of = |order: &[u32]| {
        index_bytes(
            &build(&input, &options(ModeOrderPolicy::Explicit(order.to_vec()))).expect("explicit build"),
        )
    };
    let choice = auto.auto.as_ref().expect("Auto reports its choice");
    let row = AutoRow {
        name: name.to_string(),
        time: sample.wall,
        identity: identity_time,
        order: auto.tensor.view().mode_order().to_vec(),
        auto_bytes: index_bytes(&auto),
        identity_bytes: bytes_of(&identity),
        splatt_bytes: bytes_of(&splatt),
        splatt_order: splatt,
    };
    // What `Auto` predicted is what it stored, and what it reports having
    // compared matches the tensors built in those orders.
    assert_eq!(choice.index_bytes, row.auto_bytes, "{name}: Auto's predicted size is not what it stored");
    for (order, bytes) in &choice.compared {
        assert_eq!(*bytes, bytes_of(order), "{name}: Auto misreports the size of order {order:?}");
    }
    assert!(
        row.auto_bytes <= row.identity_bytes.min(row.splatt_bytes),
        "{name}: Auto chose {:?} storing {} index bytes, more than identity ({}) or SPLATT's \
         shortest-extent-first {:?} ({})",
        row.order,
        row.auto_bytes,
        row.identity_bytes,
        row.splatt_order,
        row.splatt_bytes
    );
    row
}

/// A rank's name, a shape, and the distributions drawn over it.
type Family<'a> = (&'a str, &'a [u64], &'a [(&'a str, Distribution)]);

fn main() {
    let settings = Settings::from_env();
    let threads = rayon::current_num_threads();
    println!(
        "csf-build COO -> CSF, f64 values, Duplicates::Sum. 1T = parallel: false; {threads}T = parallel: true on \
         rayon's global pool ({threads} threads). Best of >= {} runs{}. CPU = CPU time of all threads. \
         Load average at the start: {}",
        if settings.quick { 1 } else { 3 },
        if settings.quick { " (quick)" } else { " after a warm-up" },
        load_average()
    );

    let mut rows = Vec::new();
    let both = [("uniform", Distribution::Uniform), ("powerlaw", Distribution::PowerLaw { skew: 3.0 })];
    // The last two need more than 64 bits of coordinates and entry position (issue 13, "Wide keys").
    let shapes: [Family<'_>; 4] = [
        ("r3", &[2000, 2000, 2000], &both),
        ("r4", &[1000, 1000, 1000, 1000], &both),
        ("r3", &[5000, 50_000, 500_000], &both[1..]),
        ("r4", &[500, 5000, 50_000, 500_000], &both[1..]),
    ];
    for &nnz in &settings.nnz {
        for (rank_name, shape, distributions) in shapes {
            for &(dist_name, dist) in distributions {
                let extents = shape.iter().map(u64::to_string).collect::<Vec<_>>().join("x");
                let name = format!("{dist_name}-{rank_name} {extents} {}", count_name(nnz));
                if !settings.wants(&name) {
                    continue;
                }
                let coo = synthetic(shape, nnz, dist, 0x5eed ^ nnz as u64);
                let row = run_tensor(&settings, &name, &coo);
                print_row(&row, threads);
                rows.push(row);
                // The same entries in storage order, and with 0.1% of them
                // moved elsewhere: the presorted path (rank 3 only, to keep
                // the run short).
                if rank_name == "r3" {
                    for (label, moved) in [("sorted", 0), ("nearly-sorted", nnz / 1000)] {
                        let name = format!("{label}/{name}");
                        if settings.wants(&name) {
                            let row = run_tensor(&settings, &name, &presorted(&coo, moved));
                            print_row(&row, threads);
                            rows.push(row);
                        }
                    }
                }
            }
        }
    }

    let mut autos = Vec::new();
    match shared_data() {
        None => println!("(no ../shared/data: real tensors skipped)"),
        Some(dir) => {
            let mut files: Vec<_> = std::fs::read_dir(&dir)
                .expect("read ../shared/data")
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.to_string_lossy().ends_with(".tns.gz") || p.to_string_lossy().ends_with(".tns"))
                .collect();
            files.sort();
            for path in files {
                let file = path.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
                let name = format!("real/{}", file.trim_end_matches(".gz").trim_end_matches(".tns"));
                if !settings.wants(&name) {
                    continue;
                }
                let coo = read_tns(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                let row = run_tensor(&settings, &name, &coo);
                print_row(&row, threads);
                let identity = row.all.wall;
                rows.push(row);
                autos.push(run_auto(&settings, &name, &coo, identity));
            }
        }
    }
    println!("\nload average at the end: {}", load_average());
    print_tables(&rows, &autos, threads);
}

/// `coo`'s entries in storage (identity) order, then `moved` of them moved
/// to random places.
fn presorted(coo: &csf_testdata::TestTensor, moved: usize) -> csf_testdata::TestTensor {
    let mut sorted: Vec<usize> = (0..coo.len()).collect();
    sorted.sort_by(|&a, &b| coo.index(a).cmp(coo.index(b)));
    // Take `moved` entries out, then put each back before a random place.
    let mut rng = csf_testdata::Rng::new(0x50f7);
    let mut out_of_place = vec![false; sorted.len()];
    let mut moves: Vec<(usize, usize)> = (0..moved)
        .filter_map(|_| {
            let from = rng.below(sorted.len() as u64) as usize;
            let to = rng.below(sorted.len() as u64) as usize;
            // An entry drawn twice is moved once.
            (!std::mem::replace(&mut out_of_place[from], true)).then(|| (to, sorted[from]))
        })
        .collect();
    moves.sort_unstable();
    let mut moves = moves.into_iter().peekable();
    let mut entries = Vec::with_capacity(sorted.len());
    for (i, &entry) in sorted.iter().enumerate() {
        while let Some((_, m)) = moves.next_if(|&(to, _)| to <= i) {
            entries.push(m);
        }
        if !out_of_place[i] {
            entries.push(entry);
        }
    }
    entries.extend(moves.map(|(_, m)| m));
    let indices = entries.iter().flat_map(|&e| coo.index(e).to_vec()).collect();
    let values = entries.iter().map(|&e| coo.values[e]).collect();
    csf_testdata::TestTensor { shape: coo.shape.clone(), indices, values }
}

fn print_tables(rows: &[Row], autos: &[AutoRow], threads: usize) {
    println!();
    println!(
        "| tensor | nnz | 1T ms (CPU ms) | 1T M nnz/s | {threads}T ms (CPU ms) | {threads}T M nnz/s | speedup \
         | naive ms (CPU ms) | x naive, wall (CPU) | peak extra MiB | budget MiB | input MiB |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in rows {
        let naive = r.naive.map_or("-".to_string(), |t| format!("{} ({})", ms(t.wall), ms(t.cpu)));
        let ratio = r.naive.map_or("-".to_string(), |t| {
            format!("{:.2} ({:.2})", secs(t.wall) / secs(r.one.wall), secs(t.cpu) / secs(r.one.cpu))
        });
        let over = if r.peak() as u64 > r.budget { " OVER" } else { "" };
        println!(
            "| {} | {} | {} ({}) | {:.1} | {} ({}) | {:.1} | {:.2} | {naive} | {ratio} | {:.1}{over} | {:.1} | {:.1} |",
            r.name,
            r.nnz_in,
            ms(r.one.wall),
            ms(r.one.cpu),
            mnz(r.nnz_in, r.one.wall),
            ms(r.all.wall),
            ms(r.all.cpu),
            mnz(r.nnz_in, r.all.wall),
            secs(r.one.wall) / secs(r.all.wall),
            mib(r.peak() as u64),
            mib(r.budget),
            mib(r.input_bytes),
        );
    }
    if !autos.is_empty() {
        println!();
        println!(
            "| tensor | Auto ms | x identity | Auto order | Auto bytes | identity bytes | SPLATT order | SPLATT bytes |"
        );
        println!("|---|---:|---:|---|---:|---:|---|---:|");
        for a in autos {
            println!(
                "| {} | {} | {:.2} | {:?} | {} | {} | {:?} | {} |",
                a.name,
                ms(a.time),
                secs(a.time) / secs(a.identity),
                a.order,
                a.auto_bytes,
                a.identity_bytes,
                a.splatt_order,
                a.splatt_bytes
            );
        }
    }
    println!();
    for r in rows.iter().filter(|r| r.peak() as u64 > r.budget) {
        println!(
            "peak memory OVER budget on {}: {:.1} MiB above the input > {:.1} MiB (output {:.1} + one key \
             array + one permutation array + 1 MiB)",
            r.name,
            mib(r.peak() as u64),
            mib(r.budget),
            mib(r.output_bytes)
        );
    }
    if rows.iter().all(|r| r.peak() as u64 <= r.budget) {
        println!(
            "peak memory within input + output + one key array + one permutation array + 1 MiB on every tensor"
        );
    }
}

fn print_row(r: &Row, threads: usize) {
    let naive = r.naive.map_or("-".into(), |t| format!("{} ms (CPU {} ms)", ms(t.wall), ms(t.cpu)));
    println!(
        "{:<38} nnz {:>9} -> {:>9}  1T {} ms (CPU {} ms) {:.1} M/s  {threads}T {} ms (CPU {} ms) {:.1} M/s  \
         naive {naive}  peak +{:.1}/{:.1} MiB (budget {:.1})",
        r.name,
        r.nnz_in,
        r.nnz_out,
        ms(r.one.wall),
        ms(r.one.cpu),
        mnz(r.nnz_in, r.one.wall),
        ms(r.all.wall),
        ms(r.all.cpu),
        mnz(r.nnz_in, r.all.wall),
        mib(r.one.peak as u64),
        mib(r.all.peak as u64),
        mib(r.budget),
    );
}

/// The 1-minute load average: how busy the machine was.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "?".into())
}

fn count_name(n: usize) -> String {
    if n % 1_000_000 == 0 {
        format!("{}M", n / 1_000_000)
    } else if n % 1000 == 0 {
        format!("{}k", n / 1000)
    } else {
        n.to_string()
    }
}
