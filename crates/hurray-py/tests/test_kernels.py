"""The tensor kernels (csf-kernels): MTTKRP, TTV, TTM, unfolding and the norm
against numpy's dense references, and CP-ALS on planted low-rank tensors and
against TensorLy's ``parafac`` and pyttb's ``cp_als`` from the same start."""

from __future__ import annotations

import threading
import time
from typing import Any, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np
import numpy.typing as npt
import pytest

import hurray_csf as hc
from conftest import have

LETTERS = "abcde"


class Case(NamedTuple):
    """A tensor and its dense values as float64 (dequantized when quantized)."""

    label: str
    tensor: hc.CsfTensor
    dense: npt.NDArray[np.float64]


def sparse_dense(shape: Sequence[int], density: float, seed: int) -> npt.NDArray[np.float64]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(tuple(shape))
    return np.where(rng.random(tuple(shape)) < density, x, 0.0)


def make_case(shape: Sequence[int], *, dtype: Any = np.float64, mode_order: Any = "identity", quantize: Optional[str] = None, seed: int = 0, density: float = 0.3) -> Case:
    x = sparse_dense(shape, density, seed)
    if np.dtype(dtype).kind in "iu":
        x = np.round(x * 5)
    t = hc.from_dense(x.astype(dtype), mode_order=mode_order, quantize=quantize)
    label = f"{tuple(shape)} {np.dtype(dtype)} order={t.mode_order}" + (f" {quantize}" if quantize else "")
    return Case(label, t, t.to_dense().astype(np.float64))


CASES: List[Case] = [
    make_case((4, 5, 6)),
    make_case((4, 5, 6), mode_order=[2, 0, 1], seed=1),
    make_case((5, 3, 4), mode_order=[1, 2, 0], dtype=np.float32, seed=2),
    make_case((3, 4, 2, 5), seed=3),
    make_case((3, 4, 2, 5), mode_order=[3, 1, 0, 2], dtype=np.int32, seed=4),
    make_case((2, 3, 4, 2, 3), seed=5, density=0.4),
    make_case((2, 3, 4, 2, 3), mode_order=[4, 3, 2, 1, 0], dtype=np.float32, seed=6),
    make_case((6, 5, 4), quantize="per-tensor:i8", seed=7),
    make_case((3, 4, 5), density=0.0),  # no non-zero
]


def ids(cases: Sequence[Case]) -> List[str]:
    return [c.label for c in cases]


def modes(case: Case) -> range:
    return range(case.tensor.rank)


def factors_for(shape: Sequence[int], rank: int, seed: int, dtype: Any = np.float64) -> List[npt.NDArray[Any]]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((n, rank)).astype(dtype) for n in shape]


def mttkrp_reference(x: npt.NDArray[np.float64], factors: Sequence[npt.NDArray[Any]], mode: int) -> npt.NDArray[np.float64]:
    letters = LETTERS[: x.ndim]
    others = [m for m in range(x.ndim) if m != mode]
    spec = ",".join([letters] + [letters[m] + "z" for m in others]) + f"->{letters[mode]}z"
    return np.asarray(np.einsum(spec, x, *[np.asarray(factors[m], dtype=np.float64) for m in others]))


def close(a: npt.ArrayLike, b: npt.ArrayLike, single: bool = False) -> bool:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    scale = max(1.0, float(np.abs(b).max(initial=0.0)))
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=0, atol=(1e-5 if single else 1e-11) * scale))


# -- MTTKRP ---------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_mttkrp_matches_einsum(case: Case) -> None:
    for mode in modes(case):
        factors = factors_for(case.tensor.shape, 3, seed=mode)
        got = case.tensor.mttkrp(factors, mode)
        assert got.dtype == np.float64 and got.shape == (case.tensor.shape[mode], 3)
        assert close(got, mttkrp_reference(case.dense, factors, mode)), (case.label, mode)


@pytest.mark.parametrize("case", CASES[:4], ids=ids(CASES[:4]))
def test_mttkrp_in_float32_when_every_factor_is(case: Case) -> None:
    for mode in modes(case):
        factors = factors_for(case.tensor.shape, 4, seed=10 + mode, dtype=np.float32)
        got = case.tensor.mttkrp(factors, mode)
        assert got.dtype == np.float32
        assert close(got, mttkrp_reference(case.dense, factors, mode), single=True)
        # One float64 factor: the whole product in float64.
        mixed = list(factors)
        mixed[(mode + 1) % case.tensor.rank] = mixed[(mode + 1) % case.tensor.rank].astype(np.float64)
        assert case.tensor.mttkrp(mixed, mode).dtype == np.float64


