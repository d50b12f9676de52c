//! Input already in storage order, or nearly: built without a sort.
//!
//! Files are often written sorted (every real tensor in the project's data
//! is), and sorting sorted input with the radix sort costs as much as sorting
//! random input. Input in storage order is built as it is read, in one pass
//! ([`Walk::one_pass`]: every array reserved at the most nodes its level
//! can have and cut to size), once its first [`ONE_PASS_PROBE`] entries
//! are in order; the first entry out of order ends that pass. Then a second linear scan tells how far from sorted the input is: it walks the kept entries in input
//! order and keeps the longest run it can of entries whose storage-order
//! tuples never decrease, setting aside the others ("strays"), and while no
//! entry has strayed it also counts each level's nodes. When there are no
//! strays, or few (a [`MAX_STRAYS`]th of the entries at most), the strays
//! alone are sorted and merged back into the run on the fly (their nodes
//! counted in one more pass), and the tree is written in one more linear pass
//! into arrays allocated once at their final sizes: the memory of the sorted
//! path, the output and nothing else of note. Too many strays and the scan
//! stops early (it has read about twice a [`MAX_STRAYS`]th of the input) and
//! the radix sort takes over.
//!
//! Tuples are compared level by level straight from the input, so this works
//! for any key width and packs nothing. The order of equal tuples is the
//! input order in both the run and the strays, and the merge takes the
//! earlier entry first, so duplicates meet in input order exactly as after
//! the stable sort: the policies `First`, `Last` and `Sum` see the same
//! sequence, `Error` names the same pair, and the output is byte-identical to
//! the sorted path's.

use std::cmp::Ordering;

use hurray_format::limits::MAX_RANK;

use crate::bucket::copy_slot;
use crate::values::{merge_duplicate, Slots};
use crate::{BuildError, Duplicates, Indices, Options, Source};

mod adopt;
mod strays;

pub(crate) use adopt::{adopt, Adoption, OwnedInput};

/// At most a `MAX_STRAYS`th of the entries may be strays.
const MAX_STRAYS: usize = 64;

/// How many leading entries must be in order before the one-pass walk
/// reserves its arrays.
const ONE_PASS_PROBE: usize = 64;

/// The tree's levels, `(pos_L, crd_L)`.
pub(crate) type Levels = Vec<(Vec<u64>, Vec<u64>)>;

/// The tree's levels, and the values in leaf order as slots.
pub(crate) type Output = (Levels, Vec<u8>);

/// What the presorted path needs of a build.
pub(crate) struct Input<'j> {
    pub(crate) source: &'j Source<'j>,
    pub(crate) slots: &'j Slots<'j>,
    pub(crate) mode_order: &'j [u32],
    pub(crate) options: &'j Options,
}

/// Which of the presorted paths a build tries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Paths {
    /// The one-pass walk of input in storage order.
    pub(crate) one_pass: bool,
    /// The scan that sets strays aside, for input nearly in order.
    pub(crate) strays: bool,
}

/// Builds the tree without a sort when the input is in storage order, or
/// nearly, by the `paths` allowed; `Ok(None)` when it is not, or when a
/// coordinate lies outside the shape (the sorted path reports which).
pub(crate) fn try_build(input: &Input<'_>, paths: Paths) -> Result<Option<Output>, BuildError> {
    let mut dims = [0usize; MAX_RANK];
    dims.iter_mut().zip(input.mode_order).for_each(|(d, &m)| *d = m as usize);
    let rank = input.mode_order.len();
    let mut extents = [0u64; MAX_RANK];
    extents.iter_mut().zip(&dims[..rank]).for_each(|(e, &d)| *e = input.source.shape[d]);
    // The common ranks get a walk of their own, whose level loops the
    // compiler unrolls (small files are sorted more often than not, and at
    // their sizes the per-entry loop overhead is most of the cost); the
    // others share one with the rank read at run time (`R = 0`).
    match rank {
        3 => walk::<3>(input, rank, dims, extents, paths),
        4 => walk::<4>(input, rank, dims, extents, paths),
        5 => walk::<5>(input, rank, dims, extents, paths),
        _ => walk::<0>(input, rank, dims, extents, paths),
    }
}

