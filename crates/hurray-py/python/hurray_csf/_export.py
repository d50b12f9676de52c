"""Conversions of a tensor to pyarrow, pydata sparse, torch and pandas, and
of kernel results to scipy.sparse.

Each package is imported only when its conversion is called, with a clear
``ImportError`` naming it when it is missing. The conversions move arrays;
what they move was computed in Rust. Their callers (``CsfTensor.to_*``) pass
a strictly validated tensor: these libraries trust the arrays they get.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Sequence, Tuple

import numpy as np
import numpy.typing as npt

from ._common import NUMPY_ELEMENT_TYPES, require

if TYPE_CHECKING:
    import pandas
    import sparse
    import torch

    from ._tensor import CsfTensor

_INT64_LIMIT = 1 << 63


def _int64(a: npt.NDArray[np.uint64], bound: int) -> npt.NDArray[np.int64]:
    """A uint64 index array of a validated tensor as Arrow's int64, sharing
    its memory. Every entry is below ``bound`` (a coordinate below its
    level's extent, a pointer at most the next level's length), so only a
    bound above 2^63 needs the entries read (O(1) otherwise: this is what
    keeps ``to_pyarrow`` independent of the tensor's size)."""
    if bound > _INT64_LIMIT and a.size and int(a.max()) >= _INT64_LIMIT:
        raise OverflowError("an index of 2^63 or more does not fit Arrow's int64 index arrays")
    return a.view(np.int64)


def _int64_coords(coords: npt.NDArray[np.uint64], shape: Tuple[int, ...], library: str) -> npt.NDArray[np.int64]:
    """``(m, rank)`` coordinates as int64, refused (``OverflowError``) when
    one is 2^63 or more: only read when an extent is above 2^63."""
    for dim, extent in enumerate(shape):
        if extent > _INT64_LIMIT and coords.size and int(coords[:, dim].max()) >= _INT64_LIMIT:
            raise OverflowError(f"{library} keeps coordinates as int64: dimension {dim} holds one of 2^63 or more")
    return coords.astype(np.int64)


def to_pyarrow(t: "CsfTensor") -> Any:
    """``pyarrow.SparseCSFTensor``: Arrow's CSF has no root pointer
    (``pos_0``); its ``indptr[L]`` is our ``pos_{L+1}`` and ``indices[L]``
    our ``crd_L``, shared with the tensor's memory as int64 views."""
    pa = require("pyarrow", "pyarrow")
    levels = t.levels
    indptr = [_int64(pos, crd.size) for pos, crd in levels[1:]]
    indices = [_int64(crd, t.shape[dim]) for (_, crd), dim in zip(levels, t.mode_order)]
    # The values buffer itself when it holds one numpy element per value;
    # packed 4-bit types (u4 looks like uint8), narrow floats and quantized
    # codes go through their values.
    if t.quantization is None and t.element_type in NUMPY_ELEMENT_TYPES:
        data = t.values
    else:
        data = t.to_coo()[1]
    return pa.SparseCSFTensor.from_numpy(data.reshape(-1, 1), indptr, indices, shape=t.shape, axis_order=list(t.mode_order))


def sparse_coo(
    coords: npt.NDArray[np.uint64], values: npt.NDArray[Any], shape: Tuple[int, ...], *, sorted: bool = True
) -> "sparse.COO":
    """A pydata ``sparse.COO`` of ``(m, rank)`` coordinates without
    duplicates, in row-major order when ``sorted`` (what a selection, or
    ``to_coo`` of the identity order, gives)."""
    sparse = require("sparse", "sparse")
    index = _int64_coords(coords, shape, "pydata sparse")
    return sparse.COO(index.T, values, shape=shape, has_duplicates=False, sorted=sorted)


def to_sparse(t: "CsfTensor") -> "sparse.COO":
    """pydata ``sparse.COO`` (its coordinates are ``(rank, nnz)``)."""
    coords, values = t.to_coo()
    return sparse_coo(coords, values, t.shape, sorted=t.mode_order == tuple(range(t.rank)))


def to_torch(t: "CsfTensor") -> "torch.Tensor":
    """A coalesced ``torch.sparse_coo_tensor``: the leaves of the identity
    order are the row-major order without duplicates, which is what torch's
    coalesced form is, so the tensor is made coalesced without a sort (a
    tensor stored in another order is re-ordered by csf-build first)."""
    torch = require("torch", "torch")
    too_large = [d for d, extent in enumerate(t.shape) if extent >= _INT64_LIMIT]
    if too_large:
        raise OverflowError(f"torch keeps sizes as int64: the extent of dimension {too_large[0]} is 2^63 or more")
    if t.dtype in (np.dtype(np.uint16), np.dtype(np.uint32), np.dtype(np.uint64)):
        raise TypeError(f"torch has no sparse {t.dtype} tensors; convert the values first (t.astype)")
    identity = t if t.mode_order == tuple(range(t.rank)) else t.reorder("identity")
    coords, values = identity.to_coo()
    index = torch.from_numpy(coords.T.astype(np.int64))
    data = torch.from_numpy(np.ascontiguousarray(values))
    try:
        # Validated (the caller) and sorted without duplicates (above): torch
        # need check nothing, nor sort.
        return torch.sparse_coo_tensor(index, data, t.shape, check_invariants=False, is_coalesced=True)
    except TypeError:  # torch < 2.1 has no is_coalesced
        return torch.sparse_coo_tensor(index, data, t.shape, check_invariants=False).coalesce()


def to_pandas(t: "CsfTensor", names: Optional[Sequence[Any]]) -> "pandas.Series[Any]":
    """A ``pandas.Series`` of the values over a ``MultiIndex`` of the coordinates."""
    pd = require("pandas", "pandas")
    coords, values = t.to_coo()
    if names is not None and len(names) != t.rank:
        raise ValueError(f"names must name the {t.rank} dimensions, not {len(names)}")
    index = pd.MultiIndex.from_arrays([coords[:, d] for d in range(t.rank)], names=names)
    return pd.Series(values, index=index)  # type: ignore[no-any-return]


def scipy_csr(rows: int, cols: int, indptr: npt.NDArray[np.uint64], indices: npt.NDArray[np.uint64], data: npt.NDArray[Any]) -> Any:
    """A ``scipy.sparse.csr_array`` of a CSR matrix made in Rust (csf-kernels'
    ``Csr``: every index below 2^63, so scipy's ``int64`` indices are views of
    ours; scipy may narrow them to ``int32`` when they fit). Its columns are
    sorted and unique (``has_canonical_format``)."""
    scipy_sparse = require("scipy.sparse", "scipy")
    matrix = scipy_sparse.csr_array((data, indices.view(np.int64), indptr.view(np.int64)), shape=(rows, cols))
    matrix.has_canonical_format = True
    return matrix
