"""``CsfTensor``: a tensor over its container bytes.

A tensor is its container bytes (docs/format.md): a read-only numpy ``uint8``
array over a memory map, a bytes-like object, or the buffer a build encoded
into. Every array a tensor hands out (``levels``, ``values``) is a read-only
view of those bytes, and keeps them alive. Every operation is a call into the
Rust crates (``hurray_csf._native``); this module converts arguments and
results, nothing more.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, Iterator, List, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt

from . import _export, _key, _native
from ._atomic import write_atomically
from ._common import (
    NUMPY_ELEMENT_TYPES,
    ModeOrder,
    dtype_argument,
    element_type_of,
    float_operand,
    freeze,
    integer,
    little_endian_bytes,
    mode_order_argument,
    native_dtype,
    single_precision,
    threads_argument,
    values_from,
)

if TYPE_CHECKING:
    import mmap
    import os

    import pandas
    import sparse
    import torch

# The default cap of `to_dense` and `sum`: 2^28 elements (2 GiB of float64).
DENSE_LIMIT = 1 << 28


class AutoChoice(NamedTuple):
    """What ``mode_order="auto"`` chose, and the ``pos``/``crd`` bytes it stores."""

    mode_order: Tuple[int, ...]
    index_bytes: int


Scalar = Union[bool, int, float]


class CsfTensor:
    """A sparse tensor of rank >= 3 stored as a CSF tree (csf-layout.txt).

    Make one with ``from_coo``, ``from_dense``, ``load``, ``from_bytes`` or a
    conversion (``from_sparse``, ``from_pyarrow``, ``from_torch``,
    ``from_pandas``). Level ``L`` stores logical dimension ``mode_order[L]``
    as a ``(pos, crd)`` pair of ``uint64`` arrays; the leaves index ``values``.

    It reads like a numpy array where that makes sense: ``t[1, 2, 3]`` is one
    element, ``t[0]``, ``t[1:3]``, ``t[:, [4, 2]]``, ``t[..., -1]`` select
    (``__getitem__``), ``len(t)`` and ``iter(t)`` go along dimension 0,
    ``x in t`` and ``t.sum(axis)`` are numpy's. ``t == u`` is ``t.equals(u)``,
    one ``bool`` (not an elementwise array); ``np.asarray(t)`` is refused
    (``to_dense`` makes the dense array, explicitly).
    """

    __slots__ = ("_raw", "_info", "_auto", "_removed", "_strict", "_map")

    def __init__(
        self,
        raw: npt.NDArray[np.uint8],
        *,
        _auto: Optional[Tuple[Sequence[int], int]] = None,
        _removed: int = 0,
        _strict: bool = True,
        _map: Optional["mmap.mmap"] = None,
    ):
        # Internal: `raw` has been validated by the caller, strictly unless `_strict` is False.
        self._raw: Optional[npt.NDArray[np.uint8]] = raw
        self._info: Dict[str, Any] = _native.describe(raw)
        self._auto = None if _auto is None else AutoChoice(tuple(_auto[0]), int(_auto[1]))
        self._removed = int(_removed)
        self._strict = bool(_strict)
        self._map = _map

    def _bytes(self) -> npt.NDArray[np.uint8]:
        if self._raw is None:
            raise ValueError("the tensor is closed")
        return self._raw

    def _validated(self) -> "CsfTensor":
        """The tensor, validated strictly first if it was read permissively:
        the conversions hand its arrays to libraries that trust them (Arrow and
        torch index memory with the coordinates unchecked)."""
        if not self._strict:
            _native.open(self._bytes(), True)
            self._strict = True
        return self

    def _derived(self, raw: npt.NDArray[np.uint8], **extra: Any) -> "CsfTensor":
        """A tensor computed from this one: as trusted as its source."""
        return CsfTensor(freeze(raw), _strict=self._strict, **extra)

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
    def size(self) -> int:
        """The number of elements of the logical shape (stored or not), as numpy's ``size``."""
        size = 1
        for extent in self.shape:
            size *= extent
        return size

    @property
    def nnz(self) -> int:
        """The number of stored values (leaves)."""
        return int(self._info["nnz"])

    @property
    def dtype(self) -> np.dtype[Any]:
        """The numpy dtype of the values as read (``t[...]``, ``to_coo``): the
        element type, or ``float32`` for a quantized tensor and for narrow
        floats numpy lacks. ``element_type`` is the type as stored."""
        return native_dtype(self._info["value_dtype"])

    @property
    def element_type(self) -> str:
        """The element type of the values buffer as stored, by its format name
        (``f32``, ``i4``, ...): for a quantized tensor, the codes' type."""
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

    def _buffer(self, index: int, dtype: str) -> npt.NDArray[Any]:
        start, length = self._info["buffers"][index]
        dt = np.dtype(dtype)
        return np.frombuffer(self._bytes(), dtype=dt, count=length // dt.itemsize, offset=start)

    @property
    def levels(self) -> List[Tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64]]]:
        """``[(pos_0, crd_0), ..., (pos_{r-1}, crd_{r-1})]``: read-only ``uint64``
        views of the tensor's memory."""
        return [(self._buffer(1 + 2 * L, "<u8"), self._buffer(2 + 2 * L, "<u8")) for L in range(self.rank)]

    @property
    def values(self) -> npt.NDArray[Any]:
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
        return int(self._bytes().nbytes)

    def __repr__(self) -> str:
        if self._raw is None:
            return f"CsfTensor(shape={self.shape}, closed)"
        q = self._info["quantization"]
        stored = ""
        if q is not None:
            stored = f", stored={self.element_type} quantized={q['scheme']}"
        elif self.element_type not in NUMPY_ELEMENT_TYPES or self.element_type != element_type_of(self.dtype, "values"):
            stored = f", stored={self.element_type}"
        return (
            f"CsfTensor(shape={self.shape}, dtype={self.dtype}{stored}, nnz={self.nnz}, "
            f"mode_order={self.mode_order}, nbytes={self.nbytes})"
        )

    # -- the memory map ------------------------------------------------------

    @property
    def closed(self) -> bool:
        """Whether ``close`` was called."""
        return self._raw is None

    def close(self) -> None:
        """Lets go of the tensor's memory; for a tensor ``load`` mapped, closes
        the map as soon as no array handed out (``levels``, ``values``) is
        alive any more (numpy views keep it open until then, so that they never
        read unmapped memory). Every later use of the tensor raises
        ``ValueError``; closing twice does nothing."""
        self._raw = None
        memory, self._map = self._map, None
        if memory is not None:
            try:
                memory.close()
            except BufferError:
                # An array of the caller's still views the map: it is unmapped
                # when the last of them is collected.
                pass

    def __enter__(self) -> "CsfTensor":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- numpy's container protocol -------------------------------------------

    def __len__(self) -> int:
        """The extent of dimension 0, as for a numpy array."""
        return self.shape[0]

    def __iter__(self) -> Iterator[Any]:
        """``t[0], t[1], ...`` along dimension 0, as numpy iterates."""
        for i in range(self.shape[0]):
            yield self[i]

    def __contains__(self, value: Any) -> bool:
        """numpy's ``value in x``: whether any element equals ``value``; the
        implicit zeros count when the tensor has any."""
        values = self._logical_values()
        if bool(np.any(values == value)):
            return True
        return self.nnz < self.size and bool(np.asarray(0, dtype=self.dtype) == value)

    # numpy's operators and ufuncs leave a tensor alone (they return
    # NotImplemented), so `array == t` is Python's comparison, not an attempt
    # to make `t` dense.
    __array_ufunc__ = None

    def __array__(self, dtype: Any = None, copy: Any = None) -> npt.NDArray[Any]:
        raise RuntimeError(
            "a CsfTensor is not converted to a dense array implicitly (it may not fit in memory); "
            "call t.to_dense() for a numpy array"
        )

    def equals(self, other: Any) -> bool:
        """Whether ``other`` is the same tensor: a ``CsfTensor`` of the same
        shape and ``dtype`` holding the same value at every index. The mode
        order, the statistics section and the bytes do not matter; an
        explicitly stored zero equals an implicit one, ``-0.0`` equals ``0.0``,
        and NaN at the same index counts as equal (pandas' ``equals``). Costs
        a walk of both trees, plus a re-ordering of ``other`` when the mode
        orders differ (csf-build's ``equal``)."""
        if not isinstance(other, CsfTensor):
            return False
        if self.shape != other.shape or self.dtype != other.dtype:
            return False
        return bool(_native.equals(self._bytes(), other._bytes()))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CsfTensor):
            return NotImplemented
        return self.equals(other)

    def __ne__(self, other: object) -> bool:
        if not isinstance(other, CsfTensor):
            return NotImplemented
        return not self.equals(other)

    __hash__ = None  # type: ignore[assignment]  # equal tensors need not be the same object

    # -- reading values ----------------------------------------------------

    def __getitem__(self, key: Any) -> Any:
        """numpy indexing (the rules are in ``hurray_csf._key``).

        - One integer per dimension: the value at that index as a Python
          scalar (``bool``, ``int`` or ``float``; 0 for an implicit zero).
        - Otherwise a selection: a ``CsfTensor`` while the result has rank 3
          or more (stored in this tensor's mode order, restricted to the kept
          dimensions), a pydata ``sparse.COO`` when it has rank 1 or 2 (the
          format stores rank >= 3 only).

        Cost: a selection of dimension ``mode_order[0]`` alone, by an integer
        or a step-1 slice, copies the sub-tree's node ranges of each level
        (found by binary search), nothing outside them. Any other selection
        walks the tree once, descending only into nodes whose coordinate is
        kept (integers by binary search), then builds the result; the build
        takes csf-build's sorted path unless a negative step or an unsorted
        array reorders a dimension. Values of a quantized tensor come out
        dequantized (``float32``).
        """
        parsed = _key.parse(key, self.shape)
        if isinstance(parsed, _key.Point):
            return _native.get(self._bytes(), list(parsed))
        result = _native.select(self._bytes(), parsed, None)
        if result[0] == "tensor":
            return self._derived(result[1])
        _, shape, coords, raw, dtype = result
        values = values_from(raw, dtype)
        return _export.sparse_coo(coords.reshape(-1, len(shape)), values, tuple(shape))

    def subtree(self, prefix: Union[int, Sequence[int]]) -> Tuple[npt.NDArray[np.uint64], npt.NDArray[Any]]:
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
        coords = _prefix(index, self.shape)
        out, raw, dtype = _native.subtree(self._bytes(), coords)
        return out.reshape(-1, self.rank), values_from(raw, dtype)

    def lookup(self, indices: npt.ArrayLike) -> npt.NDArray[Any]:
        """The values at an ``(m, rank)`` array of logical indices (0 where
        implicit), batched (``find_many``) with the GIL released."""
        raw, dtype = _native.lookup(self._bytes(), _u64_rows(indices, self.rank, "indices"))
        return values_from(raw, dtype)

    def find(self, indices: npt.ArrayLike) -> npt.NDArray[np.int64]:
        """The leaf positions of an ``(m, rank)`` array of indices: -1 where absent."""
        return _native.find(self._bytes(), _u64_rows(indices, self.rank, "indices"))

    def to_coo(self) -> Tuple[npt.NDArray[np.uint64], npt.NDArray[Any]]:
        """``(coords, values)`` of every non-zero in iteration order:
        ``coords`` of shape ``(nnz, rank)`` (logical dimensions), ``values``
        of ``dtype`` (dequantized for a quantized tensor). ``subtree`` gives
        the same for the entries under a prefix."""
        coords, raw, dtype = _native.to_coo(self._bytes())
        return coords.reshape(-1, self.rank), values_from(raw, dtype)

    def _logical_values(self) -> npt.NDArray[Any]:
        """The values in leaf order, of ``dtype``: the buffer itself when it
        holds them as numpy reads them."""
        if self.quantization is None and self.element_type in NUMPY_ELEMENT_TYPES and self.element_type != "bool":
            return self.values
        return self.to_coo()[1]

    def to_dense(self, max_elements: int = DENSE_LIMIT) -> npt.NDArray[Any]:
        """The dense array, refused (``ValueError``) when the shape holds more
        than ``max_elements`` elements."""
        limit = _limit(max_elements)
        raw, dtype = _native.to_dense(self._bytes(), limit)
        return values_from(raw, dtype).reshape(self.shape)

    # -- computing -------------------------------------------------------------

    def astype(self, dtype: npt.DTypeLike) -> "CsfTensor":
        """The tensor with its values cast to ``dtype`` (numpy's ``astype``
        rules), in the same mode order and tree. A value that becomes zero
        stays stored, as an explicit zero. A quantized tensor's values are
        cast from their dequantized ``float32``."""
        target = dtype_argument(dtype)
        name = element_type_of(target, "values")
        values = self._logical_values().astype(target)
        levels = [(np.ascontiguousarray(pos), np.ascontiguousarray(crd)) for pos, crd in self.levels]
        raw = _native.from_parts(name, list(self.shape), list(self.mode_order), self.nnz, levels, little_endian_bytes(values))
        return self._derived(raw)

    def sum(
        self,
        axis: Union[None, int, Sequence[int]] = None,
        dtype: Optional[npt.DTypeLike] = None,
        *,
        max_elements: int = DENSE_LIMIT,
    ) -> Any:
        """The sum over ``axis`` (``None``: every dimension; an int or a tuple
        of them, negative from the end), as numpy's ``sum``: values are added
        in numpy's accumulator type (``int64`` for booleans and signed
        integers, ``uint64`` for unsigned, ``float32`` for ``float16``, the
        value type otherwise; integers wrap) and cast to ``dtype`` when given.

        The result is a numpy scalar when every dimension is summed, a dense
        numpy array when 1 or 2 dimensions remain (refused with ``ValueError``
        beyond ``max_elements`` elements: a sum over dimensions is typically
        far denser than its tensor), and a ``CsfTensor`` when 3 or more remain
        (stored in this tensor's mode order restricted to the kept
        dimensions). csf-build's ``sum_axes`` does the work: one walk of the
        tree, plus a build with duplicates summed for a tensor result."""
        summed = _axes(axis, self.rank)
        target = None if dtype is None else dtype_argument(dtype)
        accumulator = _accumulator(target if target is not None else self.dtype)
        source = self if self.dtype == accumulator else self.astype(accumulator)
        result = _native.sum(source._bytes(), summed, _limit(max_elements), None)
        final = target if target is not None else (np.dtype(np.float16) if self.dtype == np.float16 else accumulator)
        if result[0] == "tensor":
            out = self._derived(result[1])
            return out if out.dtype == final else out.astype(final)
        _, shape, raw, value_dtype = result
        dense = values_from(raw, value_dtype).reshape(tuple(shape)).astype(final, copy=False)
        return dense[()] if not shape else dense

    def reorder(self, mode_order: ModeOrder, *, threads: Optional[int] = None) -> "CsfTensor":
        """The same tensor stored in another mode order (``"identity"``,
        ``"auto"`` or a permutation). Quantized values keep their meaning
        (``csf_build::reorder``)."""
        order = mode_order_argument(mode_order)
        raw, auto, removed = _native.reorder(self._bytes(), order, threads_argument(threads))
        return self._derived(raw, _auto=auto, _removed=removed)

    # -- kernels (csf-kernels) -------------------------------------------------
    #
    # Each runs in Rust with the GIL released, on `threads` worker threads
    # (`from_coo`'s argument). A tensor read permissively is validated
    # strictly first, as for the conversions: a kernel's result means
    # something only on a valid tensor.

    def mttkrp(self, factors: Sequence[npt.ArrayLike], mode: int, *, threads: Optional[int] = None) -> npt.NDArray[Any]:
        """The matricized tensor times the Khatri-Rao product of the factors:
        ``X_(mode) @ khatri_rao(factors, skip=mode)``, an ``(I_mode, R)`` array.

        ``factors`` holds one ``(I_n, R)`` matrix per dimension (TensorLy's
        and pyttb's convention); ``factors[mode]`` is not read but must have
        its shape. When every factor is ``float32`` the product is computed
        and returned in ``float32``, otherwise in ``float64`` (other numbers
        are converted). C-contiguous factors of that type are read in place,
        without a copy. The values of a quantized tensor are dequantized.

        >>> import numpy as np, hurray_csf as hc
        >>> t = hc.from_coo(np.array([[0, 0, 1], [1, 2, 0]]), np.array([2.0, 3.0]), (2, 3, 2))
        >>> ones = [np.ones((n, 1)) for n in t.shape]
        >>> t.mttkrp(ones, 1).ravel().tolist()   # the sum of each slice along mode 1
        [2.0, 0.0, 3.0]
        """
        if isinstance(factors, np.ndarray) or not isinstance(factors, Sequence):
            raise TypeError(f"factors must be a sequence of {self.rank} matrices, one per dimension")
        arrays = [np.asarray(f) for f in factors]
        single = single_precision(*arrays)
        converted = [float_operand(f, f"factors[{i}]", 2, single) for i, f in enumerate(arrays)]
        m = _mode(mode, self.rank)
        out = _native.mttkrp(self._validated()._bytes(), converted, m, threads_argument(threads))
        columns = converted[0].shape[1] if converted else 0
        return out.reshape(self.shape[m], columns)

    def ttv(self, vector: npt.ArrayLike, mode: int, *, threads: Optional[int] = None) -> Any:
        """The tensor times a vector along ``mode`` (TensorLy's ``mode_dot``
        with a vector, the Tensor Toolbox's ``ttv``): ``mode`` is summed away,
        ``y[..] = sum_i x[.., i, ..] * vector[i]``.

        The result has one dimension fewer: a ``CsfTensor`` for a tensor of
        rank 4 or more (in this tensor's mode order less ``mode``), a
        ``scipy.sparse.csr_array`` for a tensor of rank 3. It holds an entry
        wherever some non-zero of the tensor projects, even when the sum is
        zero. Computed in ``float32`` for a ``float32`` vector, else in
        ``float64``.

        >>> import numpy as np, hurray_csf as hc
        >>> t = hc.from_coo(np.array([[0, 0, 1], [1, 2, 0]]), np.array([2.0, 3.0]), (2, 3, 2))
        >>> t.ttv(np.array([1.0, 10.0]), 0).toarray().tolist()
        [[0.0, 2.0], [0.0, 0.0], [30.0, 0.0]]
        """
        v = np.asarray(vector)
        v = float_operand(v, "vector", 1, single_precision(v))
        result = _native.ttv(self._validated()._bytes(), v, _mode(mode, self.rank), threads_argument(threads))
        if result[0] == "tensor":
            return self._derived(result[1])
        _, rows, cols, indptr, indices, data = result
        return _export.scipy_csr(rows, cols, indptr, indices, data)

    def ttm(
        self,
        matrix: npt.ArrayLike,
        mode: int,
        *,
        dense: bool = False,
        max_elements: int = DENSE_LIMIT,
        threads: Optional[int] = None,
    ) -> Any:
        """The tensor times a ``(J, I_mode)`` matrix along ``mode``
        (TensorLy's ``mode_dot``, the Tensor Toolbox's ``ttm``):
        ``y[.., j, ..] = sum_i x[.., i, ..] * matrix[j, i]``, of the shape of
        the tensor with ``J`` at ``mode``.

        The result is dense along ``mode`` and sparse in the other
        dimensions: a pydata ``sparse.COO`` of the full shape holding the
        whole length-``J`` fibre (zeros included) at every combination of
        the other coordinates where the tensor has a non-zero; with
        ``dense=True``, a numpy array instead, refused (``ValueError``) past
        ``max_elements`` elements as ``to_dense`` is. Computed in ``float32``
        for a ``float32`` matrix, else in ``float64``.

        >>> import numpy as np, hurray_csf as hc
        >>> t = hc.from_coo(np.array([[0, 0, 1], [1, 2, 0]]), np.array([2.0, 3.0]), (2, 3, 2))
        >>> y = t.ttm(np.array([[1.0, 1.0], [1.0, -1.0]]), 2, dense=True)
        >>> y.shape, y[0, 0].tolist(), y[1, 2].tolist()
        ((2, 3, 2), [2.0, -2.0], [3.0, 3.0])
        """
        u = np.asarray(matrix)
        u = float_operand(u, "matrix", 2, single_precision(u))
        m = _mode(mode, self.rank)
        budget = _limit(max_elements) if dense else None
        result = _native.ttm(self._validated()._bytes(), u, m, budget, threads_argument(threads))
        if result[0] == "dense":
            _, shape, values = result
            return values.reshape(tuple(shape))
        _, shape, coords, values = result
        # The fibres come in the order of the tree's levels less `mode`, the
        # dense coordinate fastest: row-major when that is the identity order
        # and `mode` is the last dimension.
        others = tuple(d for d in self.mode_order if d != m)
        in_order = others == tuple(range(self.rank - 1)) and m == self.rank - 1
        return _export.sparse_coo(coords.reshape(-1, self.rank), values, tuple(shape), sorted=in_order)

    def unfold(self, mode: int, *, threads: Optional[int] = None) -> Any:
        """The mode-``mode`` unfolding (matricization): a
        ``scipy.sparse.csr_array`` of shape ``(I_mode, prod of the other
        extents)`` whose columns number the other coordinates in C order
        (the last dimension fastest), as TensorLy's ``unfold`` and
        ``np.moveaxis(x, mode, 0).reshape(I_mode, -1)`` number them. Values
        are ``float32`` for a ``float32`` or ``float16`` tensor, ``float64``
        otherwise (quantized ones dequantized). A width of 2^63 columns or
        more raises ``OverflowError``.

        >>> import numpy as np, hurray_csf as hc
        >>> t = hc.from_coo(np.array([[0, 0, 1], [1, 2, 0]]), np.array([2.0, 3.0]), (2, 3, 2))
        >>> t.unfold(2).toarray().tolist()
        [[0.0, 0.0, 0.0, 0.0, 0.0, 3.0], [2.0, 0.0, 0.0, 0.0, 0.0, 0.0]]
        """
        single = self.dtype in (np.dtype(np.float32), np.dtype(np.float16))
        result = _native.unfold(self._validated()._bytes(), _mode(mode, self.rank), single, threads_argument(threads))
        _, rows, cols, indptr, indices, data = result
        return _export.scipy_csr(rows, cols, indptr, indices, data)

    def norm(self) -> float:
        """The Frobenius norm, ``sqrt(sum of the squared values)``, summed in
        ``float64`` (quantized values dequantized).

        >>> import numpy as np, hurray_csf as hc
        >>> hc.from_coo(np.array([[0, 0, 1], [1, 2, 0]]), np.array([3.0, 4.0]), (2, 3, 2)).norm()
        5.0
        """
        return float(_native.norm(self._validated()._bytes(), self.dtype == np.float32))

    # -- bytes and files ---------------------------------------------------

    def to_bytes(self) -> bytes:
        """The container bytes: exactly what ``save`` writes."""
        return self._bytes().tobytes()

    def save(self, path: Union[str, "os.PathLike[str]"]) -> None:
        """Writes the tensor to ``path`` atomically; see ``hurray_csf.save``."""
        write_atomically(self._bytes(), path)

    # -- interop (each package imported only when asked for) ----------------

    def to_pyarrow(self) -> Any:
        """A ``pyarrow.SparseCSFTensor`` (index arrays shared where Arrow's int64 allows)."""
        return _export.to_pyarrow(self._validated())

    def to_sparse(self) -> "sparse.COO":
        """A pydata ``sparse.COO``."""
        return _export.to_sparse(self._validated())

    def to_torch(self) -> "torch.Tensor":
        """A coalesced ``torch.sparse_coo_tensor`` (made coalesced: the
        identity order's leaves are sorted and unique, so torch need not sort)."""
        return _export.to_torch(self._validated())

    def to_pandas(self, names: Optional[Sequence[Any]] = None) -> "pandas.Series[Any]":
        """A ``pandas.Series`` of the values over a ``MultiIndex`` of the
        coordinates (one level per dimension, named ``names``), the way
        xarray and pydata sparse users hold COO."""
        return _export.to_pandas(self._validated(), names)


