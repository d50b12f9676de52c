//! Every kernel against a dense (einsum-style) reference computed from the
//! COO entries: ranks 3 to 5, every mode, every mode order (a sample of
//! them at rank 5), `f32`/`f64`/integer/quantized leaves, empty tensors and
//! tensors whose fibres are as sparse as they get.

use csf_build::{build, Coo, Duplicates, Indices, ModeOrderPolicy, Options, Quantize};
use csf_core::OwnedCsf;
#[cfg(feature = "build")]
use csf_kernels::Ttv;
use csf_kernels::{cp_als, CpInit, CpOptions, MatRef, Matrix, Tensor};

/// A small deterministic generator (SplitMix64).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Distinct random entries of `shape`, with small integer values (exact in
/// every element type used here).
fn entries(rng: &mut Rng, shape: &[u64], count: usize) -> (Vec<Vec<u64>>, Vec<f64>) {
    let mut seen = std::collections::BTreeSet::new();
    let mut coords = Vec::new();
    let mut values = Vec::new();
    for _ in 0..count * 3 {
        if coords.len() == count {
            break;
        }
        let c: Vec<u64> = shape.iter().map(|&e| rng.below(e)).collect();
        if seen.insert(c.clone()) {
            coords.push(c);
            values.push((rng.below(9) as f64) - 4.0);
        }
    }
    (coords, values)
}

#[derive(Clone, Copy, Debug)]
enum Leaves {
    F32,
    F64,
    I32,
    Quantized,
}

fn tensor_of(shape: &[u64], coords: &[Vec<u64>], values: &[f64], order: &[u32], leaves: Leaves) -> OwnedCsf {
    let flat: Vec<u64> = coords.iter().flatten().copied().collect();
    let mut options = Options {
        mode_order: ModeOrderPolicy::Explicit(order.to_vec()),
        duplicates: Duplicates::Error,
        ..Options::default()
    };
    let f32s: Vec<f32> = values.iter().map(|&v| v as f32).collect();
    let i32s: Vec<i32> = values.iter().map(|&v| v as i32).collect();
    let coo = match leaves {
        Leaves::F32 => Coo::new(shape, Indices::RowMajor(&flat), &f32s),
        Leaves::F64 => Coo::new(shape, Indices::RowMajor(&flat), values),
        Leaves::I32 => Coo::new(shape, Indices::RowMajor(&flat), &i32s),
        Leaves::Quantized => {
            options.quantize = Some("per-tensor".parse::<Quantize>().unwrap());
            Coo::new(shape, Indices::RowMajor(&flat), &f32s)
        }
    };
    build(&coo, &options).unwrap().tensor
}

/// The values the tensor holds, as the kernels read them (dequantized).
fn held_values(t: &OwnedCsf, coords: &[Vec<u64>]) -> Vec<f64> {
    let view = t.view();
    coords.iter().map(|c| view.get_dequantized(c).unwrap() as f64).collect()
}

fn factors(rng: &mut Rng, shape: &[u64], r: usize) -> Vec<Matrix<f64>> {
    shape
        .iter()
        .map(|&e| {
            Matrix::from_rows(e as usize, r, (0..e as usize * r).map(|_| rng.unit() - 0.5).collect()).unwrap()
        })
        .collect()
}

fn reference_mttkrp(coords: &[Vec<u64>], values: &[f64], u: &[Matrix<f64>], mode: usize) -> Vec<f64> {
    let r = u[0].cols();
    let mut out = vec![0.0; u[mode].rows() * r];
    for (c, &v) in coords.iter().zip(values) {
        for k in 0..r {
            let mut p = v;
            for (m, f) in u.iter().enumerate() {
                if m != mode {
                    p *= f.get(c[m] as usize, k).unwrap();
                }
            }
            out[c[mode] as usize * r + k] += p;
        }
    }
    out
}

fn close(a: &[f64], b: &[f64], tol: f64) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() <= tol * (1.0 + x.abs().max(y.abs())))
}

fn permutations(rank: usize) -> Vec<Vec<u32>> {
    let mut all = vec![vec![]];
    for _ in 0..rank {
        all = all
            .into_iter()
            .flat_map(|p: Vec<u32>| {
                let free: Vec<u32> = (0..rank as u32).filter(|d| !p.contains(d)).collect();
                free.into_iter().map(move |d| {
                    let mut q = p.clone();
                    q.push(d);
                    q
                })
            })
            .collect();
    }
    all
}

