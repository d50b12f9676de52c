//! Typed access to the values buffer, every element type included.

use hurray_format::{ElementType, Packing};

use crate::scalar;

/// One stored value, in its element type. Narrow floating-point formats keep
/// their raw bits; [`Value::to_f64`] decodes any of them.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum Value {
    /// `bool` (any non-zero byte reads as true).
    Bool(bool),
    /// `i8`
    I8(i8),
    /// `i16`
    I16(i16),
    /// `i32`
    I32(i32),
    /// `i64`
    I64(i64),
    /// `u8`
    U8(u8),
    /// `u16`
    U16(u16),
    /// `u32`
    U32(u32),
    /// `u64`
    U64(u64),
    /// IEEE binary16 bits.
    F16(u16),
    /// bfloat16 bits.
    BF16(u16),
    /// `f32`
    F32(f32),
    /// `f64`
    F64(f64),
    /// FP8 E4M3 bits.
    F8E4M3(u8),
    /// FP8 E5M2 bits.
    F8E5M2(u8),
    /// E8M0 bits.
    E8M0(u8),
    /// FP6 E2M3 bits (low 6).
    F6E2M3(u8),
    /// FP6 E3M2 bits (low 6).
    F6E3M2(u8),
    /// A 4-bit signed integer, sign-extended.
    I4(i8),
    /// A 4-bit unsigned integer.
    U4(u8),
    /// FP4 E2M1 bits (low 4).
    F4E2M1(u8),
    /// An NF4 code (low 4).
    Nf4(u8),
}

impl Value {
    /// The value as `f64` (exact for every type but `i64`/`u64` beyond 2^53).
    /// NF4 codes give their level in `[-1, 1]`, before any scaling.
    pub fn to_f64(self) -> f64 {
        match self {
            Value::Bool(v) => f64::from(u8::from(v)),
            Value::I8(v) | Value::I4(v) => f64::from(v),
            Value::I16(v) => f64::from(v),
            Value::I32(v) => f64::from(v),
            Value::I64(v) => v as f64,
            Value::U8(v) | Value::U4(v) => f64::from(v),
            Value::U16(v) => f64::from(v),
            Value::U32(v) => f64::from(v),
            Value::U64(v) => v as f64,
            Value::F16(b) => f64::from(scalar::f16_to_f32(b)),
            Value::BF16(b) => f64::from(scalar::bf16_to_f32(b)),
            Value::F32(v) => f64::from(v),
            Value::F64(v) => v,
            Value::F8E4M3(b) => f64::from(scalar::f8e4m3_to_f32(b)),
            Value::F8E5M2(b) => f64::from(scalar::f8e5m2_to_f32(b)),
            Value::E8M0(b) => f64::from(scalar::e8m0_to_f32(b)),
            Value::F6E2M3(b) => f64::from(scalar::f6e2m3_to_f32(b)),
            Value::F6E3M2(b) => f64::from(scalar::f6e3m2_to_f32(b)),
            Value::F4E2M1(b) => f64::from(scalar::f4e2m1_to_f32(b)),
            Value::Nf4(b) => f64::from(scalar::nf4_to_f32(b)),
        }
    }

