//! Spec § Element Lookup.
//!
//! Each level's search is a [`Window`] of the parent's slice, narrowed first
//! by the slice's end values and then by bisection. [`CsfView::find`] runs
//! one query's search to its end; [`CsfView::find_many`] runs the searches of
//! a group of queries round by round, so that their cache misses overlap.
//! Both make the same probes with the same outcomes, so they give the same
//! answers on any data, valid or not.

use hurray_format::le::U64Array;

use crate::values::Value;
use crate::view::{CsfView, Fiber};
use crate::words::Words;

/// Why a query index cannot be looked up.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LookupError {
    /// The index does not have one coordinate per dimension.
    #[error("index has {got} coordinates, the tensor has rank {rank}")]
    WrongRank {
        /// Coordinates given.
        got: usize,
        /// The tensor's rank.
        rank: usize,
    },
    /// A coordinate is outside the shape.
    #[error("coordinate {coord} of dimension {dim} is outside its extent {extent}")]
    OutOfBounds {
        /// The logical dimension whose coordinate is out of range.
        dim: usize,
        /// The coordinate the query gives for it.
        coord: u64,
        /// The dimension's extent.
        extent: u64,
    },
    /// A sub-tree prefix ([`CsfView::subtree`]) does not leave a level below
    /// it: it must have fewer coordinates than the rank.
    #[error("prefix has {got} coordinates, a sub-tree's prefix has fewer than the rank ({rank})")]
    PrefixTooLong {
        /// Coordinates given.
        got: usize,
        /// The tensor's rank.
        rank: usize,
    },
    /// `mode_order[level]` names no dimension (only on unvalidated data).
    #[error("mode_order[{level}] = {dim} names no dimension")]
    BadModeOrder {
        /// The tree level whose `mode_order` entry it is.
        level: usize,
        /// The value found in `mode_order`.
        dim: u32,
    },
}

/// Queries that [`CsfView::find_many`] advances in lockstep. On a tree much
/// larger than the caches each query is a chain of dependent cache misses;
/// with 32 chains interleaved, many misses are in flight at once. Smaller
/// groups overlapped too few misses, a larger one gained little for much
/// more stack (a group's state is about 2.3 KiB at 32): the measurements are
/// in `docs/benchmarks.md`, "Lookup".
const GROUP: usize = 32;

