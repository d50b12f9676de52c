"""``CsfTensor`` and the functions that make, read and write one.

A tensor is its container bytes (docs/format.md): a read-only numpy ``uint8``
array over a memory map, a bytes-like object, or the buffer a build encoded
into. Every array a tensor hands out (``levels``, ``values``) is a read-only
view of those bytes, and keeps them alive. Every operation is a call into the
Rust crates (``hurray_csf._native``); this module converts arguments and
results, nothing more.
"""

from __future__ import annotations

import errno
import mmap
import operator
import os
import secrets
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np

from . import _native
from ._errors import Violation, Warning_

PathLike = Union[str, "os.PathLike[str]"]

# numpy dtype -> the format's element type name (docs/format.md §2.1).
_ELEMENT_TYPES = {
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

_MODES = ("strict", "permissive")


class AutoChoice(NamedTuple):
    """What ``mode_order="auto"`` chose, and the ``pos``/``crd`` bytes it stores."""

    mode_order: Tuple[int, ...]
    index_bytes: int


class Report(NamedTuple):
    """The result of ``validate``: every violation (up to ``max_errors``) and warning."""

    valid: bool
    errors: List[Violation]
    warnings: List[Warning_]
    truncated: bool


def _native_dtype(dtype: str) -> np.dtype:
    """A little-endian dtype from Rust, in the machine's own byte order."""
    return np.dtype(dtype).newbyteorder("=")


def _values_from(raw: np.ndarray, dtype: str) -> np.ndarray:
    """Little-endian value bytes made by Rust as an array of ``dtype``."""
    values = raw.view(np.dtype(dtype))
    return values.astype(_native_dtype(dtype), copy=False)


def _freeze(raw: np.ndarray) -> np.ndarray:
    raw.flags.writeable = False
    return raw


def _u64_rows(indices: Any, rank: int, what: str) -> np.ndarray:
    """Indices as a C-contiguous ``(m, rank)`` ``uint64`` array."""
    a = np.asarray(indices)
    if a.ndim == 1 and a.shape[0] == rank:
        a = a.reshape(1, rank)
    if a.ndim != 2:
        raise ValueError(f"{what} must have shape (m, {rank}), not {a.shape}")
    if a.dtype.kind not in "iu":
        raise TypeError(f"{what} must be integers, not {a.dtype}")
    if a.dtype.kind == "i" and a.size and (a < 0).any():
        row = int(np.argwhere(a < 0)[0][0])
        raise IndexError(f"index {row}: {a[row].tolist()} has a negative coordinate")
    return np.ascontiguousarray(a, dtype=np.uint64)


def _coords(index: Tuple[Any, ...], what: str, shape: Tuple[int, ...]) -> List[int]:
    """Integer coordinates that fit ``uint64``. ``operator.index``: a float or
    a slice is refused (``TypeError``), never truncated."""
    coords = [operator.index(i) for i in index]
    if any(c < 0 for c in coords):
        raise IndexError(f"{what} {tuple(coords)} has a negative coordinate")
    if any(c >> 64 for c in coords):
        raise IndexError(f"{what} {tuple(coords)} is outside the shape {shape}")
    return coords


class CsfTensor:
    """A sparse tensor of rank >= 3 stored as a CSF tree (csf-layout.txt).

    Make one with ``from_coo``, ``load``, ``from_bytes`` or ``from_pyarrow``.
    Level ``L`` stores logical dimension ``mode_order[L]`` as a ``(pos, crd)``
    pair of ``uint64`` arrays; the leaves index ``values``.
    """

    __slots__ = ("_raw", "_info", "_auto", "_removed", "_strict")

    def __init__(
        self,
        raw: np.ndarray,
        *,
        _auto: Optional[Tuple[Sequence[int], int]] = None,
        _removed: int = 0,
        _strict: bool = True,
    ):
        # Internal: `raw` has been validated by the caller, strictly unless `_strict` is False.
        self._raw = raw
        self._info: Dict[str, Any] = _native.describe(raw)
        self._auto = None if _auto is None else AutoChoice(tuple(_auto[0]), int(_auto[1]))
        self._removed = int(_removed)
        self._strict = bool(_strict)

    def _validated(self) -> "CsfTensor":
        """The tensor, validated strictly first if it was read permissively:
        the conversions hand its arrays to libraries that trust them (Arrow and
        torch index memory with the coordinates unchecked)."""
        if not self._strict:
            _native.open(self._raw, True)
            self._strict = True
        return self

    # -- what it is ------------------------------------------------------

    @property
    def shape(self) -> Tuple[int, ...]:
        """The logical shape."""
        return tuple(self._info["shape"])

    @property
    def rank(self) -> int:
        """The number of dimensions (and of tree levels)."""
        return len(self._info["shape"])

    @property
    def ndim(self) -> int:
        """Alias of ``rank``, as numpy calls it."""
        return self.rank

    @property
    def nnz(self) -> int:
        """The number of stored values (leaves)."""
        return int(self._info["nnz"])

    @property
    def dtype(self) -> np.dtype:
        """The numpy dtype of the values: the element type, or ``float32`` for
        a quantized tensor and for narrow floats numpy lacks."""
        return _native_dtype(self._info["value_dtype"])

    @property
    def element_type(self) -> str:
        """The element type of the values buffer, by its format name (``f32``, ``i4``, ...)."""
        return str(self._info["element_type"])

    @property
    def mode_order(self) -> Tuple[int, ...]:
        """``mode_order[L]`` is the logical dimension stored at level ``L``."""
        return tuple(self._info["mode_order"])

    @property
    def auto(self) -> Optional[AutoChoice]:
        """For a tensor built with ``mode_order="auto"``: the order chosen and its size."""
        return self._auto

    @property
    def removed(self) -> int:
        """Input entries merged as duplicates or dropped as zeros by the build."""
        return self._removed

    def _buffer(self, index: int, dtype: str) -> np.ndarray:
        start, length = self._info["buffers"][index]
        dt = np.dtype(dtype)
        return np.frombuffer(self._raw, dtype=dt, count=length // dt.itemsize, offset=start)

    @property
    def levels(self) -> List[Tuple[np.ndarray, np.ndarray]]:
        """``[(pos_0, crd_0), ..., (pos_{r-1}, crd_{r-1})]``: read-only ``uint64``
        views of the tensor's memory."""
        return [(self._buffer(1 + 2 * L, "<u8"), self._buffer(2 + 2 * L, "<u8")) for L in range(self.rank)]

    @property
    def values(self) -> np.ndarray:
        """The values buffer as stored, a read-only view: the values, or for a
        quantized tensor their codes (``to_coo`` and ``lookup`` give the
        dequantized values). Types numpy lacks are raw bits (``uint16`` for
        bfloat16, ``uint8`` for 8- and 6-bit floats) or packed bytes (4-bit types)."""
        return self._buffer(0, self._info["stored_dtype"])

    @property
    def statistics(self) -> Optional[Dict[str, Any]]:
        """The statistics section (``nnz``, ``sparsity_ratio``, ``min``, ``max``), if present."""
        s = self._info["statistics"]
        return None if s is None else dict(s)

    @property
    def quantization(self) -> Optional[Dict[str, Any]]:
        """The quantization section (``scheme``, ``axis``, ``block_size``,
        ``scale_type``, ``zero_point_type``), if the values are quantized."""
        q = self._info["quantization"]
        return None if q is None else dict(q)

    @property
    def nbytes(self) -> int:
        """The size of the tensor's container, in bytes."""
        return int(self._raw.nbytes)

    def __repr__(self) -> str:
        q = self._info["quantization"]
        quant = "" if q is None else f", quantized={q['scheme']}"
        return (
            f"CsfTensor(shape={self.shape}, dtype={self.element_type}{quant}, nnz={self.nnz}, "
            f"mode_order={self.mode_order}, nbytes={self.nbytes})"
        )

    # -- reading values ----------------------------------------------------

    def __getitem__(self, index: Union[int, Sequence[int]]) -> Any:
        """``t[i, j, k]``, one integer per dimension: the value at that logical
        index, as a Python scalar (0 for an implicit zero).

        ``t[i]``, ``t[i, j]``, fewer integers than the rank: the entries under
        that prefix of **storage-order** coordinates, ``(coords, values)`` as
        ``subtree`` gives them. With the default identity mode order the
        prefix is the first dimensions, as in numpy; otherwise ``t[i]`` is the
        entries whose dimension ``mode_order[0]`` is ``i``."""
        if not isinstance(index, tuple):
            index = tuple(index) if isinstance(index, (list, np.ndarray)) else (index,)
        coords = _coords(index, "index", self.shape)
        if len(coords) < self.rank:
            return self._entries_under(coords)
        return _native.get(self._raw, coords)

    def subtree(self, prefix: Union[int, Sequence[int]]) -> Tuple[np.ndarray, np.ndarray]:
        """``(coords, values)`` of the entries under ``prefix``: the first ``k``
        coordinates of the entries **in storage order** (``k`` below the rank),
        that is of the logical dimensions ``mode_order[0:k]`` (with the default
        identity order, the first ``k`` dimensions). As ``to_coo`` gives them:
        ``coords`` of shape ``(m, rank)`` holds the full logical indices, the
        prefix included, ``values`` has ``dtype`` (dequantized for a quantized
        tensor), in iteration order. A prefix no entry has gives ``m = 0``; a
        prefix of ``rank`` coordinates or more, or outside the shape, raises
        ``IndexError``. The prefix is found by binary search and only its
        entries are visited (csf-core's ``CsfView::subtree``); ``()`` gives
        every entry."""
        index = (prefix,) if not isinstance(prefix, (tuple, list, np.ndarray)) else tuple(prefix)
        return self._entries_under(_coords(index, "prefix", self.shape))

    def _entries_under(self, prefix: List[int]) -> Tuple[np.ndarray, np.ndarray]:
        coords, raw, dtype = _native.subtree(self._raw, prefix)
        return coords.reshape(-1, self.rank), _values_from(raw, dtype)

    def lookup(self, indices: Any) -> np.ndarray:
        """The values at an ``(m, rank)`` array of logical indices (0 where
        implicit), batched (``find_many``) with the GIL released."""
        raw, dtype = _native.lookup(self._raw, _u64_rows(indices, self.rank, "indices"))
        return _values_from(raw, dtype)

    def find(self, indices: Any) -> np.ndarray:
        """The leaf positions of an ``(m, rank)`` array of indices: -1 where absent."""
        return _native.find(self._raw, _u64_rows(indices, self.rank, "indices"))

    def to_coo(self) -> Tuple[np.ndarray, np.ndarray]:
        """``(coords, values)`` of every non-zero in iteration order:
        ``coords`` of shape ``(nnz, rank)`` (logical dimensions), ``values``
        of ``dtype`` (dequantized for a quantized tensor). ``subtree`` gives
        the same for the entries under a prefix."""
        coords, raw, dtype = _native.to_coo(self._raw)
        return coords.reshape(-1, self.rank), _values_from(raw, dtype)

    def to_dense(self, max_elements: int = 1 << 28) -> np.ndarray:
        """The dense array, refused (``ValueError``) when the shape holds more
        than ``max_elements`` elements."""
        raw, dtype = _native.to_dense(self._raw, int(max_elements))
        return _values_from(raw, dtype).reshape(self.shape)

    def reorder(self, mode_order: Union[str, Sequence[int]], *, threads: Optional[int] = None) -> "CsfTensor":
        """The same tensor stored in another mode order (``"identity"``,
        ``"auto"`` or a permutation). Quantized values keep their meaning
        (``csf_build::reorder``)."""
        order = mode_order if isinstance(mode_order, str) else [int(d) for d in mode_order]
        raw, auto, removed = _native.reorder(self._raw, order, _threads(threads))
        return CsfTensor(_freeze(raw), _auto=auto, _removed=removed, _strict=self._strict)

    # -- bytes and files ---------------------------------------------------

    def to_bytes(self) -> bytes:
        """The container bytes: exactly what ``save`` writes."""
        return self._raw.tobytes()

    def save(self, path: PathLike) -> None:
        """Writes the tensor to ``path`` atomically; see ``save``."""
        save(self, path)

    # -- interop (each package imported only when asked for) ----------------

    def to_pyarrow(self) -> Any:
        """A ``pyarrow.SparseCSFTensor`` (index arrays shared where Arrow's int64 allows)."""
        from ._interop import to_pyarrow

        return to_pyarrow(self)

    def to_sparse(self) -> Any:
        """A pydata ``sparse.COO``."""
        from ._interop import to_sparse

        return to_sparse(self)

    def to_torch(self) -> Any:
        """A coalesced ``torch.sparse_coo_tensor``."""
        from ._interop import to_torch

        return to_torch(self)


def from_coo(
    coords: Any,
    values: Any,
    shape: Optional[Sequence[int]] = None,
    *,
    coords_layout: str = "nnz_rank",
    mode_order: Union[str, Sequence[int]] = "identity",
    duplicates: str = "error",
    drop_zeros: bool = False,
    dtype: Any = None,
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
    ``"first"``. ``quantize`` takes the schemes of ``hurray convert
    --quantize`` (``"per-block:block=32:i4"``, ``"nf4"``, ``"mxfp:f4e2m1"``,
    ...). ``threads`` caps the worker threads (``None``: every core). The GIL
    is released while Rust works.
    """
    c = np.asarray(coords)
    if c.ndim != 2:
        raise ValueError(f"coords must be a 2-D array, not {c.ndim}-D")
    if c.dtype.kind not in "iu":
        raise TypeError(f"coords must be integers, not {c.dtype}")
    if coords_layout not in ("nnz_rank", "rank_nnz"):
        raise ValueError(f"coords_layout must be 'nnz_rank' or 'rank_nnz', not {coords_layout!r}")
    c = np.ascontiguousarray(c, dtype=np.int64 if c.dtype.kind == "i" else np.uint64)
    v = np.asarray(values)
    if dtype is not None:
        v = v.astype(dtype)
    if v.ndim != 1:
        raise ValueError(f"values must be a 1-D array, not {v.ndim}-D")
    name = _ELEMENT_TYPES.get(v.dtype.newbyteorder("="))
    if name is None:
        raise TypeError(f"values of dtype {v.dtype} cannot be stored; use one of {sorted(str(d) for d in _ELEMENT_TYPES)}")
    v = np.ascontiguousarray(v, dtype=v.dtype.newbyteorder("<")).view(np.uint8).reshape(-1)
    order = mode_order if isinstance(mode_order, str) else [int(d) for d in mode_order]
    dims = None if shape is None else [operator.index(d) for d in shape]
    if dims is not None and any(d < 0 for d in dims):
        raise ValueError(f"shape {tuple(dims)} has a negative extent")
    raw, auto, removed = _native.build(
        c, coords_layout == "rank_nnz", v, name, dims, order, duplicates, bool(drop_zeros), quantize, _threads(threads)
    )
    return CsfTensor(_freeze(raw), _auto=auto, _removed=removed)


def _threads(threads: Optional[int]) -> Optional[int]:
    """``None`` (every core) or a positive thread count."""
    if threads is None:
        return None
    n = operator.index(threads)
    if n < 1:
        raise ValueError(f"threads must be at least 1, not {n}")
    return n


def _mode(validate: str) -> bool:
    if validate not in _MODES:
        raise ValueError(f"validate must be 'strict' or 'permissive', not {validate!r}")
    return validate == "strict"


def _read_only_bytes(buffer: Any) -> np.ndarray:
    """A read-only ``uint8`` array over ``buffer``, copied only when the buffer
    is writable: the readers must never see bytes change under them."""
    raw = np.frombuffer(buffer, dtype=np.uint8)
    if raw.flags.writeable:
        raw = raw.copy()
    return _freeze(raw)


def from_bytes(buffer: Any, *, validate: str = "strict") -> CsfTensor:
    """A tensor over any object with the buffer protocol, without copying a
    read-only one (``bytes``, a read-only ``mmap`` or ``memoryview``); a
    writable buffer is copied first. ``validate="strict"`` checks every rule
    (``ValidationError``); ``"permissive"`` only what safe reading needs.
    Framing errors raise ``FormatError``."""
    strict = _mode(validate)
    raw = _read_only_bytes(buffer)
    _native.open(raw, strict)
    return CsfTensor(raw, _strict=strict)


def _map(path: PathLike) -> Any:
    with open(path, "rb") as f:
        if os.fstat(f.fileno()).st_size == 0:
            return b""
        return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)


def load(path: PathLike, *, validate: str = "strict") -> CsfTensor:
    """A tensor over a memory map of the file at ``path`` (no copy); see ``from_bytes``."""
    strict = _mode(validate)
    return from_bytes(_map(path), validate="strict" if strict else "permissive")


def save(tensor: CsfTensor, path: PathLike) -> None:
    """Writes ``tensor`` to ``path`` atomically: a temporary file beside it is
    written, flushed to disk and renamed over ``path``, so that a failure
    never leaves a partial file."""
    target = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(target))
    fd, tmp = _temporary(folder, os.path.basename(target))
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(memoryview(tensor._raw))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _temporary(folder: str, name: str) -> Tuple[int, str]:
    """A new file in ``folder``, made as ``open(path, "wb")`` makes one: mode
    0o666 less the umask (``tempfile.mkstemp``'s 0o600 would make every saved
    file readable by its owner only)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    for _ in range(100):
        tmp = os.path.join(folder, f".{name}.{secrets.token_hex(6)}.tmp")
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no unused temporary file name", folder)


def validate(source: Union[PathLike, Any], *, mode: str = "strict", max_errors: int = 100) -> Report:
    """Every violation (up to ``max_errors``) and warning of a file (a path)
    or of bytes (any buffer). A file that does not decode gives one error with
    rule ``decode``."""
    strict = _mode(mode)
    data = _map(source) if isinstance(source, (str, os.PathLike)) else source
    r = _native.report(_read_only_bytes(data), strict, int(max_errors))
    errors = [Violation(**{k: e.get(k) for k in Violation._fields}) for e in r["errors"]]
    warnings = [Warning_(**w) for w in r["warnings"]]
    return Report(bool(r["valid"]), errors, warnings, bool(r["truncated"]))
