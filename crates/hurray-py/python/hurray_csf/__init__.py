"""hurray_csf: sparse tensors of rank >= 3 in the Hurray CSF format.

Build a CSF (Compressed Sparse Fiber) tree from COO arrays, read files
without copying them, validate them against every rule of the spec, and look
values up, all in Rust (the hurray-csf crates) with the GIL released::

    import numpy as np, hurray_csf as hc
    t = hc.from_coo(np.array([[0, 0, 1], [1, 1, 2]]), np.array([1.0, 4.0]), (2, 3, 4))
    t[1, 1, 2]            # 4.0
    t[1]                  # (coords, values) of every entry under i = 1
    hc.save(t, "t.hurray")
    u = hc.load("t.hurray")  # a memory map, validated strictly
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
from ._interop import from_pyarrow, from_sparse
from ._native import __version__
from ._tensor import AutoChoice, CsfTensor, Report, from_bytes, from_coo, load, save, validate

__all__ = [
    "AutoChoice",
    "BuildError",
    "CsfTensor",
    "DuplicateError",
    "FormatError",
    "HurrayError",
    "Report",
    "ValidationError",
    "ValidationWarning",
    "Violation",
    "__version__",
    "from_bytes",
    "from_coo",
    "from_pyarrow",
    "from_sparse",
    "load",
    "save",
    "validate",
]