impl<const MAX: usize> CsfView<'_, MAX> {
    /// The leaf position of logical index `index`, or `None` when the element
    /// is an implicit zero: the spec's lookup, one search per level over the
    /// parent's slice (narrowed by the slice's end values when it is long,
    /// then bisected), `O(rank * log n)` on any data.
    ///
    /// For many lookups, [`CsfView::find_many`] is about twice as fast.
    ///
    /// ```
    /// # let le = |v: &[u64]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    /// # let values: Vec<u8> = [1.0f32, 2.0, 3.0, 4.0].iter().flat_map(|v| v.to_le_bytes()).collect();
    /// # let buffers = [values, le(&[0, 2]), le(&[0, 1]), le(&[0, 2, 3]), le(&[0, 2, 1]), le(&[0, 1, 2, 4]), le(&[1, 3, 0, 2])];
    /// # let slices: Vec<&[u8]> = buffers.iter().map(Vec::as_slice).collect();
    /// # let header = hurray_format::Descriptor::csf(hurray_format::ElementType::F32, &[2, 3, 4], &[0, 1, 2], 4)?;
    /// # let bytes = hurray_format::encode_to_vec(&header, &slices)?;
    /// # let container = hurray_format::Container::decode(&bytes)?;
    /// # let view = csf_core::CsfView::from_container(&container)?;
    /// // `view`: the spec's example, shape [2, 3, 4], four non-zeros.
    /// assert_eq!(view.find(&[1, 1, 2])?, Some(3)); // the fourth leaf
    /// assert_eq!(view.find(&[0, 1, 1])?, None);    // an implicit zero
    /// assert!(view.find(&[2, 0, 0]).is_err());      // outside the shape
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`LookupError`] when `index` has the wrong rank or leaves the shape.
    pub fn find(&self, index: &[u64]) -> Result<Option<usize>, LookupError> {
        self.check(index)?;
        // Step 2: the virtual root.
        let mut parent = 0usize;
        for (level, (lvl, &dim)) in self.levels().iter().zip(self.mode_order()).enumerate() {
            // Step 1: q_L = idx[mode_order[L]].
            let q = *index.get(dim as usize).ok_or(LookupError::BadModeOrder { level, dim })?;
            // Step 3: search the parent's slice of crd_L.
            let (start, end) = lvl.children(parent);
            match search(lvl.crd, start, end, q) {
                Some(node) => parent = node,
                None => return Ok(None),
            }
        }
        // Step 4: after the leaf level, `parent` is the leaf position.
        Ok(Some(parent))
    }

    /// Many lookups at once: the fast path when there are many. Query `i` is
    /// the `i`-th run of `rank` coordinates in `indices` (row-major, as
    /// `<[[u64; R]]>::as_flattened` gives them), and `out[i]` receives exactly
    /// what [`CsfView::find`] returns for it, errors included; a short last
    /// run (when `indices.len()` is not a multiple of the rank) is a query of
    /// the wrong rank. Returns the number of queries answered: the smaller of
    /// `out.len()` and the number of runs.
    ///
    /// Groups of queries descend the tree level by level in lockstep, so that
    /// the cache misses of different queries overlap instead of following one
    /// another: on trees much larger than the caches this is about twice the
    /// throughput of `find` in a loop (`docs/benchmarks.md` has the figures).
    /// It does not allocate, and keeps `find`'s bounds on any data.
    ///
    /// ```
    /// # let le = |v: &[u64]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    /// # let values: Vec<u8> = [1.0f32, 2.0, 3.0, 4.0].iter().flat_map(|v| v.to_le_bytes()).collect();
    /// # let buffers = [values, le(&[0, 2]), le(&[0, 1]), le(&[0, 2, 3]), le(&[0, 2, 1]), le(&[0, 1, 2, 4]), le(&[1, 3, 0, 2])];
    /// # let slices: Vec<&[u8]> = buffers.iter().map(Vec::as_slice).collect();
    /// # let header = hurray_format::Descriptor::csf(hurray_format::ElementType::F32, &[2, 3, 4], &[0, 1, 2], 4)?;
    /// # let bytes = hurray_format::encode_to_vec(&header, &slices)?;
    /// # let container = hurray_format::Container::decode(&bytes)?;
    /// # let view = csf_core::CsfView::from_container(&container)?;
    /// // `view`: the spec's example. Three queries, row after row.
    /// let queries = [1, 1, 2, 0, 1, 1, 0, 0, 1];
    /// let mut out = [Ok(None); 3];
    /// assert_eq!(view.find_many(&queries, &mut out), 3);
    /// assert_eq!(out, [Ok(Some(3)), Ok(None), Ok(Some(0))]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn find_many(&self, indices: &[u64], out: &mut [Result<Option<usize>, LookupError>]) -> usize {
        let mut queries = indices.chunks(self.rank().max(1));
        let mut answered = 0;
        for out in out.chunks_mut(GROUP) {
            let mut group: [&[u64]; GROUP] = [&[]; GROUP];
            let mut n = 0;
            for (slot, query) in group.iter_mut().zip(&mut queries).take(out.len()) {
                *slot = query;
                n += 1;
            }
            self.find_group(group.get(..n).unwrap_or(&[]), out);
            answered += n;
            if n < GROUP {
                break;
            }
        }
        answered
    }

    /// [`CsfView::find`] for each of `queries` (at most [`GROUP`]) into
    /// `out`, level by level, each pass making one probe per query.
    fn find_group(&self, queries: &[&[u64]], out: &mut [Result<Option<usize>, LookupError>]) {
        let mut storage = [Lane::EMPTY; GROUP];
        let lanes = storage.get_mut(..queries.len().min(out.len())).unwrap_or(&mut []);
        for ((lane, query), out) in lanes.iter_mut().zip(queries).zip(out.iter_mut()) {
            // `Ok(None)` until found; errors are final.
            *out = self.check(query).map(|()| None);
            lane.live = out.is_ok();
        }
        for (level, (lvl, &dim)) in self.levels().iter().zip(self.mode_order()).enumerate() {
            let crd = lvl.crd;
            // Each pass below makes one probe per query: the slices' bounds,
            // the slices' ends, then the bisection rounds and the final
            // checks. A query that is no longer live has an empty window, on
            // which every pass is a no-op.
            for lane in lanes.iter_mut() {
                lane.range = if lane.live { lvl.children(lane.parent) } else { (0, 0) };
            }
            // The same steps whether `crd_L` is read natively or byte-wise
            // (with one bounds check per probe instead of two).
            match crd.as_native() {
                Some(native) => search_level(native, lanes, queries, out, level, dim),
                None => search_level(crd, lanes, queries, out, level, dim),
            }
        }
        for (lane, out) in lanes.iter().zip(out.iter_mut()) {
            if lane.live {
                *out = Ok(Some(lane.parent));
            }
        }
    }

    /// `find`'s checks on the query: the rank, then each coordinate against
    /// its extent (so every coordinate searched for is below `u64::MAX`).
    fn check(&self, index: &[u64]) -> Result<(), LookupError> {
        let rank = self.rank();
        if index.len() != rank {
            return Err(LookupError::WrongRank { got: index.len(), rank });
        }
        for (dim, (&coord, &extent)) in index.iter().zip(self.shape()).enumerate() {
            if coord >= extent {
                return Err(LookupError::OutOfBounds { dim, coord, extent });
            }
        }
        Ok(())
    }

    /// The value at `index`, or `None` for an implicit zero: the stored
    /// element, or for a quantized tensor its dequantized value
    /// (`Value::F32`); see [`CsfView::value`]. A leaf whose value cannot be
    /// read (past the values buffer, or without quantization parameters:
    /// possible only on unvalidated data) also reads as `None`.
    ///
    /// ```
    /// # let le = |v: &[u64]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    /// # let values: Vec<u8> = [1.0f32, 2.0, 3.0, 4.0].iter().flat_map(|v| v.to_le_bytes()).collect();
    /// # let buffers = [values, le(&[0, 2]), le(&[0, 1]), le(&[0, 2, 3]), le(&[0, 2, 1]), le(&[0, 1, 2, 4]), le(&[1, 3, 0, 2])];
    /// # let slices: Vec<&[u8]> = buffers.iter().map(Vec::as_slice).collect();
    /// # let header = hurray_format::Descriptor::csf(hurray_format::ElementType::F32, &[2, 3, 4], &[0, 1, 2], 4)?;
    /// # let bytes = hurray_format::encode_to_vec(&header, &slices)?;
    /// # let container = hurray_format::Container::decode(&bytes)?;
    /// # let view = csf_core::CsfView::from_container(&container)?;
    /// use csf_core::Value;
    /// // `view`: the spec's example, f32 values.
    /// assert_eq!(view.get(&[1, 1, 2])?, Some(Value::F32(4.0)));
    /// assert_eq!(view.get(&[0, 1, 1])?, None); // an implicit zero
    /// assert_eq!(view.get_f64(&[0, 1, 1])?, 0.0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`CsfView::find`].
    pub fn get(&self, index: &[u64]) -> Result<Option<Value>, LookupError> {
        Ok(self.find(index)?.and_then(|leaf| self.value(leaf, index)))
    }

    /// The element stored at `index` exactly as the values buffer holds it
    /// (for a quantized tensor, the code), or `None` for an implicit zero.
    ///
    /// # Errors
    /// As [`CsfView::find`].
    pub fn get_raw(&self, index: &[u64]) -> Result<Option<Value>, LookupError> {
        Ok(self.find(index)?.and_then(|leaf| self.values().get_raw(leaf)))
    }

    /// The value at `index` as `f64`, implicit zeros included, dequantized
    /// when the tensor is quantized.
    ///
    /// # Errors
    /// As [`CsfView::find`].
    pub fn get_f64(&self, index: &[u64]) -> Result<f64, LookupError> {
        Ok(self.get(index)?.map_or(0.0, Value::to_f64))
    }
}

