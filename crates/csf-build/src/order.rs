//! Choosing a mode order (`ModeOrder::Auto`).
//!
//! A CSF file stores `8 * (2 * (n_0 + ... + n_{rank-2}) + nnz + rank + 1)`
//! bytes of `pos`/`crd`, and `n_L` is the number of distinct prefixes of the
//! storage tuples of length `L + 1`: the number of distinct projections of the
//! non-zeros onto the *set* of the first `L + 1` dimensions, whatever their
//! order. So for rank <= 5 we count the distinct projections `D(S)` onto every
//! proper subset `S` of dimensions (at most 30 counting sorts) and find the
//! exact optimum by dynamic programming over subsets. Above rank 5 we compare
//! three candidates by their exact size: identity, SPLATT's
//! shortest-extent-first, and fewest-distinct-coordinates-first.
//!
//! Ties are broken deterministically towards the lexicographically first
//! order, so the identity, the first of all orders, is chosen whenever it is
//! among the smallest: csf-layout.txt § Mode Ordering makes it the default of
//! a writer without preference, and many orders tie (every order of a dense
//! or an empty tensor stores the same bytes).

use crate::key::{bit_length_below, Key};
use crate::sort::sort_keys;
use crate::Source;

/// What `Auto` chose, and what it compared.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AutoChoice {
    /// The chosen order.
    pub mode_order: Vec<u32>,
    /// Bytes of `pos`/`crd` the chosen order stores.
    pub index_bytes: u64,
    /// `(order, pos/crd bytes)` of the reference orders: identity and
    /// shortest-extent-first (SPLATT's heuristic), each listed once.
    pub compared: Vec<(Vec<u32>, u64)>,
}

/// The largest rank for which the exact subset search runs.
pub const EXACT_MAX_RANK: usize = 5;

/// Bytes of `pos`/`crd` for node counts `n_0..n_{rank-2}` of prefixes and `nnz` leaves.
fn index_bytes(upper: impl Iterator<Item = u64>, nnz: u64, rank: usize) -> u64 {
    8 * (2 * upper.sum::<u64>() + nnz + rank as u64 + 1)
}

/// Distinct projections of the entries onto `dims` (a set), or `None` when
/// the projection does not fit 128 bits.
fn distinct(source: &Source<'_>, dims: &[u32], parallel: bool) -> Option<u64> {
    let bits: u32 = dims.iter().map(|&d| bit_length_below(source.shape[d as usize])).sum();
    if bits <= 64 {
        Some(distinct_with::<u64>(source, dims, bits, parallel))
    } else if bits <= 128 {
        Some(distinct_with::<u128>(source, dims, bits, parallel))
    } else {
        None
    }
}

fn distinct_with<K: Key>(source: &Source<'_>, dims: &[u32], bits: u32, parallel: bool) -> u64 {
    let mut keys: Vec<K> = (0..source.len)
        .map(|i| {
            dims.iter().fold(K::default(), |k, &d| {
                k.shl_or(bit_length_below(source.shape[d as usize]), source.coord(i, d as usize))
            })
        })
        .collect();
    sort_keys(&mut keys, 0, bits, parallel);
    let mut count = 0u64;
    let mut prev = None;
    for k in keys {
        if prev != Some(k) {
            count += 1;
            prev = Some(k);
        }
    }
    count
}

