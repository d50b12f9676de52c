//! The Frobenius norm and the inner product with a Kruskal tensor.

use alloc::vec;

use crate::matrix::MatRef;
use crate::mttkrp::Walk;
use crate::scalar::{row_of, Scalar};
use crate::simd::Baseline;
use crate::tensor::{children, Tensor};
use crate::KernelError;

impl<T: Scalar> Tensor<'_, T> {
    /// The Frobenius norm, `sqrt(sum of the squared values)`, summed in `f64`.
    ///
    /// See [`Tensor`] for an example.
    pub fn norm(&self) -> f64 {
        let sum: f64 = self.first().map_or(0.0, |t| t.values.iter().map(|&v| v.to_f64() * v.to_f64()).sum());
        sqrt(sum)
    }

    /// The inner product `<X, [[w; U_1, ..., U_N]]>` with the Kruskal
    /// tensor of weights `weights` (length `R`) and factors `U_m`
    /// (`I_m x R`): `sum over the non-zeros of x * sum_r w_r prod_m U_m(i_m, r)`,
    /// summed in `f64` per root.
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
    /// use csf_kernels::{Matrix, Tensor};
    /// let tensor = Tensor::<f64>::new(&view)?; // the spec's example, values 1 to 4
    /// let ones = |rows| Matrix::from_rows(rows, 1, vec![1.0; rows]);
    /// let (a, b, c) = (ones(2)?, ones(3)?, ones(4)?);
    /// // The all-ones tensor times 0.5: half the sum of the values.
    /// assert_eq!(tensor.inner_kruskal(&[0.5], &[a.as_ref(), b.as_ref(), c.as_ref()])?, 5.0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`KernelError::FactorCount`], [`KernelError::FactorShape`], or
    /// [`KernelError::WeightsLength`] when `weights` is not `R` long.
    pub fn inner_kruskal(&self, weights: &[T], factors: &[MatRef<'_, T>]) -> Result<f64, KernelError> {
        let r = self.check_factors(factors, 0)?;
        if weights.len() != r {
            return Err(KernelError::WeightsLength { len: weights.len(), rank: r });
        }
        let Some(tree) = self.first() else { return Ok(0.0) };
        let levels = tree.levels(factors);
        let walk = Walk { levels: &levels, values: &tree.values, r };
        let mut acc = vec![T::ZERO; r];
        let mut scratch = vec![T::ZERO; r * (levels.len() + 1)];
        let mut total = 0.0f64;
        let Some((root, below)) = levels.split_first() else { return Ok(0.0) };
        for (i, &c) in root.crd.iter().enumerate() {
            let Some(row) = row_of(root.factor, c, r) else { continue };
            acc.fill(T::ZERO);
            match below.first() {
                Some(next) => {
                    let range = children(next.pos, next.crd.len(), i);
                    walk.gather::<Baseline, 0>(Baseline, below, range, &mut acc, &mut scratch);
                }
                None => continue,
            }
            total += acc.iter().zip(row).zip(weights).map(|((&s, &u), &w)| (s * u * w).to_f64()).sum::<f64>();
        }
        Ok(total)
    }
}

/// The square root (std's where there is one, libm's otherwise).
pub(crate) fn sqrt(x: f64) -> f64 {
    nalgebra::ComplexField::sqrt(x)
}

/// `|x|` (core has no `f64::abs` before Rust 1.85): the sign bit cleared.
pub(crate) fn abs(x: f64) -> f64 {
    f64::from_bits(x.to_bits() & !(1 << 63))
}
