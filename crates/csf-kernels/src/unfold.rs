//! The mode-`n` unfolding (matricization) as a CSR matrix.

use alloc::vec;
use alloc::vec::Vec;

use crate::matrix::zeroed;
use crate::scalar::Scalar;
use crate::tensor::Tensor;
use crate::KernelError;

/// A sparse matrix in CSR form, with the index types SciPy takes
/// (`indptr` and `indices` below 2^63): row `i`'s entries are
/// `indices[indptr[i]..indptr[i+1]]` (columns, increasing) and the same
/// range of `data`.
#[derive(Clone, Debug, PartialEq)]
pub struct Csr<T> {
    /// The number of rows.
    pub rows: u64,
    /// The number of columns.
    pub cols: u64,
    /// `rows + 1` offsets into `indices` and `data`.
    pub indptr: Vec<u64>,
    /// The column of each entry.
    pub indices: Vec<u64>,
    /// The value of each entry.
    pub data: Vec<T>,
}

impl<T: Scalar> Csr<T> {
    /// The CSR matrix of `(row, col, value)` triples (every `row < rows`),
    /// with the entries of each row sorted by column; with `merge`, the
    /// entries that share a `(row, col)` are added into one.
    pub(crate) fn from_triples(
        rows: usize,
        cols: u64,
        triples: &[(u64, u64, T)],
        merge: bool,
    ) -> Result<Self, KernelError> {
        let mut indptr: Vec<u64> = zeroed(rows.saturating_add(1), "CSR row offsets")?;
        for &(row, _, _) in triples {
            if let Some(count) = usize::try_from(row).ok().and_then(|r| indptr.get_mut(r + 1)) {
                *count += 1;
            }
        }
        for i in 1..indptr.len() {
            let before = indptr.get(i - 1).copied().unwrap_or(0);
            if let Some(slot) = indptr.get_mut(i) {
                *slot += before;
            }
        }
        let mut next: Vec<u64> = indptr.clone();
        let mut entries = vec![(0u64, T::ZERO); triples.len()];
        for &(row, col, value) in triples {
            let Some(slot) = usize::try_from(row).ok().and_then(|r| next.get_mut(r)) else { continue };
            if let Some(entry) = usize::try_from(*slot).ok().and_then(|at| entries.get_mut(at)) {
                *entry = (col, value);
            }
            *slot += 1;
        }
        let mut indices = Vec::with_capacity(entries.len());
        let mut data = Vec::with_capacity(entries.len());
        let mut out_ptr: Vec<u64> = zeroed(rows.saturating_add(1), "CSR row offsets")?;
        out_ptr.clear();
        out_ptr.push(0u64);
        for w in indptr.windows(2) {
            let (a, b) = (w.first().copied().unwrap_or(0), w.get(1).copied().unwrap_or(0));
            let row = entries.get_mut(a as usize..b as usize).unwrap_or(&mut []);
            if !row.windows(2).all(|p| p.first().map(|x| x.0) <= p.get(1).map(|y| y.0)) {
                row.sort_by_key(|&(col, _)| col);
            }
            let row_start = indices.len();
            for &(col, value) in row.iter() {
                match (indices.last(), data.last_mut()) {
                    (Some(&last), Some(sum)) if merge && last == col && indices.len() > row_start => {
                        *sum += value
                    }
                    _ => {
                        indices.push(col);
                        data.push(value);
                    }
                }
            }
            out_ptr.push(indices.len() as u64);
        }
        Ok(Self { rows: rows as u64, cols, indptr: out_ptr, indices, data })
    }
}

impl<T: Scalar> Tensor<'_, T> {
    /// The mode-`mode` unfolding: the `I_mode x prod(I_m, m != mode)` matrix
    /// whose row `i_mode` holds the entries with that coordinate, at the
    /// column that numbers the other coordinates in C order (the last
    /// dimension fastest), as `numpy.moveaxis(x, mode, 0).reshape(I_mode, -1)`
    /// and TensorLy's `unfold` number them.
    ///
    /// ```
    /// # let le = |v: &[u64]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    /// # let values: Vec<u8> = [1.0f64, 2.0, 3.0, 4.0].iter().flat_map(|v| v.to_le_bytes()).collect();
    /// # let buffers = [values, le(&[0, 2]), le(&[0, 1]), le(&[0, 2, 3]), le(&[0, 2, 1]), le(&[0, 1, 2, 4]), le(&[1, 3, 0, 2])];
    /// # let slices: Vec<&[u8]> = buffers.iter().map(Vec::as_slice).collect();
    /// # let header = hurray_format::Descriptor::csf(hurray_format::ElementType::F64, &[2, 3, 4], &[0, 1, 2], 4)?;
    /// # let bytes = hurray_format::encode_to_vec(&header, &slices)?;
    /// # let container = hurray_format::Container::decode(&bytes)?;
    /// # let view = csf_core::CsfView::from_container(&container)?;
    /// let tensor = csf_kernels::Tensor::<f64>::new(&view)?; // x(0,0,1)=1, x(0,2,3)=2, x(1,1,0)=3, x(1,1,2)=4
    /// let m = tensor.unfold(2)?; // 4 x (2 * 3), column = 3 * i + j
    /// assert_eq!((m.rows, m.cols), (4, 6));
    /// assert_eq!(m.indptr, [0, 1, 2, 3, 4]);
    /// assert_eq!(m.indices, [4, 0, 4, 2]);
    /// assert_eq!(m.data, [3.0, 1.0, 4.0, 2.0]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`KernelError::BadMode`], [`KernelError::UnfoldTooWide`] when the
    /// other extents' product reaches 2^63, [`KernelError::OutOfMemory`]
    /// when the row offsets (`I_mode + 1`) cannot be allocated.
    pub fn unfold(&self, mode: usize) -> Result<Csr<T>, KernelError> {
        let rank = self.rank();
        if mode >= rank {
            return Err(KernelError::BadMode { mode, rank });
        }
        let rows = self.extents()?.get(mode).copied().unwrap_or(0);
        // Column strides, C order over the other dimensions.
        let mut strides = vec![0u64; rank];
        let mut cols: u64 = 1;
        for (dim, &extent) in self.shape.iter().enumerate().rev() {
            if dim == mode {
                continue;
            }
            if let Some(s) = strides.get_mut(dim) {
                *s = cols;
            }
            cols = cols
                .checked_mul(extent)
                .filter(|&c| c <= i64::MAX as u64)
                .ok_or(KernelError::UnfoldTooWide { mode })?;
        }
        let Some(tree) = self.first() else { return Csr::from_triples(rows, cols, &[], false) };
        // Stride and row position of each level.
        let level_strides: Vec<u64> =
            tree.mode_order.iter().map(|&m| strides.get(m).copied().unwrap_or(0)).collect();
        let row_level = tree.depth.get(mode).copied().unwrap_or(0);
        let mut triples = Vec::with_capacity(tree.values.len());
        tree.for_each_leaf(|coords, leaf| {
            let Some(&value) = tree.values.get(leaf) else { return };
            let row = coords.get(row_level).copied().unwrap_or(0);
            // Coordinates inside the shape keep the column below `cols`;
            // unvalidated ones only need to stay arithmetic-safe.
            let col = coords
                .iter()
                .zip(&level_strides)
                .fold(0u64, |acc, (&c, &s)| acc.wrapping_add(c.wrapping_mul(s)));
            if (row as usize) < rows && col < cols {
                triples.push((row, col, value));
            }
        });
        Csr::from_triples(rows, cols, &triples, false)
    }
}
