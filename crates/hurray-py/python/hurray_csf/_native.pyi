"""Type stub of the compiled module ``hurray_csf._native`` (src/*.rs).

Every function takes a tensor as its container bytes: a read-only, C-contiguous
``uint8`` numpy array. Values come back as little-endian bytes (``uint8``
arrays) beside the numpy dtype string that reads them.
"""

from typing import Any, Dict, List, Literal, Optional, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt

__version__: str

_Bytes = npt.NDArray[np.uint8]
_Auto = Optional[Tuple[List[int], int]]

def build(
    coords: Union[npt.NDArray[np.uint64], npt.NDArray[np.int64]],
    columns: bool,
    values: _Bytes,
    element_type: str,
    shape: Optional[Sequence[int]],
    mode_order: Union[str, Sequence[int]],
    duplicates: str,
    drop_zeros: bool,
    quantize: Optional[str],
    threads: Optional[int],
) -> Tuple[_Bytes, _Auto, int]: ...
def from_parts(
    element_type: str,
    shape: Sequence[int],
    mode_order: Sequence[int],
    nnz: int,
    levels: Sequence[Tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64]]],
    values: _Bytes,
) -> _Bytes: ...
def reorder(raw: _Bytes, mode_order: Union[str, Sequence[int]], threads: Optional[int]) -> Tuple[_Bytes, _Auto, int]: ...
def open(raw: _Bytes, strict: bool) -> None: ...
def describe(raw: _Bytes) -> Dict[str, Any]: ...
def report(raw: _Bytes, strict: bool, max_errors: int) -> Dict[str, Any]: ...
def get(raw: _Bytes, index: Sequence[int]) -> Union[bool, int, float]: ...
def find(raw: _Bytes, indices: npt.NDArray[np.uint64]) -> npt.NDArray[np.int64]: ...
def lookup(raw: _Bytes, indices: npt.NDArray[np.uint64]) -> Tuple[_Bytes, str]: ...
def to_coo(raw: _Bytes) -> Tuple[npt.NDArray[np.uint64], _Bytes, str]: ...
def subtree(raw: _Bytes, prefix: Sequence[int]) -> Tuple[npt.NDArray[np.uint64], _Bytes, str]: ...
def to_dense(raw: _Bytes, max_elements: int) -> Tuple[_Bytes, str]: ...
# `axes`: one selector per logical dimension, `("index", i)` (the dimension
# is dropped), `("all",)`, `("step", start, len, step)` or `("take", coords)`
# (coords a uint64 array). A whole index selects one entry; otherwise the
# result is a tensor, or the entries of a selection that is not one.
def select(
    raw: _Bytes, axes: Sequence[Tuple[Any, ...]], threads: Optional[int]
) -> Union[
    Tuple[Literal["tensor"], _Bytes],
    Tuple[Literal["entries"], List[int], npt.NDArray[np.uint64], _Bytes, str],
]: ...
def from_dense(
    values: _Bytes,
    element_type: str,
    shape: Sequence[int],
    mode_order: Union[str, Sequence[int]],
    drop_nan: bool,
    quantize: Optional[str],
    threads: Optional[int],
) -> Tuple[_Bytes, _Auto, int]: ...
def equals(a: _Bytes, b: _Bytes) -> bool: ...
def sum(
    raw: _Bytes, axes: Sequence[int], max_elements: int, threads: Optional[int]
) -> Union[Tuple[Literal["tensor"], _Bytes], Tuple[Literal["dense"], List[int], _Bytes, str]]: ...

# csf-kernels (src/kernels.rs). Operands are all float32 or all float64
# arrays, and the kernel runs in that type; `single` picks it where there is
# no operand. Matrices come back flat, in C order.
_Floats = Union[npt.NDArray[np.float32], npt.NDArray[np.float64]]
_Csr = Tuple[Literal["csr"], int, int, npt.NDArray[np.uint64], npt.NDArray[np.uint64], _Floats]

def mttkrp(raw: _Bytes, factors: Sequence[_Floats], mode: int, threads: Optional[int]) -> _Floats: ...
def ttv(
    raw: _Bytes, vector: _Floats, mode: int, threads: Optional[int]
) -> Union[Tuple[Literal["tensor"], _Bytes], _Csr]: ...
# `max_elements`: None for the fibres as COO (coordinates flat, `rank` per
# element), a budget for a dense array in C order.
def ttm(
    raw: _Bytes, matrix: _Floats, mode: int, max_elements: Optional[int], threads: Optional[int]
) -> Union[
    Tuple[Literal["coo"], List[int], npt.NDArray[np.uint64], _Floats],
    Tuple[Literal["dense"], List[int], _Floats],
]: ...
def unfold(raw: _Bytes, mode: int, single: bool, threads: Optional[int]) -> _Csr: ...
def norm(raw: _Bytes, single: bool) -> float: ...
# (weights, factors flat, fit per iteration, seconds per iteration, converged)
def cp_als(
    raw: _Bytes,
    rank: int,
    max_iters: int,
    tol: float,
    seed: int,
    init: Optional[Sequence[_Floats]],
    single: bool,
    trees: int,
    threads: Optional[int],
) -> Tuple[_Floats, List[_Floats], List[float], List[float], bool]: ...

# A build spread over processes (src/cluster.rs).
_Coords = Union[npt.NDArray[np.uint64], npt.NDArray[np.int64]]

def key_ranges(sample: _Coords, mode_order: Sequence[int], ranges: int) -> npt.NDArray[np.uint64]: ...
def assign_ranges(
    coords: _Coords, bounds: npt.NDArray[np.uint64], mode_order: Sequence[int]
) -> npt.NDArray[np.uint32]: ...
def build_part(
    coords: _Coords,
    values: _Bytes,
    element_type: str,
    positions: npt.NDArray[np.uint64],
    shape: Sequence[int],
    mode_order: Sequence[int],
    duplicates: str,
    drop_zeros: bool,
    threads: Optional[int],
) -> _Bytes: ...
def join_files(
    paths: Sequence[str], out: str, quantize: Optional[str], statistics: bool, temp_dir: str
) -> Tuple[int, int, int]: ...
