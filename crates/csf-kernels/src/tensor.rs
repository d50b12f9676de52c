//! [`Tensor`]: a CSF tensor made ready for the kernels, borrowing what it can.

use alloc::borrow::Cow;
use alloc::vec;
use alloc::vec::Vec;

use csf_core::words::clamp_index;
use csf_core::CsfView;

use crate::scalar::Scalar;
use crate::KernelError;

/// One CSF tree: its mode order and its levels as native `u64` slices, and
/// its leaf values as `T`s.
#[derive(Clone, Debug)]
pub(crate) struct Tree<'a, T: Clone + 'static> {
    /// `mode_order[L]`: the dimension stored at level `L` (a permutation).
    pub(crate) mode_order: Vec<usize>,
    /// `depth[m]`: the level that stores dimension `m` (the inverse permutation).
    pub(crate) depth: Vec<usize>,
    /// `pos_L`, level by level.
    pub(crate) pos: Vec<Cow<'a, [u64]>>,
    /// `crd_L`, level by level.
    pub(crate) crd: Vec<Cow<'a, [u64]>>,
    /// One value per leaf, as far as the tensor has values (unvalidated
    /// data may have fewer; the leaves without one are skipped).
    pub(crate) values: Cow<'a, [T]>,
}

/// A CSF tensor as the kernels read it: each level's `pos`/`crd` arrays as
/// native `u64` slices and the leaf values as `T` (`f32` or `f64`).
///
/// Made from a [`CsfView`] by [`Tensor::new`], which borrows every array
/// that is already native (a little-endian machine and an aligned buffer:
/// a file read into an aligned buffer or memory-mapped) and copies the
/// rest; the values are borrowed when they are stored as `T` and not
/// quantized, and converted (integers, half floats, 4-bit types) or
/// dequantized once otherwise.
///
/// Every kernel is total on any tensor, validated or not: a child range is
/// clamped to its level as csf-core's accessors clamp it, a coordinate
/// outside a factor matrix reads no row, and a leaf without a value adds
/// nothing. On unvalidated data the results are then meaningless, but
/// nothing panics and nothing is read out of bounds. Validate the tensor
/// (`csf_validate::read`) when its results must mean something.
///
/// ```
/// # let le = |v: &[u64]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
/// # let values: Vec<u8> = [1.0f32, 2.0, 3.0, 4.0].iter().flat_map(|v| v.to_le_bytes()).collect();
/// # let buffers = [values, le(&[0, 2]), le(&[0, 1]), le(&[0, 2, 3]), le(&[0, 2, 1]), le(&[0, 1, 2, 4]), le(&[1, 3, 0, 2])];
/// # let slices: Vec<&[u8]> = buffers.iter().map(Vec::as_slice).collect();
/// # let header = hurray_format::Descriptor::csf(hurray_format::ElementType::F32, &[2, 3, 4], &[0, 1, 2], 4)?;
/// # let bytes = hurray_format::encode_to_vec(&header, &slices)?;
/// let container = hurray_format::Container::decode(&bytes)?; // the spec's example
/// let view = csf_core::CsfView::from_container(&container)?;
/// let tensor = csf_kernels::Tensor::<f64>::new(&view)?;
/// assert_eq!((tensor.rank(), tensor.shape()), (3, &[2, 3, 4][..]));
/// assert_eq!(tensor.norm(), (1.0f64 + 4.0 + 9.0 + 16.0).sqrt());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct Tensor<'a, T: Scalar> {
    pub(crate) shape: Vec<u64>,
    pub(crate) trees: Vec<Tree<'a, T>>,
    pub(crate) parallel: bool,
}

impl<'a, T: Scalar> Tensor<'a, T> {
    /// The tensor of `view`, borrowing its native arrays.
    ///
    /// # Errors
    /// [`KernelError::BadModeOrder`] when the view's mode order is not a
    /// permutation (possible only on unvalidated data): the kernels need to
    /// know which factor each level multiplies.
    pub fn new<const MAX: usize>(view: &CsfView<'a, MAX>) -> Result<Self, KernelError> {
        let tree = Tree::from_view(view)?;
        Ok(Self { shape: view.shape().to_vec(), trees: vec![tree], parallel: cfg!(feature = "parallel") })
    }