impl Fiber<'_> {
    /// The node index (into `crd_L`, as [`Fiber::iter`] numbers the children)
    /// of the child whose coordinate is `coord`, or `None` when no child has
    /// it: the search of the spec's lookup (step 3), narrowed by the fiber's
    /// end values when it is long, then bisected; `O(log n)`.
    ///
    /// Total on unvalidated data: it never panics, never reads outside the
    /// fiber and makes at most `2 + ceil(log2 n) + 1` probes. Bisection
    /// assumes the coordinates strictly increase (invariant 4); on a fiber
    /// where they do not, the answer may be wrong: a coordinate that is
    /// present may be missed, and among duplicates any one may be found. A
    /// node found always holds `coord`.
    pub fn find(&self, coord: u64) -> Option<usize> {
        search(self.crd, 0, self.crd.len(), coord).map(|i| self.start + i)
    }
}

/// The node of `crd[start..end)` (a clamped slice) holding `q`, if any: the
/// one search of [`CsfView::find`] and [`Fiber::find`], on the native array
/// when `crd` can be read as one. Always inlined: with `#[inline]` alone it
/// stayed a call in `find`'s loop over the levels.
#[inline(always)]
fn search(crd: U64Array<'_>, start: usize, end: usize, q: u64) -> Option<usize> {
    match crd.as_native() {
        Some(native) => Window::new(native, start, end, q).search(native),
        None => Window::new(crd, start, end, q).search(crd),
    }
}

/// Slices longer than this (two cache lines) have their end values read
/// before bisection, to narrow the window.
const BOUND_ABOVE: usize = 16;

