//! Building a CSF tensor from a dense array (`from_dense`).
//!
//! The array is row-major, so its non-zeros, read in memory order, come in
//! identity (row-major) storage order, each index once. One scan finds them:
//! the flat range is cut into chunks (in parallel on rayon's pool when asked),
//! and each chunk walks its rows, testing every element's bits against the
//! element type's zero (an integer test per element, no float compare) and
//! appending each non-zero's coordinates (one column per dimension, the row's
//! prefix carried from row to row, so no division per element) and value
//! bytes. The chunks' columns, concatenated in chunk order, are in identity
//! order, and go to [`build_owned`]: in the identity mode order it adopts the
//! leaf column and the values and writes the levels above in one pass; for
//! another order (or `Auto`) it sorts them as it sorts any COO input.
//!
//! Cost: one read of the array (`O(N)` for `N` elements, memory-bound), plus
//! `O(nnz * rank)` to collect and concatenate the non-zeros, plus the build
//! (`O(nnz)` in the identity order, a sort of `nnz` keys otherwise). Extra
//! memory: the non-zeros' coordinates and values, twice while the chunks are
//! concatenated.

use hurray_format::ElementType;
use rayon::prelude::*;

use crate::{build_owned, check_rank, BuildError, Built, ModeOrderPolicy, Options, OwnedCoo, Quantize};

/// A dense array to build from: its shape, element type and row-major values.
#[derive(Clone, Copy, Debug)]
pub struct Dense<'a> {
    /// The logical shape; its length is the rank (3 to 64).
    pub shape: &'a [u64],
    /// The values' element type: `bool`, an integer type of whole bytes,
    /// `f16`, `f32` or `f64`.
    pub element_type: ElementType,
    /// The elements in row-major order (the last dimension varies fastest),
    /// little-endian, `element_type`'s width each.
    pub values: &'a [u8],
}

/// How [`from_dense`] builds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DenseOptions {
    /// The mode order to store (identity by default: the array's own order,
    /// built in one pass).
    pub mode_order: ModeOrderPolicy,
    /// Leave out NaNs too (numpy's `nonzero` keeps them: NaN is not zero).
    pub drop_nan: bool,
    /// Quantize the values after building (`docs/format.md` § 5.7).
    pub quantize: Option<Quantize>,
    /// Scan and build on rayon's thread pool (the default).
    pub parallel: bool,
}

impl Default for DenseOptions {
    fn default() -> Self {
        Self { mode_order: ModeOrderPolicy::Identity, drop_nan: false, quantize: None, parallel: true }
    }
}

/// Elements per chunk of the parallel scan: large enough that a chunk's
/// set-up (one division per dimension) and its vectors cost nothing next to
/// its scan, small enough that two threads share even a small array.
const CHUNK: usize = 1 << 17;

/// Builds a CSF tensor of the non-zeros of a dense row-major array.
///
/// An element is kept when it is not zero by numpy's `nonzero` rule: for
/// floats `+0.0` and `-0.0` are zero and NaN is not (unless
/// [`DenseOptions::drop_nan`]); for `bool`, `false` is zero. The result has
/// the array's shape; [`Built::removed`] is 0 (no entry is merged).
///
/// # Example
/// ```
/// use csf_build::{from_dense, Dense, DenseOptions};
/// use hurray_format::ElementType;
///
/// // A [2, 2, 3] array with two non-zeros.
/// let cells = [0.0f32, 0.0, 1.5, 0.0, 0.0, 0.0, 0.0, -0.0, 0.0, 0.0, 0.0, 2.5];
/// let bytes: Vec<u8> = cells.iter().flat_map(|v| v.to_le_bytes()).collect();
/// let dense = Dense { shape: &[2, 2, 3], element_type: ElementType::F32, values: &bytes };
/// let built = from_dense(&dense, &DenseOptions::default())?;
/// let view = built.tensor.view();
/// assert_eq!((view.nnz(), view.get_f64(&[0, 0, 2])?, view.get_f64(&[1, 1, 2])?), (2, 1.5, 2.5));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`BuildError::RankTooSmall`] / [`BuildError::RankTooLarge`] for a rank
/// outside `3..=64`; [`BuildError::UnsupportedType`] for an element type
/// other than `bool`, the whole-byte integers, `f16`, `f32` and `f64`;
/// [`BuildError::ShapeOverflow`] when the shape's byte count overflows a
/// `u64`; [`BuildError::LengthMismatch`] when `values` is not that long; and
/// as [`build`](crate::build) for the mode order and quantization.
pub fn from_dense(dense: &Dense<'_>, options: &DenseOptions) -> Result<Built, BuildError> {
    let shape = dense.shape;
    check_rank(shape.len())?;
    let test = ZeroTest::of(dense.element_type, options.drop_nan)?;
    let overflow = || BuildError::ShapeOverflow { shape: shape.to_vec() };
    let elements = shape.iter().try_fold(1u64, |n, &e| n.checked_mul(e)).ok_or_else(overflow)?;
    let bytes = elements.checked_mul(test.width as u64).ok_or_else(overflow)?;
    if bytes != dense.values.len() as u64 {
        return Err(BuildError::LengthMismatch {
            what: "dense values (bytes)",
            found: dense.values.len() as u64,
            expected: bytes,
        });
    }
    // `elements * width` is the length of a slice: it fits a `usize`.
    let elements = usize::try_from(elements).map_err(|_| overflow())?;
    let scan = Scan { shape, values: dense.values, test };
    let found = if options.parallel && elements > CHUNK {
        let parts: Vec<Found> = (0..elements.div_ceil(CHUNK))
            .into_par_iter()
            .map(|c| scan.chunk(c * CHUNK, elements.min((c + 1) * CHUNK)))
            .collect();
        Found::concat(parts, shape.len())
    } else {
        scan.chunk(0, elements)
    };
    let coo = OwnedCoo {
        shape: shape.to_vec(),
        columns: found.columns,
        element_type: dense.element_type,
        values: found.values,
    };
    let build = Options {
        mode_order: options.mode_order.clone(),
        parallel: options.parallel,
        quantize: options.quantize,
        ..Options::default()
    };
    build_owned(coo, &build)
}

