"""The cluster-build benchmark of docs/benchmarks.md ("Cluster build") and
docs/scaling.md.

``generate`` writes N rank-3 entries (a seeded generator; uniform over
10000^3, or power law over 5000 x 50000 x 500000 with skew 3 as the builder
benchmarks use) as 16 Parquet files (int64 coordinates i, j, k and an f64
value v, snappy, row groups of 1M), and the same entries as one file
``all.parquet`` for the CLI. ``run`` builds them with ``from_dask`` on a
``LocalCluster`` of W single-threaded worker processes (``stage_timings``:
the shuffle persisted as a stage of its own; ``--fused`` runs it as users
do, shuffle and build in one graph), prints the seconds of each
stage and each worker's peak resident memory, and checks the file against
the one ``hurray convert all.parquet --memory M`` writes (run it yourself,
timed with ``/usr/bin/time -v``; the command is printed). Run:

    python crates/hurray-py/bench/bench_dask.py generate DIR [--nnz 100000000] [--dist uniform|power]
    python crates/hurray-py/bench/bench_dask.py run DIR --workers 1 [--parts 16] [--fused]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sys
import time

import numpy as np

FILES = 16
ROW_GROUP = 1 << 20


def entries(nnz: int, dist: str, seed: int, start: int, count: int) -> "dict[str, np.ndarray]":
    """Entries ``start .. start + count`` of the stream (each chunk its own seed)."""
    rng = np.random.default_rng([seed, start])
    if dist == "uniform":
        extents = (10_000, 10_000, 10_000)
        c = [rng.integers(0, e, size=count, dtype=np.int64) for e in extents]
    else:
        extents = (5_000, 50_000, 500_000)
        c = [np.minimum((e * rng.random(count) ** 3.0).astype(np.int64), e - 1) for e in extents]
    return {"i": c[0], "j": c[1], "k": c[2], "v": rng.random(count)}


def generate(folder: str, nnz: int, dist: str, seed: int) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    os.makedirs(folder, exist_ok=True)
    per_file = -(-nnz // FILES)
    schema = pa.schema([("i", pa.int64()), ("j", pa.int64()), ("k", pa.int64()), ("v", pa.float64())])
    t0 = time.perf_counter()
    with pq.ParquetWriter(os.path.join(folder, "all.parquet"), schema, compression="snappy") as whole:
        for f in range(FILES):
            start, count = f * per_file, min(per_file, nnz - f * per_file)
            table = pa.table(entries(nnz, dist, seed, start, count), schema=schema)
            pq.write_table(table, os.path.join(folder, f"part.{f:02d}.parquet"), row_group_size=ROW_GROUP, compression="snappy")
            whole.write_table(table, row_group_size=ROW_GROUP)
    with open(os.path.join(folder, "meta.json"), "w") as m:
        json.dump({"nnz": nnz, "dist": dist, "seed": seed, "files": FILES}, m)
    print(f"wrote {nnz:,} {dist} entries to {FILES} files and all.parquet in {time.perf_counter() - t0:.1f} s")


def peak_rss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def run(folder: str, workers: int, parts: int, out: str, stages: bool) -> None:
    import dask
    import dask.dataframe as dd
    import distributed

    from hurray_csf.dask import from_dask

    meta = json.load(open(os.path.join(folder, "meta.json")))
    files = sorted(os.path.join(folder, f) for f in os.listdir(folder) if f.startswith("part."))
    # p2p shuffle and spill files on the local disk, beside the data.
    dask.config.set({"temporary-directory": folder})
    with distributed.LocalCluster(
        n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=40
    ) as cluster, distributed.Client(cluster) as client:
        frame = dd.read_parquet(files)
        t0 = time.perf_counter()
        report = from_dask(frame, out=out, values="v", coords=["i", "j", "k"], duplicates="sum", parts=parts,
                           threads=1, stage_timings=stages)
        total = time.perf_counter() - t0
        worker_peaks = client.run(peak_rss)
    seconds = report.seconds
    print(json.dumps({
        "host": f"{platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}",
        "data": meta, "workers": workers, "parts": report.parts, "entries": report.entries, "nnz": report.nnz,
        "mode_order": report.mode_order, "shape": report.shape,
        "seconds": {k: round(v, 2) for k, v in seconds.items()}, "total": round(total, 2),
        "worker_peak_mib": sorted(round(v / 2**20) for v in worker_peaks.values()),
        "client_peak_mib": round(peak_rss() / 2**20),
        "out_bytes": os.path.getsize(out),
    }))
    print(f"compare: hurray convert {folder}/all.parquet --coords i,j,k --values v --duplicates sum "
          f"--memory 4GiB --timings -o OTHER && cmp OTHER {out}", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    g = sub.add_parser("generate")
    g.add_argument("folder")
    g.add_argument("--nnz", type=int, default=100_000_000)
    g.add_argument("--dist", choices=["uniform", "power"], default="uniform")
    g.add_argument("--seed", type=int, default=42)
    r = sub.add_parser("run")
    r.add_argument("folder")
    r.add_argument("--workers", type=int, default=1)
    r.add_argument("--parts", type=int, default=16)
    r.add_argument("--out", default=None)
    r.add_argument("--fused", action="store_true", help="the default from_dask: shuffle and build in one graph, not timed apart")
    args = parser.parse_args()
    if args.command == "generate":
        generate(args.folder, args.nnz, args.dist, args.seed)
    else:
        run(args.folder, args.workers, args.parts, args.out or os.path.join(args.folder, "dask.hurray"), not args.fused)


if __name__ == "__main__":
    main()
