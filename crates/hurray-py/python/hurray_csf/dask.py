"""One CSF file from a Dask DataFrame or Dask arrays, built on a cluster:
``from_dask``.

Dask does the scheduling, the shuffle and the transport; the Rust crates do
everything about the format. The build follows docs/scaling.md:

1. *Scan* (one pass over the input): every partition's row count (which
   gives each entry its global input position), the shape when not given,
   every coordinate checked, and an evenly spaced sample of rows.
2. *Cut*: csf-build's ``KeyRanges`` from a sample proportional to the
   partitions' sizes: at most ``parts`` ranges of storage-order keys, of
   near-equal size. A bound is a whole key, so a level-0 coordinate holding
   most of the entries spreads over several ranges.
3. *Shuffle*: each entry tagged with its position and its range
   (``KeyRanges.assign``), then ``set_index`` on the range with one division
   per range: Dask's own shuffle.
4. *Build*: one task per range builds its entries in input-position order
   (``build_at``, GIL released) and writes the part atomically under a name
   fixed by the range, in a private folder on storage shared by the workers
   and the client. A retried task (a worker lost mid-build) overwrites its
   part; it never adds one.
5. *Join*: the client joins the parts in key order in one streaming pass
   (``hurray_csf.concat``), writes ``out`` atomically, and removes the
   folder, on success, on error and on ``KeyboardInterrupt``.

This module imports Dask; ``import hurray_csf`` does not.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt

try:
    import dask
    import dask.array as da
    import dask.dataframe as dd
    import pandas as pd
except ImportError as e:  # pragma: no cover - exercised without Dask installed
    raise ImportError(
        "hurray_csf.dask needs Dask's DataFrame: pip install 'dask[dataframe,distributed]'"
    ) from e

from . import _native
from ._atomic import atomic_target, path_argument, write_atomically
from ._build import _DUPLICATES
from ._errors import HurrayError
from ._common import (
    ModeOrder,
    dtype_argument,
    element_type_of,
    little_endian_bytes,
    mode_order_argument,
    quantize_argument,
    shape_argument,
    threads_argument,
)

__all__ = ["DaskBuildReport", "from_dask"]

#: Keys in the sample the key ranges are cut from (csf-build sorts at most
#: this many; plenty for thousands of ranges).
SAMPLE_KEYS = 1 << 16
#: Columns taken as the values when ``values`` is not given (as ``hurray
#: convert`` takes them from a Parquet file).
VALUE_NAMES = ("value", "values", "val", "v")


class DaskBuildReport(NamedTuple):
    """What ``from_dask`` built, and how long each stage took."""

    path: str
    shape: Tuple[int, ...]
    mode_order: Tuple[int, ...]
    #: Input entries (rows), duplicates included.
    entries: int
    #: Non-zeros stored.
    nnz: int
    #: Key ranges built (parts joined).
    parts: int
    #: Seconds per stage: ``scan`` (with the sample), ``cut``, ``shuffle``
    #: (0 unless ``stage_timings``: the shuffle then runs inside ``build``),
    #: ``build`` and ``join``.
    seconds: Dict[str, float]


def from_dask(
    data: Any,
    coords: Optional[Sequence[str]] = None,
    values: Any = None,
    shape: Optional[Sequence[int]] = None,
    *,
    out: Any,
    mode_order: ModeOrder = "identity",
    duplicates: str = "error",
    drop_zeros: bool = False,
    dtype: Optional[npt.DTypeLike] = None,
    quantize: Optional[str] = None,
    statistics: bool = True,
    parts: Optional[int] = None,
    temp_dir: Optional[Any] = None,
    threads: Optional[int] = None,
    stage_timings: bool = False,
    _kill_once: Optional[str] = None,
) -> DaskBuildReport:
    """Builds the CSF file ``out`` from COO entries held by Dask, on whatever
    scheduler is active (a ``distributed.Client``, or Dask's local ones).

    ``data`` is a Dask DataFrame (``dask.dataframe.read_parquet(...)``, say)
    with one column per coordinate and one of values, or a Dask array of
    shape ``(nnz, rank)`` with the values as a 1-D Dask array in ``values``.
    For a DataFrame, ``coords`` names the coordinate columns in dimension
    order (default: every integer column but the values), and ``values`` the
    values column (default: the first of ``value``, ``values``, ``val``,
    ``v``, else the last column). Coordinates are 0-based integers (float
    columns holding whole numbers are accepted); a negative, fractional,
    missing or (with ``shape``) out-of-range one raises ``ValueError`` naming
    the partition, the row within it and the column.

    The file is byte for byte the one ``from_coo`` writes of the partitions'
    rows concatenated in partition order, with the same ``shape``,
    ``mode_order``, ``duplicates``, ``drop_zeros``, ``dtype`` and
    ``quantize``: every entry carries its position in that concatenation, so
    ``"first"``, ``"last"``, ``"error"`` (whose ``DuplicateError`` names
    the two positions) and floating-point ``"sum"`` (added in input order)
    agree with it exactly. ``mode_order="auto"`` is decided from the sample:
    the order ``from_coo(mode_order="auto")`` chooses for the sampled
    entries (exact for them at rank <= 5), which is the whole input's when
    the sample represents it, and otherwise an estimate; the order used is
    in the report. ``quantize`` is applied at the join, to all the values,
    with ``from_coo``'s arithmetic.

    ``parts`` caps the key ranges (default: the input's partition count);
    each range is built in one task's memory, so choose enough for the
    workers' memory. ``temp_dir`` (default: ``out``'s folder) holds the
    parts and the join's spill files in a private folder, and must be
    storage that every worker and this process see. ``threads`` caps each
    task's build threads (default: every core of the worker).
    ``stage_timings=True`` runs the shuffle as a stage of its own
    (``persist``) so that the report times it apart from the build, at the
    cost of holding the shuffled entries in the workers' memory.
    """
    target = path_argument(out, "out")
    if duplicates not in _DUPLICATES:
        raise ValueError(f"duplicates must be one of {', '.join(map(repr, _DUPLICATES))}, not {duplicates!r}")
    frame, columns, value_column = _as_frame(data, coords, values)
    rank = len(columns)
    value_dtype = dtype_argument(dtype) if dtype is not None else _numpy_dtype(frame.dtypes[value_column])
    element_type = element_type_of(value_dtype, "values")
    given = None if shape is None else tuple(shape_argument(shape))
    if given is not None and len(given) != rank:
        raise ValueError(f"the shape {list(given)} has rank {len(given)}, the coordinates {rank} columns")
    order_argument = mode_order_argument(mode_order)
    if not isinstance(order_argument, str):
        # csf-build's check of the permutation, before any pass over the data.
        _native.key_ranges(np.zeros((0, rank), np.uint64), order_argument, 1)
    scheme = quantize_argument(quantize)
    wanted = frame.npartitions if parts is None else int(parts)
    if wanted < 1:
        raise ValueError(f"parts must be at least 1, not {parts}")
    workers = threads_argument(threads)
    spill = path_argument(temp_dir, "temp_dir") if temp_dir is not None else os.path.dirname(os.path.abspath(target))
    folder = tempfile.mkdtemp(prefix=f".{os.path.basename(target)}.parts-", dir=spill)
    seconds = {"scan": 0.0, "cut": 0.0, "shuffle": 0.0, "build": 0.0, "join": 0.0}
    try:
        clock = time.perf_counter()
        pieces = frame.to_delayed()
        per_partition = max(64, 4 * SAMPLE_KEYS // max(1, len(pieces)))
        scans: List[_Scan] = list(
            dask.compute(
                *[
                    dask.delayed(_scan)(piece, i, columns, value_column, given, per_partition)
                    for i, piece in enumerate(pieces)
                ]
            )
        )
        entries = sum(s.rows for s in scans)
        offsets = np.concatenate([[0], np.cumsum([s.rows for s in scans], dtype=np.int64)])
        full = given if given is not None else _inferred_shape(scans, rank)
        seconds["scan"] = time.perf_counter() - clock

        clock = time.perf_counter()
        sample = _proportional_sample(scans, rank, entries)
        order = _storage_order(order_argument, sample, full, rank)
        bounds = np.ascontiguousarray(_native.key_ranges(sample, order, wanted), dtype=np.uint64)
        ranges = bounds.shape[0] + 1
        seconds["cut"] = time.perf_counter() - clock

        clock = time.perf_counter()
        meta = _tagged_meta(rank, value_dtype)
        tagged = dd.from_delayed(
            [
                dask.delayed(_tag)(piece, int(offsets[i]), columns, value_column, value_dtype, bounds, order)
                for i, piece in enumerate(pieces)
            ],
            meta=meta,
            verify_meta=False,
        )
        shuffled = tagged.set_index("_range", divisions=list(range(ranges + 1)))
        if stage_timings:
            shuffled = shuffled.persist()
            _wait(shuffled)
            seconds["shuffle"] = time.perf_counter() - clock
            clock = time.perf_counter()
        builds = [
            dask.delayed(_build_range)(
                piece, k, folder, rank, element_type, value_dtype, full, order, duplicates, drop_zeros, workers,
                _kill_once,
            )
            for k, piece in enumerate(shuffled.to_delayed())
        ]
        results = dask.compute(*builds)
        # The error of the range with the smallest keys: the one from_coo reports.
        failed = next((r for r in results if isinstance(r, BaseException)), None)
        if failed is not None:
            raise failed
        written = [p for p in results if isinstance(p, str)]
        seconds["build"] = time.perf_counter() - clock

        clock = time.perf_counter()
        if not written:
            # No entries at all: one empty part gives the empty tensor.
            empty = _build_range(
                meta.iloc[0:0], 0, folder, rank, element_type, value_dtype, full, order, duplicates, drop_zeros,
                workers, None, keep_empty=True,
            )
            if isinstance(empty, BaseException):
                raise empty
            written = [empty] if isinstance(empty, str) else []
        with atomic_target(target) as tmp:
            _, nnz, _ = _native.join_files(written, tmp, scheme, bool(statistics), folder)
        seconds["join"] = time.perf_counter() - clock
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return DaskBuildReport(target, tuple(full), tuple(order), entries, nnz, ranges, seconds)


class _Scan(NamedTuple):
    rows: int
    #: One past the largest coordinate per dimension (0 for no rows).
    extents: Tuple[int, ...]
    #: Evenly spaced rows, ``(m, rank)`` uint64.
    sample: npt.NDArray[np.uint64]


def _as_frame(data: Any, coords: Optional[Sequence[str]], values: Any) -> Tuple[Any, List[str], str]:
    """The input as a Dask DataFrame, its coordinate columns and values column."""
    if isinstance(data, da.Array):
        return _arrays_as_frame(data, values)
    if not isinstance(data, dd.DataFrame):
        raise TypeError(f"data must be a Dask DataFrame or a Dask array, not {type(data).__name__}")
    names = [str(c) for c in data.columns]
    if values is None:
        value_column = next((n for n in VALUE_NAMES if n in names), names[-1] if names else "")
    elif isinstance(values, str):
        value_column = values
    else:
        raise TypeError(f"values must name a column of the DataFrame, not {type(values).__name__}")
    if value_column not in names:
        raise ValueError(f"no values column {value_column!r}: the DataFrame has {names}")
    if coords is None:
        columns = [n for n in names if n != value_column and _numpy_dtype(data.dtypes[n]).kind in "iu"]
    else:
        if isinstance(coords, str):
            raise TypeError("coords must be a sequence of column names, not one string")
        columns = [str(c) for c in coords]
        missing = [c for c in columns if c not in names]
        if missing:
            raise ValueError(f"no coordinate column {missing[0]!r}: the DataFrame has {names}")
    if len(columns) < 3:
        raise ValueError(f"CSF needs rank >= 3: {len(columns)} coordinate columns {columns}")
    for c in columns:
        if _numpy_dtype(data.dtypes[c]).kind not in "iuf":
            raise TypeError(f"coordinate column {c!r} has dtype {data.dtypes[c]}: integers needed")
    return data[columns + [value_column]], columns, value_column


def _arrays_as_frame(coords: Any, values: Any) -> Tuple[Any, List[str], str]:
    """Dask arrays (coordinates ``(nnz, rank)``, values ``(nnz,)``) as a DataFrame."""
    if coords.ndim != 2:
        raise ValueError(f"coords must be a 2-D Dask array (nnz, rank), not {coords.ndim}-D")
    if not isinstance(values, da.Array) or values.ndim != 1:
        raise TypeError("with a Dask array of coordinates, values must be a 1-D Dask array")
    if coords.shape[0] != values.shape[0]:
        raise ValueError(f"values has {values.shape[0]} elements, coords {coords.shape[0]} entries: one value per entry")
    rank = coords.shape[1]
    columns = [f"c{d}" for d in range(rank)]
    coords = coords.rechunk({1: -1})
    values = values.rechunk((coords.chunks[0],))
    blocks = [
        dask.delayed(_block_frame)(c, v, columns)
        for c, v in zip(coords.to_delayed()[:, 0], values.to_delayed())
    ]
    meta = _block_frame(np.zeros((0, rank), coords.dtype), np.zeros(0, values.dtype), columns)
    return dd.from_delayed(blocks, meta=meta, verify_meta=False), columns, "value"


def _block_frame(c: npt.NDArray[Any], v: npt.NDArray[Any], columns: List[str]) -> Any:
    frame = pd.DataFrame({name: c[:, d] for d, name in enumerate(columns)})
    frame["value"] = v
    return frame


def _numpy_dtype(dtype: Any) -> np.dtype[Any]:
    """A column's numpy dtype (pandas' nullable ``Int64`` gives ``int64``)."""
    made: np.dtype[Any] = np.dtype(getattr(dtype, "numpy_dtype", dtype))
    return made


def _coordinates(
    frame: Any, i: int, columns: List[str], shape: Optional[Tuple[int, ...]], check: bool = True
) -> npt.NDArray[np.uint64]:
    """The partition's coordinates as a ``(rows, rank)`` uint64 array, every
    one checked unless ``check`` is false (the error names the partition, the
    row and the column; the scan checks, the later pass only converts)."""
    rows = len(frame)
    out = np.empty((rows, len(columns)), dtype=np.uint64)
    for d, name in enumerate(columns):
        column = frame[name]
        if not check:
            out[:, d] = column.to_numpy(dtype=_numpy_dtype(column.dtype))
            continue
        where = f"partition {i}, row {{}}: coordinate column {name!r}"
        nulls = np.flatnonzero(column.isna().to_numpy())
        if nulls.size:
            raise ValueError(where.format(int(nulls[0])) + " is missing (null)")
        raw = column.to_numpy(dtype=_numpy_dtype(column.dtype))
        if raw.dtype.kind == "f":
            bad = np.flatnonzero(~np.isfinite(raw) | (raw != np.floor(raw)))
            if bad.size:
                raise ValueError(where.format(int(bad[0])) + f" holds {raw[bad[0]].item()}, not an integer")
        elif raw.dtype.kind not in "iu":
            raise TypeError(f"coordinate column {name!r} has dtype {raw.dtype}: integers needed")
        if raw.dtype.kind != "u":
            negative = np.flatnonzero(raw < 0)
            if negative.size:
                raise ValueError(where.format(int(negative[0])) + f" holds {raw[negative[0]]}, a negative coordinate")
        out[:, d] = raw
        if shape is not None:
            outside = np.flatnonzero(out[:, d] >= np.uint64(shape[d]))
            if outside.size:
                at = int(outside[0])
                raise ValueError(
                    where.format(at) + f": coordinate {int(out[at, d])} of dimension {d} is outside its extent {shape[d]}"
                )
    return out


def _scan(
    frame: Any,
    i: int,
    columns: List[str],
    value_column: str,
    shape: Optional[Tuple[int, ...]],
    sample_rows: int,
) -> _Scan:
    """One partition's row count, extents and sample, its coordinates and values checked."""
    coords = _coordinates(frame, i, columns, shape)
    nulls = np.flatnonzero(frame[value_column].isna().to_numpy())
    if nulls.size:
        raise ValueError(f"partition {i}, row {int(nulls[0])}: the value (column {value_column!r}) is missing (null)")
    rows = coords.shape[0]
    extents = tuple(int(m) + 1 for m in coords.max(axis=0)) if rows else (0,) * len(columns)
    take = np.unique(np.linspace(0, rows - 1, min(rows, sample_rows)).astype(np.int64)) if rows else np.zeros(0, np.int64)
    return _Scan(rows, extents, np.ascontiguousarray(coords[take]))


