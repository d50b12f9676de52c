//! Level checks split into chunks across threads (feature `parallel`).
//!
//! Valid data, the common case, is checked entirely in parallel. When any
//! chunk finds a fault, the level is checked again sequentially so that the
//! violations reach the sink in exactly the order, and with exactly the
//! content, of a sequential run: the output never depends on thread count.

use rayon::prelude::*;

use crate::level::{check_level as check_level_seq, LevelSpec};
use crate::sink::{Sink, Stop};

/// Levels smaller than this are not worth the threads.
const PARALLEL_THRESHOLD: usize = 1 << 18;
/// Elements per task.
const CHUNK: usize = 1 << 16;

pub(crate) fn check_level(
    spec: LevelSpec,
    pos: &[u64],
    crd: &[u64],
    sink: &mut dyn Sink,
) -> Result<(), Stop> {
    if pos.len() + crd.len() < PARALLEL_THRESHOLD || !level_is_clean(spec, pos, crd) {
        return check_level_seq(spec, pos, crd, sink);
    }
    Ok(())
}

/// Whether the level breaks no rule and has nothing to warn about, checked
/// in parallel.
fn level_is_clean(spec: LevelSpec, pos: &[u64], crd: &[u64]) -> bool {
    let nodes = crd.len() as u64;
    // O(1) rules first: size, invariant 1, invariant 3.
    if pos.len() as u64 != spec.parents as u64 + 1 || pos.first() != Some(&0) || pos.last() != Some(&nodes) {
        return false;
    }
    let bounds_ok = || match spec.extent {
        Some(extent) => crd.par_chunks(CHUNK).all(|chunk| chunk.iter().all(|&c| c < extent)),
        None => true,
    };
    // Invariants 2 and 4 over chunks of parents. Chunks overlap by one `pos`
    // entry so that every adjacent pair is seen. Slices are only read once
    // `pos` is known monotone and within `crd` inside the chunk.
    let structure_ok = || {
        let parents = pos.len() - 1;
        (0..parents.div_ceil(CHUNK)).into_par_iter().all(|chunk| {
            let lo = chunk * CHUNK;
            let hi = (lo + CHUNK).min(parents);
            let Some(window) = pos.get(lo..=hi) else { return false };
            // A parent without children is valid but warned about
            // (format.md § 7.5): leave it to the sequential pass, which
            // reports it, as it is rare in written files.
            let childless_ok = !spec.warn_childless;
            if !window.windows(2).all(|w| matches!(w, [a, b] if a < b || (a == b && childless_ok))) {
                return false;
            }
            window.windows(2).all(|w| {
                let [a, b] = w else { return false };
                let (Ok(a), Ok(b)) = (usize::try_from(*a), usize::try_from(*b)) else { return false };
                crd.get(a..b).is_some_and(|s| s.windows(2).all(|p| matches!(p, [x, y] if x < y)))
            })
        })
    };
    let (bounds, structure) = rayon::join(bounds_ok, structure_ok);
    bounds && structure
}
