//! The value of a leaf as the tensor means it: the stored element, or for a
//! quantized tensor its dequantized value (`docs/format.md` § 5.7).
//!
//! Layered above [`crate::view`] and [`crate::quant`]: the view holds a
//! [`Quantized`](crate::Quantized), and this module combines the two.

use hurray_format::{ElementType, QuantScheme};

use crate::values::{Element, Typed, Value};
use crate::view::CsfView;

/// Why a tensor's values cannot be read as `T`s ([`CsfView::typed_values`],
/// [`CsfView::for_each_typed`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TypedValuesError {
    /// The values are of another element type than the one asked for.
    #[error("the values are {stored}, not {requested}")]
    TypeMismatch {
        /// The type asked for (`T`'s element type).
        requested: ElementType,
        /// The tensor's element type.
        stored: ElementType,
    },
    /// The tensor is quantized: its values buffer holds codes, and its values
    /// are their dequantized `f32`s, which [`CsfView::for_each_dequantized`]
    /// gives (the codes themselves are [`CsfView::values`]).
    #[error("the values are quantized ({scheme:?}): read them with for_each_dequantized")]
    Quantized {
        /// The quantization scheme.
        scheme: QuantScheme,
    },
    /// Fewer values than leaves: the values buffer, or the descriptor's
    /// `nnz`, does not cover every leaf node (only on unvalidated data).
    #[error("{values} values for {leaves} leaves")]
    ShortValues {
        /// The leaves stored, `n_{rank-1}` (the leaf level's node count).
        leaves: usize,
        /// The values there are: the smaller of `nnz` and the whole
        /// elements in the values buffer.
        values: u64,
    },
}

impl<'a, const MAX: usize> CsfView<'a, MAX> {
    /// The value the leaf at `leaf` (logical index `index`) holds: the stored
    /// element when the tensor is not quantized, and its dequantized value
    /// (`Value::F32`, `docs/format.md` § 5.7.3) when it is. `None` when the
    /// leaf position is not below `nnz` (the descriptor's `nnz` is
    /// authoritative: past it the values buffer holds no value, at most a
    /// padding nibble), the buffer is short, or, for a quantized tensor, the
    /// leaf's group has no parameters; all three only on unvalidated data.
    ///
    /// The index matters only to per-channel quantization, whose group is a
    /// coordinate; iteration hands both out together.
    #[inline]
    pub fn value(&self, leaf: usize, index: &[u64]) -> Option<Value> {
        let q = self.stored(leaf)?;
        match self.quantization() {
            Some(quant) => quant.dequantize(q, leaf, index).map(Value::F32),
            None => Some(q),
        }
    }

    /// The stored element of a leaf below `nnz`.
    #[inline]
    fn stored(&self, leaf: usize) -> Option<Value> {
        if leaf as u64 >= self.nnz() {
            return None;
        }
        self.values().get_raw(leaf)
    }

    /// [`CsfView::value`] as `f64`.
    #[inline]
    pub fn value_f64(&self, leaf: usize, index: &[u64]) -> Option<f64> {
        self.value(leaf, index).map(Value::to_f64)
    }

    /// [`CsfView::value`] as `f32`: dequantized when the tensor is
    /// quantized, converted (and possibly rounded) otherwise.
    #[inline]
    pub fn value_f32(&self, leaf: usize, index: &[u64]) -> Option<f32> {
        let q = self.stored(leaf)?;
        match self.quantization() {
            Some(quant) => quant.dequantize(q, leaf, index),
            None => Some(q.to_f64() as f32),
        }
    }

    /// The value at `index`, dequantized, with implicit zeros as 0; `NaN`
    /// when a stored leaf has no value or parameters (unvalidated data).
    ///
    /// # Errors
    /// As [`CsfView::find`].
    pub fn get_dequantized(&self, index: &[u64]) -> Result<f32, crate::LookupError> {
        Ok(match self.find(index)? {
            Some(leaf) => self.value_f32(leaf, index).unwrap_or(f32::NAN),
            None => 0.0,
        })
    }