def _inferred_shape(scans: List[_Scan], rank: int) -> Tuple[int, ...]:
    """One past the largest coordinate of each dimension, as ``from_coo`` infers it."""
    return tuple(max((s.extents[d] for s in scans), default=0) for d in range(rank))


def _proportional_sample(scans: List[_Scan], rank: int, entries: int) -> npt.NDArray[np.uint64]:
    """About ``SAMPLE_KEYS`` rows, each partition giving its share of the
    entries (evenly spaced within its own sample)."""
    chosen = []
    for s in scans:
        if not s.rows:
            continue
        want = max(1, round(SAMPLE_KEYS * s.rows / max(1, entries)))
        have = s.sample.shape[0]
        take = np.unique(np.linspace(0, have - 1, min(have, want)).astype(np.int64))
        chosen.append(s.sample[take])
    if not chosen:
        return np.zeros((0, rank), dtype=np.uint64)
    return np.ascontiguousarray(np.concatenate(chosen))


def _storage_order(argument: Any, sample: npt.NDArray[np.uint64], shape: Tuple[int, ...], rank: int) -> List[int]:
    """The mode order: given, identity, or ``auto``'s choice for the sample."""
    if argument == "identity":
        return list(range(rank))
    if argument == "auto":
        if sample.shape[0] == 0:
            return list(range(rank))
        _, auto, _ = _native.build(
            sample, False, np.zeros(sample.shape[0], np.uint8), "bool", list(shape), "auto", "first", False, None, None
        )
        return list(auto[0]) if auto is not None else list(range(rank))
    return [int(d) for d in argument]


