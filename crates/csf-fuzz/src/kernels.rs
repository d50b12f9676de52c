//! Target `kernels`: csf-kernels on a permissively read (possibly hostile)
//! view — MTTKRP of every mode in `f64` and `f32`, the norm, the inner
//! product with a Kruskal tensor, the unfolding, TTM and TTV — checked for
//! the shape of what they return on any view, and against brute-force
//! references from the view's own iteration when it is also strictly valid.

use arbitrary::{Result, Unstructured};
use csf_core::CsfView;
use csf_kernels::{KernelError, MatRef, Matrix, Tensor, Ttv};

/// Factor matrices are drawn only when every extent is at most this...
const MAX_EXTENT: u64 = 64;
/// ...and the decomposition rank at most this.
const MAX_RANK: usize = 5;
/// The references run on strictly valid views of at most this many entries.
const REFERENCE_ENTRIES: usize = 256;

pub(crate) fn run(view: &CsfView<'_>, strict: bool, u: &mut Unstructured<'_>) {
    let _ = kernels(view, strict, u);
}

fn kernels(view: &CsfView<'_>, strict: bool, u: &mut Unstructured<'_>) -> Result<()> {
    let tensor = match Tensor::<f64>::new(view) {
        Ok(t) => t.with_parallel(u.arbitrary()?),
        Err(KernelError::BadModeOrder { .. }) => {
            assert!(!strict, "a strictly valid view's mode order is a permutation");
            return Ok(());
        }
        Err(e) => panic!("Tensor::new: {e}"),
    };
    // Whatever the tensor, the norm is a number or NaN (a NaN value), never a panic.
    let norm = tensor.norm();
    assert!(norm >= 0.0 || norm.is_nan());
    let shape = view.shape().to_vec();
    let entries = strict.then(|| reference_entries(view)).flatten();
    if let Some(entries) = &entries {
        let want: f64 = entries.iter().map(|(_, v)| v * v).sum::<f64>().sqrt();
        assert!(close(norm, want), "norm {norm} != {want}");
    }
    for mode in 0..shape.len() {
        unfold(&tensor, mode, entries.as_deref());
    }
    if shape.iter().any(|&e| e > MAX_EXTENT) {
        return Ok(());
    }
    let r = u.int_in_range(1..=MAX_RANK)?;
    let factors: Vec<Matrix<f64>> = shape
        .iter()
        .map(|&e| {
            let data = (0..e as usize * r)
                .map(|_| Ok(f64::from(u.int_in_range(-4i8..=4)?)))
                .collect::<Result<Vec<_>>>()?;
            Ok(Matrix::from_rows(e as usize, r, data).expect("rows x cols"))
        })
        .collect::<Result<_>>()?;
    let refs: Vec<MatRef<'_, f64>> = factors.iter().map(Matrix::as_ref).collect();
    let tensor32 = Tensor::<f32>::new(view).expect("the same mode order as the f64 tensor");
    let factors32: Vec<Matrix<f32>> = factors
        .iter()
        .map(|m| {
            Matrix::from_rows(m.rows(), r, m.as_slice().iter().map(|&x| x as f32).collect())
                .expect("same shape")
        })
        .collect();
    let refs32: Vec<MatRef<'_, f32>> = factors32.iter().map(Matrix::as_ref).collect();
    for (mode, &extent) in shape.iter().enumerate() {
        let m = tensor.mttkrp(&refs, mode).expect("factors of the tensor's shape");
        assert_eq!((m.rows() as u64, m.cols()), (extent, r));
        let m32 = tensor32.mttkrp(&refs32, mode).expect("factors of the tensor's shape");
        assert_eq!((m32.rows(), m32.cols()), (m.rows(), m.cols()));
        if let Some(entries) = &entries {
            let want = reference_mttkrp(entries, &factors, mode);
            for (i, (&got, &want)) in m.as_slice().iter().zip(&want).enumerate() {
                assert!(close(got, want), "mttkrp mode {mode} element {i}: {got} != {want}");
            }
        }
    }
    let weights: Vec<f64> = (0..r).map(|_| Ok(f64::from(u.int_in_range(0u8..=3)?))).collect::<Result<_>>()?;
    let inner = tensor.inner_kruskal(&weights, &refs).expect("factors of the tensor's shape");
    if let Some(entries) = &entries {
        let want: f64 = entries
            .iter()
            .map(|(c, v)| {
                (0..r)
                    .map(|k| {
                        weights[k]
                            * factors
                                .iter()
                                .zip(c)
                                .map(|(f, &i)| f.get(i as usize, k).unwrap_or(0.0))
                                .product::<f64>()
                    })
                    .sum::<f64>()
                    * v
            })
            .sum();
        assert!(close(inner, want), "inner {inner} != {want}");
    }
    let mode = u.choose_index(shape.len())?;
    let j = u.int_in_range(1..=3usize)?;
    let matrix: Vec<f64> = (0..j * shape[mode] as usize)
        .map(|_| Ok(f64::from(u.int_in_range(-2i8..=2)?)))
        .collect::<Result<_>>()?;
    let y = tensor
        .ttm(MatRef::new(j, shape[mode] as usize, &matrix).expect("j x I"), mode)
        .expect("a matrix of I columns");
    assert_eq!(y.values.len(), y.fibres() * j);
    assert!(y.coords.chunks(shape.len() - 1).all(|c| c.len() == shape.len() - 1));
    let vector: Vec<f64> =
        (0..shape[mode]).map(|_| Ok(f64::from(u.int_in_range(-2i8..=2)?))).collect::<Result<_>>()?;
    match tensor.ttv(&vector, mode) {
        Ok(Ttv::Tensor(t)) => {
            assert_eq!(t.view().rank(), shape.len() - 1);
            assert!(csf_validate::read(&t.to_bytes().expect("encodes")).is_ok(), "a TTV tensor validates");
        }
        Ok(Ttv::Matrix(m)) => {
            assert_eq!(shape.len(), 3);
            check_csr(&m);
        }
        Err(KernelError::Build(_)) => assert!(!strict, "TTV of a valid tensor builds"),
        Err(e) => panic!("ttv: {e}"),
    }
    Ok(())
}

