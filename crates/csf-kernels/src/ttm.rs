//! TTM: the tensor times a matrix along one mode, as a semi-sparse tensor.

use alloc::vec;
use alloc::vec::Vec;

use crate::matrix::MatRef;
use crate::scalar::{axpy, row_of, Scalar};
use crate::tensor::Tensor;
use crate::KernelError;

/// A tensor sparse in every mode but one, which is dense: the result of
/// [`Tensor::ttm`]. Each *fibre* is a coordinate of the other modes that
/// holds at least one non-zero of the input, with a dense row of
/// `shape[mode]` values.
#[derive(Clone, Debug, PartialEq)]
pub struct SemiSparse<T> {
    /// The result's shape: the input's, with `shape[mode]` the matrix's row count.
    pub shape: Vec<u64>,
    /// The dense mode.
    pub mode: usize,
    /// Each fibre's coordinates in the other modes, in increasing mode
    /// order (`rank - 1` per fibre, fibre after fibre).
    pub coords: Vec<u64>,
    /// Each fibre's dense values (`shape[mode]` per fibre, fibre after fibre).
    pub values: Vec<T>,
}

impl<T: Scalar> SemiSparse<T> {
    /// The number of fibres.
    pub fn fibres(&self) -> usize {
        self.coords.len().checked_div(self.shape.len().saturating_sub(1)).unwrap_or(0)
    }

    /// Every element of every fibre as COO: the coordinates (`rank` per
    /// element, in logical order, element after element: fibre by fibre,
    /// the dense mode fastest) and the values, zeros included.
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
    /// use csf_kernels::{MatRef, Tensor};
    /// let tensor = Tensor::<f64>::new(&view)?;
    /// let y = tensor.ttm(MatRef::new(1, 4, &[1.0; 4])?, 2)?;
    /// let (coords, values) = y.to_coo();
    /// assert_eq!(coords, [0, 0, 0, 0, 2, 0, 1, 1, 0]); // (i, j, 0) per fibre
    /// assert_eq!(values, [1.0, 2.0, 7.0]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn to_coo(&self) -> (Vec<u64>, Vec<T>) {
        let rank = self.shape.len();
        let others = rank.saturating_sub(1);
        let j = self.shape.get(self.mode).copied().unwrap_or(0) as usize;
        let mut coords = Vec::with_capacity(self.values.len() * rank);
        for fibre in self.coords.chunks_exact(others.max(1)).take(self.fibres()) {
            for dense in 0..j as u64 {
                let (before, after) = fibre.split_at(self.mode.min(fibre.len()));
                coords.extend_from_slice(before);
                coords.push(dense);
                coords.extend_from_slice(after);
            }
        }
        (coords, self.values.clone())
    }

    /// The result as a dense array in C order, when it holds at most
    /// `budget` elements.
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
    /// use csf_kernels::{MatRef, Tensor};
    /// let tensor = Tensor::<f64>::new(&view)?;
    /// let y = tensor.ttm(MatRef::new(1, 4, &[1.0; 4])?, 2)?; // sums over k, shape [2, 3, 1]
    /// assert_eq!(y.to_dense(100)?, [1.0, 0.0, 2.0, 0.0, 7.0, 0.0]);
    /// assert!(y.to_dense(5).is_err(), "6 elements, over a budget of 5");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`KernelError::DenseTooLarge`] above the budget,
    /// [`KernelError::OutOfMemory`] when it cannot be allocated.
    pub fn to_dense(&self, budget: usize) -> Result<Vec<T>, KernelError> {
        let elements = self.shape.iter().try_fold(1u64, |acc, &e| acc.checked_mul(e)).unwrap_or(u64::MAX);
        let total = usize::try_from(elements)
            .ok()
            .filter(|&n| n <= budget)
            .ok_or(KernelError::DenseTooLarge { elements, budget })?;
        let mut dense = crate::matrix::zeroed(total, "dense array")?;
        let (coords, values) = self.to_coo();
        for (index, &v) in coords.chunks_exact(self.shape.len().max(1)).zip(&values) {
            let at = index.iter().zip(&self.shape).fold(0u64, |acc, (&c, &e)| acc * e + c);
            if let Some(slot) = usize::try_from(at).ok().and_then(|at| dense.get_mut(at)) {
                *slot += v;
            }
        }
        Ok(dense)
    }
}