    /// The value as `f32`, rounded to nearest (exact for every type but
    /// `i32`/`u32`/`i64`/`u64` beyond 2^24 and `f64`). NF4 codes give their
    /// level in `[-1, 1]`, before any scaling. Dequantization (`docs/format.md`
    /// § 5.7.3: binary32 arithmetic) reads its operands with this, so that no
    /// double-precision arithmetic is on the value path: on an FPU that has
    /// single precision only (a Cortex-M4F) that is software, and flash.
    pub fn to_f32(self) -> f32 {
        match self {
            Value::Bool(v) => f32::from(u8::from(v)),
            Value::I8(v) | Value::I4(v) => f32::from(v),
            Value::I16(v) => f32::from(v),
            Value::I32(v) => v as f32,
            Value::I64(v) => v as f32,
            Value::U8(v) | Value::U4(v) => f32::from(v),
            Value::U16(v) => f32::from(v),
            Value::U32(v) => v as f32,
            Value::U64(v) => v as f32,
            Value::F16(b) => scalar::f16_to_f32(b),
            Value::BF16(b) => scalar::bf16_to_f32(b),
            Value::F32(v) => v,
            Value::F64(v) => v as f32,
            Value::F8E4M3(b) => scalar::f8e4m3_to_f32(b),
            Value::F8E5M2(b) => scalar::f8e5m2_to_f32(b),
            Value::E8M0(b) => scalar::e8m0_to_f32(b),
            Value::F6E2M3(b) => scalar::f6e2m3_to_f32(b),
            Value::F6E3M2(b) => scalar::f6e3m2_to_f32(b),
            Value::F4E2M1(b) => scalar::f4e2m1_to_f32(b),
            Value::Nf4(b) => scalar::nf4_to_f32(b),
        }
    }

    /// The zero of `element_type`: what an implicit (unstored) element holds.
    pub fn zero(element_type: ElementType) -> Value {
        decode(element_type, [0; 8])
    }
}

/// The values buffer of a CSF tensor: `nnz` elements of one element type,
/// indexed by leaf position, exactly as stored.
///
/// For a quantized tensor these are the quantized *codes*, not the values the
/// tensor means; the accessors say so with `raw` in their names. The values
/// themselves come from the view, which knows the quantization:
/// [`CsfView::value`](crate::CsfView::value), [`CsfView::get`](crate::CsfView::get),
/// [`CsfView::get_f64`](crate::CsfView::get_f64).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Values<'a> {
    element_type: ElementType,
    bytes: &'a [u8],
}

impl<'a> Values<'a> {
    /// The values in `bytes`, packed as `element_type` prescribes.
    pub fn new(element_type: ElementType, bytes: &'a [u8]) -> Self {
        Self { element_type, bytes }
    }

    /// How each element is stored (width, signedness, float format).
    pub fn element_type(&self) -> ElementType {
        self.element_type
    }

    /// The buffer's bytes, exactly as stored (little-endian elements,
    /// sub-byte types packed low nibble first).
    pub fn as_bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// How many elements the buffer can hold (for sub-byte types, including
    /// the padding slot of an odd count).
    pub fn capacity(&self) -> usize {
        match self.element_type.packing() {
            Packing::Bytes(width) => self.bytes.len() / usize::from(width.max(1)),
            Packing::SubByte { per_byte, .. } => self.bytes.len().saturating_mul(usize::from(per_byte)),
        }
    }

    /// The stored element at leaf position `leaf` (for a quantized tensor,
    /// its code), or `None` past the buffer.
    #[inline]
    pub fn get_raw(&self, leaf: usize) -> Option<Value> {
        let mut raw = [0u8; 8];
        match self.element_type.packing() {
            Packing::Bytes(width) => {
                let width = usize::from(width);
                let start = leaf.checked_mul(width)?;
                let src = self.bytes.get(start..start.checked_add(width)?)?;
                raw.get_mut(..width)?.copy_from_slice(src);
            }
            Packing::SubByte { bits, per_byte } => {
                let byte = *self.bytes.get(leaf / usize::from(per_byte))?;
                let shift = (leaf % usize::from(per_byte)) as u32 * u32::from(bits);
                raw[0] = (byte >> shift) & ((1u16 << bits) - 1) as u8;
            }
        }
        Some(decode(self.element_type, raw))
    }

    /// The stored element at `leaf` as `f64` (for a quantized tensor, its
    /// code); see [`Value::to_f64`].
    #[inline]
    pub fn get_raw_f64(&self, leaf: usize) -> Option<f64> {
        self.get_raw(leaf).map(Value::to_f64)
    }

    /// The buffer as a typed array of `T`, when `T` is the element type
    /// (for a quantized tensor, the codes).
    pub fn typed<T: Element>(&self) -> Option<Typed<'a, T>> {
        (self.element_type == T::TYPE)
            .then_some(Typed { bytes: self.bytes, marker: core::marker::PhantomData })
    }
}

