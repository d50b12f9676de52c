"""Zero copy, shown: a tensor's arrays are views of its source (a bytes
object, a memory-mapped file), a writable buffer is copied, and loading a
large file touches little of it."""

from __future__ import annotations

import gc
import json
import mmap
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple, Union

import numpy as np
import numpy.typing as npt
import pytest

import hurray_csf as hc
from conftest import SPEC_EXAMPLE, base_chain, reaches_mmap


def arrays(t: hc.CsfTensor) -> List[npt.NDArray[Any]]:
    return [a for level in t.levels for a in level] + [t.values]


def test_from_bytes_shares_the_bytes_object(spec_bytes: bytes) -> None:
    t = hc.from_bytes(spec_bytes)
    source = np.frombuffer(spec_bytes, dtype=np.uint8)
    for a in arrays(t):
        assert np.shares_memory(a, source)
        assert not a.flags.writeable
    # The views keep the bytes alive after the tensor and the caller let go.
    values = t.values
    del t
    gc.collect()
    assert values.tolist() == [1.0, 2.0, 3.0, 4.0]


@pytest.mark.parametrize("make", [lambda b: memoryview(b), lambda b: memoryview(bytearray(b)).toreadonly()], ids=["memoryview(bytes)", "readonly-view-of-bytearray"])
def test_read_only_buffers_are_not_copied(spec_bytes: bytes, make: Callable[[bytes], memoryview]) -> None:
    buffer = make(spec_bytes)
    t = hc.from_bytes(buffer)
    source = np.frombuffer(buffer, dtype=np.uint8)
    assert all(np.shares_memory(a, source) for a in arrays(t))


@pytest.mark.parametrize("make", [bytearray, lambda b: np.frombuffer(b, np.uint8).copy(), lambda b: memoryview(bytearray(b))], ids=["bytearray", "writable-ndarray", "writable-memoryview"])
def test_writable_buffers_are_copied(
    spec_bytes: bytes, make: Callable[[bytes], Union[bytearray, npt.NDArray[np.uint8], memoryview]]
) -> None:
    buffer = make(spec_bytes)
    t = hc.from_bytes(buffer)
    source = np.frombuffer(buffer, dtype=np.uint8)
    assert not any(np.shares_memory(a, source) for a in arrays(t))
    # Changing the buffer afterwards changes nothing the tensor reads.
    source[:] = 0
    assert t.values.tolist() == [1.0, 2.0, 3.0, 4.0] and t[1, 1, 2] == 4.0


def test_load_maps_the_file(tmp_path: Path) -> None:
    t = hc.load(SPEC_EXAMPLE)
    for a in arrays(t):
        assert reaches_mmap(a), [type(x).__name__ for x in base_chain(a)]
        assert not a.flags.writeable
    maps = [x for x in base_chain(t.values) if isinstance(x, mmap.mmap)]
    mapped = np.frombuffer(maps[0], dtype=np.uint8)
    assert all(np.shares_memory(a, mapped) for a in arrays(t))
    assert len(maps[0]) == os.path.getsize(SPEC_EXAMPLE)
    # from_coo's arrays are views of the one buffer the build encoded into
    # (a Rust Vec handed to numpy as it is: the chain ends in its container).
    u = hc.from_coo(np.array([[0, 0, 1]]), np.array([1.0]), (1, 1, 2))
    roots = {id(base_chain(a)[-1]) for a in arrays(u)}
    assert len(roots) == 1
    raw = [x for x in base_chain(u.values) if isinstance(x, np.ndarray)][-1]
    assert raw.dtype == np.uint8 and raw.nbytes == u.nbytes and not reaches_mmap(raw)
    assert all(np.shares_memory(a, raw) for a in arrays(u))