/// The part `crd[lo..lo + size)` of a parent's slice that holds `q`, if any
/// node does; the caller has clamped the slice into `crd`.
///
/// Coordinates within a slice are strictly increasing integers (the spec's
/// invariant 4), so with `first` and `last` the values at the slice's ends,
/// `q` can only sit within `q - first` places of the start and `last - q`
/// places of the end. For a long slice [`Window::new`] reads both ends (two
/// independent loads, often cached: every query through the slice reads the
/// same two) and cuts the window to these bounds; on a dense slice (most
/// coordinates present, as in the upper levels of the benchmark tensors)
/// that removes most of it. Bisection then finds the last node holding at
/// most `q`, and [`Window::finish`] checks that it holds `q`.
///
/// Interpolation probes (guessing the position from `first`, `last` and
/// `q`) were tried and dropped (`docs/benchmarks-history.md`, "Lookup"):
/// a small gain on uniform coordinates, a loss on skewed ones (a linear
/// guess misses, while the first bisection probes of popular slices stay
/// cached), and a loss on batched lookups, where the extra work per round
/// counts.
///
/// On data that breaks invariant 4 the answer may be wrong, but the window
/// only ever shrinks inside the clamped slice, a hit is always a node holding
/// `q`, and the work is at most `2 + ceil(log2 n) + 1` probes: `O(log n)`.
/// The probes read the same elements whether `crd` is read natively or
/// byte-wise (see [`Words`]), so aligned and unaligned copies of the same
/// bytes give the same answers.
#[derive(Clone, Copy, Debug)]
struct Window {
    lo: usize,
    size: usize,
    q: u64,
}

impl Window {
    const EMPTY: Window = Window { lo: 0, size: 0, q: 0 };

    /// The window for `q` in `crd[start..end)`, cut to the bounds that the
    /// end values give when the slice is long.
    #[inline]
    fn new(crd: impl Words, start: usize, end: usize, q: u64) -> Self {
        let mut w = Window { lo: start, size: end.saturating_sub(start), q };
        if w.size > BOUND_ABOVE {
            let last = end - 1;
            match (crd.get(start), crd.get(last)) {
                (Some(first_v), Some(last_v)) if first_v <= q && q <= last_v => {
                    let hi = end.min(start.saturating_add(gap(q - first_v)).saturating_add(1));
                    let lo = start.max(last.saturating_sub(gap(last_v - q)));
                    w.lo = lo;
                    w.size = hi.saturating_sub(lo);
                }
                // Outside the slice's range (or, on a clamped slice never,
                // an end that cannot be read): absent.
                _ => w.size = 0,
            }
        }
        w
    }

    /// Bisection rounds that bring a window of `size` nodes down to one:
    /// `ceil(log2(size))`.
    fn rounds(size: usize) -> u32 {
        usize::BITS - size.saturating_sub(1).leading_zeros()
    }

    /// The whole search for one query: bisection written with a branch, which
    /// lets the processor run ahead on its guess of the next probe (a
    /// branch-free loop waits for every load, and was much slower);
    /// the same probes and outcomes as [`Window::bisect`].
    #[inline]
    fn search(mut self, crd: impl Words) -> Option<usize> {
        while self.size > 1 {
            let half = self.size / 2;
            let mid = self.lo + half;
            if crd.get(mid).is_some_and(|v| v <= self.q) {
                self.lo = mid;
            }
            self.size -= half;
        }
        self.finish(crd)
    }

    /// One bisection round, towards the last node holding at most `q`: a
    /// no-op once the window is down to one node (or none), so that a group
    /// can run the rounds of its widest window in lockstep. Branch-free, so
    /// that a group's unpredictable comparisons cost no pipeline flushes (the
    /// branch LLVM made of a plain comparison was measurably slower:
    /// `docs/benchmarks.md`).
    #[inline]
    fn bisect(&mut self, crd: impl Words) {
        let half = self.size / 2;
        let mid = self.lo + half;
        // An unreadable node (never, in a clamped window) reads as above `q`,
        // like in `search`: `q < u64::MAX` after the shape check.
        let v = crd.get(mid).unwrap_or(u64::MAX);
        // All ones when `v > q`: the borrow of `q - v`, from a 128-bit
        // subtraction, because LLVM turns a plain `v <= q` select into a
        // branch here.
        let above = (u128::from(self.q).wrapping_sub(u128::from(v)) >> 64) as usize;
        self.lo += half & !above;
        self.size -= half;
    }

    /// The answer, once the window is down to one node: that node if it holds `q`.
    #[inline]
    fn finish(&self, crd: impl Words) -> Option<usize> {
        (self.size == 1 && crd.get(self.lo) == Some(self.q)).then_some(self.lo)
    }
}

