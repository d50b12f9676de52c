//! [`Cursor`]: the depth-first walk, one non-zero at a time, with a fixed
//! stack; [`Entries`], the iterator over it for a rank known at compile
//! time; and [`CsfView::cursor`] and [`CsfView::entries`], which make them.

use hurray_format::limits::MAX_RANK;

use super::scope::{logical_slots, slot_of, Scope};
use crate::lookup::LookupError;
use crate::values::Value;
use crate::view::CsfView;

/// A depth-first cursor over the non-zeros, in leaf (storage) order: of the
/// whole tensor ([`CsfView::cursor`]) or of a sub-tree
/// ([`Subtree::cursor`](crate::Subtree::cursor)).
///
/// It does not allocate; its state is a few fixed arrays sized by the
/// view's capacity `MAX` (64 by default: 2.1 KiB on a 32-bit target; see
/// [`CsfView`]'s capacity). Call [`Cursor::advance`] until it returns `false`; in between,
/// [`Cursor::index`], [`Cursor::coords`], [`Cursor::leaf`] and
/// [`Cursor::value`] describe the current non-zero.
#[derive(Clone, Debug)]
pub struct Cursor<'v, 'a, const MAX: usize = MAX_RANK> {
    view: &'v CsfView<'a, MAX>,
    slots: [u8; MAX],
    /// Current node at each level.
    node: [usize; MAX],
    /// End of the current slice at each level.
    end: [usize; MAX],
    /// First node not yet visited at each level (to begin with, the first
    /// node of the scope's range there).
    high: [usize; MAX],
    /// End of the scope's node range at each level below its top: no slice
    /// reaches past it.
    limit: [usize; MAX],
    /// Storage-order coordinates `c[L]`.
    pub(super) coords: [u64; MAX],
    /// Logical index (a stray `mode_order` entry's coordinate is not written).
    pub(super) index: [u64; MAX],
    /// The levels walked, `0..rank`: the view's rank, or fewer when
    /// [`CsfView::walk`] walks the levels above its two flat loops (so that
    /// it borrows the view instead of copying a shortened one).
    rank: usize,
    /// The level the walk starts at and ends at: 0, or a sub-tree's prefix length.
    top: usize,
    level: usize,
    started: bool,
    done: bool,
    steps: u64,
}

impl<'v, 'a, const MAX: usize> Cursor<'v, 'a, MAX> {
    /// A cursor before the first non-zero of `view`.
    pub fn new(view: &'v CsfView<'a, MAX>) -> Self {
        Self::scoped(view, &Scope::whole(view), logical_slots(view), view.rank())
    }

    /// A cursor before the first non-zero of `scope`, placing level `L`'s
    /// coordinate at `slots[L]` of the logical index, over the levels
    /// `0..rank` (at most the view's rank). Always inlined, over two steps
    /// that are not (to keep `CsfView::walk` small, see there): so that the
    /// cursor, 2.1 KiB on a 32-bit target, is built where the caller keeps
    /// it, not built in a frame of its own and copied out.
    #[inline(always)]
    pub(crate) fn scoped(
        view: &'v CsfView<'a, MAX>,
        scope: &Scope<'_>,
        slots: [u8; MAX],
        rank: usize,
    ) -> Self {
        let mut cursor = Self::blank(view, slots, rank.min(view.rank()), scope.level);
        cursor.start(scope);
        cursor
    }

    /// A cursor at no node, over levels `0..rank`, starting at level `top`.
    /// A literal in tail position: written straight into the return slot.
    #[inline(never)]
    pub(super) fn blank(view: &'v CsfView<'a, MAX>, slots: [u8; MAX], rank: usize, top: usize) -> Self {
        Self {
            view,
            slots,
            node: [0; MAX],
            end: [0; MAX],
            high: [0; MAX],
            limit: [0; MAX],
            coords: [0; MAX],
            index: [0; MAX],
            rank,
            top,
            level: top,
            started: false,
            done: top >= rank,
            steps: 0,
        }
    }

    /// Places a [`Cursor::blank`] cursor before the first non-zero of `scope`.
    #[inline(never)]
    pub(super) fn start(&mut self, scope: &Scope<'_>) {
        let (view, rank, top) = (self.view, self.rank, self.top);
        for (level, &coord) in scope.prefix.iter().enumerate().take(top) {
            self.set(level, coord);
        }
        let (start, end) = scope.nodes;
        if let (Some(n), Some(e)) = (self.node.get_mut(top), self.end.get_mut(top)) {
            *n = start;
            *e = end.max(start);
        }
        let mut range = scope.nodes;
        for level in top + 1..rank {
            range = scope.below(view, level, range);
            if let (Some(h), Some(l)) = (self.high.get_mut(level), self.limit.get_mut(level)) {
                *h = range.0;
                *l = range.1;
            }
        }
    }

    /// Opens the child slice of `parent` at `level`, clamped (see the module docs).
    fn open(&mut self, level: usize, parent: usize) {
        let (start, end) = self.view.level(level).map_or((0, 0), |l| l.children(parent));
        let start = start.max(self.high.get(level).copied().unwrap_or(0));
        let end = end.min(self.limit.get(level).copied().unwrap_or(0));
        if let (Some(n), Some(e)) = (self.node.get_mut(level), self.end.get_mut(level)) {
            *n = start;
            *e = end.max(start);
        }
    }

