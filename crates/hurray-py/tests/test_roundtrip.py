"""Property tests: from_coo -> save -> load -> to_coo gives the input back
(after the duplicate policy), for every dtype, every mode order, ranks 3 to
6, empty tensors included; to_coo iterates in storage order; the levels are
the CSF tree of csf-layout.txt; "auto" picks the smallest tree."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import hurray_csf as hc
from conftest import (
    DTYPES,
    UNSUMMABLE,
    ModeOrder,
    all_permutations,
    canonical,
    coo_input,
    csf_levels,
    dense_of,
    index_bytes,
    levels_as_lists,
    mode_orders,
    same_values,
    values_strategy,
)

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
DUPLICATES = ["sum", "last", "first", "error"]


@pytest.fixture(scope="module")
def folder() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="hurray-py-test-") as d:
        yield Path(d)


def has_duplicates(coords: npt.NDArray[np.integer[Any]]) -> bool:
    return len({tuple(r) for r in coords.tolist()}) != len(coords)


def check_tensor(
    t: hc.CsfTensor,
    shape: Sequence[int],
    coords: npt.NDArray[np.integer[Any]],
    values: npt.NDArray[Any],
    order: Sequence[int],
    duplicates: str,
) -> None:
    """``t`` holds exactly what the reference says ``from_coo`` makes."""
    want_coords, want_values = canonical(coords, values, order, duplicates)
    assert t.shape == tuple(shape)
    assert t.mode_order == tuple(order)
    assert t.nnz == len(want_values)
    assert t.dtype == values.dtype
    got_coords, got_values = t.to_coo()
    # Storage order: sorted by the coordinates permuted by mode_order.
    assert got_coords.dtype == np.uint64
    assert got_coords.tolist() == want_coords.tolist()
    assert same_values(got_values, want_values)
    # The tree itself, level by level.
    storage = [tuple(row[d] for d in order) for row in want_coords.tolist()]
    assert levels_as_lists(t) == csf_levels(storage, len(shape))
    assert same_values(t.values, want_values)
    # Lookups of every stored index and one absent index, and the dense array.
    if len(want_values):
        assert same_values(t.lookup(want_coords), want_values)
        assert t.find(want_coords).tolist() == list(range(len(want_values)))
    size = int(np.prod(shape))
    if size <= 4096:
        assert same_values(t.to_dense(), dense_of(want_coords, want_values, shape))


def build(
    coords: npt.NDArray[np.integer[Any]], values: npt.NDArray[Any], shape: Sequence[int], mode_order: ModeOrder, duplicates: str
) -> hc.CsfTensor:
    return hc.from_coo(coords, values, shape, mode_order=mode_order, duplicates=duplicates)


@pytest.mark.parametrize("duplicates", DUPLICATES)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@SETTINGS
@given(data=st.data())
def test_round_trip_through_a_file(folder: Path, dtype: np.dtype[Any], duplicates: str, data: st.DataObject) -> None:
    shape, coords = data.draw(coo_input())
    rank = len(shape)
    values = data.draw(values_strategy(dtype, len(coords), exact_sums=duplicates == "sum"))
    mode_order = data.draw(mode_orders(rank))
    if duplicates == "sum" and dtype in UNSUMMABLE:
        with pytest.raises(TypeError, match="cannot sum"):
            build(coords, values, shape, mode_order, duplicates)
        return
    if duplicates == "error" and has_duplicates(coords):
        with pytest.raises(hc.DuplicateError) as info:
            build(coords, values, shape, mode_order, duplicates)
        e = info.value
        assert isinstance(e, hc.BuildError) and isinstance(e, hc.HurrayError)
        assert 0 <= e.first < e.second < len(coords)
        rows = coords.tolist()
        assert tuple(rows[e.first]) == tuple(rows[e.second]) == e.index
        # first and second are the first two occurrences of that index in the input.
        same = [i for i, r in enumerate(rows) if tuple(r) == e.index]
        assert (e.first, e.second) == (same[0], same[1])
        return
    t = build(coords, values, shape, mode_order, duplicates)
    # A str mode order is "identity" or "auto".
    order = list(range(rank)) if mode_order == "identity" else t.mode_order if isinstance(mode_order, str) else mode_order
    if mode_order == "auto":
        assert t.auto is not None and t.auto.mode_order == t.mode_order
    else:
        assert t.auto is None
    assert t.removed == len(coords) - t.nnz
    check_tensor(t, shape, coords, values, order, duplicates)

    path = folder / f"t-{dtype}-{duplicates}.hurray"
    hc.save(t, path)
    assert path.read_bytes() == t.to_bytes()
    for mode in ("strict", "permissive"):
        u = hc.load(path, validate=mode)
        check_tensor(u, shape, coords, values, order, duplicates)
        assert u.to_bytes() == t.to_bytes()
    assert hc.from_bytes(t.to_bytes()).to_bytes() == t.to_bytes()
    report = hc.validate(path)
    assert report.valid and report.errors == [] and report.warnings == []


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("rank", [3, 4, 5, 6])
def test_empty_tensors(folder: Path, dtype: np.dtype[Any], rank: int) -> None:
    shape = tuple(range(2, 2 + rank))
    order = list(range(rank))[::-1]
    for layout, coords in (("nnz_rank", np.zeros((0, rank), np.int64)), ("rank_nnz", np.zeros((rank, 0), np.int64))):
        t = hc.from_coo(coords, np.zeros(0, dtype), shape, coords_layout=layout, mode_order=order)
        assert t.nnz == 0 and t.shape == shape and t.mode_order == tuple(order)
        assert levels_as_lists(t) == [([0, 0], [])] + [([0], [])] * (rank - 1)
        path = folder / "empty.hurray"
        hc.save(t, path)
        u = hc.load(path)
        coords_out, values_out = u.to_coo()
        assert coords_out.shape == (0, rank) and values_out.shape == (0,) and values_out.dtype == dtype
        assert not u.to_dense().any() and u.to_dense().shape == shape
        assert u[(1,) * rank] == 0


@pytest.mark.parametrize("rank", [3, 4])
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_auto_stores_the_fewest_index_bytes(rank: int, data: st.DataObject) -> None:
    """For rank <= 5 csf-build finds the exact optimum, ties going to the
    lexicographically first order (the identity when it is among them)."""
    shape, coords = data.draw(coo_input(rank=st.just(rank), max_extent=5, max_nnz=25))
    values = np.ones(len(coords), np.float32)
    t = hc.from_coo(coords, values, shape, mode_order="auto", duplicates="first")
    sizes = {tuple(p): index_bytes(coords, p) for p in all_permutations(rank)}
    best = min(sizes.values())
    first_best = min(p for p, s in sizes.items() if s == best)
    assert t.auto is not None and t.auto.index_bytes == best
    assert t.mode_order == first_best
    assert sum(p.nbytes + c.nbytes for p, c in t.levels) == best


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_reorder_keeps_the_tensor(data: st.DataObject) -> None:
    shape, coords = data.draw(coo_input(allow_zero_extent=False))
    values = data.draw(values_strategy(np.dtype(np.int32), len(coords), exact_sums=False))
    t = hc.from_coo(coords, values, shape, duplicates="last")
    target = data.draw(mode_orders(len(shape)))
    u = t.reorder(target)
    order = list(range(len(shape))) if target == "identity" else u.mode_order if isinstance(target, str) else target
    assert u.mode_order == tuple(order)
    check_tensor(u, shape, coords, values, order, "last")
    assert hc.validate(u.to_bytes()).valid
    # A round trip of orders gives back the very same bytes.
    assert u.reorder(t.mode_order).to_bytes() == t.to_bytes()


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_drop_zeros(dtype: np.dtype[Any], data: st.DataObject) -> None:
    shape, coords = data.draw(coo_input(allow_zero_extent=False, max_nnz=20))
    rows = {tuple(r) for r in coords.tolist()}
    coords = np.array(sorted(rows), np.int64).reshape(len(rows), len(shape))
    values = data.draw(values_strategy(dtype, len(coords), exact_sums=True))
    assume(dtype.kind != "f" or not np.isnan(values).any())
    t = hc.from_coo(coords, values, shape, drop_zeros=True)
    keep = values != 0
    assert t.nnz == int(keep.sum()) and t.removed == len(values) - t.nnz
    got_coords, got_values = t.to_coo()
    assert got_coords.tolist() == coords[keep].tolist()
    assert same_values(got_values, values[keep])
