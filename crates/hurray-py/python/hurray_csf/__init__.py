"""hurray_csf: sparse tensors of rank >= 3 in the Hurray CSF format.

Build a CSF (Compressed Sparse Fiber) tree from COO arrays, read files
without copying them, validate them against every rule of the spec, and look
values up, all in Rust (the hurray-csf crates) with the GIL released::

    import numpy as np, hurray_csf as hc
    t = hc.from_coo(np.array([[0, 0, 1], [1, 1, 2]]), np.array([1.0, 4.0]), (2, 3, 4))
    t[1, 1, 2]            # 4.0
    t[:, 1:]              # a CsfTensor of shape (2, 2, 4); t[1] is a 2-D sparse.COO
    hc.save(t, "t.hurray")
    u = hc.load("t.hurray")  # a memory map, validated strictly

and compute with csf-kernels: ``t.mttkrp(factors, mode)``, ``t.ttv``,
``t.ttm``, ``t.unfold``, ``t.norm()`` and ``hc.cp_als(t, rank)``.
"""

from ._errors import (
    BuildError,
    DuplicateError,
    FormatError,
    HurrayError,
    ValidationError,
    Violation,
    Warning_ as ValidationWarning,
)
from ._build import from_coo, from_dense
from ._decompose import CPResult, cp_als
from ._files import Report, from_bytes, load, save, validate
from ._interop import from_pandas, from_pyarrow, from_sparse, from_torch
from ._join import JoinReport, concat
from ._native import __version__
from ._tensor import AutoChoice, CsfTensor

__all__ = [
    "AutoChoice",
    "BuildError",
    "CPResult",
    "CsfTensor",
    "DuplicateError",
    "FormatError",
    "HurrayError",
    "JoinReport",
    "Report",
    "ValidationError",
    "ValidationWarning",
    "Violation",
    "__version__",
    "concat",
    "cp_als",
    "from_bytes",
    "from_coo",
    "from_dense",
    "from_pandas",
    "from_pyarrow",
    "from_sparse",
    "from_torch",
    "load",
    "save",
    "validate",
]