def test_mttkrp_reads_any_layout_and_type() -> None:
    case = CASES[1]
    factors = factors_for(case.tensor.shape, 5, seed=3)
    want = case.tensor.mttkrp(factors, 1)
    fortran = [np.asfortranarray(f) for f in factors]
    strided = [np.repeat(f, 2, axis=1)[:, ::2] for f in factors]
    listed = [f.tolist() for f in factors]
    for other in (fortran, strided, listed, tuple(factors)):
        assert np.array_equal(case.tensor.mttkrp(other, 1), want)
    ints = [np.ones((n, 2), dtype=np.int64) for n in case.tensor.shape]
    assert close(case.tensor.mttkrp(ints, 0), mttkrp_reference(case.dense, ints, 0))
    # Mode 1's factor is not read, only its shape checked.
    unread = list(factors)
    unread[1] = np.full_like(factors[1], np.nan)
    assert np.array_equal(case.tensor.mttkrp(unread, 1), want)
    assert np.array_equal(case.tensor.mttkrp(factors, -2), want)


def test_mttkrp_threads_agree() -> None:
    x = sparse_dense((40, 50, 60), 0.2, 9)
    t = hc.from_dense(x)
    factors = factors_for(t.shape, 8, seed=1)
    one = t.mttkrp(factors, 2, threads=1)
    for threads in (2, None):
        assert np.allclose(t.mttkrp(factors, 2, threads=threads), one, rtol=1e-12, atol=1e-12)
    assert close(one, mttkrp_reference(x, factors, 2))


def test_mttkrp_errors() -> None:
    t = CASES[0].tensor
    factors = factors_for(t.shape, 3, seed=0)
    with pytest.raises(ValueError, match="factor matrix 2 is 6 x 2; 6 x 3 expected"):
        t.mttkrp(factors[:2] + [factors[2][:, :2]], 0)
    with pytest.raises(ValueError, match="factor matrix 1 is 4 x 3; 5 x 3 expected"):
        t.mttkrp([factors[0], factors[1][:4], factors[2]], 0)
    with pytest.raises(ValueError, match="2 factor matrices given for a rank-3 tensor"):
        t.mttkrp(factors[:2], 0)
    with pytest.raises(ValueError, match="factors\\[1\\] must be a 2-D array"):
        t.mttkrp([factors[0], factors[1][:, 0], factors[2]], 0)
    with pytest.raises(TypeError, match="real numbers"):
        t.mttkrp([f.astype(complex) for f in factors], 0)
    with pytest.raises(TypeError, match="sequence of 3 matrices"):
        t.mttkrp(np.stack([factors[0]] * 3), 0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="out of bounds"):
        t.mttkrp(factors, 3)
    with pytest.raises(ValueError, match="threads"):
        t.mttkrp(factors, 0, threads=0)


# -- TTV, TTM -------------------------------------------------------------------------


def ttv_reference(x: npt.NDArray[np.float64], v: npt.NDArray[Any], mode: int) -> npt.NDArray[np.float64]:
    return np.asarray(np.tensordot(x, np.asarray(v, dtype=np.float64), axes=([mode], [0])))


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_ttv_matches_tensordot(case: Case) -> None:
    t = case.tensor
    for mode in modes(case):
        v = np.random.default_rng(mode).standard_normal(t.shape[mode])
        y = t.ttv(v, mode)
        want = ttv_reference(case.dense, v, mode)
        if t.rank == 3:
            scipy_sparse = pytest.importorskip("scipy.sparse")
            assert isinstance(y, scipy_sparse.csr_array) and y.dtype == np.float64
            assert y.has_canonical_format
            assert close(y.toarray(), want)
        else:
            assert isinstance(y, hc.CsfTensor) and y.shape == want.shape and y.dtype == np.float64
            assert y.mode_order == tuple(d - (d > mode) for d in t.mode_order if d != mode)
            assert close(y.to_dense(), want)
            assert y.statistics is not None and y.statistics["nnz"] == y.nnz


def test_ttv_in_float32_and_errors() -> None:
    case = CASES[3]
    v = np.linspace(-1, 1, case.tensor.shape[1]).astype(np.float32)
    y = case.tensor.ttv(v, 1)
    assert isinstance(y, hc.CsfTensor) and y.dtype == np.float32
    assert close(y.to_dense(), ttv_reference(case.dense, v, 1), single=True)
    with pytest.raises(ValueError, match="a vector of 3 elements along mode 1 of extent 4"):
        case.tensor.ttv(np.ones(3), 1)
    with pytest.raises(ValueError, match="vector must be a 1-D array"):
        case.tensor.ttv(np.ones((4, 1)), 1)


