"""CP-ALS: ``hurray_csf.cp_als`` against TensorLy's ``parafac`` and pyttb's ``cp_als``.

On a real tensor (a FROSTT ``.tns`` file, default ``../shared/data/splatt_med.tns.gz``:
2425 x 10816 x 29567, 100,000 non-zeros), every library runs the same number of
iterations (``--iters``, default 10, with ``tol=0`` so none stops early) of rank
``--rank`` (default 16) from the same initial factors (uniform in [0, 1) from
numpy's ``default_rng(--seed)``), and the script prints the wall-clock seconds per
iteration (the whole call divided by the iterations, best of ``--repeat`` calls
after a warm-up call), the final fit, and how
many times slower than ``hurray_csf`` each peer is. The fits must agree: the
three implement the same algorithm (the Tensor Toolbox's; TensorLy's without
normalisation has the same model after every sweep).

Two tables:

- the whole tensor: ``hurray_csf`` (one CSF tree, and ``trees=2``) and pyttb's
  ``cp_als`` on an ``sptensor``. TensorLy's MTTKRP forms the dense Khatri-Rao
  product of the other factors (``prod of the other extents x R`` elements, with
  the sparse backend too), so it runs only when that fits ``--tensorly-gib``
  (default 4 GiB); on splatt_med it would need 38 GiB, and the row says so;
- a block of the same tensor small enough for TensorLy: the ``--block`` (default
  400) most populated coordinates of each mode, renumbered; TensorLy runs on a
  pydata ``sparse.COO`` through ``tensorly.contrib.sparse`` and, when the block
  fits ``--tensorly-gib`` as a dense array, on the dense numpy backend.

A peer that is not installed is skipped. Run from the repository root:

    python crates/hurray-py/bench/bench_cp.py [--tensor PATH] [--rank 16] [--iters 10] [--block 400] [--threads N] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path
from typing import Any, Callable, List, Optional, Tuple

import numpy as np
import numpy.typing as npt

import hurray_csf as hc

ROOT = Path(__file__).resolve().parents[3]
DEFAULT_TENSOR = ROOT.parent / "shared" / "data" / "splatt_med.tns.gz"

Coo = Tuple[npt.NDArray[np.int64], npt.NDArray[np.float64], Tuple[int, ...]]


def read_tns(path: Path) -> Coo:
    """A FROSTT ``.tns`` file (gzip or not): one non-zero a line, 1-based
    coordinates then the value; ``#`` comments and blank lines skipped. The
    shape is the largest coordinate of each mode."""
    table = np.loadtxt(path, comments="#", ndmin=2)
    coords = table[:, :-1].astype(np.int64) - 1
    shape = tuple(int(m) + 1 for m in coords.max(axis=0))
    return coords, table[:, -1].astype(np.float64), shape


def block(coo: Coo, n: int) -> Coo:
    """The entries among the ``n`` most populated coordinates of every mode, renumbered."""
    coords, values, shape = coo
    keep = np.ones(len(values), dtype=bool)
    kept = []
    for m in range(coords.shape[1]):
        counts = np.bincount(coords[:, m], minlength=shape[m])
        top = np.sort(np.argsort(-counts, kind="stable")[: min(n, shape[m])])
        kept.append(top)
        keep &= np.isin(coords[:, m], top)
    renumbered = np.stack([np.searchsorted(kept[m], coords[keep, m]) for m in range(coords.shape[1])], axis=1)
    return renumbered, values[keep], tuple(len(k) for k in kept)


class Row:
    def __init__(self, name: str, seconds: float, fits: Optional[List[float]], note: str = ""):
        self.name, self.seconds, self.fits, self.note = name, seconds, fits, note


def timed(f: Callable[[], Any], repeat: int) -> Tuple[float, Any]:
    """The best wall-clock time of ``repeat`` calls after one warm-up call
    (imports, JIT compilation, thread pools), and the last result."""
    f()
    best = float("inf")
    for _ in range(max(1, repeat)):
        start = time.perf_counter()
        out = f()
        best = min(best, time.perf_counter() - start)
    return best, out


def run_ours(coo: Coo, init: List[npt.NDArray[np.float64]], args: argparse.Namespace) -> List[Row]:
    coords, values, shape = coo
    t = hc.from_coo(coords, values, shape)
    rows = []
    for trees in (1, 2):
        seconds, result = timed(
            lambda: hc.cp_als(t, args.rank, n_iter_max=args.iters, tol=0, init=init, trees=trees, threads=args.threads),
            args.repeat,
        )
        assert result.n_iter == args.iters
        name = "hurray_csf.cp_als" + (" trees=2" if trees == 2 else "")
        rows.append(Row(name, seconds / args.iters, result.fit_history))
    return rows


def run_pyttb(coo: Coo, init: List[npt.NDArray[np.float64]], args: argparse.Namespace) -> Row:
    name = "pyttb cp_als (sptensor)"
    try:
        import pyttb as ttb
    except ImportError:
        return Row(name, float("nan"), None, "not installed")
    coords, values, shape = coo
    sp = ttb.sptensor(coords, values.reshape(-1, 1), shape)
    start = ttb.ktensor([f.copy() for f in init])
    seconds, (_, _, output) = timed(
        lambda: ttb.cp_als(sp, args.rank, stoptol=0, maxiters=args.iters, init=start, printitn=0), args.repeat
    )
    # pyttb reports the last iteration's fit only.
    return Row(name, seconds / args.iters, [float(output["fit"])])


def khatri_rao_gib(shape: Tuple[int, ...], rank: int) -> float:
    """The largest dense Khatri-Rao product TensorLy's MTTKRP forms, in GiB."""
    total = float(np.prod([float(e) for e in shape]))
    return max(total / e for e in shape) * rank * 8 / 2**30


