"""Against another implementation: Arrow's SparseCSFTensor.

Arrow's CSF has no root pointer: its ``indptr[L]`` is our ``pos_{L+1}`` and
its ``indices[L]`` our ``crd_L``. ``from_dense_numpy`` stores the axes in
ascending order of extent (``ArgSort(shape)`` in Arrow's csf_converter.cc),
which pyarrow does not expose: on a shape in non-decreasing order that is the
identity, and for a mode order other than the identity, Arrow's tree of the
transposed dense array (``np.transpose(dense, mode_order)``) is ours."""

from __future__ import annotations

from typing import Any, Dict, List, Sequence, Tuple, Type

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hurray_csf as hc
from conftest import CORPUS, SPEC_COORDS, SPEC_SHAPE, SPEC_VALUES, call, levels_as_lists

pa = pytest.importorskip("pyarrow")

# dtypes Arrow's sparse tensors hold as themselves (bool becomes uint8 there).
ARROW_DTYPES: List[Type[np.generic]] = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64, np.float16, np.float32, np.float64]


def arrow_axis_order(shape: Sequence[int]) -> List[int]:
    """The storage order Arrow's from_dense_numpy picks: ascending extent, ties in order."""
    return [int(d) for d in np.argsort(shape, kind="stable")]


# A dense array and a mode order.
DenseCase = Tuple[npt.NDArray[Any], List[int]]
# (pos, crd) of each level.
Levels = List[Tuple[List[int], List[int]]]


@st.composite
def dense_tensors(draw: st.DrawFn, dtypes: List[Type[np.generic]] = ARROW_DTYPES, sorted_storage: bool = False) -> DenseCase:
    """A dense array and a mode order; with ``sorted_storage``, the extents in
    that order are non-decreasing (so Arrow keeps the transposed array's axes)."""
    rank = draw(st.integers(3, 5))
    extents = draw(st.lists(st.integers(1, 4), min_size=rank, max_size=rank))
    order = draw(st.one_of(st.just(list(range(rank))), st.permutations(list(range(rank))).map(list)))
    if sorted_storage:
        extents.sort()
    dims = [0] * rank
    for level, dim in enumerate(order):
        dims[dim] = extents[level]
    shape = tuple(dims)
    dtype = np.dtype(draw(st.sampled_from(dtypes)))
    seed = draw(st.integers(0, 2**32 - 1))
    density = draw(st.sampled_from([0.0, 0.05, 0.3, 0.7, 1.0]))
    rng = np.random.default_rng(seed)
    mask = rng.random(shape) < density
    # Non-zero values only: a dense array's zeros are not stored by Arrow.
    if dtype.kind == "f":
        vals = rng.integers(1, 100, shape).astype(dtype) * rng.choice([-1, 1], shape).astype(dtype)
    elif dtype.kind == "b":
        vals = np.ones(shape, dtype)
    else:
        vals = rng.integers(1, min(100, np.iinfo(dtype).max), shape).astype(dtype)
    dense = np.where(mask, vals, np.zeros((), dtype)).astype(dtype)
    return dense, order


def ours_from_dense(dense: npt.NDArray[Any], order: Sequence[int]) -> hc.CsfTensor:
    coords = np.argwhere(dense)
    return hc.from_coo(coords, dense[tuple(coords.T)], dense.shape, mode_order=order)


def arrow_levels(st_: Any) -> Tuple[Levels, npt.NDArray[Any]]:
    data, indptr, indices = st_.to_numpy()
    rank = len(indices)
    levels: Levels = [([0, len(indices[0])], indices[0].tolist())]
    levels += [(indptr[L - 1].tolist(), indices[L].tolist()) for L in range(1, rank)]
    return levels, np.ravel(data)


def check_against_arrow(t: hc.CsfTensor, arrow: Any) -> None:
    levels, values = arrow_levels(arrow)
    assert t.values.dtype == values.dtype
    assert np.array_equal(t.values, values)
    if t.nnz == 0:
        # Arrow's empty tree has one pos entry per absent parent; the spec's empty form has [0].
        assert all(len(c) == 0 for _, c in levels)
        return
    assert levels_as_lists(t) == levels


@settings(max_examples=60, deadline=None)
@given(case=dense_tensors(sorted_storage=True))
def test_levels_and_values_equal_arrows_of_the_transposed_array(case: DenseCase) -> None:
    dense, order = case
    t = ours_from_dense(dense, order)
    transposed = np.transpose(dense, order)
    assert list(transposed.shape) == sorted(transposed.shape)
    # Arrow ignores a view's strides: give it the transposed array in C order.
    check_against_arrow(t, pa.SparseCSFTensor.from_dense_numpy(np.ascontiguousarray(transposed)))


