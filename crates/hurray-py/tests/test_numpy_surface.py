"""What numpy and pydata-sparse users reach for: ``from_dense``, ``sum``,
``equals``, ``astype``, ``close``, and pandas; each against numpy on random
tensors of ranks 3 to 5 in random mode orders."""

from __future__ import annotations

import gc
from typing import Any, Tuple

import numpy as np
import numpy.typing as npt
import pytest
from conftest import DTYPES, SPEC_COORDS, SPEC_SHAPE, SPEC_VALUES, coo_input, same_dense
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import hurray_csf as hc


@st.composite
def tensors(draw: st.DrawFn, dtype: Any = np.float64) -> hc.CsfTensor:
    """A random tensor of rank 3 to 5 in a random mode order, explicit zeros included."""
    shape, coords = draw(coo_input(rank=st.integers(3, 5), max_extent=4, max_nnz=30))
    values = np.array(draw(st.lists(st.integers(-3, 3), min_size=len(coords), max_size=len(coords)))).astype(dtype)
    order = draw(st.permutations(list(range(len(shape)))))
    return hc.from_coo(coords, values, shape, duplicates="last", mode_order=list(order))


# -- from_dense --------------------------------------------------------------------


@st.composite
def dense_arrays(draw: st.DrawFn) -> npt.NDArray[Any]:
    dtype = draw(st.sampled_from(DTYPES))
    shape = draw(hnp.array_shapes(min_dims=3, max_dims=5, min_side=0, max_side=4))
    zero = np.zeros((), dtype=dtype)
    if dtype.kind == "f":
        elements = st.one_of(st.just(0.0), st.just(-0.0), st.just(float("nan")), st.integers(-3, 3).map(float))
    else:
        elements = st.one_of(st.just(zero.item()), hnp.from_dtype(dtype))
    return draw(hnp.arrays(dtype, shape, elements=elements))


@given(dense_arrays(), st.booleans(), st.data())
def test_from_dense_keeps_numpys_nonzeros(x: npt.NDArray[Any], drop_nan: bool, data: st.DataObject) -> None:
    order = data.draw(st.one_of(st.just("identity"), st.just("auto"), st.permutations(list(range(x.ndim))).map(list)))
    t = hc.from_dense(x, mode_order=order, drop_nan=drop_nan)
    nan = np.isnan(x) if x.dtype.kind == "f" else np.zeros(x.shape, dtype=np.bool_)
    keep = (x != 0) & ~(nan & drop_nan) if x.dtype != np.bool_ else x
    assert t.shape == x.shape and t.dtype == x.dtype and t.nnz == int(np.count_nonzero(keep))
    coords, values = t.reorder("identity").to_coo()
    assert coords.tolist() == np.argwhere(keep).tolist()
    assert same_dense(values, x[keep])
    hc.from_bytes(t.to_bytes())  # strictly valid


def test_from_dense_of_any_memory_layout() -> None:
    rng = np.random.default_rng(3)
    x = np.where(rng.random((5, 6, 7)) < 0.2, rng.standard_normal((5, 6, 7)), 0.0)
    for variant in [np.asfortranarray(x), x[:, ::-1], x.astype(">f8"), x.transpose(2, 0, 1)]:
        t = hc.from_dense(variant)
        assert same_dense(t.to_dense(), np.asarray(variant))
    assert hc.from_dense(x, dtype=np.float32).dtype == np.float32
    assert hc.from_dense(x, mode_order="auto").auto is not None


def test_from_dense_against_pyarrow() -> None:
    pa = pytest.importorskip("pyarrow")
    rng = np.random.default_rng(8)
    x = np.where(rng.random((6, 5, 7)) < 0.1, rng.standard_normal((6, 5, 7)), 0.0)
    theirs = pa.SparseCSFTensor.from_dense_numpy(x)
    ours = hc.from_dense(x)
    assert same_dense(theirs.to_tensor().to_numpy(), ours.to_dense())
    assert ours.equals(hc.from_pyarrow(theirs, mode_order=list(np.argsort(x.shape, kind="stable"))))


def test_from_dense_refuses() -> None:
    with pytest.raises(ValueError, match="rank 2"):
        hc.from_dense(np.ones((2, 2)))
    with pytest.raises(TypeError, match="complex"):
        hc.from_dense(np.ones((2, 2, 2), dtype=np.complex64))
    with pytest.raises(ValueError, match="threads"):
        hc.from_dense(np.ones((2, 2, 2)), threads=0)


# -- sum ---------------------------------------------------------------------------


@st.composite
def axes(draw: st.DrawFn, rank: int) -> Any:
    kind = draw(st.sampled_from(["none", "int", "tuple"]))
    if kind == "none":
        return None
    if kind == "int":
        return draw(st.integers(-rank, rank - 1))
    dims = draw(st.lists(st.integers(0, rank - 1), unique=True, max_size=rank))
    return tuple(d - rank if draw(st.booleans()) else d for d in dims)


