//! Owned tensors and conversions that allocate (feature `alloc`).

use alloc::vec::Vec;

use hurray_format::le::U64Array;
use hurray_format::{BufferEntry, Descriptor, ElementType, EncodeError, ModeOrder, Shape};

use crate::parts::PartsError;
use crate::values::{Element, Value};
use crate::view::{CsfView, Level};

/// A CSF tensor that owns its arrays and lends a [`CsfView`].
///
/// `pos`/`crd` are kept in file byte order (little-endian words), so the view
/// and the encoder borrow them without conversion.
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
/// use csf_core::OwnedCsf;
/// // `view`: the spec's example, borrowed from a file's bytes.
/// let owned = OwnedCsf::from_view(&view); // a copy that outlives the bytes
/// let again = owned.to_bytes()?;           // encoded as a container again
/// assert_eq!(again, bytes);
/// assert_eq!(owned.view().get_f64(&[1, 1, 2])?, 4.0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct OwnedCsf {
    element_type: ElementType,
    shape: Vec<u64>,
    mode_order: Vec<u32>,
    nnz: u64,
    /// `pos_L` and `crd_L` per level, as little-endian words (`x.to_le()`).
    levels: Vec<OwnedLevel>,
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

/// One level of an [`OwnedCsf`]: `pos_L` and `crd_L` as owned words, the
/// owned counterpart of [`Level`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OwnedLevel {
    /// `pos_L`: the children of parent `p` are the nodes
    /// `pos_L[p] .. pos_L[p + 1]` of this level (`n_{L-1} + 1` entries).
    pub pos: Vec<u64>,
    /// `crd_L`: the coordinate of each node of this level along dimension
    /// `mode_order[L]` (`n_L` entries).
    pub crd: Vec<u64>,
}

impl OwnedLevel {
    /// A level from its `pos_L` and `crd_L` arrays.
    pub fn new(pos: Vec<u64>, crd: Vec<u64>) -> Self {
        Self { pos, crd }
    }
}

/// Builds an [`OwnedCsf`] from owned arrays, made by [`OwnedCsf::builder`];
/// the owned counterpart of [`ViewBuilder`](crate::ViewBuilder), with the
/// same defaults and checks.
///
/// ```
/// use csf_core::{OwnedCsf, OwnedLevel};
/// use hurray_format::ElementType;
///
/// // The CSF spec's example, shape [2, 3, 4], as ordinary `u64`s.
/// let tensor = OwnedCsf::builder(ElementType::F32, vec![2, 3, 4])
///     .levels(vec![
///         OwnedLevel::new(vec![0, 2], vec![0, 1]),
///         OwnedLevel::new(vec![0, 2, 3], vec![0, 2, 1]),
///         OwnedLevel::new(vec![0, 1, 2, 4], vec![1, 3, 0, 2]),
///     ])
///     .values([1.0f32, 2.0, 3.0, 4.0].iter().flat_map(|v| v.to_le_bytes()).collect())
///     .build()?;
/// assert_eq!(tensor.view().get_f64(&[1, 1, 2])?, 4.0);
/// let bytes = tensor.to_bytes()?; // a container, as a file holds it
/// # assert!(bytes.len() > 64);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct OwnedCsfBuilder {
    element_type: ElementType,
    shape: Vec<u64>,
    mode_order: Option<Vec<u32>>,
    nnz: Option<u64>,
    levels: Vec<OwnedLevel>,
    values: Option<Vec<u8>>,
    quantization: Option<OwnedQuantization>,
}

impl OwnedCsfBuilder {
    /// `mode_order[L]`: the logical dimension stored at level `L`. Default:
    /// the identity.
    #[inline]
    pub fn mode_order(mut self, mode_order: Vec<u32>) -> Self {
        self.mode_order = Some(mode_order);
        self
    }

    /// The descriptor's `nnz`. Default: the leaf level's node count.
    #[inline]
    pub fn nnz(mut self, nnz: u64) -> Self {
        self.nnz = Some(nnz);
        self
    }

    /// The levels, outermost first, as ordinary (native) `u64`s. Required:
    /// one per dimension.
    #[inline]
    pub fn levels(mut self, levels: Vec<OwnedLevel>) -> Self {
        self.levels = levels;
        self
    }

    /// The values buffer, packed as the element type prescribes. Required,
    /// even when empty.
    #[inline]
    pub fn values(mut self, values: Vec<u8>) -> Self {
        self.values = Some(values);
        self
    }

    /// Declares the values quantized (the values buffer holds the codes).
    /// Default: not quantized.
    #[inline]
    pub fn quantization(mut self, quantization: OwnedQuantization) -> Self {
        self.quantization = Some(quantization);
        self
    }