/// Chooses the order that stores the fewest `pos`/`crd` bytes.
pub(crate) fn choose(source: &Source<'_>, parallel: bool) -> AutoChoice {
    let rank = source.shape.len();
    let identity: Vec<u32> = (0..rank as u32).collect();
    let mut shortest_first = identity.clone();
    shortest_first.sort_by_key(|&d| source.shape[d as usize]); // stable: ties keep identity order
    let nnz_all = (0..rank as u32).collect::<Vec<_>>();
    let nnz = distinct(source, &nnz_all, parallel);

    if rank <= EXACT_MAX_RANK {
        if let Some(choice) = exact(source, rank, &identity, &shortest_first, parallel) {
            return choice;
        }
    }
    // Candidates, each measured exactly by its prefix counts.
    let mut fewest_distinct = identity.clone();
    let singles: Vec<u64> =
        (0..rank as u32).map(|d| distinct(source, &[d], parallel).unwrap_or(u64::MAX)).collect();
    fewest_distinct.sort_by_key(|&d| singles[d as usize]);
    let nnz = nnz.unwrap_or(source.len as u64);
    let size_of = |order: &[u32]| {
        let upper: Option<Vec<u64>> =
            (1..rank).map(|len| distinct(source, &order[..len], parallel)).collect();
        upper.map_or(u64::MAX, |u| index_bytes(u.into_iter(), nnz, rank))
    };
    // The smallest, and among equals the lexicographically first (so the
    // identity whenever it is among the smallest).
    let mut candidates: Vec<(u64, Vec<u32>)> = Vec::new();
    for order in [identity.clone(), shortest_first.clone(), fewest_distinct] {
        if !candidates.iter().any(|(_, seen)| *seen == order) {
            candidates.push((size_of(&order), order));
        }
    }
    let compared = candidates
        .iter()
        .filter(|(_, order)| *order == identity || *order == shortest_first)
        .map(|(bytes, order)| (order.clone(), *bytes))
        .collect();
    let (index_bytes, mode_order) = candidates.into_iter().min().unwrap_or_default();
    AutoChoice { mode_order, index_bytes, compared }
}

fn exact(
    source: &Source<'_>,
    rank: usize,
    identity: &[u32],
    shortest_first: &[u32],
    parallel: bool,
) -> Option<AutoChoice> {
    let full = (1usize << rank) - 1;
    let dims_of = |set: usize| (0..rank as u32).filter(|d| set >> d & 1 == 1).collect::<Vec<_>>();
    // D(S) for every non-empty set (the full set gives nnz).
    let mut d = vec![0u64; full + 1];
    for (set, slot) in d.iter_mut().enumerate().skip(1) {
        *slot = distinct(source, &dims_of(set), parallel)?;
    }
    let nnz = d[full];
    // rest[S]: the fewest upper-level nodes below a prefix holding the set S,
    // `min_{d not in S} D(S + d) + rest(S + d)`, down to the sets of rank - 1
    // dimensions (the leaf level's count is nnz in every order). A superset
    // is a larger number than its subsets, so a descending sweep has every
    // rest[S + d] ready when S is reached.
    let mut rest = vec![0u64; full + 1];
    for set in (0..full).rev() {
        if (set as u32).count_ones() as usize >= rank - 1 {
            continue;
        }
        rest[set] = (0..rank)
            .filter(|&dim| set >> dim & 1 == 0)
            .map(|dim| d[set | 1 << dim] + rest[set | 1 << dim])
            .min()
            .unwrap_or(0);
    }
    // Walk forward, taking at each level the smallest dimension that keeps
    // the optimum: the lexicographically first optimal order. The identity is
    // the first of all orders, so it wins whenever it is optimal (the spec's
    // default for a writer without preference).
    let mut order = Vec::with_capacity(rank);
    let mut set = 0usize;
    while order.len() < rank - 1 {
        let dim = (0..rank)
            .find(|&dim| set >> dim & 1 == 0 && d[set | 1 << dim] + rest[set | 1 << dim] == rest[set])?;
        order.push(dim as u32);
        set |= 1 << dim;
    }
    order.extend((0..rank as u32).filter(|&dim| set >> dim & 1 == 0));
    let size_of = |order: &[u32]| {
        let mut set = 0usize;
        let upper = order[..rank - 1].iter().map(|&dim| {
            set |= 1 << dim;
            d[set]
        });
        index_bytes(upper.collect::<Vec<_>>().into_iter(), nnz, rank)
    };
    Some(AutoChoice {
        index_bytes: size_of(&order),
        compared: references(identity, shortest_first, size_of),
        mode_order: order,
    })
}

/// `compared`: the identity and shortest-extent-first with their sizes, each
/// listed once (they are the same order when the extents are non-decreasing).
fn references(
    identity: &[u32],
    shortest_first: &[u32],
    size_of: impl Fn(&[u32]) -> u64,
) -> Vec<(Vec<u32>, u64)> {
    let mut compared = vec![(identity.to_vec(), size_of(identity))];
    if shortest_first != identity {
        compared.push((shortest_first.to_vec(), size_of(shortest_first)));
    }
    compared
}
