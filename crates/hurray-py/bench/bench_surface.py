"""The numpy-surface benchmark of docs/benchmarks.md ("Python package: from_dense and indexing").

In one run, on this machine:

- ``from_dense`` against pyarrow's ``SparseCSFTensor.from_dense_numpy`` and
  against pydata ``sparse.COO.from_numpy``, on a seeded float64 array of
  ``--extent``^3 elements (default 200^3) with ``--density`` non-zeros
  (default 1%); both results are checked to hold the same entries;
- indexing of a seeded uniform tensor of ``--nnz`` non-zeros over 2000^3
  (default 1M): each kind of selection, with its result's size, against the
  same selection by pydata ``sparse.COO`` (its own indexing of the same
  entries), where sparse supports it.

Each figure is the best of ``--repeat`` rounds (wall clock), the peers
interleaved with ours. Run:

    python crates/hurray-py/bench/bench_surface.py [--extent 200] [--density 0.01] [--nnz 1000000] [--threads N]
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from typing import Any, Dict, List, Tuple

import numpy as np
from bench_build import best  # the same best-of-rounds timer

import hurray_csf as hc


def dense_array(extent: int, density: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = np.zeros((extent,) * 3)
    mask = rng.random(x.shape) < density
    x[mask] = rng.random(int(mask.sum())) + 0.5
    return x


def bench_from_dense(args: argparse.Namespace) -> None:
    x = dense_array(args.extent, args.density, args.seed)
    nnz = int(np.count_nonzero(x))
    print(f"from_dense: {args.extent}^3 float64, {nnz} non-zeros ({args.density:.1%}), best of {args.repeat}")
    rows: List[Tuple[str, float]] = []
    ours, t = best(lambda: hc.from_dense(x, threads=args.threads), args.repeat)
    rows.append(("hurray_csf.from_dense", ours))
    try:
        import pyarrow as pa

        theirs, st = best(lambda: pa.SparseCSFTensor.from_dense_numpy(x), args.repeat)
        assert st.non_zero_length == t.nnz == nnz
        rows.append(("pyarrow SparseCSFTensor.from_dense_numpy", theirs))
    except ImportError:
        rows.append(("pyarrow SparseCSFTensor.from_dense_numpy", float("nan")))
    try:
        import sparse

        s_time, s = best(lambda: sparse.COO.from_numpy(x), args.repeat)
        assert s.nnz == nnz
        rows.append(("sparse.COO.from_numpy", s_time))
    except ImportError:
        rows.append(("sparse.COO.from_numpy", float("nan")))
    for name, seconds in rows:
        print(f"  {name:42s} {seconds * 1e3:9.2f} ms   {seconds / ours:5.1f}x ours")


def uniform(nnz: int, extent: int, seed: int) -> Tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    keys = np.unique(rng.integers(0, extent**3, size=int(nnz * 1.01) + 16, dtype=np.uint64))[:nnz]
    coords = np.stack([keys // (extent * extent), keys // extent % extent, keys % extent], axis=1)
    return coords, rng.random(keys.size)


def bench_indexing(args: argparse.Namespace) -> None:
    extent = 2000
    coords, values = uniform(args.nnz, extent, args.seed)
    t = hc.from_coo(coords, values, (extent,) * 3, threads=args.threads)
    try:
        import sparse

        s = sparse.COO(coords.T.astype(np.int64), values, shape=t.shape, has_duplicates=False, sorted=True)
    except ImportError:
        s = None
    rng = np.random.default_rng(args.seed + 1)
    picks = np.sort(rng.choice(extent, 100, replace=False))
    cases: Dict[str, Any] = {
        "t[7] (one slab of dim 0: fast path, rank 2 out)": (7,),
        "t[100:300] (range of dim 0: fast path)": (slice(100, 300),),
        "t[:, 5] (one slab of dim 1: pruned walk)": (slice(None), 5),
        "t[..., 5] (one slab of the leaf dim)": (Ellipsis, 5),
        "t[:, 100:300] (range of dim 1)": (slice(None), slice(100, 300)),
        "t[::-1] (reversed dim 0: walk + sort)": (slice(None, None, -1),),
        "t[:, picks] (100 sorted coordinates of dim 1)": (slice(None), picks),
        "t[5, 6] (one fiber)": (5, 6),
    }
    print(f"indexing: uniform {args.nnz} non-zeros over {extent}^3, best of {args.repeat}")
    print(f"  {'selection':50s} {'result nnz':>10s} {'hurray_csf':>12s} {'pydata sparse':>14s}")
    for name, key in cases.items():
        ours, got = best(lambda: t[key], args.repeat)
        nnz = got.nnz
        peer = float("nan")
        if s is not None:
            peer, theirs = best(lambda: s[key], args.repeat)
            assert theirs.nnz == nnz, (name, theirs.nnz, nnz)
        print(f"  {name:50s} {nnz:10d} {ours * 1e3:9.2f} ms {peer * 1e3:11.2f} ms")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--extent", type=int, default=200)
    p.add_argument("--density", type=float, default=0.01)
    p.add_argument("--nnz", type=int, default=1_000_000)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--seed", type=int, default=31)
    args = p.parse_args()
    print(f"host: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, numpy {np.__version__}")
    bench_from_dense(args)
    bench_indexing(args)


if __name__ == "__main__":
    main()