/// One level of [`CsfView::find_group`], once each lane's slice is open:
/// start the searches (reading long slices' ends), bisect, check.
#[inline]
fn search_level(
    crd: impl Words,
    lanes: &mut [Lane],
    queries: &[&[u64]],
    out: &mut [Result<Option<usize>, LookupError>],
    level: usize,
    dim: u32,
) {
    for ((lane, query), out) in lanes.iter_mut().zip(queries).zip(out.iter_mut()) {
        lane.window = Window::EMPTY;
        if !lane.live {
            continue;
        }
        match query.get(dim as usize) {
            Some(&q) => lane.window = Window::new(crd, lane.range.0, lane.range.1, q),
            None => {
                *out = Err(LookupError::BadModeOrder { level, dim });
                lane.live = false;
            }
        }
    }
    // Enough rounds for the widest window; narrower ones are done earlier
    // and then stay put.
    let widest = lanes.iter().map(|lane| lane.window.size).max().unwrap_or(0);
    for _ in 0..Window::rounds(widest) {
        for lane in lanes.iter_mut() {
            lane.window.bisect(crd);
        }
    }
    for lane in lanes.iter_mut() {
        if lane.live {
            match lane.window.finish(crd) {
                Some(node) => lane.parent = node,
                None => lane.live = false,
            }
        }
    }
}

/// One query of [`CsfView::find_group`].
#[derive(Clone, Copy, Debug)]
struct Lane {
    /// Still descending: no error, and found at every level so far.
    live: bool,
    /// The node found at the level above (0, the virtual root, to begin with).
    parent: usize,
    /// The parent's slice at the current level, and the search in it.
    range: (usize, usize),
    window: Window,
}

impl Lane {
    const EMPTY: Lane = Lane { live: false, parent: 0, range: (0, 0), window: Window::EMPTY };
}

/// A coordinate difference as a node count, saturating.
fn gap(d: u64) -> usize {
    usize::try_from(d).unwrap_or(usize::MAX)
}

/// Trees of owned arrays for the unit tests of lookup and iteration, viewed
/// both in place (aligned, native) and from a copy at an odd address.
#[cfg(test)]
pub(crate) mod testing {
    use hurray_format::le::U64Array;
    use hurray_format::ElementType;

    use crate::view::{CsfView, Level};

    /// A tree's arrays, valid or not.
    #[derive(Clone, Debug)]
    pub struct Arrays {
        pub shape: Vec<u64>,
        pub order: Vec<u32>,
        /// `(pos_L, crd_L)`. Private, with `le_levels` kept beside it: a
        /// change to one alone would make a big-endian machine view other
        /// arrays than a little-endian one (make a new `Arrays` instead).
        levels: Vec<(Vec<u64>, Vec<u64>)>,
        /// The same words in file (little-endian) byte order, which a
        /// big-endian machine views instead (`from_native` is `None` there).
        le_levels: Vec<(Vec<u64>, Vec<u64>)>,
    }

    /// The arrays as little-endian bytes, each starting at an address that is
    /// 1 mod 8, so that no view of them is native.
    pub struct Misaligned(Vec<(Vec<u8>, Vec<u8>)>);

    fn misaligned(words: &[u64]) -> Vec<u8> {
        let mut bytes = vec![0u8; words.len() * 8 + 16];
        let start = (9 - bytes.as_ptr() as usize % 8) % 8;
        bytes.drain(..start);
        bytes.truncate(1 + words.len() * 8);
        for (chunk, w) in bytes[1..].chunks_exact_mut(8).zip(words) {
            chunk.copy_from_slice(&w.to_le_bytes());
        }
        bytes
    }

    impl Arrays {
        /// `(pos_L, crd_L)` per level.
        pub fn levels(&self) -> &[(Vec<u64>, Vec<u64>)] {
            &self.levels
        }

        /// The levels, to change and make a new `Arrays` of.
        pub fn into_levels(self) -> Vec<(Vec<u64>, Vec<u64>)> {
            self.levels
        }

        pub fn new(shape: &[u64], order: &[u32], levels: Vec<(Vec<u64>, Vec<u64>)>) -> Self {
            let le = |words: &Vec<u64>| words.iter().map(|w| w.to_le()).collect();
            let le_levels = levels.iter().map(|(p, c)| (le(p), le(c))).collect();
            Self { shape: shape.to_vec(), order: order.to_vec(), levels, le_levels }
        }

        /// The spec's example: shape [2, 3, 4], identity order (its arrays
        /// are `csf_testdata::tree::Tree::spec_example`'s).
        pub fn spec_example() -> Self {
            let tree = csf_testdata::tree::Tree::spec_example();
            Self::new(&tree.shape, &tree.mode_order, tree.levels)
        }