def ttm_reference(x: npt.NDArray[np.float64], u: npt.NDArray[Any], mode: int) -> npt.NDArray[np.float64]:
    y = np.tensordot(x, np.asarray(u, dtype=np.float64), axes=([mode], [1]))
    return np.asarray(np.moveaxis(y, -1, mode))


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_ttm_matches_tensordot(case: Case) -> None:
    sparse = pytest.importorskip("sparse")
    t = case.tensor
    for mode in modes(case):
        u = np.random.default_rng(mode).standard_normal((3, t.shape[mode]))
        want = ttm_reference(case.dense, u, mode)
        y = t.ttm(u, mode)
        assert isinstance(y, sparse.COO) and y.shape == want.shape and y.dtype == np.float64
        assert close(y.todense(), want)
        # pydata sparse sorts what it is not told is sorted: row-major order either way.
        linear = np.ravel_multi_index(tuple(np.asarray(y.coords)), y.shape) if y.nnz else np.zeros(0)
        assert bool(np.all(np.diff(linear) > 0))
        d = t.ttm(u, mode, dense=True)
        assert isinstance(d, np.ndarray) and close(d, want)


def test_ttm_in_float32_budget_and_errors() -> None:
    case = CASES[2]
    u = np.arange(12, dtype=np.float32).reshape(4, 3)
    d = case.tensor.ttm(u, 1, dense=True)
    assert d.dtype == np.float32 and d.shape == (5, 4, 4)
    assert close(d, ttm_reference(case.dense, u, 1), single=True)
    with pytest.raises(ValueError, match="max_elements=79"):
        case.tensor.ttm(u, 1, dense=True, max_elements=79)
    assert case.tensor.ttm(u, 1, dense=True, max_elements=80).shape == (5, 4, 4)
    with pytest.raises(ValueError, match="the TTM matrix is 4 x 5; mode 1 needs 3 columns"):
        case.tensor.ttm(np.ones((4, 5)), 1)
    with pytest.raises(ValueError, match="matrix must be a 2-D array"):
        case.tensor.ttm(np.ones(3), 1)


# -- unfolding and the norm ------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_unfold_matches_moveaxis_reshape(case: Case) -> None:
    scipy_sparse = pytest.importorskip("scipy.sparse")
    t = case.tensor
    for mode in modes(case):
        m = t.unfold(mode)
        assert isinstance(m, scipy_sparse.csr_array) and m.nnz == t.nnz
        want = np.moveaxis(case.dense, mode, 0).reshape(t.shape[mode], -1)
        assert m.dtype == (np.float32 if t.dtype == np.float32 else np.float64)
        assert m.shape == want.shape and np.array_equal(m.toarray(), want)
        if have("tensorly"):
            import tensorly

            assert np.array_equal(m.toarray(), tensorly.unfold(tensorly.tensor(case.dense), mode))


def test_unfold_too_wide() -> None:
    huge = 1 << 40
    t = hc.from_coo(np.array([[0, 1, 2]]), np.array([1.0]), (2, huge, huge))
    with pytest.raises(OverflowError, match="2\\^63"):
        t.unfold(0)


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_norm(case: Case) -> None:
    norm = case.tensor.norm()
    assert isinstance(norm, float)
    assert norm == pytest.approx(float(np.linalg.norm(case.dense)), rel=1e-12, abs=1e-300)


# -- CP-ALS -------------------------------------------------------------------------


def planted(shape: Sequence[int], rank: int, seed: int, density: float = 0.35) -> Tuple[npt.NDArray[np.float64], List[npt.NDArray[np.float64]]]:
    """A tensor of CP rank ``rank`` that is sparse: the outer products of
    factor columns that are zero on most rows."""
    rng = np.random.default_rng(seed)
    factors = [rng.random((n, rank)) * (rng.random((n, rank)) < density) + 0.0 for n in shape]
    return reconstruct(np.ones(rank), factors), factors


def reconstruct(weights: npt.NDArray[Any], factors: Sequence[npt.NDArray[Any]]) -> npt.NDArray[np.float64]:
    spec = ",".join(["z"] + [LETTERS[m] + "z" for m in range(len(factors))]) + "->" + LETTERS[: len(factors)]
    return np.asarray(np.einsum(spec, weights, *factors))


