//! A view over arrays a caller built or loaded itself: [`CsfView::builder`].
//!
//! The parts are named, not positional (arrow-data's `ArrayDataBuilder` is
//! the model): the element type and the shape start the builder, the levels
//! and the values buffer are set by name, the mode order and `nnz` default
//! to what a plain tensor has. [`ViewBuilder::build`] checks what the view's
//! own promises need, `O(rank)`; the storage invariants are `csf-validate`'s.

use hurray_format::limits::{RankError, MAX_RANK};
use hurray_format::ElementType;

use crate::quant::Quantized;
use crate::values::Values;
use crate::view::{CsfView, Level};

/// Why parts do not make a CSF tensor: a shape, mode order and levels that
/// disagree, or a buffer that was never given.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PartsError {
    /// The shape's length is outside `3..=64` (spec § Validity Constraints).
    #[error(transparent)]
    Rank(RankError),
    /// `mode_order` does not have one entry per dimension.
    #[error("mode_order has {len} entries for rank {rank}")]
    ModeOrderLength {
        /// Entries in the `mode_order` given.
        len: usize,
        /// The rank: the shape's length.
        rank: usize,
    },
    /// The levels are not one per dimension (a CSF tree of rank `r` has `r`
    /// levels, each a `pos`/`crd` pair).
    #[error("{levels} levels were given for rank {rank}: a CSF tree has one level per dimension")]
    LevelCount {
        /// Levels given (0 when none were).
        levels: usize,
        /// The rank: the shape's length.
        rank: usize,
    },
    /// No values buffer was given. (An empty tensor's values buffer is
    /// empty, and is given as such.)
    #[error("no values buffer was given (an empty tensor's is an empty slice)")]
    MissingValues,
}

/// Checks what every parts builder needs: a rank CSF stores, one
/// `mode_order` entry and one level per dimension, and a values buffer.
pub(crate) fn check_parts(
    rank: usize,
    mode_order: Option<usize>,
    levels: usize,
    has_values: bool,
) -> Result<(), PartsError> {
    RankError::check(rank).map_err(PartsError::Rank)?;
    match mode_order {
        Some(len) if len != rank => return Err(PartsError::ModeOrderLength { len, rank }),
        _ => {}
    }
    if levels != rank {
        return Err(PartsError::LevelCount { levels, rank });
    }
    if !has_values {
        return Err(PartsError::MissingValues);
    }
    Ok(())
}

/// Builds a [`CsfView`] over borrowed arrays, made by [`CsfView::builder`].
///
/// ```
/// use csf_core::{CsfView, Level, PartsError};
/// use hurray_format::{le::U64Array, ElementType};
///
/// // The CSF spec's example, shape [2, 3, 4]: one `pos`/`crd` pair per level.
/// let (pos, crd): ([&[u64]; 3], [&[u64]; 3]) =
///     ([&[0, 2], &[0, 2, 3], &[0, 1, 2, 4]], [&[0, 1], &[0, 2, 1], &[1, 3, 0, 2]]);
/// let le = |words: &[u64]| words.iter().flat_map(|w| w.to_le_bytes()).collect::<Vec<u8>>();
/// let bytes: Vec<(Vec<u8>, Vec<u8>)> = (0..3).map(|l| (le(pos[l]), le(crd[l]))).collect();
/// let levels: Vec<Level<'_>> = bytes
///     .iter()
///     .map(|(p, c)| Level { pos: U64Array::new(p).unwrap(), crd: U64Array::new(c).unwrap() })
///     .collect();
/// let values: Vec<u8> = [1.0f32, 2.0, 3.0, 4.0].iter().flat_map(|v| v.to_le_bytes()).collect();
///
/// let view = CsfView::builder(ElementType::F32, &[2, 3, 4])
///     .levels(&levels)
///     .values(&values)
///     .build()?; // mode order: identity; nnz: the leaf level's node count, 4
/// assert_eq!((view.nnz(), view.mode_order()), (4, &[0, 1, 2][..]));
/// assert_eq!(view.get_f64(&[1, 1, 2])?, 4.0);
///
/// // Parts that disagree are refused, each with its own error.
/// let short = CsfView::builder(ElementType::F32, &[2, 3, 4]).levels(&levels[..2]).values(&values).build();
/// assert_eq!(short.err(), Some(PartsError::LevelCount { levels: 2, rank: 3 }));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct ViewBuilder<'p, 'a> {
    element_type: ElementType,
    shape: &'p [u64],
    mode_order: Option<&'p [u32]>,
    nnz: Option<u64>,
    levels: &'p [Level<'a>],
    values: Option<&'a [u8]>,
    quantization: Option<Quantized<'a>>,
}

impl<'a> CsfView<'a> {
    /// A builder for a view over arrays a caller built or loaded itself: a
    /// tensor of `element_type` and logical `shape`, whose levels
    /// ([`ViewBuilder::levels`]) and values ([`ViewBuilder::values`]) are
    /// then given by name. See [`ViewBuilder`] for an example.
    pub fn builder<'p>(element_type: ElementType, shape: &'p [u64]) -> ViewBuilder<'p, 'a> {
        ViewBuilder {
            element_type,
            shape,
            mode_order: None,
            nnz: None,
            levels: &[],
            values: None,
            quantization: None,
        }
    }
}

impl<'p, 'a> ViewBuilder<'p, 'a> {
    /// `mode_order[L]`: the logical dimension stored at level `L`. Default:
    /// the identity, `[0, 1, .., rank - 1]`.
    pub fn mode_order(mut self, mode_order: &'p [u32]) -> Self {
        self.mode_order = Some(mode_order);
        self
    }