        /// The tree `csf_testdata::reference_csf` builds from a synthetic COO.
        pub fn synthetic(shape: &[u64], order: &[u32], nnz: usize, skew: Option<f64>, seed: u64) -> Self {
            let distribution = match skew {
                None => csf_testdata::Distribution::Uniform,
                Some(skew) => csf_testdata::Distribution::PowerLaw { skew },
            };
            let coo = csf_testdata::synthetic(shape, nnz, distribution, seed);
            let arrays = csf_testdata::reference_csf(&coo, order);
            Self::new(shape, order, arrays.levels)
        }

        /// The view over the arrays in place on a little-endian machine (so
        /// that the native paths run); on a big-endian one, over their
        /// little-endian copies (the file byte order), read byte-wise.
        pub fn view(&self) -> CsfView<'_> {
            fn array<'a>(native: &'a [u64], le: &'a [u64]) -> U64Array<'a> {
                U64Array::from_native(native).unwrap_or_else(|| U64Array::from_le_words(le))
            }
            let levels: Vec<Level<'_>> = self
                .levels
                .iter()
                .zip(&self.le_levels)
                .map(|((p, c), (lp, lc))| Level { pos: array(p, lp), crd: array(c, lc) })
                .collect();
            self.view_over(&levels)
        }

        /// A view of this tree's shape and order over `levels` (no values).
        fn view_over<'a>(&self, levels: &[Level<'a>]) -> CsfView<'a> {
            CsfView::builder(ElementType::U8, &self.shape)
                .mode_order(&self.order)
                .nnz(0)
                .levels(levels)
                .values(&[])
                .build()
                .unwrap()
        }

        pub fn misaligned(&self) -> Misaligned {
            Misaligned(self.levels.iter().map(|(p, c)| (misaligned(p), misaligned(c))).collect())
        }

        /// The view over `bytes` (from [`Arrays::misaligned`]), never native.
        pub fn view_of<'a>(&self, bytes: &'a Misaligned) -> CsfView<'a> {
            let levels: Vec<Level<'a>> = bytes
                .0
                .iter()
                .map(|(p, c)| Level {
                    pos: U64Array::new(&p[1..]).unwrap(),
                    crd: U64Array::new(&c[1..]).unwrap(),
                })
                .collect();
            assert!(levels.iter().all(|l| l.pos.as_native().is_none() || l.pos.is_empty()));
            self.view_over(&levels)
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::testing::Arrays;
    use super::*;

    /// `find_many` over `queries` (row-major), checked against `find` query
    /// by query, with `out` longer than needed.
    fn many(view: &CsfView<'_>, queries: &[u64]) -> Vec<Result<Option<usize>, LookupError>> {
        let rank = view.rank();
        let n = queries.len().div_ceil(rank);
        let mut out = vec![Ok(Some(usize::MAX)); n + 3];
        assert_eq!(view.find_many(queries, &mut out), n);
        assert!(out[n..].iter().all(|r| *r == Ok(Some(usize::MAX))), "wrote past the queries");
        out.truncate(n);
        for (query, got) in queries.chunks(rank).zip(&out) {
            assert_eq!(*got, view.find(query), "{query:?}");
        }
        out
    }

    fn all_indices(shape: &[u64]) -> Vec<u64> {
        let mut out = Vec::new();
        let mut index = vec![0u64; shape.len()];
        if shape.contains(&0) {
            return out;
        }
        loop {
            out.extend_from_slice(&index);
            let mut d = shape.len();
            loop {
                if d == 0 {
                    return out;
                }
                d -= 1;
                index[d] += 1;
                if index[d] < shape[d] {
                    break;
                }
                index[d] = 0;
            }
        }
    }

    #[test]
    fn find_many_on_the_spec_example() {
        let arrays = Arrays::spec_example();
        let view = arrays.view();
        let out = many(&view, &all_indices(&[2, 3, 4]));
        let hits: Vec<(usize, usize)> =
            out.iter().enumerate().filter_map(|(i, r)| r.unwrap().map(|leaf| (i, leaf))).collect();
        // (0,0,1) (0,2,3) (1,1,0) (1,1,2), at row-major positions 1, 11, 16, 18.
        assert_eq!(hits, [(1, 0), (11, 1), (16, 2), (18, 3)]);
        // Errors, per query, in place; a short last run is a wrong-rank query.
        let out = many(&view, &[1, 1, 2, 2, 0, 0, 0, 3, 0, 1, 1]);
        assert_eq!(
            out,
            [
                Ok(Some(3)),
                Err(LookupError::OutOfBounds { dim: 0, coord: 2, extent: 2 }),
                Err(LookupError::OutOfBounds { dim: 1, coord: 3, extent: 3 }),
                Err(LookupError::WrongRank { got: 2, rank: 3 }),
            ]
        );
        // A short `out` answers as many queries as it holds.
        let mut out = [Ok(None); 1];
        assert_eq!(view.find_many(&[0, 2, 3, 1, 1, 2], &mut out), 1);
        assert_eq!(out, [Ok(Some(1))]);
        assert_eq!(view.find_many(&[], &mut out), 0);
        assert_eq!(view.find_many(&[0, 2, 3], &mut []), 0);
    }

    #[test]
    fn find_many_reports_bad_mode_order_where_find_does() {
        // Level 2 names no dimension: queries that die above it are `Ok(None)`.
        let mut arrays = Arrays::spec_example();
        arrays.order = vec![0, 1, 7];
        let view = arrays.view();
        let out = many(&view, &[0, 0, 1, 0, 1, 1, 1, 2, 0]);
        assert_eq!(out, [Err(LookupError::BadModeOrder { level: 2, dim: 7 }), Ok(None), Ok(None)]);
    }

    /// The longest leaf fiber of `arrays` (the last level's largest `pos` step).
    fn longest_leaf_fiber(arrays: &Arrays) -> u64 {
        let pos = &arrays.levels().last().unwrap().0;
        pos.windows(2).map(|w| w[1].saturating_sub(w[0])).max().unwrap_or(0)
    }

    #[test]
    fn find_many_spans_groups_and_long_slices() {
        // Dense slices far longer than BOUND_ABOVE, in two mode orders and
        // both distributions; every query of the shape, in many groups.
        // Under Miri (`cargo xtask miri`), where each lookup costs thousands
        // of times more, a smaller shape (480 queries instead of 14000, 15
        // groups) whose leaf slices are still longer than BOUND_ABOVE in the
        // first two orders.
        let (shape, nnz, min_stored) =
            if cfg!(miri) { ([1u64, 20, 24], 500, 150) } else { ([5u64, 40, 70], 6000, 1000) };
        for (order, skew) in [([0u32, 1, 2], None), ([2, 0, 1], Some(3.0)), ([1, 2, 0], None)] {
            let arrays = Arrays::synthetic(&shape, &order, nnz, skew, 9);
            if order[2] != 0 {
                assert!(longest_leaf_fiber(&arrays) > BOUND_ABOVE as u64, "{order:?}");
            }
            let view = arrays.view();
            let queries = all_indices(&shape);
            assert!(queries.len() / 3 > 8 * GROUP);
            let out = many(&view, &queries);
            let bytes = arrays.misaligned();
            let unaligned = arrays.view_of(&bytes);
            assert_eq!(many(&unaligned, &queries), out);
            // Every stored entry is found at its own leaf.
            let mut stored = 0;
            view.for_each(|index, leaf| {
                let flat = (index[0] * shape[1] + index[1]) * shape[2] + index[2];
                assert_eq!(out[flat as usize], Ok(Some(leaf)));
                stored += 1;
            });
            assert_eq!(out.iter().filter(|r| matches!(r, Ok(Some(_)))).count(), stored);
            assert!(stored > min_stored, "{stored}");
        }
    }

    #[test]
    fn long_unsorted_slices_stay_safe() {
        // One long leaf slice, reversed, with duplicates, with huge values:
        // answers may be wrong, but a hit holds the coordinate searched for.
        let n = 40u64;
        for leaves in [
            (0..n).rev().collect::<Vec<_>>(),
            vec![5; n as usize],
            (0..n).map(|i| if i % 3 == 0 { u64::MAX - i } else { i }).collect(),
            (0..n).map(|i| (i * 7919) % 41).collect(),
        ] {
            let arrays = Arrays::new(
                &[1, 1, 64],
                &[0, 1, 2],
                vec![(vec![0, 1], vec![0]), (vec![0, 1], vec![0]), (vec![0, n], leaves.clone())],
            );
            let view = arrays.view();
            let queries: Vec<u64> = (0..64).flat_map(|q| [0, 0, q]).collect();
            for (q, r) in (0..64u64).zip(many(&view, &queries)) {
                if let Ok(Some(leaf)) = r {
                    assert_eq!(leaves[leaf], q);
                }
            }
        }
    }

    /// `Fiber::find` on every fiber of `view` against a linear scan of it:
    /// each child's coordinate finds that child, every other coordinate
    /// below `probe_to` (and `u64::MAX`) finds nothing.
    fn check_fiber_find(view: &CsfView<'_>, probe_to: u64) {
        for level in 0..view.rank() {
            let parents = if level == 0 { 1 } else { view.node_count(level - 1) };
            for parent in 0..parents {
                let fiber = view.fiber(level, parent);
                let children: Vec<(usize, u64)> = fiber.iter().collect();
                for &(node, c) in &children {
                    assert_eq!(fiber.find(c), Some(node), "level {level} parent {parent} coordinate {c}");
                }
                for q in (0..probe_to).chain([u64::MAX]) {
                    if children.iter().all(|&(_, c)| c != q) {
                        assert_eq!(fiber.find(q), None);
                    }
                }
            }
        }
    }

    #[test]
    fn fiber_find_on_valid_trees() {
        let arrays = Arrays::spec_example();
        let view = arrays.view();
        check_fiber_find(&view, 5);
        assert_eq!(view.fiber(2, 2).find(2), Some(3)); // the last step of the spec's trace
        assert_eq!(view.fiber(2, 2).find(1), None);
        assert_eq!(view.fiber(3, 0).find(0), None); // past the leaf level: an empty fiber

        // Long fibers (bounded by their end values before bisection), native
        // and not. Under Miri (`cargo xtask miri`), 16 leaf fibers of extent
        // 40 instead of 120 of extent 90.
        let (shape, nnz) = if cfg!(miri) { ([2u64, 8, 40], 500) } else { ([3u64, 40, 90], 5000) };
        let arrays = Arrays::synthetic(&shape, &[0, 1, 2], nnz, None, 4);
        let bytes = arrays.misaligned();
        for view in [arrays.view(), arrays.view_of(&bytes)] {
            assert!(view.fiber(2, 7).len() > BOUND_ABOVE);
            check_fiber_find(&view, shape[2] + 5);
        }
    }

    /// A `u64` that is small most of the time and sometimes extreme.
    fn wild() -> impl Strategy<Value = u64> {
        prop_oneof![8 => 0..24u64, 1 => Just(u64::MAX), 1 => Just(1u64 << 63), 1 => any::<u64>()]
    }

    fn garbage() -> impl Strategy<Value = Arrays> {
        (3usize..=4)
            .prop_flat_map(|rank| {
                let level = (prop::collection::vec(wild(), 0..6), prop::collection::vec(wild(), 0..40));
                let order = prop_oneof![6 => 0..rank as u32, 1 => Just(99u32)];
                let extent = prop_oneof![6 => 1..24u64, 1 => any::<u64>()];
                (
                    prop::collection::vec(level, rank),
                    prop::collection::vec(order, rank),
                    prop::collection::vec(extent, rank),
                )
            })
            .prop_map(|(levels, order, shape)| Arrays::new(&shape, &order, levels))
    }

    proptest! {
        // Fewer cases under Miri (`cargo xtask miri`), where each costs about a thousand times more.
        #![proptest_config(ProptestConfig { cases: if cfg!(miri) { 8 } else { 1024 }, failure_persistence: None, ..ProptestConfig::default() })]

        #[test]
        fn garbage_find_many_agrees_with_find(arrays in garbage(), seed in any::<u64>(), extra in 0usize..3) {
            let view = arrays.view();
            let mut rng = csf_testdata::Rng::new(seed);
            let rank = arrays.shape.len();
            let queries: Vec<u64> = (0..70 * rank + extra)
                .map(|i| {
                    let e = arrays.shape[i % rank];
                    if rng.below(16) == 0 { e } else { rng.below(e.min(24)) }
                })
                .collect();
            let out = many(&view, &queries);
            let bytes = arrays.misaligned();
            let unaligned = arrays.view_of(&bytes);
            prop_assert_eq!(many(&unaligned, &queries), out.clone());
            // Fiber::find: a hit holds the coordinate, whatever the fiber
            // holds, and aligned and unaligned copies agree.
            for level in 0..=rank {
                for parent in [0, 1, 2, 5, usize::MAX] {
                    let (fiber, other) = (view.fiber(level, parent), unaligned.fiber(level, parent));
                    for q in (0..24).chain([u64::MAX, 1 << 63]) {
                        let found = fiber.find(q);
                        prop_assert_eq!(found, other.find(q));
                        if let Some(node) = found {
                            prop_assert!(node >= fiber.start && node < fiber.start + fiber.len());
                            prop_assert_eq!(view.level(level).unwrap().crd.get(node), Some(q));
                        }
                    }
                }
            }
            // A hit is a leaf holding the query's leaf-level coordinate.
            let leaf_dim = arrays.order[rank - 1] as usize;
            for (query, r) in queries.chunks(rank).zip(&out) {
                if let Ok(Some(leaf)) = r {
                    prop_assert_eq!(arrays.levels()[rank - 1].1.get(*leaf).copied(), Some(query[leaf_dim]));
                }
            }
        }
    }
}
