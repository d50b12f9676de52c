//! Choosing a mode order (`ModeOrderPolicy::Auto`).
//!
//! A CSF file stores `8 * (2 * (n_0 + ... + n_{rank-2}) + nnz + rank + 1)`
//! bytes of `pos`/`crd`, and `n_L` is the number of distinct prefixes of the
//! storage tuples of length `L + 1`: the number `D(S)` of distinct
//! projections of the non-zeros onto the *set* `S` of the first `L + 1`
//! dimensions, whatever their order. An order's cost is the sum of `D` over
//! its prefix sets; `nnz` is the same for every order.
//!
//! **Guarantee.** For rank <= 5 the chosen order is the exact optimum: the
//! smallest `pos`/`crd`, and among equals the lexicographically first order
//! (so the identity whenever it is among the smallest: csf-layout.txt § Mode
//! Ordering makes it the default of a writer without preference, and many
//! orders tie; every order of a dense or an empty tensor stores the same
//! bytes). For ranks 6 to 8 it is never larger than the best of three
//! heuristics measured exactly (identity, SPLATT's shortest-extent-first,
//! fewest-distinct-coordinates-first), exact whenever the bounded search
//! below closes and on every input of at most 64 entries, and on ties the
//! heuristics' pick (so that it changes only to a smaller order); above
//! rank 8 it is that best heuristic.
//!
//! **How, cheaply.** Counting every `D(S)` by a sort each (what this module did
//! before) made an `Auto` build cost 2.3 to 13 identity builds
//! (`docs/benchmarks.md`, "Auto at the cost of a build"). Now each set is counted
//! by the cheapest exact method (`distinct.rs`: a bitmap scan for a set of few
//! cells, one partition pass for all the sets that share a dimension), and only the
//! sets that matter, in rounds. After each round every order gets a cost: exact
//! when all its prefix sets are counted, else a *lower bound* (`D(T) <= D(S)` for
//! `T` within `S`, and `D(T) <= D(S) * prod_{d in T \ S} D({d})` for `T` containing
//! `S`); a set whose lower bound meets an upper one (`D(A) * prod_{d in S \ A}
//! D({d})` for a counted `A` within `S`, or the entry count) is settled without
//! counting, and input already in identity order gives the identity's sets in one
//! scan. An order whose bound is above the best exact cost, or equal to it and the
//! order later in the tie rule, cannot win, and its sets are not needed. The next
//! round counts the smallest needed sets where a bitmap is cheap, else the dense
//! sets of the reference orders (`compared` reports their sizes) and then of the
//! most promising order, else one partition pass. A pass counts the sets it
//! can by bitmaps first; those it would hash wait for later rounds, where the
//! new bounds may rule them out, a reference's or the most promising order's
//! first. The passes are planned as a cover
//! of the needed sets too big for a bitmap: each by the dimension that the most of
//! them not yet covered contain, so that one scatter of the entries serves them
//! all, and a dense set whose cells within a bucket of one of those passes fit a
//! bitmap in L2 is counted there rather than by a scan of its own (a scan's bitmap
//! that misses L1 costs more per entry). The search stops when no order can beat
//! the best one, so the answer is that of an exhaustive count. Above rank 5 the
//! singles (which fewest-distinct-first sorts by) are counted with the references'
//! prefix sets, in the same scans or projected from their bitmaps, and then only
//! fewest-distinct-first's remaining sets.
//!
//! **Tiny inputs** (at most 64 entries, rank <= 8): every set is counted at
//! once (`Counter::count_tiny`, a few masks each) and the cheapest order
//! found as a shortest path through the lattice of sets
//! (`cheapest_counted`): the search's rounds would cost more than that,
//! and above rank 5 its budget would leave it inexact.

use crate::distinct::{dims_of, Counter, Dims};
use crate::Source;

/// What `Auto` chose, and what it compared.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AutoChoice {
    /// The mode order `Auto` picked: the one of those compared that stores
    /// the fewest bytes.
    pub mode_order: Vec<u32>,
    /// Bytes of `pos`/`crd` the chosen order stores.
    pub index_bytes: u64,
    /// `(order, pos/crd bytes)` of the reference orders: identity and
    /// shortest-extent-first (SPLATT's heuristic), each listed once. Exact
    /// unless `drop_zeros` dropped entries: they differ from `index_bytes` by
    /// what the orders' upper levels differ on all input entries.
    pub compared: Vec<(Vec<u32>, u64)>,
}

