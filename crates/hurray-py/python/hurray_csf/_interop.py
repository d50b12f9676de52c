"""Tensors from pyarrow, pydata sparse, scipy.sparse, torch and pandas.

No package is imported unless the object handed over is one of its own (its
type's module says so), so a missing package never breaks the others. The
conversions move arrays into the builder (``from_coo``, ``from_dense``) or,
for pyarrow's CSF, into a strict validation; no rule is checked here.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np
import numpy.typing as npt

from ._build import from_coo, from_dense, from_parts
from ._common import element_type_of, renamed, require
from ._tensor import CsfTensor


def _module(obj: Any) -> str:
    return type(obj).__module__ or ""


def from_pyarrow(st: Any, *, mode_order: Optional[Sequence[int]] = None, axis_order: Optional[Sequence[int]] = None) -> CsfTensor:
    """A tensor from a ``pyarrow.SparseCSFTensor``, strictly validated (pyarrow
    does not check what it wraps), or from a ``pyarrow.SparseCOOTensor``
    (built, duplicates refused). pyarrow does not expose a CSF tensor's axis
    order: pass it as ``mode_order`` when it is not the identity. Note that
    ``SparseCSFTensor.from_dense_numpy(x)`` orders the axes by increasing
    extent, so its order is ``np.argsort(x.shape, kind="stable")``.
    (``axis_order=`` is the deprecated spelling of ``mode_order=``.)"""
    order_given = renamed("axis_order", "mode_order", axis_order, mode_order, None)
    kind = type(st).__name__ if _module(st).startswith("pyarrow") else ""
    if kind == "SparseCOOTensor":
        if order_given is not None:
            raise ValueError("mode_order describes a CSF tensor's levels; a SparseCOOTensor has none")
        data, coords = st.to_numpy()
        return from_coo(coords, np.ravel(data), [int(d) for d in st.shape])
    if kind != "SparseCSFTensor":
        raise TypeError(f"st must be a pyarrow SparseCSFTensor or SparseCOOTensor, not {type(st).__name__}")
    data, indptr, indices = st.to_numpy()
    shape = [int(d) for d in st.shape]
    rank = len(shape)
    order = list(range(rank)) if order_given is None else [int(d) for d in order_given]
    if any(not 0 <= d < 1 << 32 for d in order):
        # Validation names any other non-permutation; these do not fit the format's uint32.
        raise ValueError(f"mode_order {order} is not a permutation of 0..{rank - 1}")
    if len(indptr) != rank - 1 or len(indices) != rank:
        raise ValueError(f"a rank-{rank} CSF tensor has {rank - 1} indptr and {rank} indices arrays")
    crd = [_u64(np.ravel(a), f"indices[{L}]") for L, a in enumerate(indices)]
    pos = [np.array([0, crd[0].size], dtype=np.uint64)] + [_u64(np.ravel(a), f"indptr[{L}]") for L, a in enumerate(indptr)]
    values = np.ravel(data)
    return from_parts(element_type_of(values.dtype, "values"), shape, order, list(zip(pos, crd)), values)


def _u64(a: npt.NDArray[Any], what: str) -> npt.NDArray[np.uint64]:
    if a.dtype.kind not in "iu":
        raise TypeError(f"{what} must be integers, not {a.dtype}")
    if a.dtype.kind == "i" and a.size and (a < 0).any():
        raise ValueError(f"{what} holds a negative index")
    return np.ascontiguousarray(a, dtype=np.uint64)


def from_sparse(array: Any, **options: Any) -> CsfTensor:
    """A tensor from a pydata sparse array (``COO``, ``GCXS``, ``DOK``) or an
    N-dimensional ``scipy.sparse`` COO array, of rank 3 or more; ``options``
    are ``from_coo``'s.

    A non-zero ``fill_value`` is refused (``ValueError``): the format's
    implicit elements are zeros. Duplicates are summed, as the source library
    does (a ``COO`` sums them when made unless told ``has_duplicates=False``;
    a scipy array not in canonical form holds them); a canonical source
    defaults to ``duplicates="error"``, which also lets float16 values (which
    the builder does not sum) through."""
    module = _module(array)
    if module.startswith("sparse"):
        sparse = require("sparse", "sparse")
        if not isinstance(array, sparse.SparseArray):
            raise TypeError(f"array must be a pydata sparse array, not {type(array).__name__}")
        fill = np.asarray(array.fill_value)
        if not (fill == 0):
            raise ValueError(
                f"array has fill_value {fill.item()!r}: a CSF tensor's implicit elements are zeros "
                "(make it with fill_value=0, or shift its values, first)"
            )
        coo = array if isinstance(array, sparse.COO) else array.asformat("coo")
        data = np.asarray(coo.data)
        canonical = not getattr(coo, "has_duplicates", True)
        options.setdefault("duplicates", "error" if canonical or data.dtype == np.float16 else "sum")
        return from_coo(np.asarray(coo.coords), data, coo.shape, coords_layout="rank_nnz", **options)
    if module.startswith("scipy.sparse"):
        if len(array.shape) < 3:
            raise ValueError(
                f"array has rank {len(array.shape)}: CSF stores rank 3 or more (keep a matrix in scipy's CSR/CSC)"
            )
        coo = array.tocoo()
        options.setdefault("duplicates", "error" if coo.has_canonical_format else "sum")
        return from_coo(np.asarray(coo.coords), np.asarray(coo.data), coo.shape, coords_layout="rank_nnz", **options)
    raise TypeError(
        f"array must be a pydata sparse or scipy.sparse array, not {type(array).__name__} "
        "(use from_dense for a dense array, from_coo for coordinate arrays)"
    )


def from_torch(tensor: Any, **options: Any) -> CsfTensor:
    """A tensor from a torch tensor of rank 3 or more: a sparse COO tensor
    (``layout=torch.sparse_coo``; duplicates of an uncoalesced one are
    summed, as ``coalesce`` would, a coalesced one defaults to
    ``duplicates="error"``), or a dense (strided) one through ``from_dense``.
    ``options`` are ``from_coo``'s (``from_dense``'s for a dense tensor).
    Values must have a numpy dtype (``bfloat16``: ``tensor.float()`` first);
    a tensor on another device is copied to the CPU."""
    if not _module(tensor).startswith("torch"):
        raise TypeError(f"tensor must be a torch.Tensor, not {type(tensor).__name__}")
    torch = require("torch", "torch")
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"tensor must be a torch.Tensor, not {type(tensor).__name__}")
    if tensor.dtype == torch.bfloat16 or tensor.is_complex():
        raise TypeError(f"tensor has dtype {tensor.dtype}, which numpy lacks: convert it first (tensor.float())")
    t = tensor.detach().cpu()
    if t.layout == torch.strided:
        return from_dense(t.numpy(), **options)
    if t.layout != torch.sparse_coo:
        raise TypeError(f"tensor has layout {t.layout}: from_torch takes sparse COO or dense tensors (t.to_sparse_coo())")
    if t.dense_dim() != 0:
        raise ValueError(f"tensor is hybrid ({t.dense_dim()} dense dimensions): a CSF tensor's values are scalars")
    options.setdefault("duplicates", "error" if t.is_coalesced() else "sum")
    indices = t._indices().numpy()
    values = t._values().numpy()
    return from_coo(indices, values, tuple(t.shape), coords_layout="rank_nnz", **options)


def from_pandas(series: Any, shape: Optional[Sequence[int]] = None, **options: Any) -> CsfTensor:
    """A tensor from a ``pandas.Series`` over a ``MultiIndex`` of integer
    levels, one per dimension (what ``CsfTensor.to_pandas`` makes, and how
    xarray and pydata sparse users hold COO). ``shape`` defaults to one past
    the largest coordinate of each dimension; ``options`` are ``from_coo``'s
    (duplicate index entries are refused unless ``duplicates=`` says how to
    merge them)."""
    if not _module(series).startswith("pandas"):
        raise TypeError(f"series must be a pandas.Series, not {type(series).__name__}")
    pd = require("pandas", "pandas")
    if not isinstance(series, pd.Series):
        raise TypeError(f"series must be a pandas.Series, not {type(series).__name__}")
    index = series.index
    if not isinstance(index, pd.MultiIndex):
        raise TypeError("series must have a MultiIndex, one integer level per dimension")
    columns = []
    for level in range(index.nlevels):
        values = np.asarray(index.get_level_values(level))
        if values.dtype.kind not in "iu":
            name = index.names[level]
            raise TypeError(
                f"level {level} ({name!r}) of the index holds {values.dtype}, not integer coordinates "
                "(series.index.codes gives positions for labels)"
            )
        columns.append(values.astype(np.int64 if values.dtype.kind == "i" else np.uint64))
    if columns and any(c.dtype != columns[0].dtype for c in columns):
        columns = [c.astype(np.int64) for c in columns]
    coords = np.stack(columns) if columns else np.zeros((0, 0), dtype=np.int64)
    return from_coo(coords, series.to_numpy(), shape, coords_layout="rank_nnz", **options)
