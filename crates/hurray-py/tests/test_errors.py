"""Errors and arguments: what from_coo, t[...], lookup, load and save raise;
the quantization schemes; save is atomic."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, Dict, List, NoReturn, Sequence, Tuple, Union, cast

import numpy as np
import numpy.typing as npt
import pytest

import hurray_csf as hc
from conftest import SPEC_COORDS, SPEC_EXAMPLE, SPEC_SHAPE, SPEC_VALUES, levels_as_lists


# -- from_coo ---------------------------------------------------------------------


def test_out_of_shape_coordinate_names_the_entry() -> None:
    coords = SPEC_COORDS.copy()
    coords[2] = [1, 3, 0]
    with pytest.raises(ValueError, match=r"entry 2\b.*coordinate 3 of dimension 1.*extent 3"):
        hc.from_coo(coords, SPEC_VALUES, SPEC_SHAPE)


@pytest.mark.parametrize("layout", ["nnz_rank", "rank_nnz"])
def test_negative_coordinate_names_the_entry(layout: str) -> None:
    coords = SPEC_COORDS.copy()
    coords[3, 2] = -5
    c = coords if layout == "nnz_rank" else np.ascontiguousarray(coords.T)
    with pytest.raises(ValueError, match=r"entry 3\b.*-5 of dimension 2.*negative"):
        hc.from_coo(c, SPEC_VALUES, SPEC_SHAPE, coords_layout=layout)


def test_rank_nnz_layout() -> None:
    t = hc.from_coo(np.ascontiguousarray(SPEC_COORDS.T), SPEC_VALUES, SPEC_SHAPE, coords_layout="rank_nnz")
    assert t.to_bytes() == hc.from_coo(SPEC_COORDS, SPEC_VALUES, SPEC_SHAPE).to_bytes()
    # Any array layout of the columns (a transposed view is not C-contiguous).
    u = hc.from_coo(SPEC_COORDS.T, SPEC_VALUES, SPEC_SHAPE, coords_layout="rank_nnz")
    assert u.to_bytes() == t.to_bytes()


def test_layout_is_never_guessed() -> None:
    """A (3, 3) array is (nnz, rank) unless told otherwise: both readings are valid."""
    c = np.array([[0, 1, 2], [1, 0, 0], [2, 2, 1]])
    v = np.array([1.0, 2.0, 3.0], np.float32)
    rows = hc.from_coo(c, v)
    assert rows.to_coo()[0].tolist() == c.tolist()
    cols = hc.from_coo(c, v, coords_layout="rank_nnz")
    assert cols.to_coo()[0].tolist() == sorted(c.T.tolist())
    assert rows.to_bytes() != cols.to_bytes()
    # (3, 4) coordinates with a rank-3 shape: 3 entries of rank 4, never re-read as 4 entries of rank 3.
    c4 = np.array([[0, 0, 1, 1], [0, 1, 0, 1], [1, 0, 0, 1]])
    with pytest.raises(ValueError, match=r"rank 4, the shape \[2, 2, 2\] has rank 3"):
        hc.from_coo(c4, np.ones(4), (2, 2, 2))
    with pytest.raises(ValueError, match="rank 3, the shape"):
        hc.from_coo(c4, np.ones(3), (2, 2, 2, 2), coords_layout="rank_nnz")
    assert hc.from_coo(c4, np.ones(4), (2, 2, 2), coords_layout="rank_nnz").nnz == 4
    with pytest.raises(ValueError, match="coords_layout"):
        hc.from_coo(c, v, coords_layout="columns")


@pytest.mark.parametrize(
    "values",
    [
        np.array([1, 2, 3, 4], dtype=np.complex64),
        np.array(["a", "b", "c", "d"]),
        np.array([1, 2, 3, 4], dtype=object),
        np.array([1, 2, 3, 4], dtype="datetime64[s]"),
        np.array([1, 2, 3, 4], dtype=np.longdouble) if np.dtype(np.longdouble).itemsize > 8 else np.array([b"x"] * 4),
    ],
    ids=["complex64", "str", "object", "datetime64", "longdouble-or-bytes"],
)
def test_bad_value_dtype_is_a_type_error(values: npt.NDArray[Any]) -> None:
    with pytest.raises(TypeError, match="cannot be stored"):
        hc.from_coo(SPEC_COORDS, values, SPEC_SHAPE)


def test_dtype_argument_casts_first() -> None:
    t = hc.from_coo(SPEC_COORDS, [1, 2, 3, 4], SPEC_SHAPE, dtype=np.float16)
    assert t.dtype == np.float16 and t.element_type == "f16"
    with pytest.raises(TypeError):
        hc.from_coo(SPEC_COORDS, [1, 2, 3, 4], SPEC_SHAPE, dtype=np.complex128)


def test_bad_coordinates_and_values() -> None:
    with pytest.raises(TypeError, match="integers"):
        hc.from_coo(SPEC_COORDS.astype(float), SPEC_VALUES, SPEC_SHAPE)
    with pytest.raises(ValueError, match="2-D"):
        hc.from_coo(SPEC_COORDS.ravel(), SPEC_VALUES, SPEC_SHAPE)
    with pytest.raises(ValueError, match="1-D"):
        hc.from_coo(SPEC_COORDS, SPEC_VALUES.reshape(2, 2), SPEC_SHAPE)
    with pytest.raises(ValueError, match="values"):
        hc.from_coo(SPEC_COORDS, SPEC_VALUES[:3], SPEC_SHAPE)
    with pytest.raises(ValueError, match="rank 2 is below 3"):
        hc.from_coo(SPEC_COORDS[:, :2], SPEC_VALUES, (2, 3))
    with pytest.raises(ValueError, match="rank 65"):
        hc.from_coo(np.zeros((1, 65), np.int64), [1.0])
    with pytest.raises(ValueError, match="negative"):
        hc.from_coo(SPEC_COORDS, SPEC_VALUES, (2, -3, 4))
    with pytest.raises(TypeError):
        hc.from_coo(SPEC_COORDS, SPEC_VALUES, (2, 3.5, 4))  # type: ignore[arg-type]  # a float extent, on purpose
    with pytest.raises(ValueError, match="duplicates"):
        hc.from_coo(SPEC_COORDS, SPEC_VALUES, SPEC_SHAPE, duplicates="mean")
    for threads in (0, -1):
        with pytest.raises(ValueError, match="threads"):
            hc.from_coo(SPEC_COORDS, SPEC_VALUES, SPEC_SHAPE, threads=threads)


@pytest.mark.parametrize("order", [[0, 0, 1], [0, 1], [0, 1, 2, 3], [3, 0, 1], [-1, 0, 1], [2**40, 0, 1], "reverse"])
def test_bad_mode_order_is_a_value_error(order: Union[str, List[int]], spec_tensor: hc.CsfTensor) -> None:
    with pytest.raises(ValueError):
        hc.from_coo(SPEC_COORDS, SPEC_VALUES, SPEC_SHAPE, mode_order=order)
    with pytest.raises(ValueError):
        spec_tensor.reorder(order)


def test_mode_order_of_the_wrong_type_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        hc.from_coo(SPEC_COORDS, SPEC_VALUES, SPEC_SHAPE, mode_order=1.5)  # type: ignore[arg-type]  # on purpose


def test_mode_order_accepts_any_sequence_of_ints() -> None:
    orders: List[Union[Sequence[int], npt.NDArray[np.int_]]] = [[2, 0, 1], (2, 0, 1), np.array([2, 0, 1]), range(3)]
    for order in orders:
        # A numpy array of ints is taken too, beyond the declared Sequence[int].
        t = hc.from_coo(SPEC_COORDS, SPEC_VALUES, SPEC_SHAPE, mode_order=cast(Sequence[int], order))
        assert t.mode_order == tuple(int(d) for d in order)


def test_duplicate_error_names_both_entries() -> None:
    coords = np.array([[0, 0, 1], [1, 1, 0], [0, 2, 3], [1, 1, 0], [1, 1, 0]])
    with pytest.raises(hc.DuplicateError) as info:
        hc.from_coo(coords, np.arange(5, dtype=np.float32), SPEC_SHAPE)
    e = info.value
    assert (e.first, e.second, e.index) == (1, 3, (1, 1, 0))
    assert "1" in str(e) and "3" in str(e)
    assert isinstance(e, hc.BuildError) and isinstance(e, hc.HurrayError)


def test_summing_a_type_without_exact_addition_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="cannot sum"):
        hc.from_coo(SPEC_COORDS, SPEC_VALUES.astype(np.float16), SPEC_SHAPE, duplicates="sum")


# -- reading -----------------------------------------------------------------------


def test_getitem_errors(spec_tensor: hc.CsfTensor) -> None:
    t = spec_tensor
    for index in [(2, 0, 0), (0, 3, 0), (0, 0, 4), (-3, 0, 0), (2**64 - 1, 0, 0), (2**70, 0, 0)]:
        with pytest.raises(IndexError, match="out of bounds"):
            t[index]
    assert t[-1, 1, -2] == 4.0  # negative indices count from the end, as in numpy
    with pytest.raises(IndexError):
        t[1, 1, 2, 0]
    # Fewer indices than the rank select (test_selection.py): checked alike.
    for prefix in [(2,), (1, 3), (1, 2**64)]:
        with pytest.raises(IndexError):
            t[prefix]
    # A float is refused as numpy refuses it (never truncated to t[1, 1, 2]);
    # numpy integers are taken.
    untyped: Any = t
    with pytest.raises(IndexError):
        untyped[1.0, 1, 2]
    assert untyped[np.int64(1), np.uint8(1), 2] == 4.0
    assert t[1, :, 2].todense().tolist() == [0.0, 4.0, 0.0]


def test_lookup_and_find_errors(spec_tensor: hc.CsfTensor) -> None:
    t = spec_tensor
    with pytest.raises(ValueError, match="rank 3"):
        t.lookup([[1, 1]])
    with pytest.raises(ValueError, match="rank 3"):
        t.find(np.zeros((2, 4), np.int64))
    with pytest.raises(ValueError):
        t.lookup(np.zeros((2, 3, 1), np.int64))
    with pytest.raises(IndexError, match="index 1: .*outside"):
        t.lookup([[0, 0, 1], [2, 0, 0]])
    with pytest.raises(IndexError, match="index 1: .*negative"):
        t.lookup([[0, 0, 1], [0, -1, 0]])
    with pytest.raises(TypeError):
        t.lookup([[0.0, 0.0, 1.0]])
    assert t.lookup(np.zeros((0, 3), np.int64)).shape == (0,)
    assert t.lookup([1, 1, 2]).tolist() == [4.0]  # one index as a row


def test_to_dense_budget(spec_tensor: hc.CsfTensor) -> None:
    with pytest.raises(ValueError, match="24 elements"):
        spec_tensor.to_dense(max_elements=23)
    assert spec_tensor.to_dense(max_elements=24).shape == SPEC_SHAPE
    huge = hc.from_coo(np.array([[0, 0, 0]]), [1.0], (2**40, 2**40, 2))
    with pytest.raises(ValueError):
        huge.to_dense()


def test_implicit_zeros_have_the_value_type() -> None:
    for dtype, zero in [(np.bool_, False), (np.int16, 0), (np.uint64, 0), (np.float64, 0.0)]:
        t = hc.from_coo(SPEC_COORDS, np.ones(4, dtype), SPEC_SHAPE)
        z = t[0, 0, 0]
        assert z == zero and type(z) is type(zero)
        assert t.lookup([[0, 0, 0]]).dtype == np.dtype(dtype)


# -- files -------------------------------------------------------------------------


def test_load_of_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        hc.load(tmp_path / "missing.hurray")
    with pytest.raises(FileNotFoundError):
        hc.validate(str(tmp_path / "missing.hurray"))
    with pytest.raises(IsADirectoryError):
        hc.load(tmp_path)


def test_load_of_an_empty_file_is_a_format_error(tmp_path: Path) -> None:
    path = tmp_path / "empty.hurray"
    path.write_bytes(b"")
    with pytest.raises(hc.FormatError):
        hc.load(path)


def test_save_then_to_bytes_are_identical(tmp_path: Path, spec_tensor: hc.CsfTensor) -> None:
    path = tmp_path / "t.hurray"
    hc.save(spec_tensor, path)
    assert path.read_bytes() == spec_tensor.to_bytes()
    spec_tensor.save(str(path))  # over an existing file, by str, as a method
    assert path.read_bytes() == spec_tensor.to_bytes()
    assert hc.load(path).to_bytes() == spec_tensor.to_bytes()
    assert sorted(os.listdir(tmp_path)) == ["t.hurray"]  # no temporary left


def test_save_makes_files_as_open_does(tmp_path: Path, spec_tensor: hc.CsfTensor) -> None:
    """Mode 0o666 less the umask, as ``open(path, "wb")`` gives a new file."""
    umask = os.umask(0o022)
    try:
        for mask in (0o022, 0o002, 0o077):
            os.umask(mask)
            path = tmp_path / f"t{mask:o}.hurray"
            hc.save(spec_tensor, path)
            assert os.stat(path).st_mode & 0o777 == 0o666 & ~mask
    finally:
        os.umask(umask)


def test_a_failed_save_leaves_the_old_file_and_no_temporary(
    tmp_path: Path, spec_tensor: hc.CsfTensor, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "t.hurray"
    old = SPEC_EXAMPLE.read_bytes()
    path.write_bytes(old)

    def fail(*args: object, **kwargs: object) -> NoReturn:
        raise OSError(28, "No space left on device")

    for step in ("fsync", "replace"):
        with monkeypatch.context() as m:
            m.setattr(os, step, fail)
            with pytest.raises(OSError, match="No space"):
                hc.save(spec_tensor, path)
        assert path.read_bytes() == old
        assert sorted(os.listdir(tmp_path)) == ["t.hurray"]


SAVE_SCRIPT = textwrap.dedent(
    """
    import os, sys
    import hurray_csf as hc
    t = hc.from_bytes(open(sys.argv[2], "rb").read())
    if os.geteuid() == 0:  # root writes anywhere: drop to nobody
        os.setgid(65534)
        os.setuid(65534)
    try:
        hc.save(t, sys.argv[1])
    except OSError as e:
        print(type(e).__name__)
    else:
        print("saved")
    """
)


def test_saving_into_a_read_only_directory_fails_cleanly(tmp_path: Path, spec_tensor: hc.CsfTensor) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    path = folder / "t.hurray"
    old = SPEC_EXAMPLE.read_bytes()
    path.write_bytes(old)
    source = tmp_path / "new.hurray"
    hc.save(spec_tensor, source)
    os.chmod(folder, 0o555)
    os.chmod(tmp_path, 0o755)
    try:
        out = subprocess.run(
            [sys.executable, "-c", SAVE_SCRIPT, str(path), str(source)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == "PermissionError"
        assert path.read_bytes() == old
        assert os.listdir(folder) == ["t.hurray"]
    finally:
        os.chmod(folder, 0o755)


# -- quantization ----------------------------------------------------------------------

SCHEMES: Dict[str, Tuple[str, float]] = {
    # scheme: (element type of the codes, relative error bound of the dequantized values)
    "per-tensor": ("i8", 0.01),
    "per-channel:axis=1": ("i8", 0.01),
    "per-block:block=2:i4": ("i4", 0.1),
    "nf4:block=2": ("nf4", 0.15),
    "mxfp:f4e2m1": ("f4e2m1", 0.3),
}


# (coords (nnz, rank), float32 values, shape) of a random tensor.
Quantizable = Tuple[npt.NDArray[np.intp], npt.NDArray[np.float32], Tuple[int, int, int]]


@pytest.fixture(scope="module")
def quantizable() -> Quantizable:
    rng = np.random.default_rng(3)
    shape = (6, 5, 7)
    flat = rng.choice(int(np.prod(shape)), 80, replace=False)
    coords = np.stack(np.unravel_index(flat, shape), axis=1)
    values = (rng.standard_normal(80) * 3).astype(np.float32)
    return coords, values, shape


@pytest.mark.parametrize("scheme", sorted(SCHEMES))
def test_quantize_schemes(scheme: str, quantizable: Quantizable, tmp_path: Path) -> None:
    coords, values, shape = quantizable
    element_type, bound = SCHEMES[scheme]
    t = hc.from_coo(coords, values, shape, quantize=scheme)
    assert t.element_type == element_type
    assert t.quantization is not None and t.dtype == np.float32
    report = hc.validate(t.to_bytes())
    assert report.valid and report.errors == []
    hc.save(t, tmp_path / "q.hurray")
    u = hc.load(tmp_path / "q.hurray")  # strictly valid
    scale = float(np.abs(values).max())
    c, deq = u.to_coo()
    order = np.lexsort(coords.T[::-1])
    assert c.tolist() == coords[order].tolist()
    assert deq.dtype == np.float32
    assert np.abs(deq - values[order]).max() <= bound * scale
    assert np.abs(deq - values[order]).mean() <= bound * scale / 2
    got = u.lookup(coords)
    assert got.dtype == np.float32 and np.abs(got - values).max() <= bound * scale
    assert u[tuple(coords[0])] == pytest.approx(float(got[0]))
    k = int(np.argmax(np.abs(values)))
    assert u[tuple(coords[k])] == pytest.approx(float(values[k]), rel=bound)
    dense = u.to_dense()
    assert dense.dtype == np.float32 and np.array_equal(dense[tuple(coords.T)], got)
    # `values` are the codes as stored, not the dequantized values.
    codes = u.values
    packed = element_type in ("i4", "nf4", "f4e2m1")
    assert codes.dtype == (np.uint8 if packed else np.int8)
    assert codes.size == ((t.nnz + 1) // 2 if packed else t.nnz)
    assert not np.array_equal(codes.astype(np.float32)[: t.nnz], deq)
    # Re-ordering keeps every value's meaning.
    r = u.reorder([2, 0, 1])
    assert r.quantization is not None and hc.validate(r.to_bytes()).valid
    assert np.abs(r.lookup(coords) - values).max() <= bound * scale


def test_per_tensor_codes_are_the_rounded_scaled_values(quantizable: Quantizable) -> None:
    coords, values, shape = quantizable
    t = hc.from_coo(coords, values, shape, quantize="per-tensor")
    order = np.lexsort(coords.T[::-1])
    expected = np.round(values[order] / (np.abs(values).max() / 127)).astype(np.int8)
    assert np.abs(t.values.astype(int) - expected.astype(int)).max() <= 1


@pytest.mark.parametrize("scheme", ["bogus", "per-channel", "per-channel:axis=3", "per-block:block=0", "per-tensor:q7", "per-block:block=x"])
def test_bad_quantize_scheme_is_a_value_error(scheme: str, quantizable: Quantizable) -> None:
    coords, values, shape = quantizable
    with pytest.raises(ValueError):
        hc.from_coo(coords, values, shape, quantize=scheme)


def test_quantizing_a_non_finite_value_is_a_build_error() -> None:
    with pytest.raises(hc.BuildError, match="NaN"):
        hc.from_coo(SPEC_COORDS, np.array([1, np.nan, 3, 4], np.float32), SPEC_SHAPE, quantize="per-tensor")


def test_quantizing_beyond_float32_or_negative_into_unsigned_is_a_build_error() -> None:
    # A finite float64 value no float32 scale covers would read back as inf or NaN.
    with pytest.raises(hc.BuildError, match="too large"):
        hc.from_coo(SPEC_COORDS, np.array([1, 1e300, 3, 4]), SPEC_SHAPE, quantize="per-tensor")
    # An unsigned type without a zero point would store -2 as 0.
    with pytest.raises(hc.BuildError, match="negative"):
        hc.from_coo(SPEC_COORDS, np.array([1, -2, 3, 4], np.float32), SPEC_SHAPE, quantize="per-tensor:u8")
    q = hc.from_coo(SPEC_COORDS, np.array([1, -2, 3, 4], np.float32), SPEC_SHAPE, quantize="per-tensor:u8:zp")
    assert np.abs(q.lookup(SPEC_COORDS) - np.array([1, -2, 3, 4])).max() <= 4.0 / 255


def test_describing_levels_of_a_quantized_tensor(quantizable: Quantizable) -> None:
    coords, values, shape = quantizable
    plain = hc.from_coo(coords, values, shape)
    q = hc.from_coo(coords, values, shape, quantize="nf4:block=2")
    assert levels_as_lists(q) == levels_as_lists(plain)
