"""Threads: a build is the same bytes on one thread or two, and from_coo
releases the GIL while Rust works."""

from __future__ import annotations

import threading
import time
from typing import List, Tuple, Union

import numpy as np
import numpy.typing as npt
import pytest

import hurray_csf as hc


# (coords (nnz, 3), values, shape) of a tensor to build.
Medium = Tuple[npt.NDArray[np.int64], npt.NDArray[np.float64], Tuple[int, int, int]]
Large = Tuple[npt.NDArray[np.intp], npt.NDArray[np.float32], Tuple[int, int, int]]


@pytest.fixture(scope="module")
def medium() -> Medium:
    """300k entries over a small shape: many duplicates, parallel paths taken."""
    rng = np.random.default_rng(5)
    coords = rng.integers(0, 40, (300_000, 3))
    values = rng.standard_normal(300_000)
    return coords, values, (40, 40, 40)


@pytest.mark.parametrize("duplicates", ["sum", "last", "first"])
@pytest.mark.parametrize("mode_order", ["identity", "auto", [2, 0, 1]])
def test_one_or_two_threads_give_the_same_bytes(medium: Medium, duplicates: str, mode_order: Union[str, List[int]]) -> None:
    coords, values, shape = medium
    one = hc.from_coo(coords, values, shape, duplicates=duplicates, mode_order=mode_order, threads=1)
    two = hc.from_coo(coords, values, shape, duplicates=duplicates, mode_order=mode_order, threads=2)
    default = hc.from_coo(coords, values, shape, duplicates=duplicates, mode_order=mode_order)
    assert one.to_bytes() == two.to_bytes() == default.to_bytes()
    assert one.removed > 0
    assert one.reorder([1, 2, 0], threads=1).to_bytes() == two.reorder([1, 2, 0], threads=2).to_bytes()


def test_one_or_two_threads_quantized(medium: Medium) -> None:
    coords, values, shape = medium
    for scheme in ("per-block:block=16:i4", "nf4:block=64"):
        one = hc.from_coo(coords, values, shape, duplicates="last", quantize=scheme, threads=1)
        two = hc.from_coo(coords, values, shape, duplicates="last", quantize=scheme, threads=2)
        assert one.to_bytes() == two.to_bytes()


@pytest.fixture(scope="module")
def large() -> Large:
    """3M shuffled entries: a build of a few hundred milliseconds on one thread."""
    rng = np.random.default_rng(11)
    n = 3_000_000
    shape = (300, 300, 300)
    step = int(np.prod(shape)) // n
    flat = np.arange(n, dtype=np.int64) * step + rng.integers(0, step, n)
    rng.shuffle(flat)
    coords = np.stack(np.unravel_index(flat, shape), axis=1)
    return coords, rng.standard_normal(n).astype(np.float32), shape


def test_from_coo_releases_the_gil(large: Large) -> None:
    """Another Python thread keeps running while from_coo works: it stamps the
    time every millisecond, and stamps fall inside the build, well clear of
    its Python prologue and epilogue. (A call that held the GIL would leave
    no stamp but at its edges: the other thread could not run at all.)"""
    coords, values, shape = large
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
        for _ in range(3):  # retry: the machine may be busy
            start = time.perf_counter()
            t = hc.from_coo(coords, values, shape, mode_order="auto", threads=1)
            end = time.perf_counter()
            duration = end - start
            margin = min(0.03, duration / 5)
            inside = [s for s in stamps if start + margin < s < end - margin]
            if duration > 0.1 and len(inside) >= 5:
                break
    finally:
        stop.set()
        thread.join()
    assert t.nnz == len(values)
    assert duration > 0.1, f"the build took only {duration:.3f} s: too short to tell"
    assert len(inside) >= 5, f"{len(inside)} stamps during a {duration:.3f} s build"