    /// The number of stored elements, the descriptor's `nnz`. Default: the
    /// leaf level's node count `n_{rank-1}`, which it equals in a valid tensor.
    pub fn nnz(mut self, nnz: u64) -> Self {
        self.nnz = Some(nnz);
        self
    }

    /// The tree's levels, outermost first: `levels[L]` holds `pos_L` and
    /// `crd_L` (see [`U64Array::new`](hurray_format::le::U64Array::new) for
    /// little-endian bytes and
    /// [`U64Array::from_native`](hurray_format::le::U64Array::from_native) for
    /// native words). Required: one per dimension.
    pub fn levels(mut self, levels: &'p [Level<'a>]) -> Self {
        self.levels = levels;
        self
    }

    /// The values buffer, packed as the element type prescribes (one element
    /// per leaf, little-endian; sub-byte types two to a byte, low nibble
    /// first). Required, even when empty.
    pub fn values(mut self, values: &'a [u8]) -> Self {
        self.values = Some(values);
        self
    }

    /// Declares the values quantized: the values buffer then holds the
    /// codes, and [`CsfView::value`] dequantizes them. Default: not quantized.
    pub fn quantization(mut self, quantization: Quantized<'a>) -> Self {
        self.quantization = Some(quantization);
        self
    }

    /// The view over the parts.
    ///
    /// # Errors
    /// [`PartsError::Rank`] when the shape's length is outside `3..=64`,
    /// [`PartsError::ModeOrderLength`] and [`PartsError::LevelCount`] when
    /// `mode_order` or the levels are not one per dimension,
    /// [`PartsError::MissingValues`] when no values buffer was given.
    pub fn build(self) -> Result<CsfView<'a>, PartsError> {
        let rank = self.shape.len();
        check_parts(rank, self.mode_order.map(<[u32]>::len), self.levels.len(), self.values.is_some())?;
        let mut stored = [Level::default(); MAX_RANK];
        for (slot, level) in stored.iter_mut().zip(self.levels) {
            *slot = *level;
        }
        let mut identity = [0u32; MAX_RANK];
        for (dim, slot) in (0u32..).zip(identity.iter_mut()) {
            *slot = dim;
        }
        let mode_order = match self.mode_order {
            Some(order) => order,
            None => identity.get(..rank).unwrap_or(&[]),
        };
        let leaves = self.levels.last().map_or(0, Level::node_count);
        let nnz = self.nnz.unwrap_or(leaves as u64);
        let values = Values::new(self.element_type, self.values.unwrap_or(&[]));
        let mut view = CsfView::assemble(self.shape, mode_order, nnz, stored, values);
        if let Some(quantization) = self.quantization {
            view = view.with_quantization(quantization);
        }
        Ok(view)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hurray_format::le::U64Array;

    const EMPTY: Level<'static> = Level { pos: U64Array::EMPTY, crd: U64Array::EMPTY };

    #[test]
    fn each_disagreement_has_its_own_error() {
        let levels = [EMPTY; 3];
        let ok = CsfView::builder(ElementType::U8, &[2, 3, 4]).levels(&levels).values(&[]);
        assert!(ok.build().is_ok());
        let rank2 = CsfView::builder(ElementType::U8, &[2, 3]).levels(&levels[..2]).values(&[]);
        assert_eq!(rank2.build().err(), Some(PartsError::Rank(RankError::TooSmall(2))));
        assert!(rank2.build().unwrap_err().to_string().contains("COO, CSR or CSC"));
        let shape65 = [1u64; 65];
        let rank65 = CsfView::builder(ElementType::U8, &shape65).levels(&levels).values(&[]);
        assert_eq!(rank65.build().err(), Some(PartsError::Rank(RankError::TooLarge(65))));
        assert_eq!(
            ok.mode_order(&[0, 1]).build().err(),
            Some(PartsError::ModeOrderLength { len: 2, rank: 3 })
        );
        assert_eq!(
            ok.levels(&levels[..2]).build().err(),
            Some(PartsError::LevelCount { levels: 2, rank: 3 })
        );
        let no_levels = CsfView::builder(ElementType::U8, &[2, 3, 4]).values(&[]);
        assert_eq!(no_levels.build().err(), Some(PartsError::LevelCount { levels: 0, rank: 3 }));
        let no_values = CsfView::builder(ElementType::U8, &[2, 3, 4]).levels(&levels);
        assert_eq!(no_values.build().err(), Some(PartsError::MissingValues));
    }

    #[test]
    fn defaults_are_the_identity_order_and_the_leaf_count() {
        let words = [0u64, 2, 0, 1];
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        let two = U64Array::new(&bytes[16..]).unwrap(); // [0, 1]
        let levels = [EMPTY, EMPTY, Level { pos: U64Array::EMPTY, crd: two }];
        let view =
            CsfView::builder(ElementType::U8, &[2, 3, 4]).levels(&levels).values(&[7, 8]).build().unwrap();
        assert_eq!((view.mode_order(), view.nnz(), view.shape()), (&[0, 1, 2][..], 2, &[2, 3, 4][..]));
        let set = CsfView::builder(ElementType::U8, &[2, 3, 4])
            .levels(&levels)
            .values(&[7, 8])
            .mode_order(&[2, 0, 1])
            .nnz(9)
            .build()
            .unwrap();
        assert_eq!((set.mode_order(), set.nnz()), (&[2, 0, 1][..], 9));
        assert!(set.quantization().is_none());
    }
}
