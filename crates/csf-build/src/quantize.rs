//! Quantizing the values of a built tensor (`docs/format.md` § 5.7.4).
//!
//! Integer schemes round to nearest, ties to even, so the error of every
//! value within its group's range is at most half a scale step; NF4 picks the
//! nearest NormalFloat level; MXFP follows OCP Microscaling v1.0 (shared
//! power-of-two scale per 32 leaves, elements rounded to nearest even and
//! saturated). Scales are binary32: a group that no finite binary32 scale
//! covers, or a negative value for an unsigned type without zero points, is
//! refused, never stored as NaN, an infinity or 0 (§ 5.7.4, "Range").

use csf_core::{scalar, OwnedCsf, OwnedQuantization};
use hurray_format::{ElementType, QuantScheme, Quantization};

use crate::BuildError;

/// The most channels a per-channel scheme takes (1 GiB of `f32` scales).
pub const MAX_CHANNELS: u64 = 1 << 28;

/// How to quantize the values while building.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Quantize {
    /// One scale for the whole tensor.
    PerTensor {
        /// The stored type: an integer type or `f8e4m3`/`f8e5m2`.
        dtype: ElementType,
        /// Asymmetric, with a zero point (integer types only).
        zero_point: bool,
    },
    /// One scale per index of a logical axis.
    PerChannel {
        /// The logical axis.
        axis: u32,
        /// As for `PerTensor`.
        dtype: ElementType,
        /// As for `PerTensor`.
        zero_point: bool,
    },
    /// One scale per block of `block_size` consecutive leaves.
    PerBlock {
        /// Leaves per block.
        block_size: u64,
        /// As for `PerTensor`.
        dtype: ElementType,
        /// As for `PerTensor`.
        zero_point: bool,
    },
    /// NF4 codes with one absmax per block.
    Nf4 {
        /// Leaves per block (64 is the QLoRA default).
        block_size: u64,
    },
    /// OCP Microscaling: elements of `dtype` sharing one E8M0 scale per 32 leaves.
    Mxfp {
        /// `f8e4m3`, `f8e5m2`, `f6e2m3`, `f6e3m2` or `f4e2m1`.
        dtype: ElementType,
    },
}

/// A quantization scheme written as text was not understood.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ParseQuantizeError(String);

/// The text form of a scheme, shared by every front end (the `hurray` tool's
/// `--quantize`, the Python package's `quantize=`): `SCHEME[:OPTION...]` with
/// `SCHEME` one of `per-tensor`, `per-channel` (needs `axis=N`),
/// `per-block` (`block=N`, default 64), `nf4` (`block=N`, default 64) or
/// `mxfp`, and options a stored type by name (`i8` by default for the integer
/// schemes, `f8e4m3` for MXFP) and `zp` (or `asym`) for zero points.
///
/// ```
/// use csf_build::Quantize;
/// use hurray_format::ElementType;
/// let q: Quantize = "per-block:block=32:i4".parse().unwrap();
/// assert_eq!(q, Quantize::PerBlock { block_size: 32, dtype: ElementType::I4, zero_point: false });
/// assert!("per-channel".parse::<Quantize>().is_err(), "per-channel needs an axis");
/// ```
impl core::str::FromStr for Quantize {
    type Err = ParseQuantizeError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let fail = |message: String| ParseQuantizeError(message);
        let mut parts = text.split(':');
        let scheme = parts.next().unwrap_or_default();
        let (mut dtype, mut zero_point, mut axis, mut block) = (None, false, None, None);
        for option in parts {
            let number =
                |v: &str| v.parse::<u64>().map_err(|_| fail(format!("'{option}': '{v}' is not a number")));
            match option.split_once('=') {
                Some(("axis", v)) => axis = Some(number(v)?),
                Some(("block", v)) => block = Some(number(v)?),
                None if option == "zp" || option == "asym" => zero_point = true,
                None => {
                    dtype = Some(
                        ElementType::from_name(option)
                            .ok_or_else(|| fail(format!("unknown quantize option '{option}'")))?,
                    )
                }
                Some(_) => return Err(fail(format!("unknown quantize option '{option}'"))),
            }
        }
        let integer = dtype.unwrap_or(ElementType::I8);
        Ok(match scheme {
            "per-tensor" => Quantize::PerTensor { dtype: integer, zero_point },
            "per-channel" => Quantize::PerChannel {
                axis: u32::try_from(axis.ok_or_else(|| fail("per-channel needs axis=N".into()))?)
                    .map_err(|_| fail("axis is too large".into()))?,
                dtype: integer,
                zero_point,
            },
            "per-block" => Quantize::PerBlock { block_size: block.unwrap_or(64), dtype: integer, zero_point },
            "nf4" => Quantize::Nf4 { block_size: block.unwrap_or(64) },
            "mxfp" => Quantize::Mxfp { dtype: dtype.unwrap_or(ElementType::F8E4M3) },
            other => {
                return Err(fail(format!(
                    "unknown quantization scheme '{other}' (per-tensor, per-channel, per-block, nf4, mxfp)"
                )))
            }
        })
    }
}