/// Every kernel on one tensor against the reference.
fn check_all(rng: &mut Rng, shape: &[u64], count: usize, order: &[u32], leaves: Leaves) {
    let (coords, values) = entries(rng, shape, count);
    let t = tensor_of(shape, &coords, &values, order, leaves);
    let held = held_values(&t, &coords);
    let view = t.view();
    let tensor = Tensor::<f64>::new(&view).unwrap();
    let what = format!("shape {shape:?} order {order:?} {leaves:?} nnz {}", coords.len());
    let r = 1 + rng.below(5) as usize;
    let u = factors(rng, shape, r);
    let refs: Vec<MatRef<'_, f64>> = u.iter().map(Matrix::as_ref).collect();
    for mode in 0..shape.len() {
        let got = tensor.mttkrp(&refs, mode).unwrap();
        let want = reference_mttkrp(&coords, &held, &u, mode);
        assert!(close(got.as_slice(), &want, 1e-12), "mttkrp mode {mode}, {what}");
        // The same sums on the calling thread alone, and in f32.
        let seq = tensor.clone().with_parallel(false).mttkrp(&refs, mode).unwrap();
        assert!(close(seq.as_slice(), &want, 1e-12), "sequential mttkrp mode {mode}, {what}");
    }
    let u32s: Vec<Matrix<f32>> = u
        .iter()
        .map(|m| Matrix::from_rows(m.rows(), r, m.as_slice().iter().map(|&x| x as f32).collect()).unwrap())
        .collect();
    let refs32: Vec<MatRef<'_, f32>> = u32s.iter().map(Matrix::as_ref).collect();
    let tensor32 = Tensor::<f32>::new(&view).unwrap();
    for mode in 0..shape.len() {
        let got: Vec<f64> =
            tensor32.mttkrp(&refs32, mode).unwrap().as_slice().iter().map(|&x| x as f64).collect();
        let want = reference_mttkrp(&coords, &held, &u, mode);
        assert!(close(&got, &want, 1e-4), "f32 mttkrp mode {mode}, {what}");
    }
    // Norm and inner product.
    let norm = held.iter().map(|v| v * v).sum::<f64>().sqrt();
    assert!((tensor.norm() - norm).abs() < 1e-9, "norm, {what}");
    let weights: Vec<f64> = (0..r).map(|_| rng.unit()).collect();
    let mut inner = 0.0;
    for (c, &v) in coords.iter().zip(&held) {
        for (k, w) in weights.iter().enumerate() {
            inner +=
                v * w * u.iter().enumerate().map(|(m, f)| f.get(c[m] as usize, k).unwrap()).product::<f64>();
        }
    }
    assert!((tensor.inner_kruskal(&weights, &refs).unwrap() - inner).abs() < 1e-9, "inner, {what}");
    for mode in 0..shape.len() {
        check_unfold(&tensor, shape, &coords, &held, mode, &what);
        check_ttm(rng, &tensor, shape, &coords, &held, mode, &what);
        #[cfg(feature = "build")]
        check_ttv(rng, &tensor, shape, &coords, &held, mode, &what);
    }
}

fn check_unfold(
    tensor: &Tensor<'_, f64>,
    shape: &[u64],
    coords: &[Vec<u64>],
    held: &[f64],
    mode: usize,
    what: &str,
) {
    let m = tensor.unfold(mode).unwrap();
    let mut want: Vec<(u64, u64, f64)> = coords
        .iter()
        .zip(held)
        .map(|(c, &v)| {
            let col = (0..shape.len()).filter(|&d| d != mode).fold(0, |acc, d| acc * shape[d] + c[d]);
            (c[mode], col, v)
        })
        .collect();
    want.sort_by_key(|&(r, c, _)| (r, c));
    let mut got = Vec::new();
    for row in 0..m.rows as usize {
        for k in m.indptr[row] as usize..m.indptr[row + 1] as usize {
            got.push((row as u64, m.indices[k], m.data[k]));
        }
    }
    assert_eq!(got, want, "unfold mode {mode}, {what}");
    let others: u64 = (0..shape.len()).filter(|&d| d != mode).map(|d| shape[d]).product();
    assert_eq!((m.rows, m.cols), (shape[mode], others));
}

