//! Dense row-major matrices: factor matrices (`I_n x R`) and kernel results.

use alloc::vec::Vec;

use crate::scalar::Scalar;
use crate::KernelError;

/// A dense matrix stored row by row (C order, as NumPy's default): element
/// `(i, j)` is `data[i * cols + j]`.
///
/// ```
/// use csf_kernels::Matrix;
/// let m = Matrix::from_rows(2, 3, vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0])?;
/// assert_eq!(m.row(1), &[4.0, 5.0, 6.0]);
/// assert_eq!(m.get(0, 2), Some(3.0));
/// # Ok::<(), csf_kernels::KernelError>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Matrix<T> {
    rows: usize,
    cols: usize,
    data: Vec<T>,
}

impl<T: Scalar> Matrix<T> {
    /// A `rows x cols` matrix of zeros.
    ///
    /// # Errors
    /// [`KernelError::TooLarge`] when `rows * cols` overflows a `usize`,
    /// [`KernelError::OutOfMemory`] when it cannot be allocated.
    pub fn zeros(rows: usize, cols: usize) -> Result<Self, KernelError> {
        let len = rows.checked_mul(cols).ok_or(KernelError::TooLarge { what: "matrix", rows, cols })?;
        Ok(Self { rows, cols, data: zeroed(len, "matrix")? })
    }

    /// A matrix over `data`, row by row.
    ///
    /// # Errors
    /// [`KernelError::MatrixLength`] when `data` does not hold `rows * cols` elements.
    pub fn from_rows(rows: usize, cols: usize, data: Vec<T>) -> Result<Self, KernelError> {
        check_len(rows, cols, data.len())?;
        Ok(Self { rows, cols, data })
    }

    /// The number of rows.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// The number of columns.
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// The elements, row by row.
    pub fn as_slice(&self) -> &[T] {
        &self.data
    }

    /// The elements, row by row, mutable.
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        &mut self.data
    }

    /// The elements, row by row, by value.
    pub fn into_vec(self) -> Vec<T> {
        self.data
    }

    /// Row `i` (empty past the last row).
    pub fn row(&self, i: usize) -> &[T] {
        i.checked_mul(self.cols)
            .and_then(|start| self.data.get(start..start.checked_add(self.cols)?))
            .unwrap_or(&[])
    }

    /// Element `(i, j)`.
    pub fn get(&self, i: usize, j: usize) -> Option<T> {
        if j >= self.cols {
            return None;
        }
        self.data.get(i.checked_mul(self.cols)?.checked_add(j)?).copied()
    }

    /// A borrowed view.
    pub fn as_ref(&self) -> MatRef<'_, T> {
        MatRef { rows: self.rows, cols: self.cols, data: &self.data }
    }
}

/// A borrowed row-major matrix: the form the kernels take factor matrices
/// in (a NumPy C-contiguous array's buffer, say, without a copy).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MatRef<'a, T> {
    rows: usize,
    cols: usize,
    data: &'a [T],
}

impl<'a, T: Scalar> MatRef<'a, T> {
    /// A view of `data` as `rows x cols`, row by row.
    ///
    /// ```
    /// let data = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0];
    /// let m = csf_kernels::MatRef::new(3, 2, &data)?; // 3 x 2, no copy
    /// assert_eq!((m.rows(), m.cols(), m.as_slice()[3]), (3, 2, 4.0));
    /// assert!(csf_kernels::MatRef::new(4, 2, &data).is_err());
    /// # Ok::<(), csf_kernels::KernelError>(())
    /// ```
    ///
    /// # Errors
    /// [`KernelError::MatrixLength`] when `data` does not hold `rows * cols` elements.
    pub fn new(rows: usize, cols: usize, data: &'a [T]) -> Result<Self, KernelError> {
        check_len(rows, cols, data.len())?;
        Ok(Self { rows, cols, data })
    }

    /// The number of rows.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// The number of columns.
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// The elements, row by row.
    pub fn as_slice(&self) -> &'a [T] {
        self.data
    }
}

fn check_len(rows: usize, cols: usize, len: usize) -> Result<(), KernelError> {
    match rows.checked_mul(cols) {
        Some(n) if n == len => Ok(()),
        _ => Err(KernelError::MatrixLength { rows, cols, len }),
    }
}

/// `len` zeros, or [`KernelError::OutOfMemory`] naming `what` when the
/// allocator refuses them: sizes that come from a tensor's extents (an
/// output's rows) must not abort the process.
pub(crate) fn zeroed<T: Clone + Default>(len: usize, what: &'static str) -> Result<Vec<T>, KernelError> {
    let mut v = Vec::new();
    let bytes = (len as u64).saturating_mul(core::mem::size_of::<T>() as u64);
    v.try_reserve_exact(len).map_err(|_| KernelError::OutOfMemory { what, bytes })?;
    v.resize(len, T::default());
    Ok(v)
}