/// Why values could not be quantized.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum QuantizeError {
    /// The scheme cannot store this type, or the axis / block size is invalid.
    #[error("cannot quantize: {0}")]
    Unsupported(&'static str),
    /// A value is NaN or infinite.
    #[error("leaf {leaf} holds {value}, which cannot be quantized")]
    NotFinite {
        /// The leaf position.
        leaf: usize,
        /// The value.
        value: f64,
    },
    /// A group holds a value too large for the scheme's binary32 arithmetic:
    /// its scale, or what a code of the group dequantizes to (`docs/format.md`
    /// § 5.7.3), would be infinite.
    #[error(
        "quantization group {group} holds {value}, too large in magnitude for the scheme's binary32 scales"
    )]
    TooLarge {
        /// The group: the block, or the channel's index (0 per tensor).
        group: usize,
        /// The group's value of the largest magnitude.
        value: f64,
    },
    /// A group of an unsigned type without zero points holds a negative
    /// value, which the symmetric scheme would store as 0.
    #[error(
        "quantization group {group} holds {value}: an unsigned type without a zero point stores no negative value (use a zero point or a signed type)"
    )]
    Negative {
        /// The group, as for `TooLarge`.
        group: usize,
        /// The group's most negative value.
        value: f64,
    },
}

/// Quantizes `tensor`'s values (any real-valued type) with `spec`. A tensor
/// that is already quantized is re-quantized from its dequantized values.
///
/// # Errors
/// [`QuantizeError`] for an unsupported type, axis or block size, or a
/// non-finite value.
pub fn quantize(tensor: OwnedCsf, spec: Quantize) -> Result<OwnedCsf, BuildError> {
    let view = tensor.view();
    let nnz = view.nnz() as usize;
    // The values the tensor means: for a tensor that is already quantized,
    // its dequantized values (never its codes), so that re-quantizing keeps
    // every value's meaning.
    let x: Vec<f64> = if view.quantization().is_some() {
        let mut x = vec![f64::NAN; nnz];
        view.for_each(|index, leaf| {
            if let (Some(slot), Some(v)) = (x.get_mut(leaf), view.value_f64(leaf, index)) {
                *slot = v;
            }
        });
        x
    } else {
        (0..nnz).map(|leaf| view.values().get_raw_f64(leaf).unwrap_or(f64::NAN)).collect()
    };
    check_finite(&x, 0)?;
    let plan = Plan::new(spec, view.shape())?;
    let group: Vec<usize> = match plan.scheme {
        QuantScheme::PerChannel => {
            let mut group = vec![0; nnz];
            view.for_each(|index, leaf| group[leaf] = index[plan.axis as usize] as usize);
            group
        }
        _ => (0..nnz).map(|leaf| plan.group_of_leaf(leaf as u64)).collect(),
    };
    let mut ranges = Ranges::new(&plan, nnz as u64);
    for (&v, &g) in x.iter().zip(&group) {
        ranges.observe(g, v);
    }
    let fitted = plan.fit(&ranges)?;
    let values = fitted.encode(&x, &group);
    let (dtype, quantization) = fitted.into_parts();
    Ok(tensor.with_values(dtype, values).with_quantization(quantization))
}

/// The first value that is not finite, as an error (`first_leaf` is the
/// leaf of `x[0]`).
pub(crate) fn check_finite(x: &[f64], first_leaf: u64) -> Result<(), QuantizeError> {
    match x.iter().enumerate().find(|(_, v)| !v.is_finite()) {
        Some((i, &value)) => {
            let leaf = usize::try_from(first_leaf + i as u64).unwrap_or(usize::MAX);
            Err(QuantizeError::NotFinite { leaf, value })
        }
        None => Ok(()),
    }
}

