"""The Python benchmark of docs/benchmarks.md (section "Python package").

On a rank-3 tensor of N uniform non-zeros over 2000^3 (default N = 10M, a
seeded generator), held as numpy arrays, in one run:

- ``from_coo`` against (a) the fastest numpy COO -> CSF builder we could write
  (one argsort of a packed key, new-node flags per level, ``np.cumsum``
  pointers) wrapped with ``pyarrow.SparseCSFTensor.from_numpy``, and (b)
  pydata ``sparse.COO(coords, data, shape)``;
- ``load`` of the written file, permissive and strict;
- ``lookup`` of 1M present indices;
- ``to_pyarrow``.

The builders run in interleaved rounds (``--repeat`` of them); each figure
is the best round (wall clock), with the range of the per-round ratios. Run:

    python crates/hurray-py/bench/bench_build.py [--nnz 10000000] [--threads N]
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time
from typing import Callable, Tuple

import numpy as np

import hurray_csf as hc


def best(f: Callable[[], object], repeat: int) -> Tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = f()
        times.append(time.perf_counter() - t0)
    return min(times), out


def uniform(nnz: int, extent: int, seed: int) -> Tuple[np.ndarray, np.ndarray]:
    """``nnz`` distinct coordinates over ``extent^3`` in random order, and f64 values."""
    rng = np.random.default_rng(seed)
    cells = extent**3
    keys = np.unique(rng.integers(0, cells, size=int(nnz * 1.01) + 16, dtype=np.uint64))[:nnz]
    rng.shuffle(keys)
    coords = np.empty((keys.size, 3), dtype=np.uint64)
    coords[:, 0] = keys // (extent * extent)
    coords[:, 1] = keys // extent % extent
    coords[:, 2] = keys % extent
    return coords, rng.random(keys.size)


def numpy_csf(coords: np.ndarray, values: np.ndarray, shape: Tuple[int, ...]):
    """COO -> CSF with numpy alone, as ``pyarrow.SparseCSFTensor``."""
    import pyarrow as pa

    key = (coords[:, 0] * np.uint64(shape[1]) + coords[:, 1]) * np.uint64(shape[2]) + coords[:, 2]
    order = np.argsort(key)
    c = coords[order].astype(np.int64)
    v = values[order]
    n, rank = c.shape
    flags = []
    change = np.zeros(n, dtype=bool)
    if n:
        change[0] = True
    for level in range(rank):
        step = np.empty(n, dtype=bool)
        if n:
            step[0] = True
            np.not_equal(c[1:, level], c[:-1, level], out=step[1:])
        change = change | step
        flags.append(change)
    indices = [c[flags[level], level] for level in range(rank)]
    indptr = []
    for level in range(1, rank):
        counts = np.cumsum(flags[level])
        indptr.append(np.concatenate([counts[flags[level - 1]] - 1, counts[-1:]]).astype(np.int64))
    return pa.SparseCSFTensor.from_numpy(v.reshape(-1, 1), indptr, indices, shape=shape)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nnz", type=int, default=10_000_000)
    parser.add_argument("--extent", type=int, default=2000)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()
    shape = (args.extent,) * 3
    coords, values = uniform(args.nnz, args.extent, args.seed)
    nnz = coords.shape[0]
    print(f"# {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, numpy {np.__version__}")
    print(f"# {nnz:,} uniform non-zeros over {args.extent}^3, f64 values, threads={args.threads or 'all'}")

    # The three builders run in interleaved rounds (ours, numpy, sparse, ours,
    # ...), so that a slow spell of a shared machine falls on all of them;
    # each figure is its best round, and the ratios of each round are printed
    # too.
    contenders = [
        ("hurray_csf.from_coo", lambda: hc.from_coo(coords, values, shape, threads=args.threads)),
        ("numpy builder + pa.SparseCSFTensor.from_numpy", lambda: numpy_csf(coords, values, shape)),
    ]
    try:
        import sparse

        coords_t = np.ascontiguousarray(coords.T.astype(np.int64))
        contenders.append(("sparse.COO(coords, data, shape)", lambda: sparse.COO(coords_t, values, shape=shape)))
    except ImportError:
        sparse = None
    times = [[] for _ in contenders]
    outputs = [None] * len(contenders)
    for _ in range(args.repeat):
        for i, (_, f) in enumerate(contenders):
            t0 = time.perf_counter()
            outputs[i] = f()
            times[i].append(time.perf_counter() - t0)
            outputs[i] = outputs[i] if i < 2 else None
    t, arrow = outputs[0], outputs[1]
    t_ours = min(times[0])
    rows = [(contenders[0][0], t_ours, "")]
    for i in range(1, len(contenders)):
        rounds = [theirs / ours for ours, theirs in zip(times[0], times[i])]
        note = f"{min(times[i]) / t_ours:.1f}x ours (rounds: {min(rounds):.1f}x to {max(rounds):.1f}x)"
        rows.append((contenders[i][0], min(times[i]), note))
    if sparse is None:
        rows.append(("sparse.COO", float("nan"), "sparse not installed"))

    # Same tree as the numpy builder (a check that (a) is a real CSF builder).
    ours_levels = t.levels
    arrow_indices = arrow.to_numpy()[2]
    assert all(np.array_equal(crd, ix.ravel()) for (_, crd), ix in zip(ours_levels, arrow_indices))

    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "bench.hurray")
        hc.save(t, path)
        t_perm, _ = best(lambda: hc.load(path, validate="permissive"), max(args.repeat, 5))
        t_strict, loaded = best(lambda: hc.load(path, validate="strict"), args.repeat)
        rows.append(("load, permissive", t_perm, f"{os.path.getsize(path) / 2**20:.0f} MiB file"))
        rows.append(("load, strict", t_strict, ""))
        rng = np.random.default_rng(args.seed + 1)
        queries = np.ascontiguousarray(coords[rng.integers(0, nnz, size=1_000_000)])
        t_lookup, got = best(lambda: loaded.lookup(queries), args.repeat)
        assert (got != 0).all()
        rows.append(("lookup of 1M present indices", t_lookup, f"{1e6 / t_lookup / 1e6:.1f} M/s"))
        t_arrow, _ = best(loaded.to_pyarrow, max(args.repeat, 5))
        rows.append(("to_pyarrow", t_arrow, ""))
        del loaded, got

    width = max(len(r[0]) for r in rows)
    for name, seconds, note in rows:
        print(f"{name:<{width}}  {seconds * 1e3:10.2f} ms  {note}")


if __name__ == "__main__":
    main()