def test_arrays_outlive_the_mapped_tensor(tmp_path: Path) -> None:
    path = tmp_path / "t.hurray"
    hc.save(hc.load(SPEC_EXAMPLE), path)
    t = hc.load(path)
    pos, crd = t.levels[2]
    del t
    gc.collect()
    os.unlink(path)  # the mapping keeps the data
    assert crd.tolist() == [1, 3, 0, 2] and pos.tolist() == [0, 1, 2, 4]


RSS_SCRIPT = textwrap.dedent(
    """
    import json, os, sys

    def status():
        out = {}
        with open("/proc/self/status") as f:
            for line in f:
                key = line.split(":")[0]
                if key in ("VmRSS", "RssAnon", "RssFile"):
                    out[key] = int(line.split()[1]) * 1024
        return out

    import numpy as np
    import hurray_csf as hc

    hc.from_bytes(open(sys.argv[3], "rb").read())  # everything imported and warmed up
    # Out of the page cache: what the process maps is then only what it reads
    # (else the kernel may map the large folios the writer left, MiBs a touch).
    fd = os.open(sys.argv[1], os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)
    before = status()
    t = hc.load(sys.argv[1], validate=sys.argv[2])
    loaded = status()
    shape = t.shape
    index = tuple(json.loads(sys.argv[4]))
    value = t[index]
    looked_up = t.lookup(np.array([index], dtype=np.uint64))
    assert looked_up[0] == value
    touched = status()
    print(json.dumps({"before": before, "loaded": loaded, "touched": touched, "shape": list(shape), "value": value}))
    """
)


# (path, shape, an index stored in it, its value)
LargeFile = Tuple[Path, Tuple[int, int, int], List[int], float]


@pytest.fixture(scope="module")
def large_file(tmp_path_factory: pytest.TempPathFactory) -> LargeFile:
    """4M non-zeros (f64), about 66 MB."""
    n = 4_000_000
    shape = (400, 400, 400)
    rng = np.random.default_rng(0)
    step = int(np.prod(shape)) // n
    flat = np.arange(n, dtype=np.int64) * step + rng.integers(0, step, n)
    coords = np.stack(np.unravel_index(flat, shape), axis=1)
    values = rng.standard_normal(n)
    t = hc.from_coo(coords, values, shape)
    path = tmp_path_factory.mktemp("large") / "large.hurray"
    hc.save(t, path)
    index = [int(c) for c in coords[n // 2]]
    expected = float(values[n // 2])
    assert expected != 0.0 and t[tuple(index)] == expected
    del t, coords, values, flat
    gc.collect()
    return path, shape, index, expected


def measure(path: Path, mode: str, index: List[int]) -> Dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-c", RSS_SCRIPT, str(path), mode, str(SPEC_EXAMPLE), json.dumps(index)],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    result: Dict[str, Any] = json.loads(out.stdout)
    return result


def test_loading_a_large_file_permissively_touches_little_of_it(large_file: LargeFile) -> None:
    path, shape, index, expected = large_file
    size = os.path.getsize(path)
    assert size > 60_000_000
    r = measure(path, "permissive", index)
    assert r["shape"] == list(shape) and r["value"] == expected
    grown = r["touched"]["VmRSS"] - r["before"]["VmRSS"]
    # Permissive reading checks O(rank) structure; a lookup descends one path.
    assert grown < size / 20, f"RSS grew by {grown} bytes for a {size}-byte file"


def test_loading_a_large_file_strictly_never_copies_it(large_file: LargeFile) -> None:
    """Strict validation reads every pos/crd entry, so the file's pages become
    resident (shared, reclaimable page cache: RssFile); none is copied into
    the process's own memory (RssAnon)."""
    path, shape, index, expected = large_file
    size = os.path.getsize(path)
    r = measure(path, "strict", index)
    assert r["shape"] == list(shape) and r["value"] == expected
    copied = r["touched"]["RssAnon"] - r["before"]["RssAnon"]
    assert copied < size / 20, f"anonymous memory grew by {copied} bytes for a {size}-byte file"
