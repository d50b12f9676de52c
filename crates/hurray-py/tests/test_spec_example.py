"""csf-layout.txt § Example, byte for byte: the builder's levels, the lookup
walk, and the golden file of hurray-format read the same."""

from __future__ import annotations

import numpy as np
import pytest

import hurray_csf as hc
from conftest import SPEC_COORDS, SPEC_EXAMPLE, SPEC_LEVELS, SPEC_SHAPE, SPEC_VALUES, levels_as_lists


def check_spec_tensor(t: hc.CsfTensor) -> None:
    assert t.shape == SPEC_SHAPE
    assert t.rank == t.ndim == 3
    assert t.nnz == 4
    assert t.element_type == "f32"
    assert t.dtype == np.float32
    assert t.mode_order == (0, 1, 2)
    assert t.quantization is None
    assert levels_as_lists(t) == [(list(p), list(c)) for p, c in SPEC_LEVELS]
    for pos, crd in t.levels:
        assert pos.dtype == np.uint64 and crd.dtype == np.uint64
    assert t.values.dtype == np.float32
    assert t.values.tolist() == [1.0, 2.0, 3.0, 4.0]
    # The walk of § Example: (1, 1, 2) is leaf 3, value 4.0.
    v = t[1, 1, 2]
    assert v == 4.0 and isinstance(v, float)
    assert t.find([[1, 1, 2]]).tolist() == [3]
    assert t.find(SPEC_COORDS).tolist() == [0, 1, 2, 3]
    assert t[0, 1, 1] == 0.0  # an implicit zero
    assert t.find([[0, 1, 1], [1, 2, 3]]).tolist() == [-1, -1]
    assert t.lookup(SPEC_COORDS).tolist() == [1.0, 2.0, 3.0, 4.0]
    coords, values = t.to_coo()
    assert coords.dtype == np.uint64
    assert coords.tolist() == SPEC_COORDS.tolist()
    assert values.tolist() == [1.0, 2.0, 3.0, 4.0]
    dense = t.to_dense()
    expected = np.zeros(SPEC_SHAPE, np.float32)
    expected[tuple(SPEC_COORDS.T)] = SPEC_VALUES
    assert dense.dtype == np.float32 and np.array_equal(dense, expected)


def test_from_coo_gives_the_spec_levels(spec_tensor: hc.CsfTensor) -> None:
    check_spec_tensor(spec_tensor)
    assert spec_tensor.statistics == {"nnz": 4, "sparsity_ratio": 1 - 4 / 24, "min": 1.0, "max": 4.0}
    assert hc.validate(spec_tensor.to_bytes()) == hc.Report(True, [], [], False)


def test_input_order_does_not_matter() -> None:
    perm = [3, 1, 0, 2]
    t = hc.from_coo(SPEC_COORDS[perm], SPEC_VALUES[perm], SPEC_SHAPE)
    check_spec_tensor(t)
    assert t.to_bytes() == hc.from_coo(SPEC_COORDS, SPEC_VALUES, SPEC_SHAPE).to_bytes()


def test_shape_is_inferred() -> None:
    assert hc.from_coo(SPEC_COORDS, SPEC_VALUES).shape == SPEC_SHAPE


@pytest.mark.parametrize("how", ["load", "load-permissive", "from_bytes", "from_bytes-memoryview"])
def test_golden_file_reads_the_same(how: str, spec_bytes: bytes) -> None:
    if how == "load":
        t = hc.load(SPEC_EXAMPLE)
    elif how == "load-permissive":
        t = hc.load(str(SPEC_EXAMPLE), validate="permissive")
    elif how == "from_bytes":
        t = hc.from_bytes(spec_bytes)
    else:
        t = hc.from_bytes(memoryview(spec_bytes))
    check_spec_tensor(t)
    # The golden file has no statistics section; from_coo writes one, so the bytes differ.
    assert t.statistics is None
    assert t.to_bytes() == spec_bytes
    assert t.nbytes == len(spec_bytes)


def test_golden_file_and_build_differ_only_by_statistics(spec_tensor: hc.CsfTensor, spec_bytes: bytes) -> None:
    golden = hc.from_bytes(spec_bytes)
    assert spec_tensor.to_bytes() != spec_bytes
    assert levels_as_lists(golden) == levels_as_lists(spec_tensor)
    assert golden.values.tobytes() == spec_tensor.values.tobytes()
    report = hc.validate(SPEC_EXAMPLE)
    assert report.valid and report.errors == [] and report.warnings == [] and not report.truncated