fn check_ttm(
    rng: &mut Rng,
    tensor: &Tensor<'_, f64>,
    shape: &[u64],
    coords: &[Vec<u64>],
    held: &[f64],
    mode: usize,
    what: &str,
) {
    let j = 1 + rng.below(3) as usize;
    let i_n = shape[mode] as usize;
    let u: Vec<f64> = (0..j * i_n).map(|_| rng.unit()).collect();
    let y = tensor.ttm(MatRef::new(j, i_n, &u).unwrap(), mode).unwrap();
    let mut want = std::collections::BTreeMap::<Vec<u64>, Vec<f64>>::new();
    for (c, &v) in coords.iter().zip(held) {
        let key: Vec<u64> = (0..shape.len()).filter(|&d| d != mode).map(|d| c[d]).collect();
        let row = want.entry(key).or_insert_with(|| vec![0.0; j]);
        for (jj, slot) in row.iter_mut().enumerate() {
            *slot += v * u[jj * i_n + c[mode] as usize];
        }
    }
    let mut got = std::collections::BTreeMap::new();
    for f in 0..y.fibres() {
        let key = y.coords[f * (shape.len() - 1)..(f + 1) * (shape.len() - 1)].to_vec();
        assert!(got.insert(key, y.values[f * j..(f + 1) * j].to_vec()).is_none(), "a fibre twice, {what}");
    }
    assert_eq!(got.len(), want.len(), "ttm fibres mode {mode}, {what}");
    for (k, w) in &want {
        assert!(close(&got[k], w, 1e-12), "ttm mode {mode} fibre {k:?}, {what}");
    }
    let mut expected_shape = shape.to_vec();
    expected_shape[mode] = j as u64;
    assert_eq!(y.shape, expected_shape);
}

#[cfg(feature = "build")]
fn check_ttv(
    rng: &mut Rng,
    tensor: &Tensor<'_, f64>,
    shape: &[u64],
    coords: &[Vec<u64>],
    held: &[f64],
    mode: usize,
    what: &str,
) {
    let v: Vec<f64> = (0..shape[mode]).map(|_| rng.unit()).collect();
    let mut want = std::collections::BTreeMap::<Vec<u64>, f64>::new();
    for (c, &x) in coords.iter().zip(held) {
        let key: Vec<u64> = (0..shape.len()).filter(|&d| d != mode).map(|d| c[d]).collect();
        *want.entry(key).or_insert(0.0) += x * v[c[mode] as usize];
    }
    let mut got = std::collections::BTreeMap::new();
    match tensor.ttv(&v, mode).unwrap() {
        Ttv::Tensor(t) => {
            assert_eq!(t.view().shape().len(), shape.len() - 1);
            t.view().for_each(|index, leaf| {
                got.insert(index.to_vec(), t.view().value_f64(leaf, index).unwrap());
            });
        }
        Ttv::Matrix(m) => {
            assert_eq!(shape.len(), 3);
            for row in 0..m.rows as usize {
                for k in m.indptr[row] as usize..m.indptr[row + 1] as usize {
                    got.insert(vec![row as u64, m.indices[k]], m.data[k]);
                }
            }
        }
    }
    assert_eq!(got.len(), want.len(), "ttv entries mode {mode}, {what}");
    for (k, w) in &want {
        assert!((got[k] - w).abs() < 1e-9 * (1.0 + w.abs()), "ttv mode {mode} at {k:?}, {what}");
    }
}

#[test]
fn every_kernel_matches_the_dense_reference_on_every_mode_order() {
    let mut rng = Rng(7);
    for rank in 3..=5 {
        let orders = permutations(rank);
        let step = if rank == 5 { 13 } else { 1 };
        for (i, order) in orders.iter().enumerate().step_by(step) {
            let shape: Vec<u64> = (0..rank).map(|_| 1 + rng.below(6)).collect();
            let total: u64 = shape.iter().product();
            let count = 1 + rng.below(total.min(60)) as usize;
            let leaves = [Leaves::F64, Leaves::F32, Leaves::I32, Leaves::Quantized][i % 4];
            check_all(&mut rng, &shape, count, order, leaves);
        }
    }
}