@given(st.sampled_from(DTYPES), st.data())
def test_sum_is_numpys(dtype: np.dtype[Any], data: st.DataObject) -> None:
    t = data.draw(tensors(dtype))
    axis = data.draw(axes(t.rank))
    dense = t.to_dense()
    expected = np.sum(dense, axis=axis)
    got = t.sum(axis)
    kept = t.rank - (t.rank if axis is None else (1 if isinstance(axis, int) else len(axis)))
    if kept >= 3:
        assert isinstance(got, hc.CsfTensor)
        assert got.dtype == expected.dtype
        got = got.to_dense()
        hc.from_bytes(t.sum(axis).to_bytes())
    else:
        assert isinstance(got, (np.ndarray, np.generic)) and not isinstance(got, hc.CsfTensor)
        assert np.asarray(got).dtype == expected.dtype, (got, expected)
    assert np.asarray(got).shape == np.asarray(expected).shape
    if dtype.kind == "f":
        assert np.allclose(got, expected, equal_nan=True)
    else:
        assert np.array_equal(got, expected)


def test_sum_with_a_dtype_and_its_errors() -> None:
    t = hc.from_coo(SPEC_COORDS, np.array([100, 100, 100, 100], np.int8), SPEC_SHAPE)
    assert t.sum() == 400 and t.sum().dtype == np.int64  # numpy widens int8
    assert t.sum(dtype=np.int8) == np.int8(400 - 512)  # and wraps in the type asked for
    assert t.sum(axis=(0, 2)).tolist() == [100, 200, 100]
    with pytest.raises(ValueError, match="out of bounds"):
        t.sum(axis=3)
    with pytest.raises(ValueError, match="duplicate"):
        t.sum(axis=(0, -3))
    with pytest.raises(TypeError, match="axis"):
        t.sum(axis=1.0)  # type: ignore[arg-type]  # the error is what is tested
    with pytest.raises(ValueError, match="max_elements"):
        t.sum(axis=0, max_elements=11)
    assert t.sum(axis=0, max_elements=12).shape == (3, 4)


# -- equals --------------------------------------------------------------------------


@given(tensors(), st.data())
def test_equals_ignores_order_and_explicit_zeros(t: hc.CsfTensor, data: st.DataObject) -> None:
    order = data.draw(st.permutations(list(range(t.rank))))
    u = t.reorder(list(order))
    assert t == u and t.equals(u) and not (t != u)
    coords, values = t.to_coo()
    nonzero = values != 0
    v = hc.from_coo(coords[nonzero].astype(np.int64), values[nonzero], t.shape)
    assert v.equals(t)
    if t.nnz:
        changed = values.copy()
        changed[data.draw(st.integers(0, t.nnz - 1))] += 1
        w = hc.from_coo(coords.astype(np.int64), changed, t.shape, mode_order=list(t.mode_order))
        assert not w.equals(t) and w != t
    assert same_dense(u.to_dense(), t.to_dense())


def test_equals_what_counts() -> None:
    t = hc.from_coo(SPEC_COORDS, SPEC_VALUES, SPEC_SHAPE)
    assert t.equals(hc.from_coo(SPEC_COORDS[::-1], SPEC_VALUES[::-1], SPEC_SHAPE))  # input order
    assert not t.equals(hc.from_coo(SPEC_COORDS, SPEC_VALUES, (2, 3, 5)))  # shape
    assert not t.equals(t.astype(np.float64))  # dtype
    assert not t.equals(t.to_dense()) and (t == t.to_dense()) is not True
    nan = hc.from_coo(SPEC_COORDS, np.array([np.nan, 2, 3, 4], np.float32), SPEC_SHAPE)
    assert nan.equals(nan.reorder([2, 1, 0]))  # NaN at the same index
    zero = hc.from_coo(SPEC_COORDS, np.array([-0.0, 2, 3, 4], np.float32), SPEC_SHAPE)
    assert zero.equals(hc.from_coo(SPEC_COORDS[1:], np.array([2, 3, 4], np.float32), SPEC_SHAPE))
    with pytest.raises(TypeError):
        hash(t)
    q = hc.from_coo(SPEC_COORDS, SPEC_VALUES, SPEC_SHAPE, quantize="per-tensor:i8")
    assert q.equals(hc.from_coo(SPEC_COORDS, q.to_coo()[1], SPEC_SHAPE))


# -- astype ----------------------------------------------------------------------------


@given(tensors(), st.sampled_from(DTYPES))
def test_astype_is_numpys_cast(t: hc.CsfTensor, dtype: np.dtype[Any]) -> None:
    with np.errstate(all="ignore"):
        expected = t.to_dense().astype(dtype)
        u = t.astype(dtype)
    assert u.dtype == dtype and u.mode_order == t.mode_order and u.nnz == t.nnz
    assert same_dense(u.to_dense(), expected)


# -- close and the context manager ------------------------------------------------------


