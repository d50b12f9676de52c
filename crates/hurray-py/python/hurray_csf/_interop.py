"""Conversions to and from pyarrow, pydata sparse and torch.

Each package is imported only when its conversion is called, with a clear
``ImportError`` naming it when it is missing. The conversions move arrays;
building and validating stay in Rust.
"""

from __future__ import annotations

import importlib
from typing import Any, Optional, Sequence

import numpy as np

from . import _native
from ._tensor import _ELEMENT_TYPES, CsfTensor, _freeze, from_coo

# The element types stored as a numpy dtype of their own.
_NUMPY_ELEMENT_TYPES = frozenset(_ELEMENT_TYPES.values())


def _require(name: str, pip: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError as e:
        raise ImportError(f"this conversion needs the '{name}' package: pip install {pip}") from e


def _int64(a: np.ndarray, bound: int) -> np.ndarray:
    """A uint64 index array of a validated tensor as Arrow's int64, sharing
    its memory. Every entry is below ``bound`` (a coordinate below its
    level's extent, a pointer at most the next level's length), so only a
    bound above 2^63 needs the entries read (O(1) otherwise: this is what
    keeps ``to_pyarrow`` independent of the tensor's size)."""
    if bound > 1 << 63 and a.size and int(a.max()) >= 1 << 63:
        raise OverflowError("an index of 2^63 or more does not fit Arrow's int64 index arrays")
    return a.view(np.int64)


def to_pyarrow(t: CsfTensor) -> Any:
    """``pyarrow.SparseCSFTensor``: Arrow's CSF has no root pointer
    (``pos_0``); its ``indptr[L]`` is our ``pos_{L+1}`` and ``indices[L]``
    our ``crd_L``, shared with the tensor's memory as int64 views."""
    pa = _require("pyarrow", "pyarrow")
    t = t._validated()
    levels = t.levels
    indptr = [_int64(pos, crd.size) for pos, crd in levels[1:]]
    indices = [_int64(crd, t.shape[dim]) for (_, crd), dim in zip(levels, t.mode_order)]
    # The values buffer itself when it holds one numpy element per value;
    # packed 4-bit types (u4 looks like uint8), narrow floats and quantized
    # codes go through their values.
    if t.quantization is None and t.element_type in _NUMPY_ELEMENT_TYPES:
        data = t.values
    else:
        data = t.to_coo()[1]
    return pa.SparseCSFTensor.from_numpy(
        data.reshape(-1, 1), indptr, indices, shape=t.shape, axis_order=list(t.mode_order)
    )


def from_pyarrow(st: Any, *, axis_order: Optional[Sequence[int]] = None) -> CsfTensor:
    """A tensor from a ``pyarrow.SparseCSFTensor``, strictly validated (pyarrow
    does not check what it wraps). pyarrow does not expose a tensor's axis
    order: pass it as ``axis_order`` when it is not the identity. Note that
    ``SparseCSFTensor.from_dense_numpy(x)`` orders the axes by increasing
    extent, so its axis order is ``np.argsort(x.shape, kind="stable")``."""
    data, indptr, indices = st.to_numpy()
    shape = [int(d) for d in st.shape]
    rank = len(shape)
    order = list(range(rank)) if axis_order is None else [int(d) for d in axis_order]
    if any(not 0 <= d < 1 << 32 for d in order):
        # Validation names any other non-permutation; these do not fit the format's uint32.
        raise ValueError(f"axis_order {order} is not a permutation of 0..{rank - 1}")
    if len(indptr) != rank - 1 or len(indices) != rank:
        raise ValueError(f"a rank-{rank} CSF tensor has {rank - 1} indptr and {rank} indices arrays")
    crd = [_u64(np.ravel(a), f"indices[{L}]") for L, a in enumerate(indices)]
    pos = [np.array([0, crd[0].size], dtype=np.uint64)] + [_u64(np.ravel(a), f"indptr[{L}]") for L, a in enumerate(indptr)]
    values = np.ravel(data)
    name = _ELEMENT_TYPES.get(values.dtype.newbyteorder("="))
    if name is None:
        raise TypeError(f"values of dtype {values.dtype} cannot be stored")
    raw_values = np.ascontiguousarray(values, dtype=values.dtype.newbyteorder("<")).view(np.uint8).reshape(-1)
    raw = _native.from_parts(name, shape, order, int(values.size), list(zip(pos, crd)), raw_values)
    return CsfTensor(_freeze(raw))


def _u64(a: np.ndarray, what: str) -> np.ndarray:
    if a.dtype.kind not in "iu":
        raise TypeError(f"{what} must be integers, not {a.dtype}")
    if a.dtype.kind == "i" and a.size and (a < 0).any():
        raise ValueError(f"{what} holds a negative index")
    return np.ascontiguousarray(a, dtype=np.uint64)


def to_sparse(t: CsfTensor) -> Any:
    """pydata ``sparse.COO`` (its coordinates are ``(rank, nnz)``)."""
    sparse = _require("sparse", "sparse")
    coords, values = t._validated().to_coo()
    return sparse.COO(coords.T.astype(np.int64), values, shape=t.shape, has_duplicates=False, sorted=t.mode_order == tuple(range(t.rank)))


def from_sparse(coo: Any, **options: Any) -> CsfTensor:
    """A tensor from a pydata ``sparse.COO``; duplicates (an uncanonical COO) are summed, as sparse does.

    A ``COO`` sums its duplicates when it is made, unless told
    ``has_duplicates=False``; float16 values, which the builder does not sum,
    default to ``duplicates="error"`` so that a canonical COO of them converts."""
    data = np.asarray(coo.data)
    options.setdefault("duplicates", "error" if data.dtype == np.float16 else "sum")
    return from_coo(np.asarray(coo.coords), data, coo.shape, coords_layout="rank_nnz", **options)


def to_torch(t: CsfTensor) -> Any:
    """A coalesced ``torch.sparse_coo_tensor``."""
    torch = _require("torch", "torch")
    coords, values = t._validated().to_coo()
    if values.dtype == np.uint16 or values.dtype == np.uint32 or values.dtype == np.uint64:
        raise TypeError(f"torch has no sparse {values.dtype} tensors; convert the values first")
    index = torch.from_numpy(coords.T.astype(np.int64))
    # Validated above: torch need not check the indices again.
    return torch.sparse_coo_tensor(
        index, torch.from_numpy(np.ascontiguousarray(values)), t.shape, check_invariants=False
    ).coalesce()