@pytest.mark.parametrize("trees", [1, 2])
@pytest.mark.parametrize("shape", [(20, 25, 30), (10, 12, 9, 11)])
def test_cp_als_recovers_a_planted_low_rank_tensor(shape: Tuple[int, ...], trees: int) -> None:
    x, _ = planted(shape, 3, seed=len(shape))
    t = hc.from_dense(x)
    assert t.nnz < 0.5 * x.size
    result = hc.cp_als(t, 3, n_iter_max=500, tol=1e-12, random_state=7, trees=trees)
    assert result.fit_history[-1] > 0.99, result.fit_history[-5:]
    weights, factors = result
    assert weights is result.weights and factors is result.factors
    assert result.n_iter == len(result.fit_history) == len(result.iteration_seconds) <= 500
    assert isinstance(result.converged, bool)
    assert np.all(np.diff(weights) <= 0)
    for f, n in zip(factors, shape):
        assert f.shape == (n, 3) and f.dtype == np.float64
        assert np.allclose(np.linalg.norm(f, axis=0), 1.0)
    assert np.linalg.norm(reconstruct(weights, factors) - x) / np.linalg.norm(x) < 0.01


def test_cp_result_is_a_weights_factors_pair() -> None:
    x, _ = planted((8, 9, 10), 2, seed=1)
    result = hc.cp_als(hc.from_dense(x), 2, n_iter_max=5, tol=0)
    assert isinstance(result, tuple) and len(result) == 2 and isinstance(result, hc.CPResult)
    weights, factors = result
    assert weights.shape == (2,) and [f.shape for f in factors] == [(8, 2), (9, 2), (10, 2)]
    assert result.n_iter == 5 and not result.converged
    assert "CPResult(shape=(8, 9, 10), rank=2, n_iter=5" in repr(result)
    import pickle

    back = pickle.loads(pickle.dumps(result))
    assert isinstance(back, hc.CPResult) and back.fit_history == result.fit_history
    if have("tensorly"):
        from tensorly.cp_tensor import CPTensor

        cp = CPTensor(result)
        assert cp.rank == 2 and tuple(cp.shape) == (8, 9, 10)


def test_cp_als_is_deterministic_and_takes_every_init() -> None:
    x = sparse_dense((7, 8, 9), 0.3, 4)
    t = hc.from_dense(x)
    a = hc.cp_als(t, 3, n_iter_max=6, tol=0)
    b = hc.cp_als(t, 3, n_iter_max=6, tol=0, random_state=0)
    c = hc.cp_als(t, 3, n_iter_max=6, tol=0, random_state=1)
    assert a.fit_history == b.fit_history and a.fit_history != c.fit_history
    init = factors_for(t.shape, 3, seed=2)
    runs = [
        hc.cp_als(t, 3, n_iter_max=6, tol=0, init=init),
        hc.cp_als(t, 3, n_iter_max=6, tol=0, init=tuple(init)),
        hc.cp_als(t, 3, n_iter_max=6, tol=0, init=(np.arange(3.0), init)),  # weights ignored
        hc.cp_als(t, 3, n_iter_max=6, tol=0, init=(None, init)),
        hc.cp_als(t, 3, n_iter_max=6, tol=0, init=hc.CPResult(np.ones(3), init)),
        hc.cp_als(t, 3, n_iter_max=6, tol=0, init=[np.zeros_like(init[0])] + init[1:]),  # mode 0's is not read
        hc.cp_als(t, 3, n_iter_max=6, tol=0, init=init, threads=1),
        hc.cp_als(t, 3, n_iter_max=6, tol=0, init=init, trees=2),
    ]
    for run in runs[1:]:
        assert np.allclose(run.fit_history, runs[0].fit_history, rtol=0, atol=1e-12)
        assert np.allclose(run.weights, runs[0].weights, rtol=1e-9)
    assert [f.tolist() for f in init] == [f.tolist() for f in factors_for(t.shape, 3, seed=2)]  # not modified
    if have("tensorly"):
        from tensorly.cp_tensor import CPTensor

        cp = hc.cp_als(t, 3, n_iter_max=6, tol=0, init=CPTensor((np.ones(3), init)))
        assert cp.fit_history == runs[0].fit_history


