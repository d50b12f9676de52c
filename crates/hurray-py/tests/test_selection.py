"""``t[key]``: numpy's indexing, checked against numpy on the dense array.

One integer per dimension is an element; anything else is a selection, a
``CsfTensor`` while 3 or more dimensions remain and a pydata ``sparse.COO``
below. Arrays select along their own dimension (outer indexing, numpy's
``np.ix_``), which is numpy's own rule whenever a key holds one array.
"""

from __future__ import annotations

from typing import Any, List, Tuple

import numpy as np
import numpy.typing as npt
import pytest
from conftest import SPEC_COORDS, SPEC_SHAPE, SPEC_VALUES, coo_input, dense_of, same_dense
from hypothesis import given
from hypothesis import strategies as st

import hurray_csf as hc

sparse = pytest.importorskip("sparse")


def outer(dense: npt.NDArray[Any], key: Tuple[Any, ...]) -> Any:
    """numpy's result of ``key`` under outer indexing: each array along its
    own dimension (``np.ix_``), integers dropping theirs."""
    rank = dense.ndim
    items: List[Any] = list(key)
    if any(item is Ellipsis for item in items):
        at = next(i for i, item in enumerate(items) if item is Ellipsis)
        items[at : at + 1] = [slice(None)] * (rank - (len(items) - 1))
    items += [slice(None)] * (rank - len(items))
    per_axis = []
    dropped = []
    for dim, (item, extent) in enumerate(zip(items, dense.shape)):
        if isinstance(item, slice):
            per_axis.append(np.arange(*item.indices(extent)))
        elif isinstance(item, (list, np.ndarray)):
            a = np.asarray(item)
            per_axis.append(np.flatnonzero(a) if a.dtype == np.bool_ else np.asarray(a, dtype=np.int64) % max(extent, 1))
        else:
            per_axis.append(np.array([int(item) % extent]))
            dropped.append(dim)
    picked = dense[np.ix_(*per_axis)]
    return picked.reshape([n for d, n in enumerate(picked.shape) if d not in dropped])


def check(t: hc.CsfTensor, key: Tuple[Any, ...]) -> None:
    dense = t.to_dense()
    expected = outer(dense, key)
    got = t[key]
    if expected.ndim == 0:
        assert not isinstance(got, (hc.CsfTensor, np.ndarray))
        assert same_dense(np.asarray(got, dtype=dense.dtype), expected)
    elif expected.ndim < 3:
        assert isinstance(got, sparse.COO), type(got)
        assert got.shape == expected.shape and got.dtype == dense.dtype
        assert same_dense(got.todense(), expected)
    else:
        assert isinstance(got, hc.CsfTensor), type(got)
        assert got.shape == expected.shape and got.dtype == dense.dtype
        assert same_dense(got.to_dense(), expected)
        # A valid tensor (strictly), in the source's order restricted to the kept dimensions.
        hc.from_bytes(got.to_bytes())
        kept = [d for d in range(t.rank) if not _drops(key, d, t.rank)]
        restricted = [kept.index(d) for d in t.mode_order if d in kept]
        assert list(got.mode_order) == restricted


def _drops(key: Tuple[Any, ...], dim: int, rank: int) -> bool:
    items: List[Any] = list(key)
    if any(item is Ellipsis for item in items):
        at = next(i for i, item in enumerate(items) if item is Ellipsis)
        items[at : at + 1] = [slice(None)] * (rank - (len(items) - 1))
    return dim < len(items) and not isinstance(items[dim], (slice, list, np.ndarray))


@st.composite
def selector(draw: st.DrawFn, extent: int) -> Any:
    kinds = ["slice", "array", "mask"] + (["int"] if extent else [])
    kind = draw(st.sampled_from(kinds))
    bound = st.one_of(st.none(), st.integers(-extent - 2, extent + 2))
    if kind == "int":
        return draw(st.integers(-extent, extent - 1))
    if kind == "slice":
        step = draw(st.one_of(st.none(), st.integers(-3, 3).filter(lambda s: s != 0)))
        return slice(draw(bound), draw(bound), step)
    if kind == "mask":
        return np.array(draw(st.lists(st.booleans(), min_size=extent, max_size=extent)), dtype=np.bool_)
    if extent == 0:
        return []
    return draw(st.lists(st.integers(-extent, extent - 1), max_size=5))