    /// Records `coord` as level `level`'s coordinate, in storage order and in
    /// the logical index.
    #[inline]
    fn set(&mut self, level: usize, coord: u64) {
        if let Some(c) = self.coords.get_mut(level) {
            *c = coord;
        }
        if let Some(i) = self.index.get_mut(slot_of(&self.slots, level)) {
            *i = coord;
        }
    }

    /// Moves to the next non-zero; `false` when there is none.
    pub fn advance(&mut self) -> bool {
        if self.done {
            return false;
        }
        let Some(last) = self.rank.checked_sub(1) else {
            self.done = true;
            return false;
        };
        if self.started {
            self.level = last;
            if let Some(n) = self.node.get_mut(last) {
                *n += 1;
            }
        } else {
            // The top slice was opened by `scoped`.
            self.started = true;
            self.level = self.top;
        }
        loop {
            self.steps += 1;
            let level = self.level;
            let (node, end) = (self.node.get(level).copied(), self.end.get(level).copied());
            let (Some(node), Some(end)) = (node, end) else {
                self.done = true;
                return false;
            };
            if node < end {
                let coord = self.view.level(level).and_then(|l| l.crd.get(node)).unwrap_or(0);
                self.set(level, coord);
                if let Some(h) = self.high.get_mut(level) {
                    *h = node + 1;
                }
                if level == last {
                    return true;
                }
                self.level = level + 1;
                self.open(level + 1, node);
            } else if level <= self.top {
                self.done = true;
                return false;
            } else {
                self.level = level - 1;
                if let Some(n) = self.node.get_mut(level - 1) {
                    *n += 1;
                }
            }
        }
    }

    /// The current non-zero's logical index (`c[L]` placed at `mode_order[L]`).
    pub fn index(&self) -> &[u64] {
        self.index.get(..self.rank).unwrap_or(&[])
    }

    /// The current non-zero's coordinates in storage order (`c[0..rank]`).
    pub fn coords(&self) -> &[u64] {
        self.coords.get(..self.rank).unwrap_or(&[])
    }

    /// The current non-zero's leaf position (its index into `values`).
    pub fn leaf(&self) -> usize {
        self.node.get(self.rank.saturating_sub(1)).copied().unwrap_or(0)
    }

    /// The current non-zero's value, dequantized when the tensor is
    /// quantized (see [`CsfView::value`]); `None` only on unvalidated data
    /// (a leaf past the values buffer, a group without parameters).
    pub fn value(&self) -> Option<Value> {
        self.view.value(self.leaf(), self.index())
    }

    /// The current non-zero's element exactly as stored (for a quantized
    /// tensor, its code); `None` only when the leaf lies past the values
    /// buffer (unvalidated data).
    pub fn value_raw(&self) -> Option<Value> {
        self.view.values().get_raw(self.leaf())
    }

    /// Steps taken so far: a measure of work that the module docs bound.
    pub fn steps(&self) -> u64 {
        self.steps
    }
}

/// An iterator over `(logical index, value)` for a tensor of rank `R`.
#[derive(Clone, Debug)]
pub struct Entries<'v, 'a, const R: usize, const MAX: usize = MAX_RANK> {
    pub(crate) cursor: Cursor<'v, 'a, MAX>,
}

impl<const R: usize, const MAX: usize> Iterator for Entries<'_, '_, R, MAX> {
    type Item = ([u64; R], Option<Value>);

    fn next(&mut self) -> Option<Self::Item> {
        if !self.cursor.advance() {
            return None;
        }
        let mut index = [0u64; R];
        for (dst, src) in index.iter_mut().zip(self.cursor.index()) {
            *dst = *src;
        }
        Some((index, self.cursor.value()))
    }
}

impl<'a, const MAX: usize> CsfView<'a, MAX> {
    /// A cursor over the non-zeros in leaf order.
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
    /// // `view`: the spec's example.
    /// let mut cursor = view.cursor();
    /// let mut leaves = Vec::new();
    /// while cursor.advance() {
    ///     leaves.push((cursor.index().to_vec(), cursor.leaf(), cursor.value()));
    /// }
    /// assert_eq!(leaves[0], (vec![0, 0, 1], 0, Some(csf_core::Value::F32(1.0))));
    /// assert_eq!(leaves.len(), 4);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn cursor(&self) -> Cursor<'_, 'a, MAX> {
        Cursor::new(self)
    }

    /// The non-zeros as `([u64; R], value)` pairs in leaf order, for a rank
    /// known at compile time. The value is the one [`Cursor::value`] gives
    /// (dequantized when the tensor is quantized); it is `None` only on
    /// unvalidated data.
    ///
    /// # Errors
    /// [`LookupError::WrongRank`] when `R` is not the tensor's rank.
    pub fn entries<const R: usize>(&self) -> Result<Entries<'_, 'a, R, MAX>, LookupError> {
        if R != self.rank() {
            return Err(LookupError::WrongRank { got: R, rank: self.rank() });
        }
        Ok(Entries { cursor: self.cursor() })
    }
}