@settings(max_examples=60, deadline=None)
@given(case=dense_tensors())
def test_levels_and_values_equal_arrows_in_its_axis_order(case: DenseCase) -> None:
    dense, _ = case
    t = ours_from_dense(dense, arrow_axis_order(dense.shape))
    check_against_arrow(t, pa.SparseCSFTensor.from_dense_numpy(dense))


@settings(max_examples=60, deadline=None)
@given(case=dense_tensors(ARROW_DTYPES + [np.bool_]))
def test_to_pyarrow_round_trips(case: DenseCase) -> None:
    dense, order = case
    t = ours_from_dense(dense, order)
    a = t.to_pyarrow()
    assert isinstance(a, pa.SparseCSFTensor)
    assert tuple(a.shape) == t.shape
    assert a.non_zero_length == t.nnz
    assert np.array_equal(a.to_tensor().to_numpy(), t.to_dense())
    # pyarrow does not expose the axis order: pass it back.
    back = hc.from_pyarrow(a, mode_order=order)
    assert back.mode_order == t.mode_order
    assert levels_as_lists(back) == levels_as_lists(t)
    assert np.array_equal(back.values, t.values)
    # Arrow holds bool values as uint8; every other dtype comes back as itself.
    assert back.dtype == (np.uint8 if dense.dtype == np.bool_ else t.dtype)
    assert np.array_equal(back.to_dense(), t.to_dense())


def test_to_pyarrow_shares_the_index_arrays(spec_tensor: hc.CsfTensor) -> None:
    a = spec_tensor.to_pyarrow()
    _, indptr, indices = a.to_numpy()
    for (pos, crd), L in zip(spec_tensor.levels, range(3)):
        assert np.shares_memory(indices[L], crd)
        if L:
            assert np.shares_memory(indptr[L - 1], pos)


def test_from_pyarrow_of_a_tensor_made_by_pyarrow(spec_tensor: hc.CsfTensor) -> None:
    dense = spec_tensor.to_dense()
    a = pa.SparseCSFTensor.from_dense_numpy(dense)
    t = hc.from_pyarrow(a)
    assert levels_as_lists(t) == levels_as_lists(spec_tensor)
    assert t.values.tolist() == SPEC_VALUES.tolist() and t.dtype == np.float32
    assert t.to_coo()[0].tolist() == SPEC_COORDS.tolist()
    # from_pyarrow writes no statistics section; from_coo does.
    assert t.statistics is None
    assert hc.validate(t.to_bytes()).valid


@settings(max_examples=40, deadline=None)
@given(case=dense_tensors())
def test_from_pyarrow_equals_from_coo(case: DenseCase) -> None:
    dense, _ = case
    a = pa.SparseCSFTensor.from_dense_numpy(dense)
    order = arrow_axis_order(dense.shape)
    t = hc.from_pyarrow(a, mode_order=order)
    assert t.mode_order == tuple(order)
    ours = ours_from_dense(dense, order)
    if ours.nnz:
        assert levels_as_lists(t) == levels_as_lists(ours)
    assert np.array_equal(t.values, ours.values) and t.dtype == ours.dtype
    assert np.array_equal(t.to_dense(), dense)


def I(*a: int) -> npt.NDArray[np.int64]:  # noqa: E743
    return np.array(a, dtype=np.int64)


DATA = np.array([[1], [2], [3], [4]], np.float32)
INDPTR = [I(0, 2, 3), I(0, 1, 2, 4)]
INDICES = [I(0, 1), I(0, 2, 1), I(1, 3, 0, 2)]