/// Decodes one element from its little-endian bytes (sub-byte: the code in `raw[0]`).
fn decode(element_type: ElementType, raw: [u8; 8]) -> Value {
    let [b0, b1, b2, b3, ..] = raw;
    let u16v = u16::from_le_bytes([b0, b1]);
    let u32v = u32::from_le_bytes([b0, b1, b2, b3]);
    let u64v = u64::from_le_bytes(raw);
    match element_type {
        ElementType::Bool => Value::Bool(b0 != 0),
        ElementType::I8 => Value::I8(b0 as i8),
        ElementType::I16 => Value::I16(u16v as i16),
        ElementType::I32 => Value::I32(u32v as i32),
        ElementType::I64 => Value::I64(u64v as i64),
        ElementType::U8 => Value::U8(b0),
        ElementType::U16 => Value::U16(u16v),
        ElementType::U32 => Value::U32(u32v),
        ElementType::U64 => Value::U64(u64v),
        ElementType::F16 => Value::F16(u16v),
        ElementType::BF16 => Value::BF16(u16v),
        ElementType::F32 => Value::F32(f32::from_bits(u32v)),
        ElementType::F64 => Value::F64(f64::from_bits(u64v)),
        ElementType::F8E4M3 => Value::F8E4M3(b0),
        ElementType::F8E5M2 => Value::F8E5M2(b0),
        ElementType::E8M0 => Value::E8M0(b0),
        ElementType::F6E2M3 => Value::F6E2M3(b0 & 0x3f),
        ElementType::F6E3M2 => Value::F6E3M2(b0 & 0x3f),
        // Sign-extend the nibble.
        ElementType::I4 => Value::I4(((b0 << 4) as i8) >> 4),
        ElementType::U4 => Value::U4(b0 & 0x0f),
        ElementType::F4E2M1 => Value::F4E2M1(b0 & 0x0f),
        ElementType::NF4 => Value::Nf4(b0 & 0x0f),
        // `ElementType` is non_exhaustive for users, but this crate matches the
        // version it was built with; a new type decodes as its raw byte.
        #[allow(unreachable_patterns)]
        _ => Value::U8(b0),
    }
}

mod sealed {
    pub trait Sealed {}
}

/// A whole-byte element type with a native Rust equivalent.
pub trait Element: sealed::Sealed + bytemuck::Pod {
    /// The data model's element type whose elements are this Rust type.
    const TYPE: ElementType;
    /// Decodes one element from `size_of::<Self>()` little-endian bytes.
    fn from_le(bytes: &[u8]) -> Option<Self>;
}

macro_rules! element {
    ($($t:ty => $tag:ident),*) => {$(
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const TYPE: ElementType = ElementType::$tag;
            #[inline]
            fn from_le(bytes: &[u8]) -> Option<Self> {
                Some(<$t>::from_le_bytes(bytes.try_into().ok()?))
            }
        }
    )*};
}
element!(i8 => I8, i16 => I16, i32 => I32, i64 => I64, u8 => U8, u16 => U16, u32 => U32, u64 => U64,
    f32 => F32, f64 => F64);

/// The values buffer read as `T`s.
#[derive(Clone, Copy, Debug)]
pub struct Typed<'a, T> {
    bytes: &'a [u8],
    marker: core::marker::PhantomData<T>,
}

impl<'a, T: Element> Typed<'a, T> {
    /// The number of whole elements in the buffer.
    pub fn len(&self) -> usize {
        self.bytes.len() / core::mem::size_of::<T>()
    }

    /// Whether the buffer holds no element.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Element `leaf`, or `None` past the end.
    #[inline]
    pub fn get(&self, leaf: usize) -> Option<T> {
        let width = core::mem::size_of::<T>();
        let start = leaf.checked_mul(width)?;
        T::from_le(self.bytes.get(start..start.checked_add(width)?)?)
    }