impl AutoChoice {
    /// The choice with `index_bytes` set to what the built tensor stores,
    /// `stored`, and the reference sizes moved by the same amount: `choose`
    /// sizes every order with one leaf per input entry, and merged duplicates
    /// shrink the leaf level alike in every order.
    pub(crate) fn settle(mut self, stored: u64) -> Self {
        let assumed = self.index_bytes;
        for (_, bytes) in &mut self.compared {
            *bytes = (*bytes + stored).saturating_sub(assumed);
        }
        self.index_bytes = stored;
        self
    }
}

/// The largest rank for which `Auto` is the exact optimum.
pub const EXACT_MAX_RANK: usize = 5;
/// The largest rank for which the search over all orders runs at all (8! =
/// 40320 orders), with a bounded amount of counting above `EXACT_MAX_RANK`.
const SEARCH_MAX_RANK: usize = 8;
/// Above `EXACT_MAX_RANK`: the counting the search may add to the
/// heuristics', in scans of the input (a bitmap set is one, a partition pass
/// two plus one per set), about the cost of one build.
const SEARCH_WORK: usize = 12;

/// Chooses the order that stores the fewest `pos`/`crd` bytes (see the
/// module documentation for the guarantee), and says whether the input is
/// in identity order (its first scan tells). `counted`: counts found
/// before (the singles that `distinct::checked_singles` counted).
pub(crate) fn choose(source: &Source<'_>, parallel: bool, counted: &[(Dims, u64)]) -> (AutoChoice, bool) {
    let (choice, in_identity_order, _) = choose_lending(source, parallel, counted, Vec::new());
    (choice, in_identity_order)
}

/// [`choose`], its partition passes writing their keys into `scratch`
/// (memory the caller lends; `Counter::lending`), which it gives back,
/// its contents overwritten.
pub(crate) fn choose_lending(
    source: &Source<'_>,
    parallel: bool,
    counted: &[(Dims, u64)],
    scratch: Vec<u64>,
) -> (AutoChoice, bool, Vec<u64>) {
    let rank = source.shape.len();
    let identity: Vec<u32> = (0..rank as u32).collect();
    let mut shortest_first = identity.clone();
    shortest_first.sort_by_key(|&d| source.shape[d as usize]); // stable: ties keep identity order
    let mut counter = Counter::lending(source, parallel, scratch);
    counter.counted(counted);
    // Input in identity order (as files often are) gives the identity's sets in one scan.
    let in_identity_order = counter.count_sorted_prefixes();
    // `compared` reports their exact sizes: their prefix sets are always counted.
    let references = [identity.clone(), shortest_first.clone()];
    // A tiny input has every set counted at once (a few masks each), and the
    // cheapest order found from them: the search's rounds of bounds and
    // planning would cost more than that, and above rank 5 its budget could
    // stop it short of the optimum.
    // (Asked only of a tiny input: the list of every set is not made for the others.)
    let all_counted = rank <= SEARCH_MAX_RANK
        && counter.is_tiny()
        && counter.count_tiny(&(1..(1 << rank) - 1).collect::<Vec<Dims>>());
    let mode_order = if rank <= EXACT_MAX_RANK {
        if all_counted {
            cheapest_counted(&counter, rank, None)
        } else {
            Search::new(rank, None).run(&mut counter, &references, None)
        }
    } else {
        // Fewest-distinct-first needs the singles: they are counted with the
        // references' sets, in the same scans (reading the input is what a
        // scan costs) or projected from their bitmaps, then its own sets.
        let singles = (0..rank).map(|d| 1 << d);
        let sets: Vec<Dims> = singles.chain(references.iter().flat_map(|o| prefix_sets(o))).collect();
        count_all(&mut counter, &sets);
        let mut fewest_distinct = identity.clone();
        fewest_distinct.sort_by_key(|&d| counter.get(1 << d)); // stable, as above
        count_all(&mut counter, &prefix_sets(&fewest_distinct).collect::<Vec<_>>());
        let candidates = [identity, shortest_first, fewest_distinct];
        let best = candidates.iter().min_by_key(|o| (cost(&counter, o), *o)).cloned().unwrap_or_default();
        if all_counted {
            cheapest_counted(&counter, rank, Some(&best))
        } else if rank <= SEARCH_MAX_RANK {
            Search::new(rank, Some(&best)).run(&mut counter, &[], Some(SEARCH_WORK))
        } else {
            best
        }
    };
    let size = |order: &[u32]| index_bytes(cost(&counter, order), counter.entries(), rank);
    let mut compared = vec![(references[0].clone(), size(&references[0]))];
    if references[1] != references[0] {
        compared.push((references[1].clone(), size(&references[1])));
    }
    let choice = AutoChoice { index_bytes: size(&mode_order), compared, mode_order };
    (choice, in_identity_order, counter.into_scratch())
}