/// Over the parallel threshold (2^18 leaves, four per private row), on a
/// pool of three threads: every mode in the root, internal and leaf cases
/// against the reference, and the same bits run after run.
#[cfg(feature = "parallel")]
#[test]
fn large_enough_to_run_on_threads() {
    let mut rng = Rng(11);
    let shape = [70u64, 80, 90];
    let (coords, values) = entries(&mut rng, &shape, 280_000);
    assert!(coords.len() > 1 << 18);
    let pool = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
    for order in [[0u32, 1, 2], [2, 0, 1]] {
        let t = tensor_of(&shape, &coords, &values, &order, Leaves::F64);
        let view = t.view();
        let tensor = Tensor::<f64>::new(&view).unwrap();
        let u = factors(&mut rng, &shape, 8);
        let refs: Vec<MatRef<'_, f64>> = u.iter().map(Matrix::as_ref).collect();
        for mode in 0..3 {
            let want = reference_mttkrp(&coords, &values, &u, mode);
            let (a, b) =
                pool.install(|| (tensor.mttkrp(&refs, mode).unwrap(), tensor.mttkrp(&refs, mode).unwrap()));
            assert!(close(a.as_slice(), &want, 1e-10), "mode {mode}, order {order:?}");
            assert_eq!(a, b, "the same sums for the same thread count");
        }
    }
}

#[test]
fn empty_tensors_and_single_entry_fibres() {
    let mut rng = Rng(3);
    // No entries at all.
    check_all(&mut rng, &[3, 4, 5], 0, &[0, 1, 2], Leaves::F64);
    check_all(&mut rng, &[3, 4, 5, 2], 0, &[3, 1, 0, 2], Leaves::F32);
    // Every fibre a single entry: a diagonal.
    let coords: Vec<Vec<u64>> = (0..5).map(|i| vec![i, i, i]).collect();
    let values = vec![1.0, 2.0, 3.0, 4.0, 5.0];
    let t = tensor_of(&[5, 5, 5], &coords, &values, &[1, 2, 0], Leaves::F64);
    let tensor = Tensor::<f64>::new(&t.view()).unwrap();
    let u = factors(&mut rng, &[5, 5, 5], 2);
    let refs: Vec<MatRef<'_, f64>> = u.iter().map(Matrix::as_ref).collect();
    for mode in 0..3 {
        let want = reference_mttkrp(&coords, &values, &u, mode);
        assert!(close(tensor.mttkrp(&refs, mode).unwrap().as_slice(), &want, 1e-12));
    }
    // An extent of zero.
    let t = tensor_of(&[0, 4, 5], &[], &[], &[0, 1, 2], Leaves::F64);
    let tensor = Tensor::<f64>::new(&t.view()).unwrap();
    let u = factors(&mut rng, &[0, 4, 5], 3);
    let refs: Vec<MatRef<'_, f64>> = u.iter().map(Matrix::as_ref).collect();
    assert_eq!(tensor.mttkrp(&refs, 0).unwrap().rows(), 0);
    assert_eq!(tensor.mttkrp(&refs, 1).unwrap().as_slice(), &[0.0; 12]);
}

#[test]
fn shape_errors_are_reported() {
    let t = tensor_of(&[2, 3, 4], &[vec![0, 0, 0]], &[1.0], &[0, 1, 2], Leaves::F64);
    let tensor = Tensor::<f64>::new(&t.view()).unwrap();
    let a = Matrix::<f64>::zeros(2, 2).unwrap();
    let b = Matrix::<f64>::zeros(3, 2).unwrap();
    let c = Matrix::<f64>::zeros(4, 3).unwrap();
    let err = tensor.mttkrp(&[a.as_ref(), b.as_ref(), c.as_ref()], 0).unwrap_err();
    assert_eq!(err.to_string(), "factor matrix 2 is 4 x 3; 4 x 2 expected");
    let err = tensor.mttkrp(&[a.as_ref(), b.as_ref()], 0).unwrap_err();
    assert_eq!(err.to_string(), "2 factor matrices given for a rank-3 tensor");
    assert!(matches!(tensor.unfold(3), Err(csf_kernels::KernelError::BadMode { mode: 3, rank: 3 })));
    #[cfg(feature = "build")]
    assert!(matches!(tensor.ttv(&[1.0], 0), Err(csf_kernels::KernelError::VectorLength { len: 1, .. })));
    let u = [0.0; 10];
    let err = tensor.ttm(MatRef::new(2, 5, &u).unwrap(), 2).unwrap_err();
    assert_eq!(err.to_string(), "the TTM matrix is 2 x 5; mode 2 needs 4 columns");
    let err =
        tensor.inner_kruskal(&[1.0], &[a.as_ref(), b.as_ref(), Matrix::<f64>::zeros(4, 2).unwrap().as_ref()]);
    assert_eq!(err.unwrap_err().to_string(), "1 weights for factors of 2 columns");
    // Initial CP factors of the wrong rank: an error, not a panic.
    let init = vec![Matrix::zeros(2, 2).unwrap(), Matrix::zeros(3, 2).unwrap(), Matrix::zeros(4, 2).unwrap()];
    let options = CpOptions { init: CpInit::Factors(init), ..CpOptions::new(3) };
    assert_eq!(
        cp_als(&tensor, &options).unwrap_err(),
        csf_kernels::KernelError::InitRank { cols: 2, rank: 3 }
    );
}