MALFORMED: Dict[str, Tuple[List[npt.NDArray[np.int64]], List[npt.NDArray[np.int64]], str]] = {
    # (indptr, indices, rule strict validation names)
    "unsorted-leaf": (INDPTR, [I(0, 1), I(0, 2, 1), I(1, 3, 2, 0)], "sibling-order"),
    "unsorted-level-0": (INDPTR, [I(1, 0), I(0, 2, 1), I(1, 3, 0, 2)], "sibling-order"),
    "duplicate-sibling": (INDPTR, [I(0, 1), I(0, 2, 1), I(1, 3, 2, 2)], "sibling-order"),
    "indptr-decreasing": ([I(0, 3, 2), I(0, 1, 2, 4)], INDICES, "pos-decreasing"),
    "indptr-start": ([I(1, 2, 3), I(0, 1, 2, 4)], INDICES, "pos-start"),
    "indptr-past-the-end": ([I(0, 2, 3), I(0, 1, 2, 9)], INDICES, "terminal-count"),
    "indptr-huge": ([I(0, 2, 2**62), I(0, 1, 2, 4)], INDICES, "terminal-count"),
    "indptr-short": ([I(0, 2), I(0, 1, 2, 4)], INDICES, "pos-size"),
    "coordinate-out-of-bounds": (INDPTR, [I(0, 1), I(0, 2, 1), I(1, 3, 0, 7)], "coordinate-bounds"),
}


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_from_pyarrow_of_malformed_arrays_raises_validation_error(name: str) -> None:
    indptr, indices, rule = MALFORMED[name]
    st_ = pa.SparseCSFTensor.from_numpy(DATA, indptr, indices, shape=SPEC_SHAPE)
    with pytest.raises(hc.ValidationError) as info:
        hc.from_pyarrow(st_)
    assert [v.rule for v in info.value.violations] == [rule]


def test_from_pyarrow_bad_axis_order() -> None:
    st_ = pa.SparseCSFTensor.from_numpy(DATA, INDPTR, INDICES, shape=SPEC_SHAPE)
    with pytest.raises(hc.ValidationError) as info:
        hc.from_pyarrow(st_, mode_order=[0, 0, 1])
    assert info.value.violations[0].rule == "mode-order-not-permutation"
    with pytest.raises(hc.ValidationError):
        hc.from_pyarrow(st_, mode_order=[0, 1])
    with pytest.raises(ValueError):
        hc.from_pyarrow(st_, mode_order=[0, -1, 1])


@pytest.mark.parametrize(
    "indptr, indices",
    [(INDPTR, [I(0, 1), I(0, 2, -1), I(1, 3, 0, 2)]), ([I(0, -2, 3), I(0, 1, 2, 4)], INDICES)],
    ids=["negative-index", "negative-indptr"],
)
def test_from_pyarrow_negative_arrays_raise_value_error(indptr: List[npt.NDArray[np.int64]], indices: List[npt.NDArray[np.int64]]) -> None:
    st_ = pa.SparseCSFTensor.from_numpy(DATA, indptr, indices, shape=SPEC_SHAPE)
    with pytest.raises(ValueError, match="negative"):
        hc.from_pyarrow(st_)


@settings(max_examples=200, deadline=None)
@given(
    indptr=st.tuples(st.lists(st.integers(-1, 6), min_size=1, max_size=5), st.lists(st.integers(-1, 8), min_size=1, max_size=6)),
    indices=st.tuples(*[st.lists(st.integers(-1, 5), min_size=0, max_size=6) for _ in range(3)]),
    nnz=st.integers(0, 6),
)
def test_from_pyarrow_of_arbitrary_arrays_never_crashes(
    indptr: Tuple[List[int], List[int]], indices: Tuple[List[int], ...], nnz: int
) -> None:
    """Whatever arrays pyarrow wraps, from_pyarrow validates them: a tensor
    that then reads consistently, or ValidationError/ValueError."""
    data = np.arange(1, nnz + 1, dtype=np.float32).reshape(-1, 1)
    try:
        st_ = pa.SparseCSFTensor.from_numpy(data, [I(*indptr[0]), I(*indptr[1])], [I(*c) for c in indices], shape=SPEC_SHAPE)
    except (ValueError, TypeError, pa.ArrowException):
        return
    if nnz < len(indices[2]):
        return  # pyarrow would read past the data array (its own bounds are not checked)
    t = call("from_pyarrow", lambda: hc.from_pyarrow(st_), allowed=(hc.ValidationError, ValueError))
    if t is not None:
        assert hc.validate(t.to_bytes()).valid
        coords, values = t.to_coo()
        assert t.lookup(coords).tolist() == values.tolist()


@pytest.mark.parametrize("name", ["valid-type-u4", "valid-type-i4", "valid-type-bf16", "valid-type-f8e4m3", "valid-type-nf4", "valid-quantization", "valid-i4-odd-nnz"])
def test_to_pyarrow_of_packed_narrow_and_quantized_values(name: str) -> None:
    """Values numpy has no dtype for (packed 4-bit, narrow floats, quantized
    codes) reach Arrow as their values, never as the stored bytes."""
    t = hc.load(CORPUS / f"{name}.hurray")
    a = t.to_pyarrow()
    data, _, _ = a.to_numpy()
    assert np.array_equal(np.ravel(data), t.to_coo()[1])
    assert np.array_equal(a.to_tensor().to_numpy(), t.to_dense())