/// The cheapest order of `0..rank` when every set is counted: `preferred`
/// if it is among the cheapest, else the lexicographically first of them,
/// which is what the search finds (and, without a budget, exactly).
///
/// An order's cost is a sum over its chain of prefix sets, so the cheapest
/// is a shortest path through the lattice of sets: `rest[S]`, the least
/// cost of the levels below a prefix set `S`, is the least over `d` outside
/// `S` of `D(S + d) + rest[S + d]` (the full set costs nothing: its size is
/// `nnz`, the same for every order). That is `2^rank * rank` steps where
/// trying every order is `rank! * rank`: 2,048 at rank 8 against 322,560.
/// Picking, from the empty set down, the lowest `d` that keeps the least
/// cost gives the lexicographically first cheapest order.
fn cheapest_counted(counter: &Counter<'_>, rank: usize, preferred: Option<&[u32]>) -> Vec<u32> {
    let full: Dims = (1 << rank) - 1;
    let level = |set: Dims| if set == full { 0 } else { counter.get(set).unwrap_or(u64::MAX) };
    // The cost below `set` through `next = set + d`, given `rest` so far.
    let through = |rest: &[u64], next: Dims| level(next).saturating_add(rest[next as usize]);
    let mut rest = vec![0u64; 1 << rank];
    // Supersets first: a set's index is above those of its subsets.
    for set in (0..full).rev() {
        rest[set as usize] =
            (0..rank).filter(|&d| set >> d & 1 == 0).map(|d| through(&rest, set | 1 << d)).min().unwrap_or(0);
    }
    if let Some(preferred) = preferred.filter(|o| cost(counter, o) == rest[0]) {
        return preferred.to_vec();
    }
    let mut order = Vec::with_capacity(rank);
    let mut set: Dims = 0;
    while set != full {
        let keeps_least = |d: &usize| set >> d & 1 == 0 && through(&rest, set | 1 << d) == rest[set as usize];
        let Some(d) = (0..rank).find(keeps_least) else { break };
        order.push(d as u32);
        set |= 1 << d;
    }
    order
}

/// Bytes of `pos`/`crd` for `upper = n_0 + ... + n_{rank-2}` and `nnz` leaves.
fn index_bytes(upper: u64, nnz: u64, rank: usize) -> u64 {
    8 * (2 * upper + nnz + rank as u64 + 1)
}

/// The sets of the first `1..rank` dimensions of `order` (all but the full set).
fn prefix_sets(order: &[u32]) -> impl Iterator<Item = Dims> + '_ {
    order[..order.len().saturating_sub(1)].iter().scan(0, |set, &d| {
        *set |= 1 << d;
        Some(*set)
    })
}

/// `n_0 + ... + n_{rank-2}` of `order`, its prefix sets all counted.
fn cost(counter: &Counter<'_>, order: &[u32]) -> u64 {
    prefix_sets(order).map(|s| counter.get(s).unwrap_or(u64::MAX)).fold(0, u64::saturating_add)
}