    /// Whether the kernels run on rayon's current thread pool (feature
    /// `parallel`, the default) or on the calling thread alone: the
    /// results are the same up to rounding (the sums are added in another
    /// order), and the same bits run after run for a given thread count.
    /// `Tensor::new(&view)?.with_parallel(false)` keeps a kernel off the
    /// pool; `pool.install(|| tensor.mttkrp(..))` picks the pool.
    #[must_use]
    pub fn with_parallel(mut self, parallel: bool) -> Self {
        self.parallel = parallel && cfg!(feature = "parallel");
        self
    }

    /// The rank (number of dimensions).
    pub fn rank(&self) -> usize {
        self.shape.len()
    }

    /// The logical shape.
    pub fn shape(&self) -> &[u64] {
        &self.shape
    }

    /// The stored entries (leaves) of the first tree.
    pub fn nnz(&self) -> usize {
        self.trees.first().map_or(0, Tree::leaves)
    }

    /// The mode orders of the trees held, the first one's first: one tree
    /// unless `Tensor::with_root_tree` (feature `build`) added one.
    pub fn mode_orders(&self) -> impl Iterator<Item = &[usize]> {
        self.trees.iter().map(|t| t.mode_order.as_slice())
    }

    /// The bytes held by copies rather than borrowed from the view (the
    /// converted values, arrays that were not native, and second trees).
    pub fn owned_bytes(&self) -> usize {
        let words = |arrays: &[Cow<'_, [u64]>]| {
            arrays.iter().filter(|a| matches!(a, Cow::Owned(_))).map(|a| a.len() * 8).sum::<usize>()
        };
        self.trees
            .iter()
            .map(|t| {
                let values = if matches!(t.values, Cow::Owned(_)) {
                    t.values.len() * core::mem::size_of::<T>()
                } else {
                    0
                };
                words(&t.pos) + words(&t.crd) + values
            })
            .sum()
    }

    /// The tree whose level for `mode` is nearest the root (the first such).
    pub(crate) fn tree_for(&self, mode: usize) -> Option<&Tree<'a, T>> {
        self.trees.iter().min_by_key(|t| t.depth.get(mode).copied().unwrap_or(usize::MAX))
    }

    /// The first tree (the view's own).
    pub(crate) fn first(&self) -> Option<&Tree<'a, T>> {
        self.trees.first()
    }

    /// Each dimension's extent as a `usize` (a factor matrix's row count).
    pub(crate) fn extents(&self) -> Result<Vec<usize>, KernelError> {
        self.shape
            .iter()
            .enumerate()
            .map(|(dim, &e)| usize::try_from(e).map_err(|_| KernelError::ExtentTooLarge { dim, extent: e }))
            .collect()
    }
}

