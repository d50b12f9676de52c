//! TTV: the tensor times a vector along one mode.

use alloc::vec::Vec;

use csf_build::{build, Coo, Duplicates, Indices, ModeOrderPolicy, Options};
use csf_core::OwnedCsf;

use crate::scalar::Scalar;
use crate::tensor::Tensor;
use crate::unfold::Csr;
use crate::KernelError;

/// The result of [`Tensor::ttv`]: one rank fewer than the input.
#[derive(Clone, Debug)]
pub enum Ttv<T> {
    /// Rank 3 or more: a CSF tensor, with the input's mode order less the
    /// contracted mode, and values of `T`'s element type.
    Tensor(OwnedCsf),
    /// Rank 2 (a rank-3 input): a sparse matrix, rows the first remaining
    /// dimension and columns the second.
    Matrix(Csr<T>),
}

impl<T: Scalar> Tensor<'_, T> {
    /// `Y = X ×_mode v`: `Y(.., ..) = sum over i of X(.., i, ..) * v(i)`,
    /// with the contracted mode removed (TensorLy's `mode_dot` with a
    /// vector, the Tensor Toolbox's `ttv`). An output entry exists where
    /// some input non-zero has its coordinates; it keeps the sum even when
    /// that is zero (a stored zero, as csf-build keeps summed duplicates).
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
    /// use csf_kernels::{Tensor, Ttv};
    /// let tensor = Tensor::<f64>::new(&view)?; // x(0,0,1)=1, x(0,2,3)=2, x(1,1,0)=3, x(1,1,2)=4
    /// let Ttv::Matrix(m) = tensor.ttv(&[1.0, 10.0], 0)? else { unreachable!() };
    /// // (j, k) -> x(0,j,k) + 10 x(1,j,k), a 3 x 4 matrix
    /// assert_eq!((m.rows, m.cols, m.indptr), (3, 4, vec![0, 1, 3, 4]));
    /// assert_eq!((m.indices, m.data), (vec![1, 0, 2, 3], vec![1.0, 30.0, 40.0, 2.0]));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`KernelError::BadMode`], [`KernelError::VectorLength`], or
    /// [`KernelError::Build`] (a coordinate outside the shape: only on
    /// unvalidated data).
    pub fn ttv(&self, vector: &[T], mode: usize) -> Result<Ttv<T>, KernelError> {
        let rank = self.rank();
        if mode >= rank {
            return Err(KernelError::BadMode { mode, rank });
        }
        let extent = self.shape.get(mode).copied().unwrap_or(0);
        if vector.len() as u64 != extent {
            return Err(KernelError::VectorLength { len: vector.len(), mode, extent });
        }
        let shape: Vec<u64> =
            self.shape.iter().enumerate().filter(|&(d, _)| d != mode).map(|(_, &e)| e).collect();
        let Some(tree) = self.first() else { return Err(KernelError::BadMode { mode, rank }) };
        let level = tree.depth.get(mode).copied().unwrap_or(0);
        // Each remaining level's logical dimension, renumbered past `mode`.
        let renumber = |m: usize| if m > mode { m - 1 } else { m };
        let order: Vec<u32> =
            tree.mode_order.iter().filter(|&&m| m != mode).map(|&m| renumber(m) as u32).collect();
        // Level positions in logical order.
        let mut by_dim: Vec<(u32, usize)> = order.iter().enumerate().map(|(l, &d)| (d, l)).collect();
        by_dim.sort_unstable();
        let mut indices: Vec<u64> = Vec::with_capacity(tree.values.len() * shape.len());
        let mut values: Vec<T> = Vec::with_capacity(tree.values.len());
        let mut kept: Vec<u64> = Vec::with_capacity(shape.len());
        tree.for_each_leaf(|coords, leaf| {
            let Some(&value) = tree.values.get(leaf) else { return };
            let Some(&scale) =
                coords.get(level).and_then(|&c| usize::try_from(c).ok()).and_then(|c| vector.get(c))
            else {
                return;
            };
            kept.clear();
            kept.extend(coords.iter().enumerate().filter(|&(l, _)| l != level).map(|(_, &c)| c));
            indices.extend(by_dim.iter().map(|&(_, l)| kept.get(l).copied().unwrap_or(0)));
            values.push(value * scale);
        });
        if shape.len() >= 3 {
            let coo = Coo::new(&shape, Indices::RowMajor(&indices), &values);
            let options = Options {
                mode_order: ModeOrderPolicy::Explicit(order),
                duplicates: Duplicates::Sum,
                parallel: self.parallel,
                ..Options::default()
            };
            return Ok(Ttv::Tensor(build(&coo, &options)?.tensor));
        }
        let rows = usize::try_from(shape.first().copied().unwrap_or(0)).map_err(|_| {
            KernelError::ExtentTooLarge { dim: 0, extent: shape.first().copied().unwrap_or(0) }
        })?;
        let cols = shape.get(1).copied().unwrap_or(0);
        let triples: Vec<(u64, u64, T)> = indices
            .chunks_exact(2)
            .zip(&values)
            .filter_map(|(ij, &v)| Some((*ij.first()?, *ij.get(1)?, v)))
            .filter(|&(i, j, _)| (i as usize) < rows && j < cols)
            .collect();
        Ok(Ttv::Matrix(Csr::from_triples(rows, cols, &triples, true)?))
    }
}