/// Which elements of a type are kept: those whose bits, masked by `mask`
/// (which clears a float's sign, so that `-0.0` is zero), lie in
/// `1..=limit` (`limit` is the infinity's bits when NaNs are dropped, which
/// lie above it; all ones otherwise).
#[derive(Clone, Copy, Debug)]
struct ZeroTest {
    width: usize,
    mask: u64,
    limit: u64,
}

impl ZeroTest {
    fn of(element_type: ElementType, drop_nan: bool) -> Result<Self, BuildError> {
        let int = |width: usize| {
            let all = u64::MAX >> (64 - 8 * width);
            ZeroTest { width, mask: all, limit: all }
        };
        let float = |width: usize, infinity: u64| {
            let all = u64::MAX >> (64 - 8 * width);
            ZeroTest { width, mask: all >> 1, limit: if drop_nan { infinity } else { all } }
        };
        Ok(match element_type {
            ElementType::Bool | ElementType::I8 | ElementType::U8 => int(1),
            ElementType::I16 | ElementType::U16 => int(2),
            ElementType::I32 | ElementType::U32 => int(4),
            ElementType::I64 | ElementType::U64 => int(8),
            ElementType::F16 => float(2, 0x7c00),
            ElementType::F32 => float(4, 0x7f80_0000),
            ElementType::F64 => float(8, 0x7ff0_0000_0000_0000),
            other => {
                return Err(BuildError::UnsupportedType { operation: "from_dense", element_type: other })
            }
        })
    }
}

/// An element type's bits as an unsigned integer of its width.
trait Word: Copy {
    const WIDTH: usize;
    fn read(bytes: &[u8]) -> u64;
}

macro_rules! word {
    ($t:ty) => {
        impl Word for $t {
            const WIDTH: usize = core::mem::size_of::<$t>();
            #[inline(always)]
            fn read(bytes: &[u8]) -> u64 {
                // `bytes` comes from `chunks_exact(WIDTH)`: the conversion
                // never fails, and the compiler drops the check.
                u64::from(<$t>::from_le_bytes(bytes.try_into().unwrap_or_default()))
            }
        }
    };
}
word!(u8);
word!(u16);
word!(u32);
word!(u64);

/// The non-zeros of a flat range: one coordinate column per dimension and
/// the value bytes, in row-major order.
struct Found {
    columns: Vec<Vec<u64>>,
    values: Vec<u8>,
}

impl Found {
    /// The parts' entries, in part order.
    fn concat(parts: Vec<Found>, rank: usize) -> Found {
        let len: usize = parts.iter().map(|p| p.columns.first().map_or(0, Vec::len)).sum();
        let bytes: usize = parts.iter().map(|p| p.values.len()).sum();
        let mut columns: Vec<Vec<u64>> = (0..rank).map(|_| Vec::with_capacity(len)).collect();
        let mut values = Vec::with_capacity(bytes);
        for part in parts {
            for (column, piece) in columns.iter_mut().zip(&part.columns) {
                column.extend_from_slice(piece);
            }
            values.extend_from_slice(&part.values);
        }
        Found { columns, values }
    }
}