impl<'a, T: Scalar> Tree<'a, T> {
    pub(crate) fn from_view<const MAX: usize>(view: &CsfView<'a, MAX>) -> Result<Self, KernelError> {
        let rank = view.rank();
        let order = view.mode_order();
        let bad = || KernelError::BadModeOrder { order: order.to_vec(), rank };
        let mut depth = vec![usize::MAX; rank];
        let mut mode_order = Vec::with_capacity(rank);
        for (level, &m) in order.iter().enumerate() {
            let slot = depth.get_mut(m as usize).ok_or_else(bad)?;
            if *slot != usize::MAX {
                return Err(bad());
            }
            *slot = level;
            mode_order.push(m as usize);
        }
        if mode_order.len() != rank {
            return Err(bad());
        }
        let native = |a: csf_core::hurray_format::le::U64Array<'a>| match a.as_native() {
            Some(s) => Cow::Borrowed(s),
            None => Cow::Owned(a.iter().collect::<Vec<u64>>()),
        };
        let pos = view.levels().iter().map(|l| native(l.pos)).collect();
        let crd: Vec<Cow<'a, [u64]>> = view.levels().iter().map(|l| native(l.crd)).collect();
        let leaves = crd.last().map_or(0, |c| c.len());
        Ok(Self { mode_order, depth, pos, crd, values: leaf_values(view, leaves) })
    }

    /// Each level's arrays with the factor matrix of its dimension (an
    /// empty one where `factors` has none): what a walk reads.
    pub(crate) fn levels<'t>(&'t self, factors: &[crate::MatRef<'t, T>]) -> Vec<crate::mttkrp::Level<'t, T>> {
        self.mode_order
            .iter()
            .zip(self.pos.iter().zip(&self.crd))
            .map(|(&m, (pos, crd))| crate::mttkrp::Level {
                pos,
                crd,
                factor: factors.get(m).map_or(&[][..], |f| f.as_slice()),
            })
            .collect()
    }

    /// The leaf count.
    pub(crate) fn leaves(&self) -> usize {
        self.crd.last().map_or(0, |c| c.len())
    }

    #[cfg(feature = "parallel")]
    /// The leaf position where root `root`'s sub-tree starts (`leaves()`
    /// for `root` = the root count): the `pos` chain followed down, clamped.
    pub(crate) fn first_leaf(&self, root: usize) -> usize {
        let mut node = root;
        for (pos, crd) in self.pos.iter().zip(&self.crd).skip(1) {
            node = pos.get(node).map_or(crd.len(), |&p| clamp_index(p, crd.len()));
        }
        node
    }

    /// Calls `f(coordinates by level, leaf)` for every leaf, in storage order.
    pub(crate) fn for_each_leaf(&self, mut f: impl FnMut(&[u64], usize)) {
        let mut coords = vec![0u64; self.crd.len()];
        let roots = self.crd.first().map_or(0, |c| c.len());
        self.walk_level(0, (0, roots), &mut coords, &mut f);
    }

    fn walk_level(
        &self,
        level: usize,
        (a, b): (usize, usize),
        coords: &mut [u64],
        f: &mut impl FnMut(&[u64], usize),
    ) {
        let Some(crd) = self.crd.get(level) else { return };
        let next = self.pos.get(level + 1).zip(self.crd.get(level + 1));
        for (j, &c) in (a..b).zip(crd.get(a..b).unwrap_or(&[])) {
            if let Some(slot) = coords.get_mut(level) {
                *slot = c;
            }
            match next {
                None => f(coords, j),
                Some((pos, below)) => self.walk_level(level + 1, children(pos, below.len(), j), coords, f),
            }
        }
    }

    #[cfg(feature = "parallel")]
    /// `parts` ranges of root nodes with about as many leaves each, in
    /// order, covering every root (some may be empty).
    pub(crate) fn partition(&self, parts: usize) -> Vec<(usize, usize)> {
        let roots = self.crd.first().map_or(0, |c| c.len());
        let leaves = self.leaves();
        let parts = parts.max(1);
        let mut bounds = Vec::with_capacity(parts + 1);
        bounds.push(0);
        for p in 1..parts {
            let target = (leaves as u128 * p as u128 / parts as u128) as usize;
            // The first root whose sub-tree starts at or after `target`
            // (`first_leaf` is non-decreasing on valid data; on other data
            // any split point is still a valid split).
            let (mut lo, mut hi) = (*bounds.last().unwrap_or(&0), roots);
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                if self.first_leaf(mid) < target {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            bounds.push(lo);
        }
        bounds.push(roots);
        bounds.windows(2).map(|w| (w.first().copied().unwrap_or(0), w.get(1).copied().unwrap_or(0))).collect()
    }
}

/// The values of the leaves `0..leaves` as `T`s (as many as the tensor has:
/// unvalidated data may have fewer), borrowed when they already are.
fn leaf_values<'a, T: Scalar, const MAX: usize>(view: &CsfView<'a, MAX>, leaves: usize) -> Cow<'a, [T]> {
    let values = view.values();
    let have = leaves.min(values.capacity()).min(usize::try_from(view.nnz()).unwrap_or(usize::MAX));
    match view.quantization() {
        None => match T::native(&values) {
            Some(native) => Cow::Borrowed(native.get(..have).unwrap_or(native)),
            None => Cow::Owned(
                (0..have).map(|leaf| values.get_raw(leaf).map_or(T::ZERO, T::from_value)).collect(),
            ),
        },
        Some(_) => {
            // A code's value depends on its group, which may depend on the
            // leaf's coordinates (per-channel): walk the tree for them.
            let mut out = vec![T::ZERO; have];
            view.for_each(|index, leaf| {
                if let (Some(slot), Some(v)) = (out.get_mut(leaf), view.value_f64(leaf, index)) {
                    *slot = T::from_f64(v);
                }
            });
            Cow::Owned(out)
        }
    }
}

/// The node range `[start, end)` of level `L`'s children of node `parent`
/// of level `L - 1`, clamped as csf-core clamps it.
#[inline(always)]
pub(crate) fn children(pos: &[u64], nodes: usize, parent: usize) -> (usize, usize) {
    let end = parent.checked_add(1).and_then(|next| pos.get(next)).map_or(0, |&e| clamp_index(e, nodes));
    let start = pos.get(parent).map_or(end, |&s| clamp_index(s, nodes)).min(end);
    (start, end)
}