#[test]
fn results_sized_by_huge_extents_are_errors_not_aborts() {
    // One entry in a 2 x 2^40 x 4 tensor: its mode-1 unfolding needs 2^40 + 1
    // row offsets, CP-ALS factors of 2^40 rows; the allocator refuses both.
    let huge = 1u64 << 40;
    let t = tensor_of(&[2, huge, 4], &[vec![0, 1, 2]], &[1.0], &[0, 1, 2], Leaves::F64);
    let tensor = Tensor::<f64>::new(&t.view()).unwrap();
    assert!(matches!(tensor.unfold(1), Err(csf_kernels::KernelError::OutOfMemory { .. })));
    assert!(tensor.unfold(0).is_ok(), "2 rows are fine, whatever the width");
    assert!(matches!(cp_als(&tensor, &CpOptions::new(2)), Err(csf_kernels::KernelError::OutOfMemory { .. })));
}

#[test]
fn cp_als_recovers_a_planted_low_rank_tensor() {
    // An exactly rank-3 tensor that is sparse: each factor column has about
    // a third of its entries non-zero, so the tensor's non-zeros are the
    // union of three small blocks; store exactly those.
    let mut rng = Rng(5);
    let shape = [30u64, 25, 20];
    let r = 3;
    let truth: Vec<Matrix<f64>> = shape
        .iter()
        .map(|&e| {
            let data =
                (0..e as usize * r).map(|_| if rng.unit() < 0.35 { 0.5 + rng.unit() } else { 0.0 }).collect();
            Matrix::from_rows(e as usize, r, data).unwrap()
        })
        .collect();
    let mut coords = Vec::new();
    let mut values = Vec::new();
    for i in 0..shape[0] as usize {
        for j in 0..shape[1] as usize {
            for k in 0..shape[2] as usize {
                let v: f64 = (0..r)
                    .map(|c| {
                        truth[0].get(i, c).unwrap()
                            * truth[1].get(j, c).unwrap()
                            * truth[2].get(k, c).unwrap()
                    })
                    .sum();
                if v != 0.0 {
                    coords.push(vec![i as u64, j as u64, k as u64]);
                    values.push(v);
                }
            }
        }
    }
    let cells: u64 = shape.iter().product();
    assert!(coords.len() < cells as usize / 4, "sparse: {} of {cells}", coords.len());
    let t = tensor_of(&shape, &coords, &values, &[0, 1, 2], Leaves::F64);
    let tensor = Tensor::<f64>::new(&t.view()).unwrap();
    let options = CpOptions { max_iters: 1000, tol: 1e-12, ..CpOptions::new(r) };
    let cp = cp_als(&tensor, &options).unwrap();
    assert!(cp.fit() > 0.99, "fit {}", cp.fit());
    // The fit never falls from one iteration to the next (ALS is monotone).
    assert!(
        cp.iterations.windows(2).all(|w| w[1].fit >= w[0].fit - 1e-6),
        "{:?}",
        cp.iterations.iter().map(|s| s.fit).collect::<Vec<_>>()
    );
    // Deterministic: the same seed gives the same decomposition.
    let again = cp_als(&tensor, &options).unwrap();
    assert_eq!(untimed(cp), untimed(again));
    // Explicit initial factors are used as given.
    let init = factors(&mut rng, &shape, r);
    let one = cp_als(&tensor, &CpOptions { max_iters: 1, init: CpInit::Factors(init), ..CpOptions::new(r) })
        .unwrap();
    assert_eq!(one.iterations.len(), 1);
    assert!(!one.converged);
}

/// A result without its timings (which differ run to run; nothing else may).
fn untimed(mut r: csf_kernels::CpResult<f64>) -> csf_kernels::CpResult<f64> {
    for s in &mut r.iterations {
        s.seconds = 0.0;
        s.mttkrp_seconds.iter_mut().for_each(|x| *x = 0.0);
    }
    r
}
