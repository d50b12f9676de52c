//! The value of a leaf as the tensor means it: the stored element, or for a
//! quantized tensor its dequantized value (`docs/format.md` § 5.7).
//!
//! Layered above [`crate::view`] and [`crate::quant`]: the view holds a
//! [`Quantized`](crate::Quantized), and this module combines the two.

use crate::values::Value;
use crate::view::CsfView;

impl<'a> CsfView<'a> {
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
}