/// A scheme checked against the tensor's shape: what to store, and how
/// leaves fall into groups.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Plan {
    pub(crate) scheme: QuantScheme,
    pub(crate) axis: u32,
    block_size: u64,
    dtype: ElementType,
    zero_point: bool,
    /// Groups for a fixed count (per-tensor: 1, per-channel: the axis'
    /// extent); block schemes have one per `block_size` leaves.
    fixed_groups: Option<usize>,
}

impl Plan {
    pub(crate) fn new(spec: Quantize, shape: &[u64]) -> Result<Self, QuantizeError> {
        let (scheme, axis, block_size, dtype, zero_point) = match spec {
            Quantize::PerTensor { dtype, zero_point } => (QuantScheme::PerTensor, 0, 0, dtype, zero_point),
            Quantize::PerChannel { axis, dtype, zero_point } => {
                (QuantScheme::PerChannel, axis, 0, dtype, zero_point)
            }
            Quantize::PerBlock { block_size, dtype, zero_point } => {
                (QuantScheme::PerBlock, 0, block_size, dtype, zero_point)
            }
            Quantize::Nf4 { block_size } => (QuantScheme::Nf4, 0, block_size, ElementType::NF4, false),
            Quantize::Mxfp { dtype } => (QuantScheme::Mxfp, 0, 32, dtype, false),
        };
        if matches!(scheme, QuantScheme::PerBlock | QuantScheme::Nf4) && block_size == 0 {
            return Err(QuantizeError::Unsupported("block_size must be at least 1"));
        }
        let fixed_groups = match scheme {
            QuantScheme::PerTensor => Some(1),
            QuantScheme::PerChannel => {
                let extent = shape
                    .get(axis as usize)
                    .copied()
                    .ok_or(QuantizeError::Unsupported("the per-channel axis is outside the rank"))?;
                // The format stores one scale per index of the axis, stored or not:
                // refuse an axis whose scales alone would not fit in memory.
                if extent > MAX_CHANNELS {
                    return Err(QuantizeError::Unsupported(
                        "the per-channel axis has more than 2^28 indices",
                    ));
                }
                Some(extent as usize)
            }
            _ => None,
        };
        Ok(Self { scheme, axis, block_size, dtype, zero_point, fixed_groups })
    }

    /// The group of a leaf, for every scheme but per-channel (whose group is
    /// a coordinate of the leaf's index).
    pub(crate) fn group_of_leaf(&self, leaf: u64) -> usize {
        match self.scheme {
            QuantScheme::PerTensor | QuantScheme::PerChannel => 0,
            _ => usize::try_from(leaf / self.block_size.max(1)).unwrap_or(usize::MAX),
        }
    }

    /// Leaves per group of a block scheme (1 otherwise), for chunking a
    /// stream of values at group and byte boundaries.
    pub(crate) fn block_size(&self) -> u64 {
        self.block_size.max(1)
    }