def _tagged_meta(rank: int, value_dtype: np.dtype[Any]) -> Any:
    frame = pd.DataFrame({f"c{d}": np.zeros(0, np.uint64) for d in range(rank)})
    frame["_value"] = np.zeros(0, value_dtype)
    frame["_pos"] = np.zeros(0, np.uint64)
    frame["_range"] = np.zeros(0, np.int64)
    return frame


def _tag(
    frame: Any,
    offset: int,
    columns: List[str],
    value_column: str,
    value_dtype: np.dtype[Any],
    bounds: npt.NDArray[np.uint64],
    order: List[int],
) -> Any:
    """The partition's entries with their input positions and key ranges."""
    coords = _coordinates(frame, -1, columns, None, check=False)
    rows = coords.shape[0]
    tagged = pd.DataFrame({f"c{d}": coords[:, d] for d in range(len(columns))})
    tagged["_value"] = frame[value_column].to_numpy(dtype=_numpy_dtype(frame[value_column].dtype)).astype(value_dtype)
    tagged["_pos"] = np.arange(offset, offset + rows, dtype=np.uint64)
    keys = _native_array(bounds, np.uint64).reshape(-1, len(columns))
    tagged["_range"] = _native.assign_ranges(coords, keys, order).astype(np.int64)
    return tagged


