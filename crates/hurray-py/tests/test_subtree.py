"""``t.subtree(prefix)``: the entries under a prefix of storage-order
coordinates, as csf-core's ``CsfView::subtree`` walks them, in the
``(coords, values)`` form of ``to_coo``. (``t[i]`` is numpy's selection:
test_selection.py.)"""

from __future__ import annotations

from typing import Any, List, Sequence, Tuple, Union

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hurray_csf as hc
from conftest import SPEC_COORDS, SPEC_SHAPE, SPEC_VALUES, coo_input, mode_orders, values_strategy


def rows(t: hc.CsfTensor, prefix: Union[int, Sequence[int]]) -> Tuple[List[List[int]], List[Any]]:
    coords, values = t.subtree(prefix)
    assert coords.dtype == np.uint64 and coords.shape == (len(values), t.rank)
    assert values.dtype == t.dtype
    return coords.tolist(), values.tolist()


def test_the_spec_example_under_each_prefix(spec_tensor: hc.CsfTensor) -> None:
    t = spec_tensor
    # "i=0: j=0,2 ; i=1: j=1", each entry with its full logical index.
    assert rows(t, 0) == ([[0, 0, 1], [0, 2, 3]], [1.0, 2.0])
    assert rows(t, [1]) == ([[1, 1, 0], [1, 1, 2]], [3.0, 4.0])
    assert rows(t, (0, 2)) == ([[0, 2, 3]], [2.0])
    # A numpy array is taken too, beyond the declared `int | Sequence[int]`.
    assert rows(t, np.array([1, 1])) == ([[1, 1, 0], [1, 1, 2]], [3.0, 4.0])  # type: ignore[arg-type]
    # The empty prefix is the whole tensor, as to_coo gives it.
    coords, values = t.subtree(())
    all_coords, all_values = t.to_coo()
    assert np.array_equal(coords, all_coords) and np.array_equal(values, all_values)
    # Absent prefixes: no entries, the right shapes and dtypes.
    for prefix in [(0, 1), (1, 0), (1, 2)]:
        assert rows(t, prefix) == ([], [])
    # numpy integers are taken too, beyond the declared `int | Sequence[int]`.
    prefixes: List[Any] = [np.int64(1), (np.uint8(0), 2)]
    assert rows(t, prefixes[0]) == rows(t, 1) and rows(t, prefixes[1]) == rows(t, (0, 2))
    # With the identity order, the entries under prefix (i,) are those of numpy's t[i].
    under = t.subtree(1)
    assert np.array_equal(t[1].todense(), t.to_dense()[1])
    assert sorted(map(tuple, under[0][:, 1:].tolist())) == sorted(map(tuple, t[1].coords.T.tolist()))


def test_prefix_errors(spec_tensor: hc.CsfTensor) -> None:
    t = spec_tensor
    bad_prefixes: List[Union[int, Tuple[int, ...]]] = [2, (0, 3), (2**64 - 1,), (2**70,), (0, 0, 1, 0)]
    for bad in bad_prefixes:
        with pytest.raises(IndexError):
            t.subtree(bad)
    with pytest.raises(IndexError, match="outside its extent 2"):
        t.subtree(2)
    with pytest.raises(IndexError, match="fewer than the rank"):
        t.subtree((0, 0, 1))  # a whole index is for t[i, j, k]
    with pytest.raises(IndexError, match="negative"):
        t.subtree(-1)
    with pytest.raises(IndexError, match="negative"):
        t.subtree((0, -2))
    untyped: Any = t  # prefixes of a wrong type, on purpose
    with pytest.raises(TypeError):
        untyped.subtree(1.0)  # never truncated to 1
    with pytest.raises(TypeError):
        untyped.subtree((0, slice(None)))
    with pytest.raises(TypeError):
        t.subtree("0")  # type: ignore[arg-type]  # a str, on purpose


def test_the_prefix_is_in_storage_order() -> None:
    # mode_order [2, 0, 1]: level 0 stores dimension 2, level 1 dimension 0.
    t = hc.from_coo(SPEC_COORDS, SPEC_VALUES, SPEC_SHAPE, mode_order=[2, 0, 1])
    assert rows(t, 3) == ([[0, 2, 3]], [2.0])
    assert rows(t, (2, 1)) == ([[1, 1, 2]], [4.0])
    assert rows(t, (0, 0)) == ([], [])  # k = 0 is stored only under i = 1
    assert rows(t, (0, 1)) == ([[1, 1, 0]], [3.0])
    # Level 0's extent is shape[2] = 4, not shape[0] = 2.
    with pytest.raises(IndexError, match="dimension 2 is outside its extent 4"):
        t.subtree(4)


def test_values_keep_their_dtype_and_are_dequantized() -> None:
    t = hc.from_coo(SPEC_COORDS, np.array([7, -1, 3, 5], np.int16), SPEC_SHAPE)
    coords, values = t.subtree(1)
    assert values.dtype == np.int16 and values.tolist() == [3, 5]
    rng = np.random.default_rng(3)
    shape = (6, 5, 7)
    flat = rng.choice(int(np.prod(shape)), 80, replace=False)
    coords = np.stack(np.unravel_index(flat, shape), axis=1)
    q = hc.from_coo(coords, rng.standard_normal(80).astype(np.float32), shape, quantize="per-channel:axis=1:i8")
    all_coords, all_values = q.to_coo()
    for i in range(shape[0]):
        c, v = q.subtree(i)
        keep = all_coords[:, 0] == i
        assert v.dtype == np.float32
        assert np.array_equal(c, all_coords[keep]) and np.array_equal(v, all_values[keep])


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_every_prefix_of_every_entry(data: st.DataObject) -> None:
    """For random tensors in random mode orders: under every prefix of every
    entry's storage-order coordinates, exactly the entries that start with
    it, in iteration order; other prefixes within the shape give none."""
    shape, coords = data.draw(coo_input(allow_zero_extent=False, max_nnz=25))
    values = data.draw(values_strategy(np.dtype(np.int32), len(coords), exact_sums=False))
    order = data.draw(mode_orders(len(shape)))
    t = hc.from_coo(coords, values, shape, duplicates="last", mode_order=order)
    order = list(t.mode_order)
    all_coords, all_values = t.to_coo()
    stored = all_coords[:, order]  # storage-order coordinates, rows in iteration order
    rank = t.rank
    present = {tuple(r[:k]) for r in stored.tolist() for k in range(rank)}
    for prefix in sorted(present):
        keep = np.all(stored[:, : len(prefix)] == np.array(prefix, dtype=np.uint64), axis=1)
        got_coords, got_values = t.subtree(prefix)
        assert np.array_equal(got_coords, all_coords[keep]), prefix
        assert np.array_equal(got_values, all_values[keep]), prefix
    probes = data.draw(st.lists(st.tuples(*[st.integers(0, shape[d] - 1) for d in order[: rank - 1]]), max_size=10))
    for probe in probes:
        for k in range(1, rank):
            if tuple(probe[:k]) not in present:
                c, v = t.subtree(probe[:k])
                assert c.shape == (0, rank) and v.shape == (0,)