/// Counts every set of `sets`: the dense ones by bitmaps, then the others by
/// partition passes, each by the dimension most of them share.
fn count_all(counter: &mut Counter<'_>, sets: &[Dims]) {
    let dense: Vec<Dims> = sets.iter().copied().filter(|&s| counter.is_dense(s)).collect();
    counter.count_dense(&dense);
    let mut sparse: Vec<Dims> = sets.iter().copied().filter(|&s| counter.get(s).is_none()).collect();
    while let Some(a) = most_shared(&sparse) {
        let (with, without): (Vec<Dims>, Vec<Dims>) = sparse.iter().partition(|&&s| s >> a & 1 == 1);
        counter.count_pass(a, &with);
        sparse = without;
    }
}

/// The dimension the most sets of `sets` contain (the lowest on ties).
fn most_shared(sets: &[Dims]) -> Option<usize> {
    let in_sets = |d: usize| sets.iter().filter(|&&s| s >> d & 1 == 1).count();
    (0..64).filter(|&d| in_sets(d) > 0).max_by_key(|&d| (in_sets(d), std::cmp::Reverse(d)))
}

/// The search over every order of `0..rank`, enumerated afresh each round
/// (8! orders are cheap to walk, and memory stays flat).
struct Search<'p> {
    rank: usize,
    /// The order preferred on ties (the heuristics' pick above rank 5),
    /// else the lexicographically first wins them.
    preferred: Option<&'p [u32]>,
}

/// What a round found: the best exactly counted order, the uncounted sets
/// that orders still able to beat it need, and the most promising of those
/// orders (the lowest bound).
struct Round {
    best: Option<Vec<u32>>,
    needed: Vec<Dims>,
    focus: Option<Vec<u32>>,
}

impl<'p> Search<'p> {
    fn new(rank: usize, preferred: Option<&'p [u32]>) -> Self {
        Self { rank, preferred }
    }

    /// Calls `f(tie, order, cost, exact)` for every order, lexicographically,
    /// where `tie` ranks it among equal costs (the preferred order first) and
    /// `cost` is exact or a lower bound.
    fn each(&self, bounds: &Bounds, mut f: impl FnMut(usize, &[u32], u64, bool)) {
        let mut order: Vec<u32> = (0..self.rank as u32).collect();
        for i in 1.. {
            let tie = if self.preferred == Some(order.as_slice()) { 0 } else { i };
            let (cost, exact) = prefix_sets(&order)
                .fold((0, true), |(c, e), s| (u64::saturating_add(c, bounds.at(s)), e && bounds.is_exact(s)));
            f(tie, &order, cost, exact);
            if !next_permutation(&mut order) {
                break;
            }
        }
    }

    /// Counts, round by round, the sets that orders still able to win need,
    /// and returns the winner. `references`' sets are counted too. With a
    /// `budget` of work (above rank 5), stops when the next round would
    /// exceed it and returns the best order counted so far.
    fn run(&self, counter: &mut Counter<'_>, references: &[Vec<u32>], budget: Option<usize>) -> Vec<u32> {
        let mut spent = 0;
        loop {
            let bounds = Bounds::new(counter, self.rank);
            for &(set, distinct) in &bounds.deduced {
                counter.settle(set, distinct);
            }
            let Round { best, mut needed, focus } = self.round(&bounds);
            // Settle the references first (`compared` needs their sizes, and
            // they give an early best to rule orders out against), then the
            // order with the lowest bound.
            let uncounted = |o: &[u32]| prefix_sets(o).any(|s| counter.get(s).is_none());
            let focus = references.iter().find(|o| uncounted(o)).cloned().or(focus).unwrap_or_default();
            needed
                .extend(references.iter().flat_map(|o| prefix_sets(o)).filter(|&s| counter.get(s).is_none()));
            needed.sort_unstable();
            needed.dedup();
            // (Above rank 5 the budget counts passes: splitting them would
            // change where the search stops, and so its answer.)
            let step = next_step(counter, &needed, &focus, budget.is_none());
            let over = budget.is_some_and(|b| spent + step.work() > b);
            match (step, best) {
                (Step::Done, Some(best)) => return best,
                (_, Some(best)) if over => return best,
                (Step::Done, None) => return (0..self.rank as u32).collect(), // no order at all
                (step, _) => spent += step.take(counter),
            }
        }
    }