fn unfold(tensor: &Tensor<'_, f64>, mode: usize, entries: Option<&[(Vec<u64>, f64)]>) {
    match tensor.unfold(mode) {
        Ok(m) => {
            check_csr(&m);
            if let Some(entries) = entries {
                assert_eq!(m.data.len(), entries.len(), "the unfolding holds every entry");
            }
        }
        Err(KernelError::UnfoldTooWide { .. } | KernelError::ExtentTooLarge { .. }) => {}
        Err(e) => panic!("unfold: {e}"),
    }
}

/// A CSR matrix's own invariants.
fn check_csr(m: &csf_kernels::Csr<f64>) {
    assert_eq!(m.indptr.len() as u64, m.rows + 1);
    assert!(m.indptr.windows(2).all(|w| w[0] <= w[1]));
    assert_eq!(m.indptr.last().copied(), Some(m.indices.len() as u64));
    assert_eq!(m.indices.len(), m.data.len());
    assert!(m.indices.iter().all(|&c| c < m.cols));
    for w in m.indptr.windows(2) {
        assert!(
            m.indices[w[0] as usize..w[1] as usize].windows(2).all(|p| p[0] <= p[1]),
            "columns sorted per row"
        );
    }
}

/// The entries of a strictly valid view, values dequantized, when there are
/// few and every value is finite and moderate.
fn reference_entries(view: &CsfView<'_>) -> Option<Vec<(Vec<u64>, f64)>> {
    if view.nnz() > REFERENCE_ENTRIES as u64 {
        return None;
    }
    let mut entries = Vec::new();
    view.for_each(|index, leaf| {
        entries.push((index.to_vec(), view.value_f64(leaf, index).unwrap_or(f64::NAN)))
    });
    // Sums of huge values overflow differently in different orders: compare
    // only values whose products and sums stay exact-ish and finite.
    entries.iter().all(|(_, v)| v.is_finite() && v.abs() <= 1e12).then_some(entries)
}

fn reference_mttkrp(entries: &[(Vec<u64>, f64)], factors: &[Matrix<f64>], mode: usize) -> Vec<f64> {
    let r = factors[0].cols();
    let mut out = vec![0.0; factors[mode].rows() * r];
    for (c, v) in entries {
        for k in 0..r {
            let p: f64 = factors
                .iter()
                .enumerate()
                .filter(|&(m, _)| m != mode)
                .map(|(m, f)| f.get(c[m] as usize, k).unwrap_or(0.0))
                .product();
            out[c[mode] as usize * r + k] += v * p;
        }
    }
    out
}

/// Equal up to rounding (integer factors: exact unless the values are not),
/// NaN equal to NaN.
fn close(a: f64, b: f64) -> bool {
    (a.is_nan() && b.is_nan()) || a == b || (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}