    /// The scales (and zero points) that fit `ranges`, and the encoder.
    pub(crate) fn fit(&self, ranges: &Ranges) -> Result<Fitted, QuantizeError> {
        let (lo, hi) = (&ranges.lo, &ranges.hi);
        let groups = lo.len();
        let absmax: Vec<f64> = lo.iter().zip(hi).map(|(l, h)| l.abs().max(h.abs())).collect();
        // A group whose values binary32 cannot scale is refused, never stored
        // as infinite or NaN values: named by its value of largest magnitude.
        let too_large = |g: usize| QuantizeError::TooLarge {
            group: g,
            value: if -lo[g] > hi[g] { lo[g] } else { hi[g] },
        };
        // The symmetric schemes' scale: the group's largest magnitude over
        // the largest code's, `reach`, in binary32 (see `scale_within`).
        let scale_of =
            |g: usize, reach: f64| scale_within(absmax[g] / reach, reach as f32).ok_or_else(|| too_large(g));
        let dtype = self.dtype;
        let (encoder, scale_type, scales, zero_points) = match self.scheme {
            QuantScheme::Nf4 => {
                let s = (0..groups)
                    .map(|g| if absmax[g] > 0.0 { scale_of(g, 1.0) } else { Ok(0.0) })
                    .collect::<Result<Vec<f32>, _>>()?;
                (Encoder::Nf4 { absmax }, ElementType::F32, f32_bytes(s.into_iter()), None)
            }
            QuantScheme::Mxfp => {
                let format = Minifloat::of(dtype)
                    .ok_or(QuantizeError::Unsupported("MXFP elements must be FP8, FP6 or FP4"))?;
                let exps: Vec<i32> =
                    absmax
                        .iter()
                        .map(|&m| {
                            if m > 0.0 {
                                (m.log2().floor() as i32 - format.emax).clamp(-127, 127)
                            } else {
                                0
                            }
                        })
                        .collect();
                // Elements saturate at the format's largest magnitude: with the
                // exponent clamped at 127, that times 2^127 must stay finite.
                if let Some(g) = (0..groups).find(|&g| !(format.max as f32 * 2f32.powi(exps[g])).is_finite())
                {
                    return Err(too_large(g));
                }
                let scales = exps.iter().map(|&e| (e + 127) as u8).collect();
                (Encoder::Mxfp { format, exps }, ElementType::E8M0, scales, None)
            }
            QuantScheme::PerTensor | QuantScheme::PerChannel | QuantScheme::PerBlock => {
                if let Some(format) = Minifloat::of(dtype)
                    .filter(|_| matches!(dtype, ElementType::F8E4M3 | ElementType::F8E5M2))
                {
                    if self.zero_point {
                        return Err(QuantizeError::Unsupported("FP8 values take no zero point"));
                    }
                    let s = (0..groups)
                        .map(|g| if absmax[g] > 0.0 { scale_of(g, format.max) } else { Ok(1.0) })
                        .collect::<Result<Vec<f32>, _>>()?;
                    let scales = f32_bytes(s.iter().copied());
                    (Encoder::Fp8 { format, s }, ElementType::F32, scales, None)
                } else {
                    let (qmin, qmax) = int_range(dtype).ok_or(QuantizeError::Unsupported(
                        "integer schemes store i4, u4, i8, u8, i16, u16, i32 or u32 (or f8e4m3/f8e5m2)",
                    ))?;
                    let mut s = vec![1f32; groups];
                    let mut z = vec![0i64; groups];
                    for g in 0..groups {
                        if self.zero_point {
                            let (l, h) = (lo[g].min(0.0), hi[g].max(0.0));
                            if h > l {
                                s[g] = ((h - l) / (qmax - qmin) as f64) as f32;
                                z[g] = ((qmin as f64 - l / f64::from(s[g])).round_ties_even() as i64)
                                    .clamp(qmin, qmax);
                                // The codes' extremes, dequantized as § 5.7.3 does.
                                let reach = (qmax - z[g]).max(z[g] - qmin) as f32;
                                if !(reach * s[g]).is_finite() {
                                    return Err(too_large(g));
                                }
                            }
                        } else if absmax[g] > 0.0 {
                            if qmin == 0 && lo[g] < 0.0 {
                                return Err(QuantizeError::Negative { group: g, value: lo[g] });
                            }
                            s[g] = scale_of(g, qmax as f64)?;
                        }
                    }
                    let zero_points = self.zero_point.then(|| pack_ints(dtype, &z));
                    let scales = f32_bytes(s.iter().copied());
                    (Encoder::Int { qmin, qmax, s, z }, ElementType::F32, scales, zero_points)
                }
            }
        };
        let section = Quantization {
            scheme: self.scheme,
            axis: self.axis,
            block_size: self.block_size,
            scale_type,
            zero_point_type: zero_points.as_ref().map(|_| dtype),
        };
        Ok(Fitted { dtype, encoder, quantization: OwnedQuantization { section, scales, zero_points } })
    }
}

/// The range of the values in each group.
#[derive(Clone, Debug)]
pub(crate) struct Ranges {
    lo: Vec<f64>,
    hi: Vec<f64>,
}

impl Ranges {
    /// Ranges for `plan`'s groups over `nnz` leaves (block schemes grow as leaves come).
    pub(crate) fn new(plan: &Plan, nnz: u64) -> Self {
        let groups = plan
            .fixed_groups
            .unwrap_or_else(|| usize::try_from(nnz.div_ceil(plan.block_size())).unwrap_or(0));
        Self { lo: vec![0.0; groups], hi: vec![0.0; groups] }
    }

    /// Takes value `v` of group `g` into account.
    pub(crate) fn observe(&mut self, g: usize, v: f64) {
        if g >= self.lo.len() {
            self.lo.resize(g + 1, 0.0);
            self.hi.resize(g + 1, 0.0);
        }
        self.lo[g] = self.lo[g].min(v);
        self.hi[g] = self.hi[g].max(v);
    }
}