    /// One round: the best exactly counted order first, then the orders
    /// that might still beat it (bound below its cost, or equal and earlier
    /// in the tie rule).
    fn round(&self, bounds: &Bounds) -> Round {
        let mut best: Option<(u64, usize, Vec<u32>)> = None;
        self.each(bounds, |tie, order, cost, exact| {
            if exact && best.as_ref().map_or(true, |b| (cost, tie) < (b.0, b.1)) {
                best = Some((cost, tie, order.to_vec()));
            }
        });
        let mut needed = vec![false; 1 << self.rank];
        let mut focus: Option<(u64, usize, Vec<u32>)> = None;
        self.each(bounds, |tie, order, cost, exact| {
            if exact || best.as_ref().is_some_and(|b| (cost, tie) >= (b.0, b.1)) {
                return;
            }
            for set in prefix_sets(order).filter(|&s| !bounds.is_exact(s)) {
                needed[set as usize] = true;
            }
            if focus.as_ref().map_or(true, |f| (cost, tie) < (f.0, f.1)) {
                focus = Some((cost, tie, order.to_vec()));
            }
        });
        Round {
            best: best.map(|b| b.2),
            needed: (0..needed.len()).filter(|&s| needed[s]).map(|s| s as Dims).collect(),
            focus: focus.map(|f| f.2),
        }
    }
}

/// What to count next.
enum Step {
    Done,
    /// These sets by bitmaps.
    Dense(Vec<Dims>),
    /// These sets (all containing the dimension) by one partition pass.
    Pass(usize, Vec<Dims>),
}

impl Step {
    /// The work in scans of the input.
    fn work(&self) -> usize {
        match self {
            Step::Done => 0,
            Step::Dense(sets) => sets.len(),
            Step::Pass(_, sets) => 2 + sets.len(),
        }
    }

    /// Counts, and returns the work done.
    fn take(self, counter: &mut Counter<'_>) -> usize {
        let work = self.work();
        match self {
            Step::Done => {}
            Step::Dense(sets) => counter.count_dense(&sets),
            Step::Pass(a, sets) => counter.count_pass(a, &sets),
        }
        work
    }
}

/// The next sets to count among `needed`: the smallest sets first where
/// dense (they are cheap, and bound the bigger ones; with every needed dense
/// set in the same scans), then the uncounted dense sets of `focus` (an
/// order), then one partition pass: by the first dimension of `passes`
/// (the cover of the sparse sets), with every needed sparse set that
/// contains it. A dense set that rides in one of the passes
/// (`Counter::rides_in_pass`: its bitmap within a bucket fits L2, where its
/// own scan would miss L1) is counted in that pass instead of a scan.
///
/// With `bitmaps_first` (the exact search), when the passes' keys hold every
/// dimension (so that a later pass by the same dimension counts on the keys
/// in its buckets, without a scatter), a pass counts only its sets that a
/// bucket bitmap counts; the sets it would hash wait for the next rounds, where the
/// bitmap counts and an exact cost of `focus` (hashed first) often rule them
/// out. On the rank-4 power law that leaves two of four hashed sets
/// (docs/benchmarks-history.md, "Auto", "Bitmaps before hashing").
fn next_step(counter: &Counter<'_>, needed: &[Dims], focus: &[u32], bitmaps_first: bool) -> Step {
    let Some(smallest) = needed.iter().map(|s| s.count_ones()).min() else { return Step::Done };
    let passes = passes(counter, needed, focus);
    let rides = |s: Dims| passes.iter().any(|&a| counter.rides_in_pass(a, s));
    // The bigger dense sets ride along: a scan's cost is mostly reading the
    // input, the bigger sets are usually needed too, and the smaller ones
    // are projected from their bitmaps rather than scanned.
    let dense: Vec<Dims> = needed.iter().copied().filter(|&s| counter.is_dense(s) && !rides(s)).collect();
    if dense.iter().any(|s| s.count_ones() == smallest) {
        return Step::Dense(dense);
    }
    let mine: Vec<Dims> = prefix_sets(focus)
        .filter(|&s| counter.get(s).is_none() && counter.is_dense(s) && !rides(s))
        .collect();
    if !mine.is_empty() {
        return Step::Dense(mine);
    }
    let Some(&first) = passes.first() else { return Step::Dense(dense) };
    let in_pass =
        |a: usize, s: Dims| s >> a & 1 == 1 && (!counter.is_dense(s) || counter.rides_in_pass(a, s));
    let sets_of = |a: usize, also: &dyn Fn(Dims) -> bool| -> Vec<Dims> {
        needed.iter().copied().filter(|&s| in_pass(a, s) && also(s)).collect()
    };
    if !bitmaps_first || !counter.packs_all() {
        return Step::Pass(first, sets_of(first, &|_| true));
    }
    // The sets a pass counts by bitmaps first: they cost a fraction of a
    // hashed set and bound the hashed ones, which then often need no count.
    // By the dimension the keys are in buckets by already (no scatter), else
    // in the cover's order.
    let scattered = counter.scattered_by();
    for a in scattered.into_iter().chain(passes.iter().copied()) {
        let sets = sets_of(a, &|s| counter.counts_by_bitmap(a, s));
        if !sets.is_empty() {
            return Step::Pass(a, sets);
        }
    }
    // Only hashed sets left: `focus`'s first (a reference, while one is
    // uncounted), so that an exact cost rules out the orders that cannot
    // beat it before their sets are hashed. By the dimension most of them
    // hold, the scattered one on ties.
    let hashed: Vec<Dims> = prefix_sets(focus).filter(|s| needed.contains(s)).collect();
    let holding = |d: usize| hashed.iter().filter(|&&s| in_pass(d, s)).count();
    let by = (0..counter.extents().len())
        .max_by_key(|&d| (holding(d), scattered == Some(d), std::cmp::Reverse(d)));
    match by {
        Some(a) if holding(a) > 0 => Step::Pass(a, sets_of(a, &|s| hashed.contains(&s))),
        _ => {
            let a = scattered.filter(|&a| !sets_of(a, &|_| true).is_empty()).unwrap_or(first);
            Step::Pass(a, sets_of(a, &|_| true))
        }
    }
}

