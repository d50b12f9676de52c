"""What every module of the package shares: the dtype tables, argument
checks that name the argument, and the import of optional packages.

Nothing here knows a tensor; the modules above it (``_tensor``, ``_build``,
``_files``, ``_export``, ``_interop``) do.
"""

from __future__ import annotations

import importlib
import operator
import warnings
from typing import Any, Dict, Optional, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt

# numpy dtype -> the format's element type name (docs/format.md §2.1).
ELEMENT_TYPES: Dict[np.dtype[Any], str] = {
    np.dtype(np.bool_): "bool",
    np.dtype(np.int8): "i8",
    np.dtype(np.int16): "i16",
    np.dtype(np.int32): "i32",
    np.dtype(np.int64): "i64",
    np.dtype(np.uint8): "u8",
    np.dtype(np.uint16): "u16",
    np.dtype(np.uint32): "u32",
    np.dtype(np.uint64): "u64",
    np.dtype(np.float16): "f16",
    np.dtype(np.float32): "f32",
    np.dtype(np.float64): "f64",
}

# The element types stored as a numpy dtype of their own.
NUMPY_ELEMENT_TYPES = frozenset(ELEMENT_TYPES.values())

VALIDATION_MODES = ("strict", "permissive")

# The largest `threads=` a call takes (hurray-py's src/build.rs, MAX_THREADS).
MAX_THREADS = 1024

ModeOrder = Union[str, Sequence[int]]


def native_dtype(dtype: str) -> np.dtype[Any]:
    """A little-endian dtype from Rust, in the machine's own byte order."""
    return np.dtype(dtype).newbyteorder("=")


def values_from(raw: npt.NDArray[np.uint8], dtype: str) -> npt.NDArray[Any]:
    """Little-endian value bytes made by Rust as an array of ``dtype``."""
    values = raw.view(np.dtype(dtype))
    return values.astype(native_dtype(dtype), copy=False)


def freeze(raw: npt.NDArray[Any]) -> npt.NDArray[Any]:
    raw.flags.writeable = False
    return raw


def require(name: str, pip: str) -> Any:
    """The optional package ``name``, or an ``ImportError`` that says how to get it."""
    try:
        return importlib.import_module(name)
    except ImportError as e:
        raise ImportError(f"this conversion needs the '{name}' package: pip install {pip}") from e