@st.composite
def tensor_and_key(draw: st.DrawFn) -> Tuple[hc.CsfTensor, Tuple[Any, ...]]:
    shape, coords = draw(coo_input(rank=st.integers(3, 5), max_extent=5, max_nnz=40))
    rank = len(shape)
    values = np.array(draw(st.lists(st.integers(-3, 3), min_size=len(coords), max_size=len(coords))), dtype=np.float64)
    order = draw(st.permutations(list(range(rank))))
    t = hc.from_coo(coords, values, shape, duplicates="last", mode_order=list(order))
    key: List[Any] = [draw(selector(e)) for e in shape]
    # Fewer items than the rank, or an ellipsis for a run of them.
    shorten = draw(st.integers(0, 2))
    if shorten == 1:
        key = key[: draw(st.integers(0, rank))]
    elif shorten == 2:
        a = draw(st.integers(0, rank))
        b = draw(st.integers(a, rank))
        key = key[:a] + [Ellipsis] + key[b:]
    return t, tuple(key)


@given(tensor_and_key())
def test_selection_is_numpy_outer_indexing(case: Tuple[hc.CsfTensor, Tuple[Any, ...]]) -> None:
    t, key = case
    check(t, key)


@given(tensor_and_key(), st.sampled_from(["per-tensor:i8", "per-block:block=4:i4"]))
def test_selection_of_a_quantized_tensor_is_dequantized(case: Tuple[hc.CsfTensor, Tuple[Any, ...]], scheme: str) -> None:
    t, key = case
    coords, values = t.to_coo()
    q = hc.from_coo(coords, values, t.shape, quantize=scheme, mode_order=list(t.mode_order))
    assert q.dtype == np.float32
    check(q, key)


def spec() -> hc.CsfTensor:
    return hc.from_coo(SPEC_COORDS, SPEC_VALUES, SPEC_SHAPE)


def test_the_issue_examples() -> None:
    t = hc.from_coo(*_rank4())
    dense = t.to_dense()
    for key in [(0,), (slice(1, 3),), (slice(None), 2), (Ellipsis, 2), (-1,), ([1, 1, 2],), (slice(None), [3, 0])]:
        check(t, key)
    assert isinstance(t[0], hc.CsfTensor) and t[0].shape == dense.shape[1:]
    assert isinstance(t[0, 1], sparse.COO)
    assert same_dense(t[..., 2].to_dense(), dense[..., 2])


def _rank4() -> Tuple[npt.NDArray[np.int64], npt.NDArray[np.float64], Tuple[int, ...]]:
    rng = np.random.default_rng(4)
    shape = (4, 5, 3, 6)
    flat = rng.choice(int(np.prod(shape)), 60, replace=False)
    coords = np.stack(np.unravel_index(flat, shape), axis=1).astype(np.int64)
    return coords, rng.standard_normal(60), shape


def test_integer_list_is_fancy_indexing_not_a_point() -> None:
    """``t[[1, 1, 2]]`` is numpy's: entries 1, 1 and 2 of dimension 0, a
    tensor of the full rank (it used to be the element at (1, 1, 2))."""
    t = spec()
    got = t[[1, 1, 2 - 2]]
    assert isinstance(got, hc.CsfTensor) and got.shape == (3, 3, 4)
    assert same_dense(got.to_dense(), t.to_dense()[[1, 1, 0]])
    assert t[1, 1, 2] == 4.0 and t[(1, 1, 2)] == 4.0


def test_negative_indices_count_from_the_end() -> None:
    t = spec()
    assert t[-1, -2, -2] == t[1, 1, 2] == 4.0
    assert same_dense(t[-1].todense(), t.to_dense()[-1])


def test_refused_keys() -> None:
    t = spec()
    for key, match in [
        ((True, 1, 2), "boolean scalar"),
        ((np.bool_(False), 1, 2), "boolean scalar"),
        ((None, 1), "new axes"),
        ((1.0, 1, 2), "valid indices"),
        (("a",), "valid indices"),
        ((1, 1, 2, 0), "too many indices"),
        ((Ellipsis, 1, Ellipsis), "single ellipsis"),
        ((2, 0, 0), "out of bounds for axis 0 with size 2"),
        ((0, -4, 0), "out of bounds for axis 1"),
        ((0, [0, 3]), "out of bounds for axis 1"),
        ((np.zeros((2, 2), np.int64),), "1-D"),
        ((np.array([True, False, True]),), "boolean index did not match"),
        ((np.array([0.5]),), "integer"),
        ((2**64,), "out of bounds"),
    ]:
        with pytest.raises(IndexError, match=match):
            t[key]
    with pytest.raises(ValueError, match="step cannot be zero"):
        t[::0]


