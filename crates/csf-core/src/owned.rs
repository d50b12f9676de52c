//! Owned tensors and conversions that allocate (feature `alloc`).

use alloc::vec::Vec;

use hurray_format::le::U64Array;
use hurray_format::{BufferEntry, Descriptor, ElementType, EncodeError, ModeOrder, Shape};

use crate::values::{Element, Value};
use crate::view::{CsfView, Level, ViewError};

/// A CSF tensor that owns its arrays and lends a [`CsfView`].
///
/// `pos`/`crd` are kept in file byte order (little-endian words), so the view
/// and the encoder borrow them without conversion.
#[derive(Clone, Debug, PartialEq)]
pub struct OwnedCsf {
    element_type: ElementType,
    shape: Vec<u64>,
    mode_order: Vec<u32>,
    nnz: u64,
    /// `(pos_L, crd_L)` per level, as little-endian words.
    levels: Vec<(Vec<u64>, Vec<u64>)>,
    values: Vec<u8>,
    quantization: Option<OwnedQuantization>,
}

/// The quantization of an [`OwnedCsf`]: the descriptor's section and the
/// parameter buffers (`docs/format.md` § 5.7).
#[derive(Clone, Debug, PartialEq)]
pub struct OwnedQuantization {
    /// The descriptor's quantization section.
    pub section: hurray_format::Quantization,
    /// The scales, packed as `section.scale_type`.
    pub scales: Vec<u8>,
    /// The zero points, packed as `section.zero_point_type`, when present.
    pub zero_points: Option<Vec<u8>>,
}

impl OwnedQuantization {
    /// A copy of a view's quantization: its section and parameter buffers.
    pub fn from_view(q: &crate::Quantized<'_>) -> Self {
        Self {
            section: hurray_format::Quantization {
                scheme: q.scheme,
                axis: q.axis as u32,
                block_size: q.block_size,
                scale_type: q.scales.element_type(),
                zero_point_type: q.zero_points.map(|z| z.element_type()),
            },
            scales: q.scales.as_bytes().to_vec(),
            zero_points: q.zero_points.map(|z| z.as_bytes().to_vec()),
        }
    }
}

impl OwnedCsf {
    /// A tensor from its arrays: `levels[L] = (pos_L, crd_L)` as ordinary
    /// `u64`s, `values` packed as `element_type` prescribes.
    ///
    /// # Errors
    /// The structural [`ViewError`]s of [`CsfView::from_parts`]. The storage
    /// invariants are not checked here (that is `csf-validate`'s job).
    pub fn new(
        element_type: ElementType,
        shape: Vec<u64>,
        mode_order: Vec<u32>,
        nnz: u64,
        levels: Vec<(Vec<u64>, Vec<u64>)>,
        values: Vec<u8>,
    ) -> Result<Self, ViewError> {
        let to_le = |mut v: Vec<u64>| {
            if cfg!(target_endian = "big") {
                v.iter_mut().for_each(|x| *x = x.to_le());
            }
            v
        };
        let levels = levels.into_iter().map(|(p, c)| (to_le(p), to_le(c))).collect();
        let owned = Self { element_type, shape, mode_order, nnz, levels, values, quantization: None };
        owned.try_view()?;
        Ok(owned)
    }

    /// A copy of a view's arrays.
    pub fn from_view(view: &CsfView<'_>) -> Self {
        let words = |a: U64Array<'_>| a.iter().map(u64::to_le).collect::<Vec<_>>();
        Self {
            element_type: view.element_type(),
            shape: view.shape().to_vec(),
            mode_order: view.mode_order().to_vec(),
            nnz: view.nnz(),
            levels: view.levels().iter().map(|l| (words(l.pos), words(l.crd))).collect(),
            values: view.values().as_bytes().to_vec(),
            quantization: view.quantization().map(OwnedQuantization::from_view),
        }
    }

    /// The same tree with other values: `values` packed as `element_type`
    /// (for example the quantized codes of the current values). Drops any
    /// quantization, which described the old values.
    pub fn with_values(mut self, element_type: ElementType, values: Vec<u8>) -> Self {
        self.element_type = element_type;
        self.values = values;
        self.quantization = None;
        self
    }

    /// The tensor with its values declared quantized by `quantization`
    /// (the values buffer must already hold the quantized codes).
    pub fn with_quantization(mut self, quantization: OwnedQuantization) -> Self {
        self.quantization = Some(quantization);
        self
    }

    /// The quantization, when the values are quantized.
    pub fn quantization(&self) -> Option<&OwnedQuantization> {
        self.quantization.as_ref()
    }

