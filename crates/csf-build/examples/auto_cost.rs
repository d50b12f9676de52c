//! What `ModeOrderPolicy::Auto` costs against an identity build of the same tensor:
//! `cargo run --release -p csf-build --example auto_cost [FILTER]`.
//!
//! The builds are interleaved (identity, Auto, the order Auto chose given
//! explicitly, identity, ...) so that a neighbour's load falls on all alike,
//! and each is timed by wall clock and by process CPU time (all threads).
//! Reported per tensor: the best of each, the ratio Auto / identity of the
//! best times, and the range of the per-round ratios; the cost of choosing
//! alone (Auto's best CPU time less the chosen order's) over the identity
//! build's; and the peak heap memory of each build above what was live
//! before it (a counting global allocator, as in `benches/build.rs`).
//! The load average is printed at the start and the end.
//!
//! Environment: `AUTO_COST_ROUNDS` (default 5), `AUTO_COST_THREADS=1` for
//! `parallel: false` (default: `parallel: true` on rayon's global pool),
//! `AUTO_COST_NNZ` (comma-separated, default `1M,10M`).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::time::{Duration, Instant};

use csf_build::{build, Coo, Duplicates, Indices, ModeOrderPolicy, Options};
use csf_testdata::{read_tns, shared_data, synthetic, Distribution};

/// Counts live heap bytes and their maximum.
struct Counting;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every method forwards to `System` with the caller's arguments
// unchanged; the counters do not affect the memory handed out.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `alloc` is passed on as is.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            PEAK.fetch_max(CURRENT.fetch_add(layout.size(), Relaxed) + layout.size(), Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract for `dealloc` is passed on as is.
        unsafe { System.dealloc(ptr, layout) };
        CURRENT.fetch_sub(layout.size(), Relaxed);
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "?".into())
}

fn parse_count(s: &str) -> usize {
    let (number, scale) = match s.as_bytes().last() {
        Some(b'k' | b'K') => (&s[..s.len() - 1], 1e3),
        Some(b'm' | b'M') => (&s[..s.len() - 1], 1e6),
        _ => (s, 1.0),
    };
    (number.parse::<f64>().expect("a count") * scale).round() as usize
}

fn ms(t: Duration) -> String {
    let ms = t.as_secs_f64() * 1e3;
    if ms >= 100.0 {
        format!("{ms:.0}")
    } else if ms >= 10.0 {
        format!("{ms:.1}")
    } else {
        format!("{ms:.2}")
    }
}

struct Best {
    wall: Duration,
    cpu: Duration,
    peak: usize,
}

/// The build, its wall and CPU time, and its peak heap bytes above what was live before.
fn timed(f: impl FnOnce() -> csf_build::Built) -> (csf_build::Built, Duration, Duration, usize) {
    let base = CURRENT.load(Relaxed);
    PEAK.store(base, Relaxed);
    let (c0, t0) = (csf_testdata::process_cpu_time(), Instant::now());
    let out = f();
    (out, t0.elapsed(), csf_testdata::process_cpu_time().saturating_sub(c0), PEAK.load(Relaxed) - base)
}