/// One scan's input.
struct Scan<'a> {
    shape: &'a [u64],
    values: &'a [u8],
    test: ZeroTest,
}

impl Scan<'_> {
    /// The non-zeros of elements `start..end` (`end` at most the element count).
    fn chunk(&self, start: usize, end: usize) -> Found {
        match self.test.width {
            1 => self.chunk_of::<u8>(start, end),
            2 => self.chunk_of::<u16>(start, end),
            4 => self.chunk_of::<u32>(start, end),
            _ => self.chunk_of::<u64>(start, end),
        }
    }

    /// [`Scan::chunk`] for elements of `W`'s width, row by row: each row's
    /// prefix coordinates are carried from the row before (an odometer), the
    /// last coordinate is the position in the row.
    fn chunk_of<W: Word>(&self, start: usize, end: usize) -> Found {
        let rank = self.shape.len();
        let mut found = Found { columns: vec![Vec::new(); rank], values: Vec::new() };
        let (Some((&row_len, outer)), Some((leaf, prefix))) =
            (self.shape.split_last(), found.columns.split_last_mut())
        else {
            return found;
        };
        if start >= end {
            return found;
        }
        // The coordinates of `start`: one division per dimension.
        let mut index = vec![0u64; rank];
        let mut rest = start as u64;
        for (coord, &extent) in index.iter_mut().zip(self.shape).rev() {
            *coord = rest % extent.max(1);
            rest /= extent.max(1);
        }
        let Some((first_inner, row)) = index.split_last_mut() else { return found };
        let mut inner = *first_inner;
        let ZeroTest { mask, limit, .. } = self.test;
        let mut flat = start;
        while flat < end {
            // The rest of this row, or of the chunk.
            let seg_end = end.min(flat.saturating_add((row_len - inner) as usize));
            let bytes = self.values.get(flat * W::WIDTH..seg_end * W::WIDTH).unwrap_or_default();
            let mut keep = |k: usize, element: &[u8]| {
                for (column, &coord) in prefix.iter_mut().zip(row.iter()) {
                    column.push(coord);
                }
                leaf.push(inner + k as u64);
                found.values.extend_from_slice(element);
            };
            scan_row::<W>(bytes, mask, limit, &mut keep);
            flat = seg_end;
            inner = 0;
            carry(row, outer);
        }
        found
    }
}

/// Elements per block of [`scan_row`].
const BLOCK: usize = 16;

/// Calls `keep(k, bytes)` for each kept element `k` of `bytes` (elements of
/// `W`'s width), in order. Most blocks of a sparse array hold no non-zero:
/// a block is first tested as a whole, its 8-byte words masked (`mask`
/// repeated: a float's sign bits cleared) and OR-ed together, which the
/// compiler vectorizes; only a block with a bit set is tested element by
/// element (NaNs, when dropped, fail only that second test).
#[inline(always)]
fn scan_row<W: Word>(bytes: &[u8], mask: u64, limit: u64, keep: &mut impl FnMut(usize, &[u8])) {
    let words_mask = (1..8 / W::WIDTH).fold(mask, |m, i| m | mask << (8 * W::WIDTH * i));
    let mut blocks = bytes.chunks_exact(BLOCK * W::WIDTH);
    // In `1..=limit` after masking, as one comparison (0 wraps to the top).
    let kept = |element: &[u8]| (W::read(element) & mask).wrapping_sub(1) < limit;
    for (b, block) in blocks.by_ref().enumerate() {
        let any = block.chunks_exact(8).fold(0, |any, w| any | u64::read(w)) & words_mask;
        if any != 0 {
            for (k, element) in block.chunks_exact(W::WIDTH).enumerate() {
                if kept(element) {
                    keep(b * BLOCK + k, element);
                }
            }
        }
    }
    let done = bytes.len() / (BLOCK * W::WIDTH) * BLOCK;
    for (k, element) in blocks.remainder().chunks_exact(W::WIDTH).enumerate() {
        if kept(element) {
            keep(done + k, element);
        }
    }
}

/// Moves a row prefix to the next row: the last coordinate up by one,
/// carrying into the ones before at their extents.
fn carry(row: &mut [u64], extents: &[u64]) {
    for (coord, &extent) in row.iter_mut().zip(extents).rev() {
        *coord += 1;
        if *coord < extent {
            return;
        }
        *coord = 0;
    }
}