def run_tensorly(coo: Coo, init: List[npt.NDArray[np.float64]], args: argparse.Namespace, dense: bool) -> Row:
    name = "TensorLy parafac (" + ("dense numpy" if dense else "sparse.COO, contrib.sparse") + ")"
    try:
        import sparse
        import tensorly as tl
        from tensorly.cp_tensor import CPTensor
    except ImportError:
        return Row(name, float("nan"), None, "not installed")
    coords, values, shape = coo
    need = khatri_rao_gib(shape, args.rank)
    if dense:
        need = max(need, float(np.prod([float(e) for e in shape])) * 8 / 2**30)
    if need > args.tensorly_gib:
        what = "the dense tensor and Khatri-Rao product" if dense else "the dense Khatri-Rao product"
        return Row(name, float("nan"), None, f"skipped: {what} would take {need:.1f} GiB (> --tensorly-gib {args.tensorly_gib:g})")
    x = sparse.COO(coords.T, values, shape=shape, has_duplicates=False)
    if dense:
        from tensorly.decomposition import parafac

        x = tl.tensor(x.todense())
    else:
        from tensorly.contrib.sparse.decomposition import parafac
    start = CPTensor((np.ones(args.rank), [f.copy() for f in init]))
    seconds, (_, errors) = timed(
        lambda: parafac(x, args.rank, init=start, normalize_factors=False, tol=0, n_iter_max=args.iters, return_errors=True),
        args.repeat,
    )
    return Row(name, seconds / args.iters, [1.0 - float(e) for e in errors])


def table(title: str, rows: List[Row]) -> None:
    print(title)
    ours = rows[0]
    assert ours.fits is not None
    for row in rows:
        if row.fits is None:
            print(f"  {row.name:46s} {'-':>9s}           {row.note}")
            continue
        # The trajectories where the peer gives one, else the final fits.
        theirs = row.fits if len(row.fits) == len(ours.fits) else row.fits[-1:]
        mine = ours.fits[-len(theirs):]
        agree = max(abs(a - b) for a, b in zip(mine, theirs))
        ratio = row.seconds / ours.seconds
        print(f"  {row.name:46s} {row.seconds * 1e3:9.1f} ms/iter   fit {row.fits[-1]:.10f}   {ratio:7.1f}x ours' time   |fit - ours| {agree:.1e}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tensor", type=Path, default=DEFAULT_TENSOR)
    parser.add_argument("--rank", type=int, default=16)
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--block", type=int, default=400)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--tensorly-gib", type=float, default=4.0)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"hurray_csf {hc.__version__}, threads={args.threads or 'all'}")
    whole = read_tns(args.tensor)
    for label, coo in ((f"{args.tensor.name}", whole), (f"{args.tensor.name}, block of the top {args.block} per mode", block(whole, args.block))):
        coords, values, shape = coo
        rng = np.random.default_rng(args.seed)
        init = [rng.random((n, args.rank)) for n in shape]
        rows = run_ours(coo, init, args)
        rows.append(run_pyttb(coo, init, args))
        rows.append(run_tensorly(coo, init, args, dense=False))
        if coo is not whole:
            rows.append(run_tensorly(coo, init, args, dense=True))
        shape_text = " x ".join(map(str, shape))
        table(f"\n{label}: {shape_text}, {len(values):,} non-zeros, rank {args.rank}, {args.iters} iterations, tol=0", rows)


if __name__ == "__main__":
    main()
