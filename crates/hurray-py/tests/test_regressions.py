"""The bugs a new user hit (issue 31), one test each: wrong data, hangs,
silent overflow, errors outside the documented classes, and the smaller ones."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import List

import numpy as np
import pytest
from conftest import SPEC_COORDS, SPEC_SHAPE, SPEC_VALUES, have

import hurray_csf as hc


def spec() -> hc.CsfTensor:
    return hc.from_coo(SPEC_COORDS, SPEC_VALUES, SPEC_SHAPE)


# -- 1. wrong data ---------------------------------------------------------------


def test_a_non_zero_fill_value_is_refused() -> None:
    sparse = pytest.importorskip("sparse")
    s = sparse.COO(np.array([[0, 1], [0, 1], [0, 1]]), np.array([1.0, 2.0]), shape=(2, 2, 2), fill_value=5.0)
    with pytest.raises(ValueError, match="fill_value 5.0"):
        hc.from_sparse(s)
    for fill in (np.nan, -1.0):
        with pytest.raises(ValueError, match="fill_value"):
            hc.from_sparse(sparse.COO(np.array([[0], [0], [0]]), np.array([1.0]), shape=(1, 1, 1), fill_value=fill))
    zero = sparse.COO(np.array([[0, 1], [0, 1], [0, 1]]), np.array([1.0, 2.0]), shape=(2, 2, 2), fill_value=-0.0)
    assert np.array_equal(hc.from_sparse(zero).to_dense(), zero.todense())


# -- 2. threads ------------------------------------------------------------------


def _pool_threads() -> List[str]:
    """The names of this process's threads started by the package's pools (Linux)."""
    names = []
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/comm") as f:
                names.append(f.read().strip())
        except OSError:
            continue
    return [n for n in names if n.startswith("hurray-csf-")]


def test_threads_is_bounded() -> None:
    for threads in (0, -1, 1025, 10**6, 2**70):
        with pytest.raises(ValueError, match="threads must be between 1 and 1024"):
            hc.from_coo(SPEC_COORDS, SPEC_VALUES, SPEC_SHAPE, threads=threads)
    for wrong in (2.0, "2", True):
        with pytest.raises(TypeError, match="threads"):
            hc.from_coo(SPEC_COORDS, SPEC_VALUES, SPEC_SHAPE, threads=wrong)  # type: ignore[arg-type]  # tested


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="counts threads through /proc")
def test_pools_are_reused_not_started_per_call() -> None:
    coords = np.random.default_rng(0).integers(0, 50, (20_000, 3))
    for _ in range(10):
        hc.from_coo(coords, np.ones(len(coords)), (50, 50, 50), duplicates="sum", threads=3)
        hc.from_coo(coords, np.ones(len(coords)), (50, 50, 50), duplicates="sum", threads=2)
    # Twenty builds started two pools, kept: 3 + 2 threads, not 50.
    before = len(_pool_threads())
    assert before >= 5 and sorted(_pool_threads()).count("hurray-csf-2") <= 4, _pool_threads()
    for _ in range(10):
        hc.from_coo(coords, np.ones(len(coords)), (50, 50, 50), duplicates="sum", threads=3)
    assert len(_pool_threads()) == before
    # At most four pools stay alive, however many counts are asked for. A
    # dropped pool's threads end on their own once told to, which a loaded
    # machine may put off for a while: waited for, up to ten seconds.
    for n in range(4, 12):
        hc.from_coo(coords, np.ones(len(coords)), (50, 50, 50), duplicates="sum", threads=n)
    deadline = time.monotonic() + 10
    while sorted(_pool_threads()).count("hurray-csf-0") > 4 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert sorted(_pool_threads()).count("hurray-csf-0") <= 4, _pool_threads()


# -- 3. silent overflow ------------------------------------------------------------


def test_coordinates_beyond_int64_are_refused_by_to_sparse() -> None:
    pytest.importorskip("sparse")
    t = hc.from_coo(np.array([[0, 0, 2**63 + 5]], dtype=np.uint64), np.array([1.0]), (1, 1, 2**64 - 1))
    with pytest.raises(OverflowError, match="2\\^63"):
        t.to_sparse()
    small = hc.from_coo(np.array([[0, 0, 5]], dtype=np.uint64), np.array([1.0]), (1, 1, 2**64 - 1))
    assert small.to_sparse().coords.tolist() == [[0], [0], [5]]


def test_torch_extent_beyond_int64_is_refused() -> None:
    pytest.importorskip("torch")
    t = hc.from_coo(np.array([[0, 0, 1]]), np.array([1.0]), (2, 2, 2**63))
    with pytest.raises(OverflowError, match="dimension 2"):
        t.to_torch()


# -- 4. every wrong argument in the documented classes --------------------------------


def test_wrong_arguments_are_type_and_value_errors(tmp_path: Path) -> None:
    t = spec()
    with pytest.raises(TypeError, match="array must be a pydata sparse or scipy.sparse array"):
        hc.from_sparse(np.zeros((2, 2, 2)))
    with pytest.raises(TypeError, match="st must be a pyarrow"):
        hc.from_pyarrow(np.zeros(3))
    with pytest.raises(TypeError, match="tensor must be a CsfTensor"):
        hc.save(b"abc", tmp_path / "x")  # type: ignore[arg-type]  # the error is what is tested
    with pytest.raises(TypeError, match="path must be a path"):
        hc.save(t, 3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="shape .* does not fit 64 bits"):
        hc.from_coo(SPEC_COORDS, SPEC_VALUES, (2**64, 3, 4))
    with pytest.raises(TypeError, match="shape\\[1\\]"):
        hc.from_coo(SPEC_COORDS, SPEC_VALUES, (2, 3.0, 4))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_elements"):
        t.to_dense(max_elements=-1)
    with pytest.raises(ValueError, match="max_elements"):
        t.to_dense(max_elements=2**64)
    with pytest.raises(TypeError, match="buffer must be a bytes-like"):
        hc.from_bytes("not bytes")
    with pytest.raises(ValueError, match="max_errors"):
        hc.validate(t.to_bytes(), max_errors=-1)
    with pytest.raises(ValueError, match="duplicates must be"):
        hc.from_coo(SPEC_COORDS, SPEC_VALUES, SPEC_SHAPE, duplicates="mean")


def test_gcxs_and_scipy_arrays_convert() -> None:
    sparse = pytest.importorskip("sparse")
    coo = sparse.COO(SPEC_COORDS.T, SPEC_VALUES, shape=SPEC_SHAPE)
    for made in (sparse.GCXS(coo), sparse.GCXS(coo, compressed_axes=[2]), sparse.DOK(coo)):
        assert np.array_equal(hc.from_sparse(made).to_dense(), coo.todense())
    if have("scipy"):
        import scipy.sparse

        with pytest.raises(ValueError, match="rank 2"):
            hc.from_sparse(scipy.sparse.coo_array(np.eye(3)))
        try:
            nd = scipy.sparse.coo_array((SPEC_VALUES, tuple(SPEC_COORDS.T)), shape=SPEC_SHAPE)
        except (TypeError, ValueError):
            return  # a scipy without n-dimensional COO arrays (before 1.15)
        assert np.array_equal(hc.from_sparse(nd).to_dense(), coo.todense())


# -- 6. smaller ones -------------------------------------------------------------------


def test_repr_shows_stored_and_logical_types() -> None:
    q = hc.from_coo(SPEC_COORDS, SPEC_VALUES, SPEC_SHAPE, quantize="per-tensor:i8")
    assert q.dtype == np.float32
    assert "dtype=float32" in repr(q) and "stored=i8" in repr(q) and "quantized=" in repr(q)
    assert "stored" not in repr(spec())


def test_one_vocabulary_with_deprecated_aliases(tmp_path: Path) -> None:
    path = tmp_path / "t.hurray"
    hc.save(spec(), path)
    assert hc.validate(path, validate="permissive").valid
    with pytest.warns(DeprecationWarning, match="mode= is deprecated"):
        assert hc.validate(path, mode="permissive").valid
    with pytest.raises(TypeError, match="validate= only"):
        hc.validate(path, mode="strict", validate="strict")
    if have("pyarrow"):
        st_ = spec().reorder([2, 0, 1]).to_pyarrow()
        with pytest.warns(DeprecationWarning, match="axis_order= is deprecated"):
            old = hc.from_pyarrow(st_, axis_order=[2, 0, 1])
        assert old.equals(hc.from_pyarrow(st_, mode_order=[2, 0, 1])) and old.mode_order == (2, 0, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        hc.load(path, validate="strict")


def test_saving_over_a_folder_names_it(tmp_path: Path) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    with pytest.raises(IsADirectoryError) as e:
        hc.save(spec(), folder)
    assert e.value.filename == str(folder)
    with pytest.raises(FileNotFoundError) as missing:
        hc.save(spec(), tmp_path / "nowhere" / "t.hurray")
    assert missing.value.filename == str(tmp_path / "nowhere" / "t.hurray")
    assert os.listdir(tmp_path) == ["out"] and os.listdir(folder) == []


def test_sum_of_duplicates_wraps_integers_as_documented() -> None:
    t = hc.from_coo(np.array([[0, 0, 0], [0, 0, 0]]), np.array([100, 100], np.int8), (1, 1, 1), duplicates="sum")
    assert t[0, 0, 0] == 200 - 256
    wide = hc.from_coo(np.array([[0, 0, 0], [0, 0, 0]]), np.array([100, 100], np.int8), (1, 1, 1), duplicates="sum", dtype=np.int64)
    assert wide[0, 0, 0] == 200
    assert "wrap" in (hc.from_coo.__doc__ or "")


def test_to_torch_is_made_coalesced() -> None:
    torch = pytest.importorskip("torch")
    t = hc.from_coo(np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1]]), np.array([1.0, 2.0, 3.0]), (2, 2, 2), mode_order=[2, 1, 0])
    x = t.to_torch()
    assert x.is_coalesced()
    assert x.indices().tolist() == [[0, 0, 1], [0, 1, 0], [1, 0, 0]]  # row-major, as coalesce sorts
    assert torch.equal(x.to_dense(), torch.from_numpy(t.to_dense()))


# -- 7. the memory map's one risk, as documented ------------------------------------------

_TRUNCATE = """
import sys, hurray_csf as hc
t = hc.load(sys.argv[1], mmap=sys.argv[2] == "map")
open(sys.argv[1], "r+b").truncate(0)
print(t.to_coo()[1].sum())
"""


@pytest.mark.skipif(not hasattr(signal, "SIGBUS"), reason="SIGBUS is a POSIX signal")
def test_truncating_a_mapped_file_is_the_documented_sigbus(tmp_path: Path) -> None:
    """What ``load``'s docstring and the README say: a file truncated under a
    memory map kills the reader (the OS's rule); ``mmap=False`` reads it into
    memory and is immune."""
    big = hc.from_coo(np.argwhere(np.ones((40, 40, 40))), np.ones(64_000), (40, 40, 40))
    for mode, dies in (("map", True), ("read", False)):
        path = tmp_path / f"{mode}.hurray"
        hc.save(big, path)
        run = subprocess.run([sys.executable, "-c", _TRUNCATE, str(path), mode], capture_output=True, text=True, timeout=120)
        if dies:
            assert run.returncode == -signal.SIGBUS, (run.returncode, run.stderr)
        else:
            assert run.returncode == 0 and run.stdout.strip() == "64000.0", run.stderr
    doc = hc.load.__doc__ or ""
    assert "SIGBUS" in doc and "mmap=False" in doc