/// Fitted parameters: the stored type, the quantization section with its
/// parameter buffers, and how to encode a value.
pub(crate) struct Fitted {
    dtype: ElementType,
    encoder: Encoder,
    quantization: OwnedQuantization,
}

enum Encoder {
    Nf4 { absmax: Vec<f64> },
    Mxfp { format: Minifloat, exps: Vec<i32> },
    Fp8 { format: Minifloat, s: Vec<f32> },
    Int { qmin: i64, qmax: i64, s: Vec<f32>, z: Vec<i64> },
}

impl Fitted {
    /// The stored values of `x` (group `group[i]` each), packed as the
    /// stored type prescribes. Chunks of a longer stream pack alike when
    /// each but the last holds an even number of values.
    pub(crate) fn encode(&self, x: &[f64], group: &[usize]) -> Vec<u8> {
        let pairs = x.iter().zip(group);
        let codes: Vec<u8> = match &self.encoder {
            Encoder::Nf4 { absmax } => pairs
                .map(|(&v, &g)| {
                    let m = absmax.get(g).copied().unwrap_or(0.0);
                    nf4_code(if m > 0.0 { v / m } else { 0.0 })
                })
                .collect(),
            Encoder::Mxfp { format, exps } => pairs
                .map(|(&v, &g)| format.encode(v / 2f64.powi(exps.get(g).copied().unwrap_or(0))))
                .collect(),
            Encoder::Fp8 { format, s } => {
                pairs.map(|(&v, &g)| format.encode(v / f64::from(s.get(g).copied().unwrap_or(1.0)))).collect()
            }
            Encoder::Int { qmin, qmax, s, z } => {
                let q: Vec<i64> = pairs
                    // A scale that underflowed to 0 makes `v / s` infinite, which `as`
                    // saturates to i64::MAX/MIN: the zero point must not overflow it.
                    .map(|(&v, &g)| {
                        let (s, z) = (s.get(g).copied().unwrap_or(1.0), z.get(g).copied().unwrap_or(0));
                        ((v / f64::from(s)).round_ties_even() as i64).saturating_add(z).clamp(*qmin, *qmax)
                    })
                    .collect();
                return pack_ints(self.dtype, &q);
            }
        };
        match self.dtype.packing() {
            hurray_format::Packing::SubByte { .. } => pack_nibbles(&codes),
            hurray_format::Packing::Bytes(_) => codes,
        }
    }

    /// The stored type.
    pub(crate) fn dtype(&self) -> ElementType {
        self.dtype
    }

    /// The parameters, for dequantizing while the encoder is still needed.
    pub(crate) fn quantization(&self) -> &OwnedQuantization {
        &self.quantization
    }

    /// The stored type and the quantization section with its buffers.
    pub(crate) fn into_parts(self) -> (ElementType, OwnedQuantization) {
        (self.dtype, self.quantization)
    }
}

/// The binary32 scale nearest `exact` (positive) such that `reach` times it,
/// the largest magnitude a code of the group dequantizes to in binary32
/// (§ 5.7.3), is finite: one step down at a time when the nearest is too
/// big by a rounding (a group whose values reach `f32::MAX`); `None` when no
/// finite scale reaches that far (values beyond binary32's range).
fn scale_within(exact: f64, reach: f32) -> Option<f32> {
    let mut s = exact as f32;
    for _ in 0..4 {
        if !s.is_finite() {
            return None;
        }
        if (reach * s).is_finite() {
            return Some(s);
        }
        // Positive and finite: the next binary32 below.
        s = f32::from_bits(s.to_bits() - 1);
    }
    None
}

fn f32_bytes(values: impl Iterator<Item = f32>) -> Vec<u8> {
    values.flat_map(f32::to_le_bytes).collect()
}

fn int_range(ty: ElementType) -> Option<(i64, i64)> {
    Some(match ty {
        ElementType::I4 => (-8, 7),
        ElementType::U4 => (0, 15),
        ElementType::I8 => (-128, 127),
        ElementType::U8 => (0, 255),
        ElementType::I16 => (-32768, 32767),
        ElementType::U16 => (0, 65535),
        ElementType::I32 => (i64::from(i32::MIN), i64::from(i32::MAX)),
        ElementType::U32 => (0, i64::from(u32::MAX)),
        _ => return None,
    })
}