/// [`try_build`] for rank `R` (0: any).
fn walk<const R: usize>(
    input: &Input<'_>,
    rank: usize,
    dims: [usize; MAX_RANK],
    extents: [u64; MAX_RANK],
    paths: Paths,
) -> Result<Option<Output>, BuildError> {
    match input.source.indices {
        Indices::RowMajor(flat) => {
            Walk::<_, R> { input, tuples: Rows::<R> { flat, rank, dims }, rank, extents }.build(paths)
        }
        Indices::Columnar(cols) => {
            Walk::<_, R> { input, tuples: Columns { cols, dims }, rank, extents }.build(paths)
        }
    }
}

/// Storage-order coordinates by entry and level, one implementation per
/// index layout so that the reads inline.
trait Tuples {
    fn get(&self, entry: usize, level: usize) -> u64;
}

/// Row-major coordinates of rank `R` (0: `rank`).
struct Rows<'a, const R: usize> {
    flat: &'a [u64],
    rank: usize,
    dims: [usize; MAX_RANK],
}

impl<const R: usize> Tuples for Rows<'_, R> {
    #[inline(always)]
    fn get(&self, entry: usize, level: usize) -> u64 {
        let rank = if R == 0 { self.rank } else { R };
        self.flat[entry * rank + self.dims[level]]
    }
}

struct Columns<'a> {
    cols: &'a [&'a [u64]],
    dims: [usize; MAX_RANK],
}

impl Tuples for Columns<'_> {
    #[inline(always)]
    fn get(&self, entry: usize, level: usize) -> u64 {
        self.cols[self.dims[level]][entry]
    }
}

/// The kept entries, walked in storage order; `R` is the rank when the walk
/// is made for one (0: `rank`).
struct Walk<'w, T, const R: usize> {
    input: &'w Input<'w>,
    tuples: T,
    rank: usize,
    /// The bounding size of each level.
    extents: [u64; MAX_RANK],
}