def test_cp_als_in_float32() -> None:
    # A tensor the model fits only in part: a fit near 1 is the difference of
    # nearly equal numbers, which float32 factors resolve to about 1e-4 only.
    x = sparse_dense((10, 11, 12), 0.3, 3)
    t = hc.from_dense(x.astype(np.float32))
    init = factors_for(t.shape, 2, seed=1, dtype=np.float32)
    single = hc.cp_als(t, 2, n_iter_max=30, tol=0, init=init)
    double = hc.cp_als(t, 2, n_iter_max=30, tol=0, init=[f.astype(np.float64) for f in init])
    assert single.weights.dtype == np.float32 and all(f.dtype == np.float32 for f in single.factors)
    assert double.weights.dtype == np.float64
    assert np.allclose(single.fit_history, double.fit_history, rtol=0, atol=1e-5)
    assert hc.cp_als(t, 2, n_iter_max=2, dtype=np.float32).weights.dtype == np.float32
    assert hc.cp_als(t, 2, n_iter_max=2, init=init, dtype=np.float64).weights.dtype == np.float64


def test_cp_als_stops_on_tol() -> None:
    x, _ = planted((12, 10, 8), 2, seed=2)
    result = hc.cp_als(hc.from_dense(x), 2, n_iter_max=1000, tol=1e-6, random_state=3)
    assert result.converged and 2 <= result.n_iter < 1000
    assert abs(result.fit_history[-1] - result.fit_history[-2]) < 1e-6


def test_cp_als_errors() -> None:
    t = CASES[0].tensor
    init = factors_for(t.shape, 3, seed=0)
    with pytest.raises(ValueError, match="rank must be at least 1"):
        hc.cp_als(t, 0)
    with pytest.raises(ValueError, match="trees must be 1 or 2"):
        hc.cp_als(t, 2, trees=3)
    with pytest.raises(ValueError, match="init must be 'random'"):
        hc.cp_als(t, 2, init="svd")
    with pytest.raises(ValueError, match="init's factor 0 has shape \\(4, 3\\); \\(4, 2\\) expected"):
        hc.cp_als(t, 2, init=init)
    with pytest.raises(ValueError, match="init's factor 2 has shape \\(6, 2\\); \\(6, 3\\) expected"):
        hc.cp_als(t, 3, init=init[:2] + [init[2][:, :2]])
    with pytest.raises(ValueError, match="init has 2 factor matrices"):
        hc.cp_als(t, 3, init=(None, init[:2]))
    with pytest.raises(ValueError, match="random_state"):
        hc.cp_als(t, 2, random_state=-1)
    with pytest.raises(TypeError, match="CsfTensor"):
        hc.cp_als(np.zeros((2, 2, 2)), 2)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="float32 or float64"):
        hc.cp_als(t, 2, dtype=np.int32)
    inf = hc.from_coo(np.array([[0, 0, 0], [1, 1, 1]]), np.array([np.inf, 1.0]), (2, 2, 2))
    with pytest.raises(hc.HurrayError, match="non-finite"):
        hc.cp_als(inf, 1, n_iter_max=3)


def test_cp_als_on_a_quantized_and_an_empty_tensor() -> None:
    case = CASES[7]
    init = factors_for(case.tensor.shape, 2, seed=5)
    q = hc.cp_als(case.tensor, 2, n_iter_max=4, tol=0, init=init)
    dequantized = hc.from_dense(case.dense)
    assert np.allclose(q.fit_history, hc.cp_als(dequantized, 2, n_iter_max=4, tol=0, init=init).fit_history, atol=1e-12)
    empty = hc.cp_als(CASES[-1].tensor, 2, n_iter_max=3, tol=0)
    assert empty.n_iter == 3 and all(np.isfinite(empty.fit_history))


def test_cp_als_releases_the_gil() -> None:
    """Another Python thread keeps stamping the time while CP-ALS runs."""
    x = sparse_dense((60, 70, 80), 0.2, 1)
    t = hc.from_dense(x)
    stamps: List[float] = []
    stop = threading.Event()

    def ticker() -> None:
        while not stop.is_set():
            stamps.append(time.perf_counter())
            time.sleep(0.001)

    thread = threading.Thread(target=ticker)
    thread.start()
    try:
        time.sleep(0.02)
        for iterations in (40, 160, 640):  # longer until it is long enough to tell
            start = time.perf_counter()
            hc.cp_als(t, 16, n_iter_max=iterations, tol=0, threads=1)
            end = time.perf_counter()
            duration = end - start
            margin = min(0.03, duration / 5)
            inside = [s for s in stamps if start + margin < s < end - margin]
            if duration > 0.1 and len(inside) >= 5:
                break
    finally:
        stop.set()
        thread.join()
    assert duration > 0.1, f"CP-ALS took only {duration:.3f} s: too short to tell"
    assert len(inside) >= 5, f"{len(inside)} stamps during {duration:.3f} s of CP-ALS"