/// The dimensions of the partition passes that count the sparse sets of
/// `needed`, in order: each the dimension that the most sets not yet
/// covered contain (one scatter of the entries serves them all), on ties
/// the one whose pass the most dense cells would ride in (the scans it
/// saves), then `focus`'s first dimension, then the lowest.
fn passes(counter: &Counter<'_>, needed: &[Dims], focus: &[u32]) -> Vec<usize> {
    let rank = counter.extents().len();
    let mut rest: Vec<Dims> = needed.iter().copied().filter(|&s| !counter.is_dense(s)).collect();
    let riders = |d: usize| {
        let ride = |&&s: &&Dims| counter.is_dense(s) && counter.rides_in_pass(d, s);
        needed.iter().filter(ride).map(|&s| counter.cells(s).unwrap_or(0)).fold(0, u64::saturating_add)
    };
    let mut passes = Vec::new();
    while !rest.is_empty() {
        let score = |d: usize| {
            let sets = rest.iter().filter(|&&s| s >> d & 1 == 1).count();
            (sets, riders(d), focus.first() == Some(&(d as u32)), std::cmp::Reverse(d))
        };
        let Some(a) = (0..rank).max_by_key(|&d| score(d)) else { break };
        passes.push(a);
        rest.retain(|&s| s >> a & 1 == 0);
    }
    passes
}

/// `D(S)` where counted, else a lower bound, for every set of `0..rank`.
struct Bounds {
    value: Vec<u64>,
    exact: Vec<bool>,
    /// The sets known exactly without counting (`meet_upper`).
    deduced: Vec<(Dims, u64)>,
}