def _limit(max_elements: Any) -> int:
    limit = integer(max_elements, "max_elements")
    if not 0 <= limit < 1 << 64:
        raise ValueError(f"max_elements must be between 0 and 2^64 - 1, not {limit}")
    return limit


def _mode(mode: Any, rank: int) -> int:
    """A dimension of a tensor of rank ``rank`` (negative ones count from the
    end, as numpy's axes), or numpy's ``AxisError``."""
    m = integer(mode, "mode")
    if not -rank <= m < rank:
        raise _axis_error(f"mode {m} is out of bounds for a tensor of dimension {rank}")
    return m % rank


def _prefix(index: Tuple[Any, ...], shape: Tuple[int, ...]) -> List[int]:
    """A storage-order prefix: non-negative integers that fit ``uint64``."""
    coords = [integer(i, "prefix") for i in index]
    if any(c < 0 for c in coords):
        raise IndexError(f"prefix {tuple(coords)} has a negative coordinate")
    if any(c >> 64 for c in coords):
        raise IndexError(f"prefix {tuple(coords)} is outside the shape {shape}")
    return coords


def _u64_rows(indices: Any, rank: int, what: str) -> npt.NDArray[np.uint64]:
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


def _axes(axis: Union[None, int, Sequence[int]], rank: int) -> List[int]:
    """The dimensions ``axis`` names, sorted, as numpy normalises them."""
    if axis is None:
        return list(range(rank))
    items = [axis] if not isinstance(axis, (tuple, list)) else list(axis)
    out = []
    for item in items:
        a = integer(item, "axis")
        if not -rank <= a < rank:
            raise _axis_error(f"axis {a} is out of bounds for a tensor of dimension {rank}")
        out.append(a % rank)
    if len(set(out)) != len(out):
        raise ValueError(f"duplicate value in 'axis': {axis}")
    return sorted(out)


def _axis_error(message: str) -> Exception:
    """numpy's ``AxisError`` (a ``ValueError`` and an ``IndexError``)."""
    error: type[Exception] = getattr(getattr(np, "exceptions", np), "AxisError", ValueError)
    return error(message)


def _accumulator(dtype: np.dtype[Any]) -> np.dtype[Any]:
    """The type numpy's ``sum`` adds ``dtype`` in (csf-build sums ``i64``,
    ``u64``, ``f32`` and ``f64``; ``float16`` is added in ``float32``)."""
    if dtype.kind in "bi":
        return np.dtype(np.int64)
    if dtype.kind == "u":
        return np.dtype(np.uint64)
    if dtype == np.float16 or dtype == np.float32:
        return np.dtype(np.float32)
    if dtype == np.float64:
        return np.dtype(np.float64)
    raise TypeError(f"cannot sum values of dtype {dtype}")

