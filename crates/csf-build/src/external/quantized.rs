//! Quantization of an external build, with [`quantize`](crate::quantize())'s
//! own arithmetic in two passes: the parts' values are observed as they are
//! joined (each group's range; for per-channel schemes, each leaf's channel,
//! spilled), then the joined values file is read once more and encoded.

use std::path::PathBuf;

use csf_core::{CsfView, Quantized, Values};
use hurray_format::{ElementType, QuantScheme, Statistics};

use super::spill::{SpillDir, SpillWriter};
use super::ExternalError;
use crate::quantize::{check_finite, Fitted, Plan, Ranges};
use crate::{BuildError, Quantize};

/// Leaves encoded at a time in the second pass (even, so that 4-bit codes
/// of consecutive chunks pack alike).
const CHUNK_LEAVES: usize = 1 << 16;

/// The first pass: what the parts' values say about the parameters.
pub(super) struct Observer {
    plan: Plan,
    ranges: Ranges,
    /// Per-channel only: each leaf's channel (`u64`, little-endian), in leaf order.
    channels: Option<SpillWriter>,
}

impl Observer {
    pub(super) fn new(spec: Quantize, shape: &[u64], dir: &mut SpillDir) -> Result<Self, ExternalError> {
        let plan = Plan::new(spec, shape).map_err(BuildError::from)?;
        let channels = match plan.scheme {
            QuantScheme::PerChannel => Some(SpillWriter::create(dir.new_file("channels"), 1 << 16)?),
            _ => None,
        };
        Ok(Self { ranges: Ranges::new(&plan, 0), plan, channels })
    }

    /// Takes in a built part whose first leaf is leaf `first_leaf` of the whole.
    pub(super) fn observe(&mut self, part: &CsfView<'_>, first_leaf: u64) -> Result<(), ExternalError> {
        let nnz = usize::try_from(part.nnz()).unwrap_or(usize::MAX);
        let values = part.values();
        let x: Vec<f64> = (0..nnz).map(|leaf| values.get_raw_f64(leaf).unwrap_or(f64::NAN)).collect();
        check_finite(&x, first_leaf).map_err(BuildError::from)?;
        match &mut self.channels {
            Some(channels) => {
                let axis = self.plan.axis as usize;
                let mut group = vec![0u64; nnz];
                part.for_each(|index, leaf| group[leaf] = index[axis]);
                let mut bytes = Vec::with_capacity(nnz * 8);
                for (&g, &v) in group.iter().zip(&x) {
                    self.ranges.observe(g as usize, v);
                    bytes.extend_from_slice(&g.to_le_bytes());
                }
                channels.write(&bytes)?;
            }
            None => {
                for (i, &v) in x.iter().enumerate() {
                    self.ranges.observe(self.plan.group_of_leaf(first_leaf + i as u64), v);
                }
            }
        }
        Ok(())
    }