impl Bounds {
    fn new(counter: &Counter<'_>, rank: usize) -> Self {
        let full: Dims = (1 << rank) - 1;
        let mut value = vec![0u64; 1 << rank];
        let mut exact = vec![false; 1 << rank];
        for set in 0..=full {
            if let Some(d) = counter.get(set) {
                (value[set as usize], exact[set as usize]) = (d, true);
            }
        }
        // Distinct coordinates per dimension: D({d}), or at most the extent.
        let per_dim: Vec<u64> =
            (0..rank).map(|d| if exact[1 << d] { value[1 << d] } else { counter.extents()[d] }).collect();
        // From counted supersets: D(T) <= D(S) * prod over T \ S of D({d}).
        for t in (1..full).filter(|&t| exact[t as usize]) {
            let mut s = t;
            while s != 0 {
                s = (s - 1) & t;
                if s != 0 && !exact[s as usize] {
                    let spread = dims_of(t & !s).map(|d| per_dim[d]).fold(1u64, u64::saturating_mul);
                    value[s as usize] = value[s as usize].max(value[t as usize].div_ceil(spread.max(1)));
                }
            }
        }
        // Monotonicity: D(S) >= D(T) for every T within S (by increasing sets,
        // each bound taking its subsets' in turn), and D(S) >= 1 with entries.
        let floor = u64::from(counter.entries() > 0);
        for set in 1..=full {
            if !exact[set as usize] {
                let below = dims_of(set).map(|d| value[(set & !(1 << d)) as usize]).max().unwrap_or(0);
                value[set as usize] = value[set as usize].max(below).max(floor);
            }
        }
        let mut bounds = Self { value, exact, deduced: Vec::new() };
        bounds.meet_upper(counter, &per_dim);
        bounds
    }

    /// Settles the sets whose lower bound meets an upper one: `D(S) <= D(A) *
    /// prod over S \ A of D({d})` for every counted `A` within `S` (the empty
    /// set too: the product of the extents), and `D(S) <= nnz`. For example
    /// every superset of a set whose projections are all distinct.
    fn meet_upper(&mut self, counter: &Counter<'_>, per_dim: &[u64]) {
        let full = self.value.len() - 1;
        for set in 1..=full {
            if self.exact[set] {
                continue;
            }
            let mut upper = counter.entries();
            let mut within = set;
            loop {
                if self.exact[within] {
                    let spread =
                        dims_of((set & !within) as Dims).map(|d| per_dim[d]).fold(1, u64::saturating_mul);
                    upper = upper.min(self.value[within].saturating_mul(spread));
                }
                if within == 0 {
                    break;
                }
                within = (within - 1) & set;
            }
            debug_assert!(self.value[set] <= upper, "bounds crossed for {set:b}");
            if self.value[set] >= upper {
                (self.value[set], self.exact[set]) = (upper, true);
                self.deduced.push((set as Dims, upper));
            }
        }
    }

    fn at(&self, set: Dims) -> u64 {
        self.value[set as usize]
    }

    fn is_exact(&self, set: Dims) -> bool {
        self.exact[set as usize]
    }
}

/// Steps `order` to the next permutation in lexicographic order; `false` after the last.
fn next_permutation(order: &mut [u32]) -> bool {
    let Some(i) = (1..order.len()).rev().find(|&i| order[i - 1] < order[i]) else { return false };
    let j = (i..order.len()).rev().find(|&j| order[j] > order[i - 1]).unwrap_or(i);
    order.swap(i - 1, j);
    order[i..].reverse();
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Indices;
    use csf_testdata::{permutations, synthetic, Distribution};

    /// A power law of the rank-4 shape, whose pairs with the two
    /// long dimensions are nearly all distinct: a pass counts the sets it can
    /// by bitmaps first, and their counts rule out every order through
    /// {0, 2, 3} and {1, 2, 3} before those are hashed. The answer is still
    /// the exhaustive count's.
    #[test]
    fn bitmap_counts_spare_the_hashed_sets_they_rule_out() {
        let shape = [500u64, 5000, 50_000, 500_000];
        let tensor = synthetic(&shape, 200_000, Distribution::PowerLaw { skew: 3.0 }, 7);
        let source = Source {
            shape: &shape,
            indices: Indices::RowMajor(&tensor.indices),
            len: tensor.len(),
            packed: None,
        };
        let mut counter = Counter::new(&source, false);
        let identity: Vec<u32> = vec![0, 1, 2, 3];
        let chosen = Search::new(4, None).run(&mut counter, &[identity], None);

        let mut all = Counter::new(&source, false);
        count_all(&mut all, &(1..15).collect::<Vec<Dims>>());
        let best = permutations(4).into_iter().min_by_key(|o| (cost(&all, o), o.clone()));
        assert_eq!(Some(chosen), best);
        for set in [0b1101, 0b1110] {
            assert_eq!(counter.get(set), None, "{set:b} was counted");
        }
    }
}