/// Integers (already in range) packed as `ty`: two per byte for 4-bit types.
fn pack_ints(ty: ElementType, q: &[i64]) -> Vec<u8> {
    match ty {
        ElementType::I4 | ElementType::U4 => {
            pack_nibbles(&q.iter().map(|&v| (v as u8) & 0x0f).collect::<Vec<_>>())
        }
        ElementType::I8 | ElementType::U8 => q.iter().map(|&v| v as u8).collect(),
        ElementType::I16 | ElementType::U16 => q.iter().flat_map(|&v| (v as u16).to_le_bytes()).collect(),
        _ => q.iter().flat_map(|&v| (v as u32).to_le_bytes()).collect(),
    }
}

/// 4-bit codes, two per byte, low nibble first.
fn pack_nibbles(codes: &[u8]) -> Vec<u8> {
    codes.chunks(2).map(|c| (c[0] & 0x0f) | c.get(1).map_or(0, |h| (h & 0x0f) << 4)).collect()
}

/// The NF4 code whose level is nearest to `v` (in [-1, 1]); ties to the even code.
fn nf4_code(v: f64) -> u8 {
    nearest(&scalar::NF4_TABLE.map(f64::from), v) as u8
}

/// Index of the entry of the ascending `table` nearest to `v`; ties to the even index.
fn nearest(table: &[f64], v: f64) -> usize {
    let hi = table.partition_point(|&t| t < v).min(table.len() - 1);
    if hi == 0 {
        return 0;
    }
    let lo = hi - 1;
    let (dl, dh) = (v - table[lo], table[hi] - v);
    if dl < dh || (dl == dh && lo % 2 == 0) {
        lo
    } else {
        hi
    }
}

/// A narrow float format, for round-to-nearest-even encoding.
struct Minifloat {
    /// Non-negative finite values in code order (codes 0..n are ascending).
    magnitudes: Vec<f64>,
    sign_bit: u8,
    /// Largest finite magnitude.
    max: f64,
    /// Exponent of the largest normal (OCP MX `emax_elem`).
    emax: i32,
}

impl Minifloat {
    fn of(ty: ElementType) -> Option<Self> {
        let (decode, bits, emax): (fn(u8) -> f32, u32, i32) = match ty {
            ElementType::F8E4M3 => (scalar::f8e4m3_to_f32, 8, 8),
            ElementType::F8E5M2 => (scalar::f8e5m2_to_f32, 8, 15),
            ElementType::F6E2M3 => (scalar::f6e2m3_to_f32, 6, 2),
            ElementType::F6E3M2 => (scalar::f6e3m2_to_f32, 6, 4),
            ElementType::F4E2M1 => (scalar::f4e2m1_to_f32, 4, 2),
            _ => return None,
        };
        let sign_bit = 1u8 << (bits - 1);
        // Positive codes 0 .. sign_bit are ascending in value; keep the finite prefix.
        let magnitudes: Vec<f64> =
            (0..sign_bit).map(|c| f64::from(decode(c))).take_while(|m| m.is_finite()).collect();
        let max = magnitudes.last().copied().unwrap_or(0.0);
        Some(Self { magnitudes, sign_bit, max, emax })
    }

    /// `v` rounded to the nearest value (ties to even), saturating at the largest finite one.
    fn encode(&self, v: f64) -> u8 {
        let code = nearest(&self.magnitudes, v.abs().min(self.max)) as u8;
        if v < 0.0 && code != 0 {
            code | self.sign_bit
        } else {
            code
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minifloat_encoding_rounds_to_nearest_even_and_saturates() {
        let e4m3 = Minifloat::of(ElementType::F8E4M3).unwrap();
        assert_eq!(e4m3.max, 448.0);
        assert_eq!(scalar::f8e4m3_to_f32(e4m3.encode(1000.0)), 448.0);
        assert_eq!(scalar::f8e4m3_to_f32(e4m3.encode(-1.0)), -1.0);
        // 1.0625 lies halfway between 1.0 (code 0x38, even) and 1.125 (0x39).
        assert_eq!(e4m3.encode(1.0625), 0x38);
        let fp4 = Minifloat::of(ElementType::F4E2M1).unwrap();
        assert_eq!(fp4.magnitudes, [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]);
        // 2.5 is halfway between 2.0 (code 4, even) and 3.0 (code 5).
        assert_eq!(fp4.encode(2.5), 4);
        assert_eq!(fp4.encode(-5.0), 0x8 | 6); // halfway 4 (code 6, even) and 6 (code 7)
        assert_eq!(nf4_code(0.0), 7);
        assert_eq!(nf4_code(1.0), 15);
        assert_eq!(nf4_code(-0.99), 0);
    }
}
