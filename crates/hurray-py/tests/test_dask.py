"""``hurray_csf.dask.from_dask`` on a real ``LocalCluster`` of worker processes,
and ``hurray_csf.concat``: the file must be byte for byte ``from_coo``'s of
the concatenated input, whatever the parts, policies and mode orders; a lost
worker is retried with the same result; nothing is left behind."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator, List, Optional, Sequence, Tuple

import numpy as np
import numpy.typing as npt
import pytest

import hurray_csf as hc

distributed = pytest.importorskip("distributed")
dd = pytest.importorskip("dask.dataframe")
da = pytest.importorskip("dask.array")
pd = pytest.importorskip("pandas")

from hurray_csf.dask import from_dask  # noqa: E402


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    """Two worker processes, one thread each (a nanny restarts a lost one)."""
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=40
    )
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()


def entries(rank: int, n: int, seed: int, hot: bool = True) -> Tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """``n`` random entries (with duplicates), half of them under level-0
    coordinate 3 when ``hot``; values with fractions, so that sums depend on
    their order."""
    rng = np.random.default_rng(seed)
    extents = [13, 17, 11, 7, 5][:rank]
    coords = rng.integers(0, extents, size=(n, rank))
    if hot:
        coords[rng.random(n) < 0.5, 0] = 3
    values = rng.random(n) / 7.0
    return coords, values


def frame(coords: npt.NDArray[Any], values: npt.NDArray[Any], partitions: int) -> Any:
    names = {d: f"x{d}" for d in range(coords.shape[1])}
    table = pd.DataFrame({names[d]: coords[:, d] for d in range(coords.shape[1])})
    table["value"] = values
    return dd.from_pandas(table, npartitions=partitions, sort=False)


def leftovers(folder: Path, keep: Sequence[str]) -> List[str]:
    return sorted(p for p in os.listdir(folder) if p not in keep)


@pytest.mark.parametrize(
    "rank, order, parts",
    [
        (3, "identity", 1),
        (3, [2, 0, 1], 7),
        (4, [3, 1, 0, 2], 64),
        (5, [4, 0, 3, 1, 2], 16),
        (3, "identity", 64),
    ],
)
@pytest.mark.parametrize("duplicates", ["sum", "first", "last"])
def test_the_file_is_from_coos(client: Any, tmp_path: Path, rank: int, order: Any, parts: int, duplicates: str) -> None:
    coords, values = entries(rank, 3000, seed=rank * 10 + parts)
    out = tmp_path / "t.hurray"
    report = from_dask(frame(coords, values, 6), out=out, mode_order=order, duplicates=duplicates, parts=parts)
    want = hc.from_coo(coords, values, mode_order=order, duplicates=duplicates)
    assert out.read_bytes() == want._bytes().tobytes()
    assert report.nnz == want.nnz and report.entries == len(values) and report.shape == want.shape
    assert 1 <= report.parts <= parts
    if parts >= 16:
        # A level-0 coordinate with half the entries spans several parts.
        assert report.parts > 2
    assert leftovers(tmp_path, ["t.hurray"]) == []


def test_the_strict_policy_names_input_positions(client: Any, tmp_path: Path) -> None:
    coords, values = entries(3, 2000, seed=5)
    with pytest.raises(hc.DuplicateError) as from_coo:
        hc.from_coo(coords, values)
    with pytest.raises(hc.DuplicateError) as caught:
        from_dask(frame(coords, values, 5), out=tmp_path / "t.hurray", parts=9)
    assert str(caught.value) == str(from_coo.value)
    assert (caught.value.first, caught.value.second) == (from_coo.value.first, from_coo.value.second)
    assert leftovers(tmp_path, []) == []


def test_explicit_zeros_drop_zeros_and_integer_values(client: Any, tmp_path: Path) -> None:
    coords, values = entries(4, 1500, seed=8)
    ints = (values * 70).astype(np.int16)  # many zeros
    out = tmp_path / "t.hurray"
    from_dask(frame(coords, ints, 4), out=out, duplicates="sum", drop_zeros=True, parts=5)
    assert out.read_bytes() == hc.from_coo(coords, ints, duplicates="sum", drop_zeros=True)._bytes().tobytes()
    from_dask(frame(coords, values, 4), out=out, duplicates="last", dtype=np.float32, shape=(20, 20, 20, 20))
    want = hc.from_coo(coords, values, (20, 20, 20, 20), duplicates="last", dtype=np.float32)
    assert out.read_bytes() == want._bytes().tobytes()


def test_quantization_is_applied_at_the_join(client: Any, tmp_path: Path) -> None:
    coords, values = entries(3, 2000, seed=11)
    out = tmp_path / "t.hurray"
    for scheme in ["per-block:block=32:i4", "per-channel:axis=1:u8:zp"]:
        from_dask(frame(coords, values, 3), out=out, duplicates="first", quantize=scheme, parts=6)
        want = hc.from_coo(coords, values, duplicates="first", quantize=scheme)
        assert out.read_bytes() == want._bytes().tobytes(), scheme


def test_auto_decides_from_the_sample(client: Any, tmp_path: Path) -> None:
    # Level 0 of the identity order has few distinct coordinates after
    # reordering: auto must pick the order from_coo picks on all entries
    # (the sample is the whole input here: fewer rows than SAMPLE_KEYS).
    rng = np.random.default_rng(2)
    coords = np.column_stack([rng.integers(0, 500, 4000), rng.integers(0, 3, 4000), rng.integers(0, 40, 4000)])
    values = rng.random(4000)
    out = tmp_path / "t.hurray"
    report = from_dask(frame(coords, values, 4), out=out, mode_order="auto", duplicates="sum", parts=4)
    want = hc.from_coo(coords, values, mode_order="auto", duplicates="sum")
    assert want.auto is not None and report.mode_order == want.auto.mode_order
    assert out.read_bytes() == want._bytes().tobytes()


def test_dask_arrays_and_parquet_input(client: Any, tmp_path: Path) -> None:
    coords, values = entries(3, 2500, seed=3)
    out = tmp_path / "t.hurray"
    want = hc.from_coo(coords, values, duplicates="sum")._bytes().tobytes()
    from_dask(da.from_array(coords, chunks=(700, 2)), values=da.from_array(values, chunks=500), out=out, duplicates="sum")
    assert out.read_bytes() == want
    pytest.importorskip("pyarrow")
    folder = tmp_path / "coo"
    folder.mkdir()
    table = pd.DataFrame({"i": coords[:, 0].astype(np.int32), "j": coords[:, 1], "k": coords[:, 2].astype(np.uint16), "v": values})
    for n, piece in enumerate(np.array_split(np.arange(len(table)), 4)):
        table.iloc[piece].to_parquet(folder / f"part.{n}.parquet")
    frame_ = dd.read_parquet(str(folder))
    # Defaults: values is the column named v, coordinates every integer column.
    from_dask(frame_, out=out, duplicates="sum", parts=3)
    assert out.read_bytes() == want


def test_a_worker_lost_mid_build_is_retried(client: Any, tmp_path: Path) -> None:
    coords, values = entries(3, 3000, seed=21)
    out = tmp_path / "out" / "t.hurray"
    out.parent.mkdir()
    marker = tmp_path / "killed"
    report = from_dask(frame(coords, values, 4), out=out, duplicates="sum", parts=4, _kill_once=str(marker))
    assert marker.exists(), "the test hook did not kill a worker"
    assert out.read_bytes() == hc.from_coo(coords, values, duplicates="sum")._bytes().tobytes()
    assert report.parts == 4
    assert leftovers(out.parent, ["t.hurray"]) == []
    client.wait_for_workers(2, timeout=60)


def test_a_bad_partition_fails_cleanly(client: Any, tmp_path: Path) -> None:
    coords, values = entries(3, 1000, seed=4, hot=False)
    table = pd.DataFrame({"i": coords[:, 0], "j": coords[:, 1], "k": coords[:, 2], "value": values})
    out = tmp_path / "t.hurray"
    bad = table.copy()
    bad.loc[610, "j"] = 99  # partition 2 of 4 holds rows 500-749: its row 110
    with pytest.raises(ValueError, match=r"partition 2, row 110: coordinate column 'j': coordinate 99 of dimension 1 is outside its extent 17"):
        from_dask(dd.from_pandas(bad, npartitions=4, sort=False), out=out, shape=(13, 17, 11))
    negative = table.copy()
    negative.loc[3, "k"] = -2
    with pytest.raises(ValueError, match=r"partition 0, row 3: coordinate column 'k' holds -2, a negative coordinate"):
        from_dask(dd.from_pandas(negative, npartitions=4, sort=False), out=out)
    fractional = table.astype({"i": np.float64})
    fractional.loc[260, "i"] = 1.5
    with pytest.raises(ValueError, match=r"partition 1, row 10: coordinate column 'i' holds 1.5, not an integer"):
        from_dask(dd.from_pandas(fractional, npartitions=4, sort=False), coords=["i", "j", "k"], out=out)
    nulls = table.astype({"value": "Float64"})
    nulls.loc[999, "value"] = pd.NA
    with pytest.raises(ValueError, match=r"partition 3, row 249: the value \(column 'value'\) is missing"):
        from_dask(dd.from_pandas(nulls, npartitions=4, sort=False), out=out)
    assert leftovers(tmp_path, []) == []


def test_arguments_are_checked(tmp_path: Path) -> None:
    table = dd.from_pandas(pd.DataFrame({"i": [0], "j": [0], "k": [0], "w": [1.0]}), npartitions=1)
    out = tmp_path / "t.hurray"
    with pytest.raises(ValueError, match="no coordinate column 'x'"):
        from_dask(table, coords=["i", "j", "x"], values="w", out=out)
    with pytest.raises(ValueError, match="no values column 'value'"):
        from_dask(table, values="value", out=out)
    with pytest.raises(ValueError, match="rank >= 3"):
        from_dask(table, coords=["i", "j"], values="w", out=out)
    with pytest.raises(TypeError, match="Dask DataFrame or a Dask array"):
        from_dask(np.zeros((2, 3)), out=out)
    with pytest.raises(ValueError, match="duplicates must be one of"):
        from_dask(table, out=out, duplicates="max")
    with pytest.raises(ValueError, match=r"mode order \[0, 0, 1\] is not a permutation"):
        from_dask(table, out=out, mode_order=[0, 0, 1])
    with pytest.raises(ValueError, match="parts must be at least 1"):
        from_dask(table, out=out, parts=0)
    # An empty input with a shape is the empty tensor.
    empty = dd.from_pandas(pd.DataFrame({"i": np.zeros(0, np.int64), "j": np.zeros(0, np.int64), "k": np.zeros(0, np.int64), "value": np.zeros(0)}), npartitions=1)
    from_dask(empty, out=out, shape=(2, 3, 4))
    assert out.read_bytes() == hc.from_coo(np.zeros((0, 3), np.int64), np.zeros(0), (2, 3, 4))._bytes().tobytes()
    assert leftovers(tmp_path, ["t.hurray"]) == []


def test_errors_cross_process_boundaries() -> None:
    for error in [
        hc.DuplicateError("entries 1 and 2 share the index [0, 0, 0]", 1, 2, [0, 0, 0]),
        hc.FormatError("bad magic", 0),
        hc.ValidationError("broken", [], []),
    ]:
        copy = pickle.loads(pickle.dumps(error))
        assert type(copy) is type(error) and str(copy) == str(error) and vars(copy) == vars(error)


def test_without_dask_the_module_says_what_to_install() -> None:
    code = (
        "import sys; sys.modules['dask'] = None\n"
        "try:\n    import hurray_csf.dask\nexcept ImportError as e:\n    print(e)\n"
    )
    printed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "pip install 'dask[dataframe,distributed]'" in printed


# --- hurray_csf.concat ---------------------------------------------------------------


def parts_of(coords: npt.NDArray[Any], values: npt.NDArray[Any], cuts: Sequence[int], folder: Path) -> List[Path]:
    """The entries, sorted by key, cut at ``cuts`` and saved one file per piece."""
    order = np.lexsort(coords.T[::-1])
    coords, values = coords[order], values[order]
    paths = []
    for n, (a, b) in enumerate(zip([0, *cuts], [*cuts, len(values)])):
        path = folder / f"p{n}.hurray"
        hc.save(hc.from_coo(coords[a:b], values[a:b], (13, 17, 11)), path)
        paths.append(path)
    return paths


def test_concat_joins_parts_into_from_coos_file(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    flat = rng.choice(13 * 17 * 11, size=900, replace=False)
    coords = np.column_stack(np.unravel_index(flat, (13, 17, 11))).astype(np.int64)
    values = rng.random(900)
    paths = parts_of(coords, values, [100, 101, 500], tmp_path)
    out = tmp_path / "all.hurray"
    report = hc.concat(paths, out)
    assert (report.parts, report.nnz) == (4, 900)
    assert out.read_bytes() == hc.from_coo(coords, values, (13, 17, 11))._bytes().tobytes()
    assert report.bytes_written == out.stat().st_size
    hc.concat([str(p) for p in paths], out, quantize="per-tensor:i8", statistics=False, remove_parts=True)
    want = hc.from_coo(coords, values, (13, 17, 11), quantize="per-tensor:i8")
    assert hc.load(out).nnz == 900 and hc.load(out).dtype == want.dtype
    assert not any(p.exists() for p in paths)


def test_concat_refuses_bad_parts_and_leaves_no_file(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    flat = rng.choice(13 * 17 * 11, size=200, replace=False)
    coords = np.column_stack(np.unravel_index(flat, (13, 17, 11))).astype(np.int64)
    paths = parts_of(coords, rng.random(200), [100], tmp_path)
    out = tmp_path / "all.hurray"
    with pytest.raises(hc.FormatError, match=r"p0\.hurray: part 1 starts at index \[0, 1, 5\], which does not come after"):
        hc.concat([paths[1], paths[0]], out)
    garbage = tmp_path / "garbage.hurray"
    garbage.write_bytes(b"not a tensor")
    with pytest.raises(hc.FormatError, match="garbage.hurray"):
        hc.concat([paths[0], garbage], out)
    with pytest.raises(OSError):
        hc.concat([tmp_path / "missing.hurray"], out)
    with pytest.raises(ValueError, match="at least one part"):
        hc.concat([], out)
    with pytest.raises(TypeError, match="sequence of paths"):
        hc.concat(str(paths[0]), out)
    assert sorted(os.listdir(tmp_path)) == ["garbage.hurray", "p0.hurray", "p1.hurray"]


def test_an_interrupted_join_leaves_nothing(tmp_path: Path, monkeypatch: Any) -> None:
    from hurray_csf import _native

    def interrupted(*args: Any) -> Any:
        raise KeyboardInterrupt

    coords, values = entries(3, 500, seed=6)
    monkeypatch.setattr(_native, "join_files", interrupted)
    with pytest.raises(KeyboardInterrupt):
        from_dask(frame(coords, values, 3), out=tmp_path / "t.hurray", duplicates="sum")
    assert leftovers(tmp_path, []) == []
