//! Appending a part's values: whole bytes as they are, 4-bit codes repacked
//! when the output's last byte is half full, with the statistics gathered
//! and the value-content rules of `docs/format.md` § 2.1 checked on the way.

use csf_core::Values;
use csf_validate::{Rule, Violation};
use hurray_format::{csf, ElementType, Packing, Statistics};

use super::{ArraySink, ConcatError, CHUNK};

/// Bytes handed to the sink at a time.
const CHUNK_BYTES: usize = CHUNK * 8;

/// The values side of a joiner: O(1) state between parts.
#[derive(Debug)]
pub(super) struct ValueWriter {
    element_type: ElementType,
    /// For sub-byte types, the output's last byte while it is not full, and
    /// how many elements it holds.
    partial: u8,
    filled: u8,
    min: Option<f64>,
    max: Option<f64>,
    buf: Vec<u8>,
}

impl ValueWriter {
    pub(super) fn new(element_type: ElementType) -> Self {
        Self { element_type, partial: 0, filled: 0, min: None, max: None, buf: Vec::new() }
    }

    /// Appends the `nnz` values of a part whose buffer has been checked to
    /// hold exactly `nnz` elements (the leaves of level `leaf`).
    pub(super) fn append<S: ArraySink>(
        &mut self,
        part: usize,
        leaf: usize,
        values: Values<'_>,
        nnz: u64,
        sink: &mut S,
    ) -> Result<(), ConcatError<S::Error>> {
        let bytes = values.as_bytes();
        let Ok(leaves) = usize::try_from(nnz) else {
            // Unreachable: the buffer, in memory, holds nnz elements.
            return Err(ConcatError::Overflow { part, level: leaf });
        };
        match self.element_type.packing() {
            Packing::Bytes(width) => {
                let width = usize::from(width.max(1));
                // Whole chunks of elements, so that the statistics read
                // each chunk while it is in cache.
                for (c, chunk) in bytes.chunks(CHUNK_BYTES / width * width).enumerate() {
                    let first = c * (CHUNK_BYTES / width);
                    let end = (first + chunk.len() / width).min(leaves);
                    self.see_all(values, first..end);
                    check_contents(self.element_type, chunk, first)
                        .map_err(|violation| ConcatError::Invalid { part, violation })?;
                    sink.values(chunk).map_err(ConcatError::Sink)?;
                }
            }
            Packing::SubByte { bits, per_byte } => {
                let mask = ((1u16 << bits) - 1) as u8;
                for leaf in 0..leaves {
                    let byte = bytes.get(leaf / usize::from(per_byte)).copied().unwrap_or(0);
                    let code = (byte >> ((leaf % usize::from(per_byte)) as u32 * u32::from(bits))) & mask;
                    self.see_all(values, leaf..leaf + 1);
                    self.partial |= code << (u32::from(self.filled) * u32::from(bits));
                    self.filled += 1;
                    if self.filled == per_byte {
                        self.buf.push(self.partial);
                        (self.partial, self.filled) = (0, 0);
                        if self.buf.len() >= CHUNK_BYTES {
                            sink.values(&self.buf).map_err(ConcatError::Sink)?;
                            self.buf.clear();
                        }
                    }
                }
                if !self.buf.is_empty() {
                    sink.values(&self.buf).map_err(ConcatError::Sink)?;
                    self.buf.clear();
                }
            }
        }
        Ok(())
    }

    /// Writes the last, partly filled byte of 4-bit values (its unused bits
    /// zero, `docs/format.md` § 2.1).
    pub(super) fn finish<S: ArraySink>(&mut self, sink: &mut S) -> Result<(), S::Error> {
        if self.filled > 0 {
            sink.values(&[self.partial])?;
            (self.partial, self.filled) = (0, 0);
        }
        Ok(())
    }

    /// The statistics section for `nnz` values in a tensor of `shape`,
    /// computed as [`crate::statistics`] does (the same product, the same
    /// fold in leaf order), so that the two agree bit for bit.
    pub(super) fn statistics(&self, shape: &[u64], nnz: u64) -> Statistics {
        let total = shape.iter().map(|&d| d as f64).product::<f64>();
        let sparsity_ratio = if total > 0.0 { 1.0 - nnz as f64 / total } else { 0.0 };
        Statistics { nnz, sparsity_ratio, min: self.min, max: self.max }
    }

    /// Folds leaves `range` into the min and max, NaNs skipped, as
    /// [`crate::statistics`] does.
    fn see_all(&mut self, values: Values<'_>, range: std::ops::Range<usize>) {
        for v in range.filter_map(|leaf| values.get_raw_f64(leaf)) {
            if !v.is_nan() {
                self.min = Some(self.min.map_or(v, |m| m.min(v)));
                self.max = Some(self.max.map_or(v, |m| m.max(v)));
            }
        }
    }
}

/// `docs/format.md` § 2.1 on whole-byte elements: a `bool` byte is 0 or 1,
/// and the two high bits of an FP6 byte are zero. `first` is the element
/// index of `chunk[0]` (both types are one byte wide).
fn check_contents(element_type: ElementType, chunk: &[u8], first: usize) -> Result<(), Violation> {
    let bad = |rule, found: u8, expected, i: usize| Violation {
        rule,
        level: None,
        buffer: Some(csf::VALUES_BUFFER),
        index: Some((first + i) as u64),
        found: u64::from(found),
        expected,
    };
    match element_type {
        ElementType::Bool => match chunk.iter().position(|&b| b > 1) {
            Some(i) => Err(bad(Rule::BoolValue, chunk.get(i).copied().unwrap_or(0), 1, i)),
            None => Ok(()),
        },
        ElementType::F6E2M3 | ElementType::F6E3M2 => match chunk.iter().position(|&b| b & 0xc0 != 0) {
            Some(i) => Err(bad(Rule::ValuesPadding, chunk.get(i).copied().unwrap_or(0) >> 6, 0, i)),
            None => Ok(()),
        },
        _ => Ok(()),
    }
}