    /// The elements as a native slice, without copying, when the machine is
    /// little-endian (or `T` is one byte wide) and the buffer is aligned for
    /// `T` (a partial element at the end is left out); `None` otherwise.
    ///
    /// The cast is bytemuck's checked one (`T` is plain old data, and the
    /// length and alignment are checked), so no `unsafe` is needed here.
    pub fn as_native(&self) -> Option<&'a [T]> {
        // A one-byte element reads the same in either byte order.
        if cfg!(target_endian = "little") || core::mem::size_of::<T>() == 1 {
            let whole = self.len().checked_mul(core::mem::size_of::<T>())?;
            bytemuck::try_cast_slice(self.bytes.get(..whole)?).ok()
        } else {
            None
        }
    }

    /// Every whole element as a slice of `T`: borrowed from the buffer when
    /// it can be ([`Typed::as_native`]: little-endian machine, aligned
    /// buffer), decoded into a copy otherwise (big-endian machine, or a
    /// buffer at an address that is not a multiple of `T`'s alignment). Either
    /// way the same values; the copy is as long as the buffer.
    ///
    /// ```
    /// use std::borrow::Cow;
    /// use csf_core::Values;
    /// use hurray_format::ElementType;
    ///
    /// let bytes: Vec<u8> = [1.5f32, -2.0].iter().flat_map(|v| v.to_le_bytes()).collect();
    /// let typed = Values::new(ElementType::F32, &bytes).typed::<f32>().expect("f32 values");
    /// let values: Cow<'_, [f32]> = typed.to_slice();
    /// assert_eq!(&values[..], &[1.5, -2.0]);
    /// ```
    #[cfg(feature = "alloc")]
    pub fn to_slice(&self) -> alloc::borrow::Cow<'a, [T]> {
        match self.as_native() {
            Some(native) => alloc::borrow::Cow::Borrowed(native),
            None => alloc::borrow::Cow::Owned(self.iter().collect()),
        }
    }

    /// The whole elements in order, decoded from little-endian bytes (any
    /// alignment, any machine).
    pub fn iter(&self) -> impl ExactSizeIterator<Item = T> + 'a {
        self.bytes
            .chunks_exact(core::mem::size_of::<T>())
            .map(|chunk| T::from_le(chunk).unwrap_or_else(T::zeroed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sub_byte_values_unpack_low_nibble_first() {
        // Leaves 0..3 hold i4 values 1, -1, 7, -8.
        let bytes = [0xf1, 0x87];
        let values = Values::new(ElementType::I4, &bytes);
        let got: Vec<_> = (0..4).map(|i| values.get_raw(i)).collect();
        assert_eq!(got, [Some(Value::I4(1)), Some(Value::I4(-1)), Some(Value::I4(7)), Some(Value::I4(-8))]);
        assert_eq!(values.get_raw(4), None);
        assert_eq!(Values::new(ElementType::NF4, &bytes).get_raw_f64(1), Some(1.0));
        assert_eq!(Values::new(ElementType::U4, &bytes).get_raw(3), Some(Value::U4(8)));
    }

    /// `words` as little-endian bytes starting at an address that is 1 mod 8,
    /// so that no type wider than a byte can be borrowed from them.
    fn misaligned<'s, T: Element>(storage: &'s mut Vec<u64>, words: &[T]) -> &'s [u8] {
        let bytes: Vec<u8> = words.iter().flat_map(|w| bytemuck::bytes_of(&le(*w)).to_vec()).collect();
        storage.resize(bytes.len() / 8 + 2, 0);
        let raw: &mut [u8] = bytemuck::cast_slice_mut(storage.as_mut_slice());
        raw[1..=bytes.len()].copy_from_slice(&bytes);
        &raw[1..=bytes.len()]
    }

    /// `v` with its bytes in little-endian order (itself on a little-endian machine).
    fn le<T: Element>(v: T) -> T {
        let mut v = v;
        if cfg!(target_endian = "big") {
            bytemuck::bytes_of_mut(&mut v).reverse();
        }
        v
    }

    #[test]
    #[cfg(feature = "alloc")]
    fn typed_slices_borrow_when_aligned_and_native_and_copy_otherwise() {
        let want = [1.5f64, -2.0, 1e300];
        let words: Vec<u64> = want.iter().map(|v| v.to_bits().to_le()).collect();
        let aligned: &[u8] = bytemuck::cast_slice(&words);
        let typed = Values::new(ElementType::F64, aligned).typed::<f64>().unwrap();
        let slice = typed.to_slice();
        assert_eq!(&slice[..], &want);
        // Borrowed exactly when the machine is little-endian (the buffer is aligned).
        assert_eq!(matches!(slice, std::borrow::Cow::Borrowed(_)), cfg!(target_endian = "little"));
        assert_eq!(typed.as_native().is_some(), cfg!(target_endian = "little"));

        let mut storage = Vec::new();
        let odd = misaligned(&mut storage, &want);
        assert_eq!(odd.as_ptr() as usize % 8, 1);
        let typed = Values::new(ElementType::F64, odd).typed::<f64>().unwrap();
        assert_eq!(typed.as_native(), None, "a misaligned buffer is never borrowed as f64s");
        let slice = typed.to_slice();
        assert!(matches!(slice, std::borrow::Cow::Owned(_)));
        assert_eq!(&slice[..], &want);

        // i16 at an odd address, with a partial element at the end.
        let mut storage = Vec::new();
        let odd = misaligned(&mut storage, &[-2i16, 300, 7]);
        let typed = Values::new(ElementType::I16, &odd[..5]).typed::<i16>().unwrap();
        assert_eq!((typed.len(), &typed.to_slice()[..]), (2, &[-2i16, 300][..]));
        // Single bytes are always aligned: borrowed on any machine.
        let bytes = [1u8, 2, 3];
        let typed = Values::new(ElementType::U8, &bytes).typed::<u8>().unwrap();
        assert!(matches!(typed.to_slice(), std::borrow::Cow::Borrowed(&[1, 2, 3])));
        // The wrong type is refused.
        assert!(Values::new(ElementType::F32, &bytes).typed::<u8>().is_none());
    }

    #[test]
    fn typed_reads_at_odd_addresses_and_in_either_byte_order() {
        let want = [1.5f64, -2.0, 1e300];
        let words: Vec<u64> = want.iter().map(|v| v.to_bits().to_le()).collect();
        let aligned = Values::new(ElementType::F64, bytemuck::cast_slice(&words)).typed::<f64>().unwrap();
        assert_eq!(aligned.as_native().is_some(), cfg!(target_endian = "little"));
        let mut storage = Vec::new();
        let odd = Values::new(ElementType::F64, misaligned(&mut storage, &want)).typed::<f64>().unwrap();
        assert_eq!(odd.as_native(), None);
        for typed in [aligned, odd] {
            assert!(typed.iter().eq(want));
            assert_eq!((typed.get(2), typed.get(3)), (Some(1e300), None));
        }
        let bytes = [1u8, 2, 3];
        let bytes = Values::new(ElementType::U8, &bytes).typed::<u8>().unwrap();
        assert_eq!(bytes.as_native(), Some(&[1u8, 2, 3][..]), "one-byte elements are native on any machine");
    }

    #[test]
    fn typed_access_matches_value_access() {
        let bytes: Vec<u8> = [1.5f32, -2.0].iter().flat_map(|v| v.to_le_bytes()).collect();
        let values = Values::new(ElementType::F32, &bytes);
        let typed = values.typed::<f32>().unwrap();
        assert_eq!(typed.get(1), Some(-2.0));
        assert_eq!(typed.get(2), None);
        assert_eq!(values.get_raw(0), Some(Value::F32(1.5)));
        assert!(values.typed::<f64>().is_none());
        assert_eq!(Value::zero(ElementType::F16).to_f64(), 0.0);
        assert_eq!(Values::new(ElementType::I16, &[0xfe, 0xff, 9]).get_raw(0), Some(Value::I16(-2)));
        assert_eq!(Values::new(ElementType::I16, &[0xfe, 0xff, 9]).get_raw(1), None);
    }
}