#[cfg(feature = "build")]
impl<T: Scalar> Tensor<'_, T> {
    /// Adds a second tree with dimension `root` at its root and the other
    /// dimensions in the first tree's order: MTTKRP of `root` then runs the
    /// root case on it (SPLATT's two-tree layout, when `root` is the first
    /// tree's leaf dimension), at the cost of the index arrays and values
    /// once more. MTTKRP of each mode reads the tree where that mode is
    /// nearest the root.
    ///
    /// ```
    /// # let le = |v: &[u64]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    /// # let values: Vec<u8> = [1.0f64, 2.0, 3.0, 4.0].iter().flat_map(|v| v.to_le_bytes()).collect();
    /// # let buffers = [values, le(&[0, 2]), le(&[0, 1]), le(&[0, 2, 3]), le(&[0, 2, 1]), le(&[0, 1, 2, 4]), le(&[1, 3, 0, 2])];
    /// # let slices: Vec<&[u8]> = buffers.iter().map(Vec::as_slice).collect();
    /// # let header = hurray_format::Descriptor::csf(hurray_format::ElementType::F64, &[2, 3, 4], &[0, 1, 2], 4)?;
    /// # let bytes = hurray_format::encode_to_vec(&header, &slices)?;
    /// # let container = hurray_format::Container::decode(&bytes)?;
    /// # let view = csf_core::CsfView::from_container(&container)?;
    /// use csf_kernels::{Matrix, Tensor};
    /// let one = Tensor::<f64>::new(&view)?; // mode order 0, 1, 2
    /// let two = one.clone().with_root_tree(2)?; // and 2, 0, 1
    /// assert_eq!(two.mode_orders().collect::<Vec<_>>(), [&[0, 1, 2][..], &[2, 0, 1][..]]);
    /// let f = |rows, cols| Matrix::from_rows(rows, cols, (0..rows * cols).map(|i| i as f64).collect());
    /// let (a, b, c) = (f(2, 3)?, f(3, 3)?, f(4, 3)?);
    /// let factors = [a.as_ref(), b.as_ref(), c.as_ref()];
    /// // The same MTTKRP, now at the root of the second tree.
    /// assert_eq!(two.mttkrp(&factors, 2)?, one.mttkrp(&factors, 2)?);
    /// assert!(two.owned_bytes() > one.owned_bytes());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`KernelError::BadMode`], or [`KernelError::Build`] (two leaves at
    /// one index: only on unvalidated data).
    pub fn with_root_tree(mut self, root: usize) -> Result<Self, KernelError> {
        let rank = self.rank();
        if root >= rank {
            return Err(KernelError::BadMode { mode: root, rank });
        }
        let Some(first) = self.trees.first() else { return Ok(self) };
        let order: Vec<u32> = core::iter::once(root)
            .chain(first.mode_order.iter().copied().filter(|&m| m != root))
            .map(|m| m as u32)
            .collect();
        // The entries in logical order, with their values as `T`.
        let mut indices: Vec<u64> = Vec::with_capacity(first.values.len() * rank);
        let mut values: Vec<T> = Vec::with_capacity(first.values.len());
        let mut logical = vec![0u64; rank];
        first.for_each_leaf(|coords, leaf| {
            let Some(&value) = first.values.get(leaf) else { return };
            for (&m, &c) in first.mode_order.iter().zip(coords) {
                if let Some(slot) = logical.get_mut(m) {
                    *slot = c;
                }
            }
            indices.extend_from_slice(&logical);
            values.push(value);
        });
        let coo = csf_build::Coo::new(&self.shape, csf_build::Indices::RowMajor(&indices), &values);
        let options = csf_build::Options {
            mode_order: csf_build::ModeOrderPolicy::Explicit(order),
            parallel: self.parallel,
            ..csf_build::Options::default()
        };
        let built = csf_build::build(&coo, &options)?.tensor;
        drop((indices, values));
        let tree = Tree::<T>::from_view(&built.view())?;
        let owned = Tree {
            mode_order: tree.mode_order,
            depth: tree.depth,
            pos: tree.pos.into_iter().map(|a| Cow::Owned(a.into_owned())).collect(),
            crd: tree.crd.into_iter().map(|a| Cow::Owned(a.into_owned())).collect(),
            values: Cow::Owned(tree.values.into_owned()),
        };
        self.trees.push(owned);
        Ok(self)
    }
}