fn run(name: &str, coo: &csf_testdata::TestTensor, rounds: usize, parallel: bool) {
    let input = Coo::new(&coo.shape, Indices::RowMajor(&coo.indices), &coo.values);
    let options =
        |mode_order| Options { mode_order, duplicates: Duplicates::Last, parallel, ..Options::default() };
    let mut identity = Best { wall: Duration::MAX, cpu: Duration::MAX, peak: 0 };
    let mut auto = Best { wall: Duration::MAX, cpu: Duration::MAX, peak: 0 };
    let mut chosen = Best { wall: Duration::MAX, cpu: Duration::MAX, peak: 0 };
    let (mut lo, mut hi) = (f64::MAX, 0f64);
    let mut choice = None;
    // One warm-up round, not counted.
    for round in 0..=rounds {
        let (built, iw, ic, ip) =
            timed(|| build(&input, &options(ModeOrderPolicy::Identity)).expect("identity"));
        drop(built);
        let (built, aw, ac, ap) = timed(|| build(&input, &options(ModeOrderPolicy::Auto)).expect("auto"));
        identity.peak = identity.peak.max(ip);
        auto.peak = auto.peak.max(ap);
        choice = built.auto;
        let order = choice.as_ref().map(|c| c.mode_order.clone()).unwrap_or_default();
        let (built, cw, cc, _) =
            timed(|| build(&input, &options(ModeOrderPolicy::Explicit(order))).expect("chosen order"));
        drop(built);
        if round == 0 {
            continue;
        }
        chosen.wall = chosen.wall.min(cw);
        chosen.cpu = chosen.cpu.min(cc);
        identity.wall = identity.wall.min(iw);
        identity.cpu = identity.cpu.min(ic);
        auto.wall = auto.wall.min(aw);
        auto.cpu = auto.cpu.min(ac);
        let ratio = aw.as_secs_f64() / iw.as_secs_f64();
        lo = lo.min(ratio);
        hi = hi.max(ratio);
    }
    let choice = choice.expect("Auto reports its choice");
    println!(
        "| {name} | {} | {} ({}) | {} ({}) | {:.2} ({:.2}) | {lo:.2}-{hi:.2} | {} ({}) | {:.2} | {:.1} / {:.1} | {:?} | {} |",
        coo.len(),
        ms(identity.wall),
        ms(identity.cpu),
        ms(auto.wall),
        ms(auto.cpu),
        auto.wall.as_secs_f64() / identity.wall.as_secs_f64(),
        auto.cpu.as_secs_f64() / identity.cpu.as_secs_f64(),
        ms(chosen.wall),
        ms(chosen.cpu),
        auto.cpu.saturating_sub(chosen.cpu).as_secs_f64() / identity.cpu.as_secs_f64(),
        identity.peak as f64 / (1 << 20) as f64,
        auto.peak as f64 / (1 << 20) as f64,
        choice.mode_order,
        choice.index_bytes,
    );
}

fn main() {
    let filter = std::env::args().skip(1).find(|a| !a.starts_with('-')).unwrap_or_default();
    let rounds = std::env::var("AUTO_COST_ROUNDS").map_or(5, |r| r.parse().expect("a round count"));
    let parallel = std::env::var("AUTO_COST_THREADS").map_or(true, |t| t != "1");
    let nnz: Vec<usize> = std::env::var("AUTO_COST_NNZ")
        .unwrap_or_else(|_| "1M,10M".into())
        .split(',')
        .map(parse_count)
        .collect();
    println!(
        "Auto vs identity, Duplicates::Last, parallel: {parallel} ({} threads), best of {rounds} interleaved \
         rounds after a warm-up; load average at the start: {}",
        rayon::current_num_threads(),
        load_average()
    );
    println!(
        "| tensor | nnz | identity ms (CPU) | Auto ms (CPU) | Auto / identity, wall (CPU) | per-round wall \
         ratios | chosen order built alone, ms (CPU) | choosing / identity (CPU) | peak MiB identity / Auto | \
         Auto order | index bytes |"
    );
    println!("|---|---:|---:|---:|---:|---|---:|---:|---:|---|---:|");
    let uniform = Distribution::Uniform;
    let skewed = Distribution::PowerLaw { skew: 3.0 };
    let cases: [(&str, &[u64], Distribution); 9] = [
        ("uniform-r3 2000^3", &[2000, 2000, 2000], uniform),
        ("power-law-r3 2000^3", &[2000, 2000, 2000], skewed),
        ("power-law-r3 5000x50000x500000", &[5000, 50_000, 500_000], skewed),
        ("uniform-r4 1000^4", &[1000, 1000, 1000, 1000], uniform),
        ("power-law-r4 1000^4", &[1000, 1000, 1000, 1000], skewed),
        ("power-law-r4 500x5000x50000x500000", &[500, 5000, 50_000, 500_000], skewed),
        ("power-law-r5 100^5", &[100, 100, 100, 100, 100], skewed),
        ("power-law-r6 40^6", &[40; 6], skewed),
        ("power-law-r8 12^8", &[12; 8], skewed),
    ];
    for &n in &nnz {
        for (name, shape, distribution) in cases {
            let name = format!(
                "{name} {}",
                if n % 1_000_000 == 0 { format!("{}M", n / 1_000_000) } else { n.to_string() }
            );
            if name.contains(&filter) {
                run(&name, &synthetic(shape, n, distribution, 0x5eed ^ n as u64), rounds, parallel);
            }
        }
    }
    if let Some(dir) = shared_data() {
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .expect("read ../shared/data")
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.to_string_lossy().contains(".tns"))
            .collect();
        files.sort();
        for path in files {
            let file = path.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
            let name = format!("real/{}", file.trim_end_matches(".gz").trim_end_matches(".tns"));
            if name.contains(&filter) {
                let coo = read_tns(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                run(&name, &coo, rounds.max(20), parallel);
            }
        }
    }
    println!("load average at the end: {}", load_average());
}