    /// The second pass: encodes the joined values (`values`, of
    /// `element_type`, `nnz` leaves) into a new spill file, and gives it with
    /// its length, the fitted parameters, and the statistics' min and max of
    /// the dequantized values (as [`statistics`](crate::statistics()) finds them).
    pub(super) fn encode(
        self,
        dir: &mut SpillDir,
        values: &std::path::Path,
        element_type: ElementType,
        nnz: u64,
    ) -> Result<Encoded, ExternalError> {
        let fitted = self.plan.fit(&self.ranges).map_err(BuildError::from)?;
        let channel_file = match self.channels {
            Some(writer) => Some(writer.finish()?.0),
            None => None,
        };
        let mut input = super::spill::ByteReader::open(values)?;
        let mut channels = match &channel_file {
            Some(path) => Some(super::spill::ByteReader::open(path)?),
            None => None,
        };
        let mut output = SpillWriter::create(dir.new_file("quantized"), 1 << 16)?;
        let mut dequantizer = Dequantizer::new(&fitted, self.plan.axis as usize);
        let (mut min, mut max) = (None::<f64>, None::<f64>);
        let (mut raw, mut channel_bytes) = (Vec::new(), Vec::new());
        let mut leaf = 0u64;
        while leaf < nnz {
            let count = usize::try_from((nnz - leaf).min(CHUNK_LEAVES as u64)).unwrap_or(CHUNK_LEAVES);
            let raw_len = usize::try_from(element_type.values_len(count as u64).unwrap_or(0)).unwrap_or(0);
            input.read_exact(&mut raw, raw_len)?;
            let chunk = Values::new(element_type, &raw);
            let x: Vec<f64> = (0..count).map(|i| chunk.get_raw_f64(i).unwrap_or(f64::NAN)).collect();
            let group: Vec<usize> = match &mut channels {
                Some(reader) => {
                    reader.read_exact(&mut channel_bytes, count * 8)?;
                    channel_bytes
                        .chunks_exact(8)
                        .map(|c| usize::try_from(le_u64(c)).unwrap_or(usize::MAX))
                        .collect()
                }
                None => (0..count).map(|i| self.plan.group_of_leaf(leaf + i as u64)).collect(),
            };
            let packed = fitted.encode(&x, &group);
            let codes = Values::new(fitted.dtype(), &packed);
            for (i, &g) in group.iter().enumerate() {
                let code = codes.get_raw(i);
                if let Some(v) = code.and_then(|q| dequantizer.value(q, leaf + i as u64, g)) {
                    let v = f64::from(v);
                    if !v.is_nan() {
                        min = Some(min.map_or(v, |m| m.min(v)));
                        max = Some(max.map_or(v, |m| m.max(v)));
                    }
                }
            }
            output.write(&packed)?;
            leaf += count as u64;
        }
        let (path, length) = output.finish()?;
        let (dtype, quantization) = fitted.into_parts();
        Ok(Encoded { values: path, length, dtype, quantization, min, max })
    }
}

fn le_u64(bytes: &[u8]) -> u64 {
    let mut word = [0u8; 8];
    word.copy_from_slice(bytes);
    u64::from_le_bytes(word)
}

/// What the second pass made.
pub(super) struct Encoded {
    pub(super) values: PathBuf,
    pub(super) length: u64,
    pub(super) dtype: ElementType,
    pub(super) quantization: csf_core::OwnedQuantization,
    min: Option<f64>,
    max: Option<f64>,
}

impl Encoded {
    /// The statistics section: the join's counts with the dequantized range.
    pub(super) fn statistics(&self, joined: Statistics) -> Statistics {
        Statistics { min: self.min, max: self.max, ..joined }
    }
}

/// csf-core's dequantization, over the fitted parameters.
struct Dequantizer<'a> {
    quantized: Quantized<'a>,
    /// A logical index whose `axis` entry carries the channel.
    index: Vec<u64>,
}

impl<'a> Dequantizer<'a> {
    fn new(fitted: &'a Fitted, axis: usize) -> Self {
        let q = fitted.quantization();
        let section = q.section;
        let quantized = Quantized {
            scheme: section.scheme,
            axis,
            block_size: section.block_size,
            scales: Values::new(section.scale_type, &q.scales),
            zero_points: match (section.zero_point_type, &q.zero_points) {
                (Some(ty), Some(bytes)) => Some(Values::new(ty, bytes)),
                _ => None,
            },
        };
        Self { quantized, index: vec![0; axis + 1] }
    }

    fn value(&mut self, code: csf_core::Value, leaf: u64, group: usize) -> Option<f32> {
        let leaf = usize::try_from(leaf).ok()?;
        if let Some(slot) = self.index.get_mut(self.quantized.axis) {
            *slot = group as u64;
        }
        self.quantized.dequantize(code, leaf, &self.index)
    }
}

// 4-bit codes pack two per byte: chunks of an even number of leaves pack,
// one after the other, as the whole array would.
const _: () = assert!(CHUNK_LEAVES % 2 == 0);