impl<T: Tuples, const R: usize> Walk<'_, T, R> {
    /// The rank, a constant when the walk is made for one.
    #[inline(always)]
    fn rank(&self) -> usize {
        if R == 0 {
            self.rank
        } else {
            R
        }
    }

    /// How entry `b`'s tuple compares with entry `a`'s, and the first level
    /// where they differ (`None` when equal).
    #[inline(always)]
    fn compare(&self, a: usize, b: usize) -> (Ordering, Option<usize>) {
        for level in 0..self.rank() {
            let (x, y) = (self.tuples.get(a, level), self.tuples.get(b, level));
            if x != y {
                return (y.cmp(&x), Some(level));
            }
        }
        (Ordering::Equal, None)
    }

    /// The split level of `entry` after `prev` in storage order (0 for the first).
    #[inline(always)]
    fn split(&self, prev: Option<usize>, entry: usize) -> Option<usize> {
        prev.map_or(Some(0), |p| self.compare(p, entry).1)
    }

    /// [`Walk::compare`] of `entry` with `last` (`Greater` at level 0 when
    /// there is none), and whether `entry` lies inside the shape: the scan's
    /// one read of each coordinate.
    #[inline(always)]
    fn step(&self, last: Option<usize>, entry: usize) -> (Ordering, Option<usize>, bool) {
        let mut inside = true;
        let mut found = last.map_or((Ordering::Greater, Some(0)), |_| (Ordering::Equal, None));
        for level in 0..self.rank() {
            let c = self.tuples.get(entry, level);
            inside &= c < self.extents[level];
            if let (Some(l), None) = (last, found.1) {
                let p = self.tuples.get(l, level);
                if p != c {
                    found = (c.cmp(&p), Some(level));
                }
            }
        }
        (found.0, found.1, inside)
    }

    fn kept(&self, entry: usize) -> bool {
        !self.input.options.drop_zeros || !self.input.slots.is_zero(entry)
    }

    fn build(&self, paths: Paths) -> Result<Option<Output>, BuildError> {
        if !paths.one_pass {
            return if paths.strays { self.with_strays() } else { Ok(None) };
        }
        // Sorted input is built in one pass; the first entry out of order
        // (random input meets one within a few entries) hands over to the
        // scan, which can set strays aside.
        let width = self.input.slots.width;
        let once = match width {
            1 => self.one_pass::<1>(),
            2 => self.one_pass::<2>(),
            4 => self.one_pass::<4>(),
            8 => self.one_pass::<8>(),
            _ => self.one_pass::<0>(),
        }?;
        if once.is_some() || !paths.strays {
            return Ok(once);
        }
        self.with_strays()
    }

    /// The tree of input already in storage order, written as it is read;
    /// `Ok(None)` at the first entry out of order or outside the shape.
    ///
    /// Every array is allocated zeroed at its largest possible size and cut
    /// to what was written at the end. `W` is the value width (0: the
    /// slots' own). The same tree as [`Walk::write`] of the run.
    fn one_pass<const W: usize>(&self) -> Result<Option<Output>, BuildError> {
        let rank = self.rank();
        let len = self.input.source.len;
        let width = if W == 0 { self.input.slots.width } else { W };
        if !self.starts_sorted(ONE_PASS_PROBE) {
            return Ok(None);
        }
        // Level L holds at most min(len, extent_0 * .. * extent_L) nodes, and
        // pos_L one more than level L - 1. A large zeroed allocation is a
        // fresh memory map: only the pages written are ever touched, the
        // untouched tail costs no memory and the cut unmaps it (where growing
        // an array copied it several times over).
        let bounds = node_bounds(&self.extents[..rank], len);
        let mut tree = Tree::zeroed(&bounds, width);
        let Some(opened) = self.stream::<W>(&mut tree.arrays())? else { return Ok(None) };
        Ok(Some(tree.close(&opened)))
    }

    /// [`Walk::one_pass`]'s walk: each entry's storage-order tuple is read
    /// once, compared with the last kept entry's (kept in locals, which the
    /// compiler holds in registers for a constant rank), and written from
    /// its split level down. Returns the nodes written per level, or `None`
    /// at the first entry out of order or outside the shape.
    #[inline(always)]
    fn stream<const W: usize>(&self, out: &mut Arrays<'_>) -> Result<Option<[usize; MAX_RANK]>, BuildError> {
        let rank = self.rank();
        let leaf = rank - 1;
        let slots = self.input.slots;
        let width = if W == 0 { slots.width } else { W };
        let (duplicates, drop_zeros) = (self.input.options.duplicates, self.input.options.drop_zeros);
        let mut opened = [0usize; MAX_RANK];
        let mut last = [0u64; MAX_RANK];
        let mut prev: Option<usize> = None;
        let mut first_duplicate = None;
        // Every entry overwrites the first `rank` words (zeroing it per entry
        // cost a `memset` call each).
        let mut tuple = [0u64; MAX_RANK];
        for entry in 0..self.input.source.len {
            let mut inside = true;
            for (level, coord) in tuple.iter_mut().enumerate().take(rank) {
                *coord = self.tuples.get(entry, level);
                inside &= *coord < self.extents[level];
            }
            // The first level where the tuple leaves the last one's path
            // (`rank`: the same tuple); every level for the first entry.
            let split =
                if prev.is_some() { (0..rank).find(|&l| tuple[l] != last[l]).unwrap_or(rank) } else { 0 };
            if !inside || (split < rank && tuple[split] < last[split] && prev.is_some()) {
                return Ok(None);
            }
            if drop_zeros && slots.is_zero(entry) {
                continue;
            }
            let slot = slots.slot(entry);
            if split == rank {
                // The same tuple as `prev`: a duplicate meets the last leaf's value.
                let at = opened[leaf] - 1;
                let into = &mut out.values[at * width..(at + 1) * width];
                // Under `Error`, reported once the whole input proved sorted:
                // before that, a stray further on may make another pair the
                // first duplicate in storage order.
                if duplicates == Duplicates::Error {
                    first_duplicate.get_or_insert((prev.unwrap_or(entry), entry));
                }
                merge_duplicate::<W>(slots.element_type, duplicates, into, slot)?;
                prev = Some(entry);
                continue;
            }
            prev = Some(entry);
            for level in split..rank {
                out.open(&mut opened, level, level > split, tuple[level]);
                last[level] = tuple[level];
            }
            let at = opened[leaf] - 1;
            copy_slot::<W>(&mut out.values[at * width..(at + 1) * width], slot);
        }
        if let Some((first, second)) = first_duplicate {
            return Err(self.input.source.duplicate(first, second));
        }
        Ok(Some(opened))
    }

    /// Whether the first `probe` entries (the kept ones) lie inside the
    /// shape and never decrease: random input fails within a few entries,
    /// before [`Walk::one_pass`] reserves its arrays.
    fn starts_sorted(&self, probe: usize) -> bool {
        let mut prev = None;
        for entry in 0..probe.min(self.input.source.len) {
            let (order, _, inside) = self.step(prev, entry);
            if !inside || order == Ordering::Less {
                return false;
            }
            if self.kept(entry) {
                prev = Some(entry);
            }
        }
        true
    }
}

