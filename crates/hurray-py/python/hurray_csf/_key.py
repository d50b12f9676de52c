"""``t[key]``: a numpy index turned into one selector per logical dimension,
the form csf-build's ``select`` takes (``_native.select``).

Only the argument is converted here (integers checked and made
non-negative, slices resolved against their extent, boolean masks turned
into the positions they keep); the selection itself runs in Rust.

What a key may hold, per dimension, and what it means:

- an integer (negative counts from the end): that coordinate; the dimension
  is dropped from the result;
- a slice, ``start:stop:step`` (any step but 0): the dimension is kept,
  re-numbered from 0;
- a 1-D array (or list) of integers: the coordinates it lists, in its order,
  repeats included; a 1-D boolean array as long as the dimension: the
  coordinates where it is true;
- ``...`` once, standing for as many ``:`` as the key leaves out; missing
  trailing dimensions are ``:`` too.

Each array selects along its own dimension (outer indexing, numpy's
``x[np.ix_(a, b)]``). numpy differs only where two or more arrays, or an
array and an integer that are not side by side, meet in one key: it
broadcasts them together instead. ``None`` (``np.newaxis``), boolean scalars
and arrays of another rank are refused with ``IndexError``.
"""

from __future__ import annotations

import operator
from typing import Any, List, Optional, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt

from ._common import integer

# One selector as `_native.select` takes it.
Axis = Tuple[Any, ...]

_VALID = (
    "only integers, slices (`:`), ellipsis (`...`) and 1-D integer or boolean arrays are valid indices"
)


class Point(Tuple[int, ...]):
    """A key of one integer per dimension: a single element."""


def parse(key: Any, shape: Sequence[int]) -> Union[Point, List[Axis]]:
    """The selectors of ``key`` for a tensor of ``shape``: a ``Point`` when it
    names one element, otherwise one selector per dimension."""
    items: Tuple[Any, ...] = key if isinstance(key, tuple) else (key,)
    rank = len(shape)
    ellipses = sum(1 for item in items if item is Ellipsis)
    if ellipses > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    given = len(items) - ellipses
    if given > rank:
        raise IndexError(f"too many indices for tensor: tensor is {rank}-dimensional, but {given} were indexed")
    expanded: List[Any] = []
    for item in items:
        if item is Ellipsis:
            expanded.extend([slice(None)] * (rank - given))
        else:
            expanded.append(item)
    expanded.extend([slice(None)] * (rank - len(expanded)))
    axes = [_axis(item, dim, int(extent)) for dim, (item, extent) in enumerate(zip(expanded, shape))]
    if all(a[0] == "index" for a in axes):
        return Point(int(a[1]) for a in axes)
    return axes


def _axis(item: Any, dim: int, extent: int) -> Axis:
    if item is None:
        raise IndexError("new axes (None, np.newaxis) are not supported: a tensor keeps its rank or loses dimensions")
    if isinstance(item, (bool, np.bool_)):
        raise IndexError(f"a boolean scalar is not a valid index (dimension {dim}); {_VALID}")
    if isinstance(item, slice):
        return _slice(item, dim, extent)
    if isinstance(item, (list, tuple, np.ndarray)):
        return _take(np.asarray(item), dim, extent)
    try:
        coord = operator.index(item)
    except TypeError:
        raise IndexError(f"{type(item).__name__} at dimension {dim}: {_VALID}") from None
    return ("index", _in_bounds(coord, dim, extent))


def _in_bounds(coord: int, dim: int, extent: int) -> int:
    c = coord + extent if coord < 0 else coord
    if not 0 <= c < extent:
        raise IndexError(f"index {coord} is out of bounds for axis {dim} with size {extent}")
    return c


def _slice(item: slice, dim: int, extent: int) -> Axis:
    # `integer` refuses a float bound (numpy does too) with a message naming it.
    bounds = [None if b is None else integer(b, f"slice bound at dimension {dim}") for b in (item.start, item.stop, item.step)]
    if bounds[2] == 0:
        raise ValueError(f"slice step cannot be zero (dimension {dim})")
    start, stop, step = _indices(bounds[0], bounds[1], 1 if bounds[2] is None else bounds[2], extent)
    length = max(0, (stop - start + step + (-1 if step > 0 else 1)) // step)
    if length == extent and step == 1:
        return ("all",)
    if length <= 1:
        # One coordinate or none: the step does not matter (and may not fit 64 bits).
        return ("step", start if length else 0, length, 1)
    return ("step", start, length, step)


def _indices(start: Optional[int], stop: Optional[int], step: int, extent: int) -> Tuple[int, int, int]:
    """``slice.indices(extent)`` for any extent (``slice.indices`` and
    ``range`` stop at ``sys.maxsize``; extents go to 2^64 - 1)."""
    if step > 0:
        low, high = 0, extent
    else:
        low, high = -1, extent - 1

    def bound(b: Optional[int], default: int) -> int:
        if b is None:
            return default
        if b < 0:
            return max(b + extent, low)
        return min(b, high)

    return bound(start, low if step > 0 else high), bound(stop, high if step > 0 else low), step


def _take(a: npt.NDArray[Any], dim: int, extent: int) -> Axis:
    if a.ndim != 1:
        raise IndexError(f"the array at dimension {dim} has {a.ndim} dimensions; only 1-D index arrays are supported")
    if a.dtype == np.bool_:
        if a.shape[0] != extent:
            raise IndexError(
                f"boolean index did not match indexed tensor along axis {dim}; size of axis is {extent} "
                f"but size of corresponding boolean axis is {a.shape[0]}"
            )
        return ("take", np.flatnonzero(a).astype(np.uint64))
    if a.size == 0:
        return ("take", np.zeros(0, dtype=np.uint64))
    if a.dtype.kind not in "iu":
        raise IndexError(f"the array at dimension {dim} is of {a.dtype}: arrays used as indices must be of integer (or boolean) type")
    if a.dtype.kind == "u":
        wrong = a >= extent if extent < 1 << 64 else np.zeros(a.shape, dtype=np.bool_)
        coords = a.astype(np.uint64)
    else:
        signed = a.astype(np.int64)
        low = signed < 0
        if extent >= 1 << 63:
            # Every non-negative int64 is inside; a negative one counts from an end beyond int64.
            if low.any():
                coords = np.array([int(c) + extent if c < 0 else int(c) for c in signed.tolist()], dtype=np.uint64)
            else:
                coords = signed.astype(np.uint64)
            wrong = np.zeros(a.shape, dtype=np.bool_)
        else:
            shifted = np.where(low, signed + extent, signed)
            wrong = (shifted < 0) | (shifted >= extent)
            coords = shifted.astype(np.uint64)
    if wrong.any():
        bad = int(a[np.argmax(wrong)])
        raise IndexError(f"index {bad} is out of bounds for axis {dim} with size {extent}")
    return ("take", np.ascontiguousarray(coords))