def _build_range(
    frame: Any,
    k: int,
    folder: str,
    rank: int,
    element_type: str,
    value_dtype: np.dtype[Any],
    shape: Tuple[int, ...],
    order: List[int],
    duplicates: str,
    drop_zeros: bool,
    threads: Optional[int],
    kill_once: Optional[str],
    keep_empty: bool = False,
) -> Union[str, None, Exception]:
    """Builds key range ``k`` and writes it to its part file (atomically, under
    a name fixed by ``k``): the path, ``None`` for a range with no entries,
    or the build's error."""
    if kill_once is not None and k == 0 and not os.path.exists(kill_once):
        # A test's stand-in for a worker lost mid-build: half a temporary part, then death.
        with open(kill_once, "w"):
            pass
        with open(os.path.join(folder, f".part-{k:06d}.hurray.killed.tmp"), "wb") as f:
            f.write(b"HURRAY partial")
        os._exit(1)
    if len(frame) == 0 and not keep_empty:
        return None
    coords = _native_array(np.column_stack([frame[f"c{d}"].to_numpy(np.uint64) for d in range(rank)]), np.uint64)
    coords = coords.reshape(len(frame), rank)
    values = frame["_value"].to_numpy(dtype=value_dtype)
    positions = _native_array(frame["_pos"].to_numpy(np.uint64), np.uint64)
    try:
        raw = _native.build_part(
            coords, little_endian_bytes(values), element_type, positions, list(shape), order, duplicates, drop_zeros,
            threads,
        )
    except (HurrayError, ValueError, TypeError) as e:
        # Returned, not raised: the caller reports the first range's error,
        # whichever task fails first.
        return e
    path = os.path.join(folder, f"part-{k:06d}.hurray")
    write_atomically(raw, path)
    return path


def _native_array(array: Any, dtype: Any) -> Any:
    """``array`` as Rust takes it: C-contiguous and aligned (arrays that
    crossed a process boundary can sit unaligned in a message buffer)."""
    return np.require(array, dtype=dtype, requirements=["C", "A"])


def _wait(collection: Any) -> None:
    """Waits for a persisted collection on a distributed cluster (a local
    scheduler's ``persist`` has already computed it)."""
    try:
        from distributed import wait
    except ImportError:  # pragma: no cover
        return
    try:
        wait(collection)
    except ValueError:
        # No client: the local schedulers computed it in persist().
        pass