impl<T: Scalar> Tensor<'_, T> {
    /// `Y = X ×_mode U`: `Y(.., j, ..) = sum over i of X(.., i, ..) * U(j, i)`
    /// for `U` of `J x I_mode` (TensorLy's `mode_dot`, the Tensor
    /// Toolbox's `ttm`). The result is dense along `mode` and sparse in the
    /// others: one fibre per distinct coordinate of the other modes, in
    /// the order of the tree's levels (lexicographic over the stored mode
    /// order without `mode`).
    ///
    /// When `mode` is at the tree's leaf level, its fibres are the tree's
    /// own (the nodes above the leaves) and the work is one `axpy` of a row
    /// of `U`'s transpose per non-zero; otherwise the non-zeros are first
    /// sorted by their other coordinates.
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
    /// use csf_kernels::{MatRef, Tensor};
    /// let tensor = Tensor::<f64>::new(&view)?; // x(0,0,1)=1, x(0,2,3)=2, x(1,1,0)=3, x(1,1,2)=4
    /// // Sum over k and 10 x the sum over k, as a 2 x 4 matrix.
    /// let u = [1.0, 1.0, 1.0, 1.0, 10.0, 10.0, 10.0, 10.0];
    /// let y = tensor.ttm(MatRef::new(2, 4, &u)?, 2)?;
    /// assert_eq!(y.shape, [2, 3, 2]);
    /// assert_eq!(y.coords, [0, 0, 0, 2, 1, 1]); // (i, j) of each fibre
    /// assert_eq!(y.values, [1.0, 10.0, 2.0, 20.0, 7.0, 70.0]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`KernelError::BadMode`], or [`KernelError::TtmMatrix`] when `U`
    /// does not have `I_mode` columns.
    pub fn ttm(&self, matrix: MatRef<'_, T>, mode: usize) -> Result<SemiSparse<T>, KernelError> {
        let rank = self.rank();
        if mode >= rank {
            return Err(KernelError::BadMode { mode, rank });
        }
        let extent = self.shape.get(mode).copied().unwrap_or(0);
        if matrix.cols() as u64 != extent {
            return Err(KernelError::TtmMatrix { rows: matrix.rows(), cols: matrix.cols(), mode, extent });
        }
        let j = matrix.rows();
        let mut shape = self.shape.clone();
        if let Some(s) = shape.get_mut(mode) {
            *s = j as u64;
        }
        // U's transpose, I_mode x J: the row a non-zero of coordinate i adds.
        let (i_n, u) = (matrix.cols(), matrix.as_slice());
        let mut ut = vec![T::ZERO; u.len()];
        for (row, src) in u.chunks_exact(i_n.max(1)).enumerate() {
            for (col, &v) in src.iter().enumerate() {
                if let Some(dst) = ut.get_mut(col * j + row) {
                    *dst = v;
                }
            }
        }
        let Some(tree) = self.first() else {
            return Ok(SemiSparse { shape, mode, coords: Vec::new(), values: Vec::new() });
        };
        let level = tree.depth.get(mode).copied().unwrap_or(0);
        // Each non-zero as (its other coordinates in level order, i, value).
        let others = rank - 1;
        let mut keys: Vec<u64> = Vec::with_capacity(tree.values.len() * others);
        let mut entries: Vec<(u64, T)> = Vec::with_capacity(tree.values.len());
        tree.for_each_leaf(|coords, leaf| {
            let Some(&value) = tree.values.get(leaf) else { return };
            keys.extend(coords.iter().enumerate().filter(|&(l, _)| l != level).map(|(_, &c)| c));
            entries.push((coords.get(level).copied().unwrap_or(0), value));
        });
        let key = |e: usize| keys.get(e * others..(e + 1) * others).unwrap_or(&[]);
        let mut order: Vec<usize> = (0..entries.len()).collect();
        if !order
            .windows(2)
            .all(|w| key(w.first().copied().unwrap_or(0)) <= key(w.get(1).copied().unwrap_or(0)))
        {
            order.sort_by(|&a, &b| key(a).cmp(key(b)));
        }
        // The logical position of each stored "other" coordinate.
        let mut logical: Vec<(usize, usize)> =
            tree.mode_order.iter().filter(|&&m| m != mode).enumerate().map(|(l, &m)| (m, l)).collect();
        logical.sort_unstable();
        let mut coords = Vec::new();
        let mut values: Vec<T> = Vec::new();
        let mut last: Option<usize> = None;
        for &e in &order {
            if last.map_or(true, |l| key(l) != key(e)) {
                let k = key(e);
                coords.extend(logical.iter().map(|&(_, l)| k.get(l).copied().unwrap_or(0)));
                values.resize(values.len() + j, T::ZERO);
                last = Some(e);
            }
            let Some(&(i, v)) = entries.get(e) else { continue };
            let start = values.len() - j;
            if let (Some(dst), Some(row)) = (values.get_mut(start..), row_of(&ut, i, j)) {
                axpy(dst, v, row);
            }
        }
        Ok(SemiSparse { shape, mode, coords, values })
    }
}