    /// Calls `f(logical index, value)` for every non-zero in leaf order, with
    /// the value dequantized (`NaN` where unvalidated data lacks it).
    pub fn for_each_dequantized(&self, mut f: impl FnMut(&[u64], f32)) {
        self.for_each(|index, leaf| f(index, self.value_f32(leaf, index).unwrap_or(f32::NAN)));
    }

    /// The values buffer as `T`s, after checking that every leaf has one:
    /// the tensor is not quantized, `T` is its element type, and `nnz` and
    /// the buffer cover the leaf level's `n_{rank-1}` nodes. Then
    /// [`Typed::get`] of any leaf position that iteration hands out is
    /// `Some`, and `Typed::to_slice` (feature `alloc`) gives the values as
    /// a `Cow<[T]>` (borrowed when the buffer is aligned and the machine
    /// little-endian, a copy otherwise).
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
    /// // `view`: the spec's example, four f32 values.
    /// let values = view.typed_values::<f32>()?;
    /// assert_eq!(values.get(3), Some(4.0)); // leaf 3, (1, 1, 2)
    /// assert!(values.iter().eq([1.0, 2.0, 3.0, 4.0]));
    /// assert!(view.typed_values::<f64>().is_err(), "the values are f32");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`TypedValuesError::Quantized`], [`TypedValuesError::TypeMismatch`]
    /// or [`TypedValuesError::ShortValues`].
    pub fn typed_values<T: Element>(&self) -> Result<Typed<'a, T>, TypedValuesError> {
        if let Some(quantization) = self.quantization() {
            return Err(TypedValuesError::Quantized { scheme: quantization.scheme });
        }
        let stored = self.element_type();
        let typed = self
            .values()
            .typed::<T>()
            .ok_or(TypedValuesError::TypeMismatch { requested: T::TYPE, stored })?;
        let leaves = self.node_count(self.rank().saturating_sub(1));
        let values = self.nnz().min(typed.len() as u64);
        if values < leaves as u64 {
            return Err(TypedValuesError::ShortValues { leaves, values });
        }
        Ok(typed)
    }

    /// Calls `f(logical index, value)` for every non-zero in leaf order, with
    /// the value as a `T`: [`CsfView::for_each`] with the values read in
    /// place, no `Option` or [`Value`] per element. Reads the buffer as a
    /// native slice when it is aligned and the machine little-endian, and
    /// decodes each element's bytes otherwise.
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
    /// // `view`: the spec's example, an f32 tensor.
    /// let mut sum = 0.0;
    /// view.for_each_typed(|_index, value: f32| sum += value)?;
    /// assert_eq!(sum, 10.0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`CsfView::typed_values`], before any call of `f`.
    #[inline]
    pub fn for_each_typed<T: Element>(&self, mut f: impl FnMut(&[u64], T)) -> Result<(), TypedValuesError> {
        let typed = self.typed_values::<T>()?;
        // Every leaf handed out is below n_{rank-1}, which `typed_values`
        // checked the values cover: the zero fallbacks are never taken.
        match typed.as_native() {
            Some(native) => {
                self.for_each(|index, leaf| f(index, native.get(leaf).copied().unwrap_or_else(T::zeroed)))
            }
            None => self.for_each(|index, leaf| f(index, typed.get(leaf).unwrap_or_else(T::zeroed))),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use hurray_format::le::U64Array;

    use super::*;
    use crate::quant::Quantized;
    use crate::values::Values;
    use crate::view::Level;

    /// The spec's example's levels (shape [2, 3, 4]) as little-endian bytes.
    fn level_bytes() -> Vec<(Vec<u8>, Vec<u8>)> {
        let le = |v: &[u64]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        vec![
            (le(&[0, 2]), le(&[0, 1])),
            (le(&[0, 2, 3]), le(&[0, 2, 1])),
            (le(&[0, 1, 2, 4]), le(&[1, 3, 0, 2])),
        ]
    }

    fn levels(bytes: &[(Vec<u8>, Vec<u8>)]) -> Vec<Level<'_>> {
        bytes
            .iter()
            .map(|(p, c)| Level { pos: U64Array::new(p).unwrap(), crd: U64Array::new(c).unwrap() })
            .collect()
    }

    /// `bytes` copied to an address that is 1 mod 8 (inside `storage`).
    fn at_odd_address<'s>(storage: &'s mut Vec<u64>, bytes: &[u8]) -> &'s [u8] {
        storage.resize(bytes.len() / 8 + 2, 0);
        let raw: &mut [u8] = bytemuck::cast_slice_mut(storage.as_mut_slice());
        raw[1..=bytes.len()].copy_from_slice(bytes);
        &raw[1..=bytes.len()]
    }

    fn typed_entries(view: &CsfView<'_>) -> Vec<(Vec<u64>, f64)> {
        let mut seen = Vec::new();
        view.for_each_typed(|index, v: f64| seen.push((index.to_vec(), v))).unwrap();
        seen
    }

    #[test]
    fn for_each_typed_reads_aligned_and_misaligned_values_alike() {
        let want = [1.5f64, -2.0, 3.25, 1e300];
        let words: Vec<u64> = want.iter().map(|v| v.to_bits().to_le()).collect();
        let aligned: &[u8] = bytemuck::cast_slice(&words);
        let mut storage = Vec::new();
        let odd = at_odd_address(&mut storage, aligned);
        let bytes = level_bytes();
        let levels = levels(&bytes);
        let view = |values| {
            CsfView::builder(ElementType::F64, &[2, 3, 4]).levels(&levels).values(values).build().unwrap()
        };
        let (aligned, odd) = (view(aligned), view(odd));
        assert_eq!(odd.typed_values::<f64>().unwrap().as_native(), None, "never borrowed at an odd address");
        let mut by_value = Vec::new();
        aligned
            .for_each(|index, leaf| by_value.push((index.to_vec(), aligned.value_f64(leaf, index).unwrap())));
        assert_eq!(typed_entries(&aligned), by_value);
        assert_eq!(typed_entries(&odd), by_value);
        assert_eq!(by_value[3], (vec![1, 1, 2], 1e300));
    }

    #[test]
    fn typed_reads_refuse_what_they_cannot_read() {
        let bytes = level_bytes();
        let levels = levels(&bytes);
        let f32s: Vec<u8> = [1.0f32, 2.0, 3.0, 4.0].iter().flat_map(|v| v.to_le_bytes()).collect();
        let builder = CsfView::builder(ElementType::F32, &[2, 3, 4]).levels(&levels);
        let view = builder.values(&f32s).build().unwrap();
        assert!(view.typed_values::<f32>().is_ok());
        let mismatch =
            TypedValuesError::TypeMismatch { requested: ElementType::F64, stored: ElementType::F32 };
        assert_eq!(view.typed_values::<f64>().err(), Some(mismatch));
        assert_eq!(view.for_each_typed(|_, _: f64| panic!("never called")), Err(mismatch));
        assert_eq!(mismatch.to_string(), "the values are f32, not f64");

        // Three values for four leaves, by the buffer or by nnz.
        let short = builder.values(&f32s[..12]).build().unwrap();
        let want = TypedValuesError::ShortValues { leaves: 4, values: 3 };
        assert_eq!(short.for_each_typed(|_, _: f32| panic!("never called")), Err(want));
        assert_eq!(builder.values(&f32s).nnz(3).build().unwrap().typed_values::<f32>().err(), Some(want));

        let scales = 0.5f32.to_le_bytes();
        let quantized = CsfView::builder(ElementType::U8, &[2, 3, 4])
            .levels(&levels)
            .values(&[1, 2, 3, 4])
            .quantization(Quantized {
                scheme: QuantScheme::PerTensor,
                axis: 0,
                block_size: 0,
                scales: Values::new(ElementType::F32, &scales),
                zero_points: None,
            })
            .build()
            .unwrap();
        assert_eq!(
            quantized.typed_values::<f32>().err(),
            Some(TypedValuesError::Quantized { scheme: QuantScheme::PerTensor })
        );
        let mut dequantized = Vec::new();
        quantized.for_each_dequantized(|_, v| dequantized.push(v));
        assert_eq!(dequantized, [0.5, 1.0, 1.5, 2.0]);
    }
}