def test_level0_selection_is_the_subtree_range() -> None:
    """A step-1 slice or an integer of dimension ``mode_order[0]`` alone
    keeps the sub-tree's arrays as they are (the fast path): the same levels
    a build of the same entries gives."""
    coords, values, shape = _rank4()
    for order in ([0, 1, 2, 3], [2, 0, 3, 1]):
        t = hc.from_coo(coords, values, shape, mode_order=order)
        top = order[0]
        key: List[Any] = [slice(None)] * 4
        key[top] = slice(1, 3)
        got = t[tuple(key)]
        c, v = got.to_coo()
        rebuilt = hc.from_coo(c.astype(np.int64), v, got.shape, mode_order=list(got.mode_order))
        assert [(p.tolist(), q.tolist()) for p, q in got.levels] == [(p.tolist(), q.tolist()) for p, q in rebuilt.levels]
        assert same_dense(got.to_dense(), outer(t.to_dense(), tuple(key)))
        key[top] = 2
        under = t[tuple(key)]
        assert isinstance(under, hc.CsfTensor) and under.rank == 3
        assert same_dense(under.to_dense(), outer(t.to_dense(), tuple(key)))


def test_len_and_iter_follow_dimension_zero() -> None:
    t = hc.from_coo(*_rank4())
    assert len(t) == 4
    parts = list(t)
    assert len(parts) == 4 and all(isinstance(p, hc.CsfTensor) for p in parts)
    for i, p in enumerate(parts):
        assert same_dense(p.to_dense(), t.to_dense()[i])
    three = spec()
    rows = list(three)
    assert [type(r).__name__ for r in rows] == ["COO", "COO"]
    assert same_dense(np.stack([r.todense() for r in rows]), three.to_dense())


def test_contains_is_numpys() -> None:
    t = spec()
    dense = t.to_dense()
    for value in [1.0, 4.0, 0.0, 0, 5.0, -1.0, np.nan]:
        assert (value in t) == (value in dense), value
    full = hc.from_coo(np.argwhere(np.ones((2, 2, 2))), np.arange(1.0, 9.0), (2, 2, 2))
    assert 0.0 not in full and 8.0 in full


def test_asarray_is_refused() -> None:
    with pytest.raises(RuntimeError, match="to_dense"):
        np.asarray(spec())


def test_a_selection_from_a_mapped_file_outlives_nothing(tmp_path: Any) -> None:
    """A selection owns its bytes: closing the source leaves it readable."""
    path = tmp_path / "t.hurray"
    hc.save(hc.from_coo(*_rank4()), path)
    with hc.load(path) as t:
        part = t[1:3]
        expected = t.to_dense()[1:3]
    assert same_dense(part.to_dense(), expected)


def test_huge_extents_select_without_materialising_a_range() -> None:
    t = hc.from_coo(np.array([[0, 5, 2**40 - 1], [1, 0, 7]]), np.array([1.0, 2.0]), (2, 2**40, 2**40))
    got = t[:, 5:, 2**39:]
    assert isinstance(got, hc.CsfTensor) and got.shape == (2, 2**40 - 5, 2**39)
    coords, values = got.to_coo()
    assert coords.tolist() == [[0, 0, 2**39 - 1]] and values.tolist() == [1.0]
    got = t[:, ::-1]
    assert got.to_coo()[0].tolist() == [[0, 2**40 - 6, 2**40 - 1], [1, 2**40 - 1, 7]]


def test_selection_of_every_dtype() -> None:
    from conftest import DTYPES

    for dtype in DTYPES:
        values = np.array([1, 2, 3, 4]).astype(dtype)
        t = hc.from_coo(SPEC_COORDS, values, SPEC_SHAPE)
        check(t, (slice(None), [2, 1]))
        check(t, (1,))
        check(t, (slice(None), slice(None), slice(None, None, -2)))


def test_dense_of_is_what_the_checks_use() -> None:
    # The reference itself: `outer` agrees with numpy wherever numpy's rule is the same.
    d = dense_of(SPEC_COORDS, SPEC_VALUES, SPEC_SHAPE)
    for key in [(1,), (slice(None), [2, 0]), (Ellipsis, 1), ([1, 0], slice(None), 2)]:
        assert np.array_equal(outer(d, key), d[key])