    /// The tensor. The storage invariants are not checked here (that is
    /// `csf-validate`'s job); the checks are those of [`ViewBuilder::build`](crate::ViewBuilder::build),
    /// `O(rank)`.
    ///
    /// # Errors
    /// As [`ViewBuilder::build`](crate::ViewBuilder::build).
    #[inline]
    pub fn build(self) -> Result<OwnedCsf, PartsError> {
        let rank = self.shape.len();
        let order_len = self.mode_order.as_ref().map(Vec::len);
        crate::parts::check_parts(rank, order_len, self.levels.len(), self.values.is_some())?;
        let mut levels = self.levels;
        if cfg!(target_endian = "big") {
            for level in &mut levels {
                level.pos.iter_mut().chain(&mut level.crd).for_each(|x| *x = x.to_le());
            }
        }
        let leaves = levels.last().map_or(0, |l| l.crd.len());
        Ok(OwnedCsf {
            element_type: self.element_type,
            mode_order: self.mode_order.unwrap_or_else(|| (0..rank as u32).collect()),
            shape: self.shape,
            nnz: self.nnz.unwrap_or(leaves as u64),
            levels,
            values: self.values.unwrap_or_default(),
            quantization: self.quantization,
        })
    }
}

impl OwnedCsf {
    /// A builder for a tensor of `element_type` and logical `shape` from
    /// owned arrays; see [`OwnedCsfBuilder`].
    #[inline]
    pub fn builder(element_type: ElementType, shape: Vec<u64>) -> OwnedCsfBuilder {
        OwnedCsfBuilder {
            element_type,
            shape,
            mode_order: None,
            nnz: None,
            levels: Vec::new(),
            values: None,
            quantization: None,
        }
    }

    /// A copy of a view's arrays.
    pub fn from_view<const MAX: usize>(view: &CsfView<'_, MAX>) -> Self {
        let words = |a: U64Array<'_>| a.iter().map(u64::to_le).collect::<Vec<_>>();
        Self {
            element_type: view.element_type(),
            shape: view.shape().to_vec(),
            mode_order: view.mode_order().to_vec(),
            nnz: view.nnz(),
            levels: view
                .levels()
                .iter()
                .map(|l| OwnedLevel { pos: words(l.pos), crd: words(l.crd) })
                .collect(),
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

    fn try_view(&self) -> Result<CsfView<'_>, PartsError> {
        let mut levels = [Level::default(); hurray_format::limits::MAX_RANK];
        for (slot, level) in levels.iter_mut().zip(&self.levels) {
            *slot =
                Level { pos: U64Array::from_le_words(&level.pos), crd: U64Array::from_le_words(&level.crd) };
        }
        let levels = levels
            .get(..self.levels.len())
            .ok_or(PartsError::LevelCount { levels: self.levels.len(), rank: self.shape.len() })?;
        let builder = CsfView::builder(self.element_type, &self.shape)
            .mode_order(&self.mode_order)
            .nnz(self.nnz)
            .levels(levels)
            .values(&self.values);
        let builder = match &self.quantization {
            None => builder,
            Some(q) => builder.quantization(crate::Quantized {
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
        };
        builder.build()
    }

    /// The tensor as a borrowed view.
    pub fn view(&self) -> CsfView<'_> {
        // `build` and `from_view` only make owned tensors whose view succeeds.
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
        for level in &self.levels {
            out.push(bytemuck::cast_slice(&level.pos));
            out.push(bytemuck::cast_slice(&level.crd));
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

/// A tensor's non-zeros as coordinate-list (COO) arrays, what
/// [`CsfView::to_coo`] returns: `indices` holds `rank` coordinates per
/// non-zero, row after row, and `values` one value per non-zero.
///
/// Named for what it holds, owned arrays, apart from `csf_build`'s COO input
/// (borrowed slices that a build reads), so that a program using both crates
/// needs no alias.
#[derive(Clone, Debug, PartialEq)]
pub struct CooArrays {
    /// The number of coordinates per entry: the tensor's rank.
    pub rank: usize,
    /// The entries' coordinates, `rank` per entry, row-major (`len() * rank`
    /// in all), in the order [`CooOrder`] asked for.
    pub indices: Vec<u64>,
    /// One value per entry, dequantized when the tensor is quantized (`None`
    /// only on unvalidated data: a short values buffer, missing parameters).
    pub values: Vec<Option<Value>>,
}

impl CooArrays {
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

impl<const MAX: usize> CsfView<'_, MAX> {
    /// The non-zeros as a coordinate list, in leaf order. Its size is
    /// proportional to the entries actually stored, never to a length field.
    /// The values are the tensor's values, as [`CsfView::value`] gives them:
    /// dequantized (`Value::F32`) when the tensor is quantized, so that a
    /// list can be rebuilt into the same tensor without its quantization.
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
    /// use csf_core::{CooOrder, Value};
    /// // `view`: the spec's example.
    /// let coo = view.to_coo(CooOrder::Logical);
    /// assert_eq!((coo.len(), coo.rank), (4, 3));
    /// assert_eq!(coo.index(3), Some(&[1, 1, 2][..]));
    /// assert_eq!(coo.values[3], Some(Value::F32(4.0)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn to_coo(&self, order: CooOrder) -> CooArrays {
        let mut coo = CooArrays { rank: self.rank(), indices: Vec::new(), values: Vec::new() };
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