def integer(value: Any, what: str) -> int:
    """``value`` as a Python ``int`` (``operator.index``: a float, a bool or a
    string is refused, never truncated), or a ``TypeError`` naming ``what``."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{what} must be an integer, not a bool")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{what} must be an integer, not {type(value).__name__}") from None


def threads_argument(threads: Optional[int]) -> Optional[int]:
    """``None`` (rayon's global pool: every core) or a thread count in ``1..=MAX_THREADS``."""
    if threads is None:
        return None
    n = integer(threads, "threads")
    if not 1 <= n <= MAX_THREADS:
        raise ValueError(f"threads must be between 1 and {MAX_THREADS}, not {n}")
    return n


def shape_argument(shape: Any, what: str = "shape") -> Tuple[int, ...]:
    """A shape of non-negative extents that fit ``uint64``."""
    try:
        items = list(shape)
    except TypeError:
        raise TypeError(f"{what} must be a sequence of integers, not {type(shape).__name__}") from None
    dims = tuple(integer(d, f"{what}[{i}]") for i, d in enumerate(items))
    for i, d in enumerate(dims):
        if d < 0:
            raise ValueError(f"{what} {dims} has a negative extent at dimension {i}")
        if d >> 64:
            raise ValueError(f"{what} {dims}: extent {d} of dimension {i} does not fit 64 bits")
    return dims


def mode_order_argument(mode_order: Any, what: str = "mode_order") -> Union[str, list[int]]:
    """``"identity"``, ``"auto"``, or a permutation as a list of ``int``
    (whether it permutes the rank is the builder's check)."""
    if isinstance(mode_order, str):
        if mode_order not in ("identity", "auto"):
            raise ValueError(f"{what} must be 'identity', 'auto' or a permutation, not {mode_order!r}")
        return mode_order
    try:
        items = list(mode_order)
    except TypeError:
        raise TypeError(f"{what} must be 'identity', 'auto' or a sequence of dimensions") from None
    order = [integer(d, what) for d in items]
    if any(not 0 <= d < 1 << 32 for d in order):
        raise ValueError(f"{what} {order} is not a permutation of 0..{len(order) - 1}")
    return order


def validation_mode(validate: str) -> bool:
    """``True`` for ``"strict"``, ``False`` for ``"permissive"``."""
    if validate not in VALIDATION_MODES:
        raise ValueError(f"validate must be 'strict' or 'permissive', not {validate!r}")
    return validate == "strict"


def renamed(old: str, new: str, old_value: Any, new_value: Any, default: Any) -> Any:
    """The value of an argument renamed from ``old`` to ``new``: the old
    spelling still works for one release, with a ``DeprecationWarning``."""
    if old_value is None:
        return default if new_value is None else new_value
    if new_value is not None:
        raise TypeError(f"give {new}= only ({old}= is its deprecated spelling)")
    warnings.warn(f"{old}= is deprecated, use {new}=", DeprecationWarning, stacklevel=3)
    return old_value


def dtype_argument(dtype: Any, what: str = "dtype") -> np.dtype[Any]:
    """``np.dtype(dtype)``, or a ``TypeError`` naming the argument."""
    try:
        made: np.dtype[Any] = np.dtype(dtype)
    except TypeError as e:
        raise TypeError(f"{what}: {e}") from None
    return made


def quantize_argument(quantize: Any) -> Optional[str]:
    """``None`` or a scheme string (its syntax is csf-build's to check)."""
    if quantize is not None and not isinstance(quantize, str):
        raise TypeError(f"quantize must be a scheme string such as 'per-block:i8', not {type(quantize).__name__}")
    return quantize


def element_type_of(dtype: np.dtype[Any], what: str) -> str:
    """The format's name of a numpy dtype the builder stores."""
    name = ELEMENT_TYPES.get(dtype.newbyteorder("="))
    if name is None:
        known = ", ".join(str(d) for d in ELEMENT_TYPES)
        raise TypeError(f"{what} of dtype {dtype} cannot be stored; use one of {known}")
    return name


def little_endian_bytes(values: npt.NDArray[Any]) -> npt.NDArray[np.uint8]:
    """A 1-D array's elements as contiguous little-endian bytes (no copy when
    they already are)."""
    flat = np.ascontiguousarray(values, dtype=values.dtype.newbyteorder("<"))
    return flat.view(np.uint8).reshape(-1)


def float_operand(value: Any, what: str, ndim: int, single: bool) -> npt.NDArray[Any]:
    """An operand of a kernel (a factor matrix, a vector) as ``float32`` when
    ``single``, else ``float64``: the array itself when it already is (the
    kernel borrows a C-contiguous one; Rust copies any other), a converted
    copy otherwise. Booleans, integers and floats convert; complex numbers
    and objects are refused (``TypeError``), a wrong rank is a ``ValueError``."""
    a = np.asarray(value)
    if a.dtype.kind not in "biuf":
        raise TypeError(f"{what} must hold real numbers, not {a.dtype}")
    if a.ndim != ndim:
        raise ValueError(f"{what} must be a {ndim}-D array, not {a.ndim}-D")
    return a.astype(np.float32 if single else np.float64, copy=False)


def single_precision(*arrays: npt.NDArray[Any]) -> bool:
    """Whether kernels on these operands run in ``float32``: when every one
    is ``float32`` (numpy's promotion of them would stay ``float32``)."""
    return bool(arrays) and all(np.asarray(a).dtype == np.float32 for a in arrays)