def test_close_unmaps_and_refuses_later_use(tmp_path: Any) -> None:
    path = tmp_path / "t.hurray"
    hc.save(hc.from_coo(SPEC_COORDS, SPEC_VALUES, SPEC_SHAPE), path)
    with hc.load(path) as t:
        assert t[1, 1, 2] == 4.0 and not t.closed
        memory = t._map
        assert memory is not None
    assert t.closed and memory.closed
    for use in (lambda: t[1, 1, 2], t.to_coo, lambda: t.levels, t.to_bytes):
        with pytest.raises(ValueError, match="closed"):
            use()
    t.close()  # twice: nothing
    assert "closed" in repr(t)


def test_close_waits_for_views_still_alive(tmp_path: Any) -> None:
    path = tmp_path / "t.hurray"
    hc.save(hc.from_coo(SPEC_COORDS, SPEC_VALUES, SPEC_SHAPE), path)
    t = hc.load(path)
    values = t.values
    memory = t._map
    assert memory is not None
    t.close()
    assert values.tolist() == [1.0, 2.0, 3.0, 4.0]  # still mapped: never a read of unmapped memory
    del values
    gc.collect()
    memory.close()  # no view left: the map closes now
    assert memory.closed


def test_load_without_mmap_survives_truncation(tmp_path: Any) -> None:
    path = tmp_path / "t.hurray"
    hc.save(hc.from_coo(SPEC_COORDS, SPEC_VALUES, SPEC_SHAPE), path)
    t = hc.load(path, mmap=False)
    assert t._map is None
    with open(path, "r+b") as f:
        f.truncate(0)
    assert t.to_coo()[1].tolist() == [1.0, 2.0, 3.0, 4.0]


# -- pandas and torch ---------------------------------------------------------------------


@given(tensors(), st.data())
def test_pandas_round_trip(t: hc.CsfTensor, data: st.DataObject) -> None:
    pd = pytest.importorskip("pandas")
    s = t.to_pandas(names=[f"d{i}" for i in range(t.rank)])
    assert isinstance(s.index, pd.MultiIndex) and list(s.index.names) == [f"d{i}" for i in range(t.rank)]
    assert len(s) == t.nnz
    back = hc.from_pandas(s, t.shape, mode_order=list(t.mode_order))
    assert back.equals(t) and back.to_bytes() == hc.from_coo(*_coo(t), t.shape, mode_order=list(t.mode_order)).to_bytes()
    # xarray's and pydata sparse's view of the same Series: a dense array by assignment.
    dense = np.zeros(t.shape, dtype=t.dtype)
    for index, value in s.items():
        assert isinstance(index, tuple)
        dense[tuple(int(c) for c in index)] = value
    assert same_dense(dense, t.to_dense())


def _coo(t: hc.CsfTensor) -> Tuple[npt.NDArray[np.int64], npt.NDArray[Any]]:
    coords, values = t.to_coo()
    return coords.astype(np.int64), values


def test_from_pandas_refuses() -> None:
    pd = pytest.importorskip("pandas")
    with pytest.raises(TypeError, match="MultiIndex"):
        hc.from_pandas(pd.Series([1.0, 2.0]))
    labels = pd.Series([1.0], index=pd.MultiIndex.from_tuples([("a", 0, 1)]))
    with pytest.raises(TypeError, match="level 0"):
        hc.from_pandas(labels)
    with pytest.raises(TypeError, match="pandas.Series"):
        hc.from_pandas(np.zeros(3))
    dup = pd.Series([1.0, 2.0], index=pd.MultiIndex.from_tuples([(0, 0, 1), (0, 0, 1)]))
    with pytest.raises(hc.DuplicateError):
        hc.from_pandas(dup)
    assert hc.from_pandas(dup, duplicates="sum")[0, 0, 1] == 3.0


def test_torch_round_trip() -> None:
    torch = pytest.importorskip("torch")
    coords, values, shape = SPEC_COORDS, SPEC_VALUES, SPEC_SHAPE
    x = torch.sparse_coo_tensor(torch.from_numpy(coords.T.copy()), torch.from_numpy(values), shape)
    t = hc.from_torch(x)  # uncoalesced: duplicates would be summed
    assert t.equals(hc.from_coo(coords, values, shape))
    y = t.reorder([2, 0, 1]).to_torch()
    assert y.is_coalesced() and same_dense(y.to_dense().numpy(), t.to_dense())
    assert torch.equal(y.coalesce().indices(), y.indices())
    assert hc.from_torch(x.to_dense()).equals(t)
    twice = torch.sparse_coo_tensor(torch.tensor([[0, 0], [1, 1], [2, 2]]), torch.tensor([1.0, 2.0]), (2, 2, 3))
    assert hc.from_torch(twice)[0, 1, 2] == 3.0
    with pytest.raises(TypeError, match="float"):
        hc.from_torch(x.to(torch.bfloat16))
    with pytest.raises(TypeError, match="torch.Tensor"):
        hc.from_torch(np.zeros((2, 2, 2)))


def test_conversions_name_what_they_take() -> None:
    with pytest.raises(TypeError, match="st must be"):
        hc.from_pyarrow(np.zeros(3))