/// The most nodes each level of a tree of `len` leaves can have, bounded
/// by `extents` (the levels' extents): `min(len, extent_0 * .. * extent_L)`.
fn node_bounds(extents: &[u64], len: usize) -> Vec<usize> {
    let mut bound = 1usize;
    extents
        .iter()
        .map(|&extent| {
            bound = bound.saturating_mul(usize::try_from(extent).unwrap_or(usize::MAX)).min(len);
            bound
        })
        .collect()
}

/// The output arrays a walk writes into, owned.
struct Tree {
    poss: Vec<Vec<u64>>,
    crds: Vec<Vec<u64>>,
    values: Vec<u8>,
    width: usize,
}

impl Tree {
    /// Arrays of `sizes[L]` nodes at each level (the exact counts, or bounds
    /// of them) and a value slot of `width` bytes per leaf, zeroed.
    fn zeroed(sizes: &[usize], width: usize) -> Self {
        let crds: Vec<Vec<u64>> = sizes.iter().map(|&n| vec![0; n]).collect();
        let poss = (0..sizes.len())
            .map(|level| vec![0; if level == 0 { 2 } else { sizes[level - 1] + 1 }])
            .collect();
        let leaves = sizes.last().copied().unwrap_or(0);
        Tree { poss, crds, values: vec![0; leaves * width], width }
    }

    /// [`Tree::zeroed`] without the leaf level's `crd` and the values
    /// (see [`try_adopt`]).
    fn zeroed_above_leaves(sizes: &[usize]) -> Self {
        let mut tree = Self::zeroed(&sizes[..sizes.len() - 1], 0);
        tree.poss.push(vec![0; sizes[sizes.len() - 2] + 1]);
        tree.crds.push(Vec::new());
        tree
    }

    /// The arrays as slices, for the writing walk.
    fn arrays(&mut self) -> Arrays<'_> {
        Arrays::over(&mut self.crds, &mut self.poss, &mut self.values)
    }

    /// The output of a walk that wrote `opened[L]` nodes at each level:
    /// each array cut to what was written, and each level's pointers closed
    /// (the last node of level L - 1 ends at n_L).
    fn close(self, opened: &[usize; MAX_RANK]) -> Output {
        let Tree { mut poss, mut crds, mut values, width } = self;
        let rank = crds.len();
        for (level, (pos, crd)) in poss.iter_mut().zip(&mut crds).enumerate() {
            let parents = if level == 0 { 1 } else { opened[level - 1] };
            cut(pos, parents + 1);
            cut(crd, opened[level]);
            pos[parents] = opened[level] as u64;
        }
        cut(&mut values, opened[rank - 1] * width);
        (poss.into_iter().zip(crds).collect(), values)
    }
}

/// `v` cut to `len` elements, its spare memory returned when there is any.
pub(crate) fn cut<T>(v: &mut Vec<T>, len: usize) {
    if len < v.len() {
        v.truncate(len);
        v.shrink_to_fit();
    }
}

/// The output arrays, as slices for the writing walk.
struct Arrays<'a> {
    crd: [&'a mut [u64]; MAX_RANK],
    pos: [&'a mut [u64]; MAX_RANK],
    values: &'a mut [u8],
}

impl<'a> Arrays<'a> {
    fn over(crds: &'a mut [Vec<u64>], poss: &'a mut [Vec<u64>], values: &'a mut [u8]) -> Self {
        let mut out = Arrays {
            crd: std::array::from_fn(|_| Default::default()),
            pos: std::array::from_fn(|_| Default::default()),
            values,
        };
        out.crd.iter_mut().zip(crds).for_each(|(c, v)| *c = v);
        out.pos.iter_mut().zip(poss).for_each(|(p, v)| *p = v);
        out
    }

    /// Opens a node of coordinate `coord` at `level`, the `opened[level]`th;
    /// `first_child` when the node just opened at `level - 1` starts its
    /// children here.
    #[inline(always)]
    fn open(&mut self, opened: &mut [usize; MAX_RANK], level: usize, first_child: bool, coord: u64) {
        if first_child {
            self.pos[level][opened[level - 1] - 1] = opened[level] as u64;
        }
        self.crd[level][opened[level]] = coord;
        opened[level] += 1;
    }

    /// [`Arrays::open`] of a leaf whose coordinate is adopted, not written.
    #[inline(always)]
    fn open_adopted(&mut self, opened: &mut [usize; MAX_RANK], level: usize, first_child: bool) {
        if first_child {
            self.pos[level][opened[level - 1] - 1] = opened[level] as u64;
        }
        opened[level] += 1;
    }
}