# -- agreement with TensorLy and pyttb from the same start ------------------------------------

PEERS = [
    ("rank 3", (9, 10, 11), "identity"),
    ("rank 3 reordered", (9, 10, 11), [2, 0, 1]),
    ("rank 4 reordered", (5, 6, 4, 7), [3, 1, 2, 0]),
]
ITERATIONS = 12


def peer_case(shape: Tuple[int, ...], order: Any) -> Tuple[hc.CsfTensor, npt.NDArray[np.float64], List[npt.NDArray[np.float64]]]:
    x = sparse_dense(shape, 0.3, seed=len(shape))
    init = factors_for(shape, 4, seed=11)
    return hc.from_dense(x, mode_order=order), x, init


@pytest.mark.parametrize("trees", [1, 2])
@pytest.mark.parametrize("label, shape, order", PEERS, ids=[p[0] for p in PEERS])
def test_fit_trajectory_matches_pyttb(label: str, shape: Tuple[int, ...], order: Any, trees: int) -> None:
    """pyttb's cp_als (the Tensor Toolbox's algorithm, which ours follows)
    reports the fit of its last iteration only, so each prefix of the run is
    run again with maxiters=k and stoptol=0 (which never stops early)."""
    ttb = pytest.importorskip("pyttb")
    t, x, init = peer_case(shape, order)
    ours = hc.cp_als(t, 4, n_iter_max=ITERATIONS, tol=0, init=init, trees=trees)
    coords = np.argwhere(x != 0)
    sp = ttb.sptensor(coords, x[x != 0].reshape(-1, 1), shape)
    theirs = []
    for k in range(1, ITERATIONS + 1):
        start = ttb.ktensor([f.copy() for f in init])
        model, _, output = ttb.cp_als(sp, 4, stoptol=0, maxiters=k, init=start, printitn=0)
        theirs.append(float(output["fit"]))
    assert np.allclose(ours.fit_history, theirs, rtol=0, atol=1e-6), (ours.fit_history, theirs)
    # The final models are the same (arranged and sign-fixed alike).
    assert np.allclose(ours.weights, model.weights, rtol=1e-6)
    for a, b in zip(ours.factors, model.factor_matrices):
        assert np.allclose(a, b, atol=1e-6)


@pytest.mark.parametrize("label, shape, order", PEERS, ids=[p[0] for p in PEERS])
def test_fit_trajectory_matches_tensorly(label: str, shape: Tuple[int, ...], order: Any) -> None:
    """TensorLy's parafac without normalisation keeps its weights at 1 and
    its factors unscaled; after each full sweep its model is the Toolbox's
    (the least-squares updates absorb any column scaling), so 1 - its
    relative reconstruction error is our fit, iteration by iteration."""
    tl = pytest.importorskip("tensorly")
    from tensorly.cp_tensor import CPTensor
    from tensorly.decomposition import parafac

    t, x, init = peer_case(shape, order)
    ours = hc.cp_als(t, 4, n_iter_max=ITERATIONS, tol=0, init=init)
    start = CPTensor((np.ones(4), [f.copy() for f in init]))
    _, errors = parafac(tl.tensor(x), 4, init=start, normalize_factors=False, tol=0, n_iter_max=ITERATIONS, return_errors=True)
    theirs = [1.0 - float(e) for e in errors]
    assert np.allclose(ours.fit_history, theirs, rtol=0, atol=1e-6), (ours.fit_history, theirs)


def test_fit_trajectory_matches_tensorly_sparse() -> None:
    """The same with TensorLy's sparse backend on a pydata sparse.COO."""
    pytest.importorskip("tensorly")
    sparse = pytest.importorskip("sparse")
    from tensorly.contrib.sparse.decomposition import parafac
    from tensorly.cp_tensor import CPTensor

    t, x, init = peer_case((9, 10, 11), [1, 2, 0])
    ours = hc.cp_als(t, 4, n_iter_max=ITERATIONS, tol=0, init=init)
    start = CPTensor((np.ones(4), [f.copy() for f in init]))
    _, errors = parafac(t.to_sparse(), 4, init=start, normalize_factors=False, tol=0, n_iter_max=ITERATIONS, return_errors=True)
    assert np.allclose(ours.fit_history, [1.0 - float(e) for e in errors], rtol=0, atol=1e-6)
    assert isinstance(t.to_sparse(), sparse.COO)