    fn try_view(&self) -> Result<CsfView<'_>, ViewError> {
        let mut levels = [Level::default(); hurray_format::limits::MAX_RANK];
        for (slot, (pos, crd)) in levels.iter_mut().zip(&self.levels) {
            *slot = Level { pos: U64Array::from_le_words(pos), crd: U64Array::from_le_words(crd) };
        }
        let levels =
            levels.get(..self.levels.len()).ok_or(ViewError::RankTooLarge { rank: self.levels.len() })?;
        let view = CsfView::from_parts(
            self.element_type,
            &self.shape,
            &self.mode_order,
            self.nnz,
            levels,
            &self.values,
        )?;
        Ok(match &self.quantization {
            None => view,
            Some(q) => view.with_quantization(crate::Quantized {
                scheme: q.section.scheme,
                axis: q.section.axis as usize,
                block_size: q.section.block_size,
                scales: crate::Values::new(q.section.scale_type, &q.scales),
                zero_points: q
                    .section
                    .zero_point_type
                    .zip(q.zero_points.as_deref())
                    .map(|(ty, bytes)| crate::Values::new(ty, bytes)),
            }),
        })
    }

    /// The tensor as a borrowed view.
    pub fn view(&self) -> CsfView<'_> {
        // `new` and `from_view` only build owned tensors whose view succeeds.
        self.try_view().unwrap_or_else(|_| CsfView::empty())
    }

    /// The descriptor for writing this tensor (host buffers, no optional sections).
    pub fn descriptor(&self) -> Descriptor {
        // Rank <= 64 was checked at construction, so nothing here truncates.
        let mut d = Descriptor {
            shape: Shape::from_slice(&self.shape).unwrap_or_default(),
            mode_order: ModeOrder::from_slice(&self.mode_order).unwrap_or_default(),
            ..Descriptor::csf_unchecked(self.element_type, &[], &[], self.nnz)
                .unwrap_or_else(empty_descriptor)
        };
        d.quantization = self.quantization.as_ref().map(|q| q.section);
        for _ in 0..self.buffers().len() {
            let _ = d.buffers.push(BufferEntry::default());
        }
        d
    }

    /// The buffers in table order: values, then `pos_L`, `crd_L` per level,
    /// then the quantization parameters (scales, zero points).
    pub fn buffers(&self) -> Vec<&[u8]> {
        let mut out = Vec::with_capacity(1 + 2 * self.levels.len());
        out.push(self.values.as_slice());
        for (pos, crd) in &self.levels {
            out.push(bytemuck::cast_slice(pos));
            out.push(bytemuck::cast_slice(crd));
        }
        if let Some(q) = &self.quantization {
            out.push(q.scales.as_slice());
            if let Some(z) = &q.zero_points {
                out.push(z.as_slice());
            }
        }
        out
    }

    /// Encodes the tensor as a container with `descriptor` (for example
    /// [`OwnedCsf::descriptor`] with statistics added).
    ///
    /// # Errors
    /// As [`hurray_format::encode_to_vec`].
    pub fn encode_with(&self, descriptor: &Descriptor) -> Result<Vec<u8>, EncodeError> {
        hurray_format::encode_to_vec(descriptor, &self.buffers())
    }

    /// Encodes the tensor as a container.
    ///
    /// # Errors
    /// As [`hurray_format::encode_to_vec`].
    pub fn to_bytes(&self) -> Result<Vec<u8>, EncodeError> {
        self.encode_with(&self.descriptor())
    }
}

/// Never called: `Descriptor::csf` with an empty shape cannot fail.
#[cold]
fn empty_descriptor() -> Descriptor {
    Descriptor {
        layout: hurray_format::LayoutTag::CSF,
        element_type: ElementType::U8,
        shape: Shape::new(),
        byte_offset: 0,
        nnz: 0,
        mode_order: ModeOrder::new(),
        buffers: hurray_format::BufferTable::new(),
        statistics: None,
        quantization: None,
        shard: None,
    }
}

/// Which coordinate order [`CsfView::to_coo`] writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CooOrder {
    /// Logical dimensions (`index[d]` for dimension `d`).
    Logical,
    /// Storage levels (`c[L]` for level `L`).
    Storage,
}

/// A coordinate list: `indices` holds `rank` coordinates per non-zero, row after row.
#[derive(Clone, Debug, PartialEq)]
pub struct Coo {
    /// Coordinates per entry.
    pub rank: usize,
    /// `len() * rank` coordinates.
    pub indices: Vec<u64>,
    /// One value per entry, dequantized when the tensor is quantized (`None`
    /// only on unvalidated data: a short values buffer, missing parameters).
    pub values: Vec<Option<Value>>,
}

impl Coo {
    /// The number of entries.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Entry `i`'s coordinates.
    pub fn index(&self, i: usize) -> Option<&[u64]> {
        let start = i.checked_mul(self.rank)?;
        self.indices.get(start..start.checked_add(self.rank)?)
    }
}

