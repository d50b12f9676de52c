"""Building tensors: ``from_coo`` (csf-build's COO builder) and ``from_dense``."""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np
import numpy.typing as npt

from . import _native
from ._common import (
    ModeOrder,
    dtype_argument,
    element_type_of,
    freeze,
    little_endian_bytes,
    mode_order_argument,
    quantize_argument,
    shape_argument,
    threads_argument,
)
from ._tensor import CsfTensor

_DUPLICATES = ("error", "sum", "last", "first")


def from_coo(
    coords: npt.ArrayLike,
    values: npt.ArrayLike,
    shape: Optional[Sequence[int]] = None,
    *,
    coords_layout: str = "nnz_rank",
    mode_order: ModeOrder = "identity",
    duplicates: str = "error",
    drop_zeros: bool = False,
    dtype: Optional[npt.DTypeLike] = None,
    quantize: Optional[str] = None,
    threads: Optional[int] = None,
) -> CsfTensor:
    """Builds a CSF tensor from coordinates and values (``csf-build``).

    ``coords`` is an integer array of shape ``(nnz, rank)``, or
    ``(rank, nnz)`` with ``coords_layout="rank_nnz"`` (as pydata sparse and
    torch keep them). ``values`` has one value per entry, of any dtype the
    format stores (bool, int8..int64, uint8..uint64, float16, float32,
    float64), cast first to ``dtype`` if given. ``shape`` defaults to one
    past the largest coordinate of each dimension. ``mode_order`` is
    ``"identity"``, ``"auto"`` (the smallest tree; see ``CsfTensor.auto``) or
    a permutation. ``duplicates`` is ``"error"``, ``"sum"``, ``"last"`` or
    ``"first"``; ``"sum"`` adds in the value type, and integers wrap around
    on overflow as numpy's do (``dtype=np.int64`` widens first; ``float16``
    cannot be summed). ``quantize`` takes the schemes of ``hurray convert
    --quantize`` (``"per-block:block=32:i4"``, ``"nf4"``, ``"mxfp:f4e2m1"``,
    ...). ``threads`` caps the worker threads (``None``: rayon's pool of
    every core; at most 1024; pools are kept and reused between calls). The
    GIL is released while Rust works.
    """
    c = np.asarray(coords)
    if c.ndim != 2:
        raise ValueError(f"coords must be a 2-D array, not {c.ndim}-D")
    if c.dtype.kind not in "iu":
        if c.size == 0:
            c = c.astype(np.int64)
        else:
            raise TypeError(f"coords must be integers, not {c.dtype}")
    if coords_layout not in ("nnz_rank", "rank_nnz"):
        raise ValueError(f"coords_layout must be 'nnz_rank' or 'rank_nnz', not {coords_layout!r}")
    if duplicates not in _DUPLICATES:
        raise ValueError(f"duplicates must be one of {', '.join(map(repr, _DUPLICATES))}, not {duplicates!r}")
    c = np.ascontiguousarray(c, dtype=np.int64 if c.dtype.kind == "i" else np.uint64)
    v = np.asarray(values)
    if dtype is not None:
        v = v.astype(dtype_argument(dtype))
    if v.ndim != 1:
        raise ValueError(f"values must be a 1-D array, not {v.ndim}-D")
    name = element_type_of(v.dtype, "values")
    dims = None if shape is None else list(shape_argument(shape))
    entries, rank = (c.shape[1], c.shape[0]) if coords_layout == "rank_nnz" else c.shape
    # A rank that disagrees with the shape is the builder's message (it names both).
    if v.shape[0] != entries and (dims is None or len(dims) == rank):
        raise ValueError(f"values has {v.shape[0]} elements, coords {entries} entries: one value per entry")
    raw, auto, removed = _native.build(
        c,
        coords_layout == "rank_nnz",
        little_endian_bytes(v),
        name,
        dims,
        mode_order_argument(mode_order),
        duplicates,
        bool(drop_zeros),
        quantize_argument(quantize),
        threads_argument(threads),
    )
    return CsfTensor(freeze(raw), _auto=auto, _removed=removed)


def from_dense(
    array: npt.ArrayLike,
    *,
    mode_order: ModeOrder = "identity",
    drop_nan: bool = False,
    dtype: Optional[npt.DTypeLike] = None,
    quantize: Optional[str] = None,
    threads: Optional[int] = None,
) -> CsfTensor:
    """Builds a CSF tensor of the non-zero elements of a dense array of rank
    3 or more (csf-build's ``from_dense``; pyarrow's ``from_dense_numpy``).

    An element is skipped when numpy's ``nonzero`` would skip it: ``0``,
    ``False``, ``0.0`` and ``-0.0``. NaN is not zero, so it is stored, unless
    ``drop_nan=True`` skips it too. ``dtype`` casts first; ``mode_order``,
    ``quantize`` and ``threads`` are ``from_coo``'s. The array is read once, in
    parallel chunks, without a copy when it is C-contiguous and
    little-endian; the non-zeros come out in row-major order, which is the
    identity order's storage order, so that order needs no sort."""
    a = np.asarray(array)
    if dtype is not None:
        a = a.astype(dtype_argument(dtype))
    if a.ndim < 3:
        raise ValueError(f"array has rank {a.ndim}: CSF stores rank 3 or more (scipy.sparse and pydata sparse hold lower ranks)")
    name = element_type_of(a.dtype, "array")
    raw, auto, removed = _native.from_dense(
        little_endian_bytes(a.reshape(-1)),
        name,
        list(a.shape),
        mode_order_argument(mode_order),
        bool(drop_nan),
        quantize_argument(quantize),
        threads_argument(threads),
    )
    return CsfTensor(freeze(raw), _auto=auto, _removed=removed)


def from_parts(
    element_type: str,
    shape: Sequence[int],
    mode_order: Sequence[int],
    levels: Sequence[Any],
    values: npt.NDArray[Any],
) -> CsfTensor:
    """A tensor from its arrays, strictly validated (for arrays made by a
    library that does not check what it wraps)."""
    raw = _native.from_parts(element_type, list(shape), list(mode_order), int(values.size), list(levels), little_endian_bytes(values))
    return CsfTensor(freeze(raw))
