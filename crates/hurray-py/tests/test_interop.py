"""Conversions to torch and pydata sparse, and the ImportError that names a
missing package."""

from __future__ import annotations

import sys
from typing import Any, Callable, List

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hurray_csf as hc
from conftest import DTYPES, SPEC_COORDS, SPEC_SHAPE, SPEC_VALUES, coo_input, levels_as_lists, same_values, values_strategy


@st.composite
def tensors(draw: st.DrawFn, dtypes: List[np.dtype[Any]] = DTYPES) -> hc.CsfTensor:
    shape, coords = draw(coo_input(rank=st.integers(3, 5)))
    dtype = draw(st.sampled_from(dtypes))
    values = draw(values_strategy(dtype, len(coords), exact_sums=True))
    order = draw(st.one_of(st.just("identity"), st.permutations(list(range(len(shape)))).map(list)))
    return hc.from_coo(coords, values, shape, duplicates="last", mode_order=order)


# -- pydata sparse ----------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(t=tensors())
def test_to_sparse_and_back(t: hc.CsfTensor) -> None:
    sparse = pytest.importorskip("sparse")
    s = t.to_sparse()
    assert isinstance(s, sparse.COO)
    assert s.shape == t.shape and s.nnz == t.nnz and s.dtype == t.dtype
    if np.prod(t.shape) <= 4096:
        assert same_values(s.todense(), t.to_dense())
    back = hc.from_sparse(s, mode_order=list(t.mode_order))
    assert back.mode_order == t.mode_order
    assert levels_as_lists(back) == levels_as_lists(t)
    assert same_values(back.values, t.values)
    assert back.to_bytes() == t.to_bytes()


def test_from_sparse_sums_duplicates_of_an_uncanonical_coo() -> None:
    sparse = pytest.importorskip("sparse")
    coords = np.array([[0, 1, 0, 1], [0, 2, 0, 1], [1, 3, 1, 0]])  # (rank, nnz); entries 0 and 2 coincide
    # has_duplicates=False: sparse keeps them as given (its constructor would sum them).
    s = sparse.COO(coords, np.array([1.0, 2.0, 3.0, 4.0]), shape=SPEC_SHAPE, has_duplicates=False, sorted=False)
    assert s.coords.shape == (3, 4)
    t = hc.from_sparse(s)
    assert t.nnz == 3 and t.removed == 1
    assert t[0, 0, 1] == 4.0 and t[1, 2, 3] == 2.0 and t[1, 1, 0] == 4.0
    assert np.array_equal(t.to_dense(), sparse.COO(coords, np.array([1.0, 2.0, 3.0, 4.0]), shape=SPEC_SHAPE).todense())
    with pytest.raises(hc.DuplicateError):
        hc.from_sparse(s, duplicates="error")
    assert hc.from_sparse(s, duplicates="last")[0, 0, 1] == 3.0
    # float16 is not summed: an uncanonical COO of it names its duplicates.
    with pytest.raises(hc.DuplicateError):
        hc.from_sparse(sparse.COO(coords, s.data.astype(np.float16), shape=SPEC_SHAPE, has_duplicates=False))


def test_from_sparse_of_float16() -> None:
    sparse = pytest.importorskip("sparse")
    s = sparse.COO(SPEC_COORDS.T, SPEC_VALUES.astype(np.float16), shape=SPEC_SHAPE)
    t = hc.from_sparse(s)
    assert t.dtype == np.float16 and t.to_coo()[1].tolist() == [1.0, 2.0, 3.0, 4.0]


def test_from_sparse_of_an_empty_coo() -> None:
    sparse = pytest.importorskip("sparse")
    s = sparse.COO(np.zeros((3, 0), np.int64), np.zeros(0, np.float32), shape=SPEC_SHAPE)
    t = hc.from_sparse(s)
    assert t.shape == SPEC_SHAPE and t.nnz == 0 and t.dtype == np.float32
    assert t.to_sparse().nnz == 0


def test_from_sparse_of_a_random_coo() -> None:
    sparse = pytest.importorskip("sparse")
    s = sparse.random((7, 5, 6, 4), density=0.1, random_state=1, format="coo")
    t = hc.from_sparse(s)
    assert t.nnz == s.nnz
    assert np.array_equal(t.to_dense(), s.todense())


# -- torch ------------------------------------------------------------------------------


def torch_or_skip() -> Any:  # the torch module (Any where torch is not installed)
    try:
        import torch
    except ImportError:
        pytest.skip("torch not installed")
    return torch


TORCH_DTYPES = [d for d in DTYPES if d not in (np.dtype(np.uint16), np.dtype(np.uint32), np.dtype(np.uint64))]


@settings(max_examples=40, deadline=None)
@given(t=tensors(TORCH_DTYPES))
def test_to_torch(t: hc.CsfTensor) -> None:
    torch = torch_or_skip()
    x = t.to_torch()
    assert x.is_sparse and x.is_coalesced()
    assert tuple(x.shape) == t.shape
    assert x._nnz() == t.nnz
    coords, values = t.to_coo()
    # torch's coalesced order is the identity order's: compare as sets of (index, value).
    order = np.lexsort(coords.T[::-1].astype(np.int64)) if t.nnz else np.zeros(0, np.int64)
    assert np.array_equal(x.indices().numpy().T, coords[order].astype(np.int64))
    assert same_values(x.values().numpy(), values[order])
    if np.prod(t.shape) <= 4096:
        assert same_values(x.to_dense().numpy(), t.to_dense())


def test_to_torch_of_unsigned_wide_values_is_a_type_error() -> None:
    torch_or_skip()
    t = hc.from_coo(SPEC_COORDS, SPEC_VALUES.astype(np.uint32), SPEC_SHAPE)
    with pytest.raises(TypeError, match="uint32"):
        t.to_torch()


# -- a missing package -------------------------------------------------------------------


@pytest.mark.parametrize(
    "package, convert",
    [
        ("pyarrow", lambda t: t.to_pyarrow()),
        ("sparse", lambda t: t.to_sparse()),
        ("torch", lambda t: t.to_torch()),
    ],
)
def test_a_missing_package_raises_import_error_naming_it(
    package: str, convert: Callable[[hc.CsfTensor], Any], spec_tensor: hc.CsfTensor, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, package, None)  # `import package` now fails
    with pytest.raises(ImportError, match=rf"'{package}' package: pip install {package}"):
        convert(spec_tensor)


def test_package_import_needs_no_optional_dependency(monkeypatch: pytest.MonkeyPatch) -> None:
    """Importing hurray_csf (and building, reading) imports none of them."""
    import subprocess

    code = (
        "import sys\n"
        "for m in ('pyarrow', 'sparse', 'torch'): sys.modules[m] = None\n"
        "import numpy as np, hurray_csf as hc\n"
        "t = hc.from_coo(np.array([[0, 0, 1]]), np.array([1.0]), (1, 1, 2))\n"
        "assert t[0, 0, 1] == 1.0 and hc.from_bytes(t.to_bytes()).nnz == 1\n"
        "try:\n"
        "    t.to_sparse()\n"
        "except ImportError as e:\n"
        "    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "'sparse' package" in out.stdout