/// Why a dense array was not made.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DenseError {
    /// The shape holds more elements than the caller's budget.
    #[error("the dense array would hold {elements} elements, over the budget of {budget}")]
    OverBudget {
        /// Elements the shape holds.
        elements: u64,
        /// The caller's budget.
        budget: u64,
    },
    /// The product of the shape overflows `u64`.
    #[error("the shape's element count overflows u64")]
    Overflow,
    /// The requested type is not the type of the tensor's values (its
    /// element type, or `f32` when it is quantized), which this names.
    #[error("the values are {0}, not the requested type")]
    TypeMismatch(ElementType),
}

impl CsfView<'_> {
    /// The non-zeros as a coordinate list, in leaf order. Its size is
    /// proportional to the entries actually stored, never to a length field.
    /// The values are the tensor's values, as [`CsfView::value`] gives them:
    /// dequantized (`Value::F32`) when the tensor is quantized, so that a
    /// list can be rebuilt into the same tensor without its quantization.
    pub fn to_coo(&self, order: CooOrder) -> Coo {
        let mut coo = Coo { rank: self.rank(), indices: Vec::new(), values: Vec::new() };
        match order {
            CooOrder::Logical => self.for_each(|index, leaf| {
                coo.indices.extend_from_slice(index);
                coo.values.push(self.value(leaf, index));
            }),
            // Per-channel quantization needs the logical index beside the
            // storage coordinates: the cursor has both.
            CooOrder::Storage => {
                let mut cursor = self.cursor();
                while cursor.advance() {
                    coo.indices.extend_from_slice(cursor.coords());
                    coo.values.push(cursor.value());
                }
            }
        }
        coo
    }

    /// The tensor as a dense row-major `f64` array of its values (dequantized
    /// when the tensor is quantized), if its shape holds at most `budget`
    /// elements. The budget is what stops a tiny file that declares a huge
    /// shape from allocating without limit.
    ///
    /// # Errors
    /// [`DenseError::OverBudget`] or [`DenseError::Overflow`].
    pub fn to_dense_f64(&self, budget: u64) -> Result<Vec<f64>, DenseError> {
        self.to_dense_with(budget, 0.0, |leaf, index| self.value_f64(leaf, index))
    }

    /// The tensor as a dense row-major array of `T`, the type of its values:
    /// the element type, or `f32` for a quantized tensor (whose values are
    /// dequantized to `f32`; its codes are [`CsfView::values`]).
    ///
    /// # Errors
    /// As [`CsfView::to_dense_f64`], and [`DenseError::TypeMismatch`] when
    /// `T` is not the values' type.
    pub fn to_dense<T: Element + Default>(&self, budget: u64) -> Result<Vec<T>, DenseError> {
        if self.quantization().is_some() {
            if T::TYPE != ElementType::F32 {
                return Err(DenseError::TypeMismatch(ElementType::F32));
            }
            return self.to_dense_with(budget, T::default(), |leaf, index| {
                T::from_le(&self.value_f32(leaf, index)?.to_le_bytes())
            });
        }
        let typed = self.values().typed::<T>().ok_or(DenseError::TypeMismatch(self.element_type()))?;
        self.to_dense_with(budget, T::default(), |leaf, _| typed.get(leaf))
    }

    /// The tensor as a dense row-major array of any `T`: `zero` for an
    /// implicit element, `value(leaf, logical index)` for a stored one (an
    /// entry whose value is `None`, or whose index lies outside the shape,
    /// both only on unvalidated data, stays `zero`). The building block of
    /// [`CsfView::to_dense`], for callers with types of their own (a binding's
    /// byte arrays, say).
    ///
    /// # Errors
    /// [`DenseError::OverBudget`] or [`DenseError::Overflow`].
    pub fn to_dense_with<T: Copy>(
        &self,
        budget: u64,
        zero: T,
        value: impl Fn(usize, &[u64]) -> Option<T>,
    ) -> Result<Vec<T>, DenseError> {
        let elements =
            self.shape().iter().try_fold(1u64, |acc, &d| acc.checked_mul(d)).ok_or(DenseError::Overflow)?;
        if elements > budget {
            return Err(DenseError::OverBudget { elements, budget });
        }
        let len = usize::try_from(elements).map_err(|_| DenseError::Overflow)?;
        let mut dense = alloc::vec![zero; len];
        let shape = self.shape();
        self.for_each(|index, leaf| {
            // Row-major offset; entries outside the shape (unvalidated data) are skipped.
            let mut offset = 0usize;
            for (&i, &extent) in index.iter().zip(shape) {
                if i >= extent {
                    return;
                }
                offset = offset * extent as usize + i as usize;
            }
            if let (Some(slot), Some(v)) = (dense.get_mut(offset), value(leaf, index)) {
                *slot = v;
            }
        });
        Ok(dense)
    }
}
