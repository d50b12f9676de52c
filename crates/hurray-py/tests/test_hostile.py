"""Hostile input: the malformed-file corpus of csf-validate, and byte
mutations of valid files.

Each corpus file gets the verdict MANIFEST.tsv writes beside it (FormatError
for a container that does not decode, ValidationError naming the rule in
strict mode, a tensor for valid files), and every accessor of a tensor that
permissive mode lets through works or raises a HurrayError, ValueError or
IndexError: never a pyo3 PanicException, never a crash."""

from __future__ import annotations

from typing import Callable, Iterator, List, Tuple

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hurray_csf as hc
from conftest import CORPUS, Case, call, exercise, exercise_conversions, have, manifest

CASES = manifest()
BY_NAME = {c.name: c for c in CASES}


def test_manifest_lists_every_corpus_file() -> None:
    on_disk = {p.stem for p in CORPUS.glob("*.hurray")}
    assert on_disk == set(BY_NAME)
    assert len(CASES) >= 100
    kinds = {c.kind for c in CASES}
    assert kinds == {"valid", "decode", "strict"}
    assert any(c.kind == "strict" and c.permissive_ok for c in CASES)
    assert any(c.kind == "strict" and not c.permissive_ok for c in CASES)


def open_all_ways(case: Case, mode: str) -> Iterator[Tuple[str, Callable[[], hc.CsfTensor]]]:
    """load (memory map), from_bytes of bytes, and of a bytearray (copied)."""
    data = case.path.read_bytes()
    yield "load", lambda: hc.load(case.path, validate=mode)
    yield "from_bytes", lambda: hc.from_bytes(data, validate=mode)
    yield "from_bytes(bytearray)", lambda: hc.from_bytes(bytearray(data), validate=mode)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
@pytest.mark.parametrize("mode", ["strict", "permissive"])
def test_corpus_file_gets_its_verdict(case: Case, mode: str) -> None:
    for how, open_ in open_all_ways(case, mode):
        label = f"{case.name} {how} {mode}"
        if case.kind == "decode":
            with pytest.raises(hc.FormatError) as undecoded:
                open_()
            assert not isinstance(undecoded.value, hc.ValidationError), label
        elif case.kind == "valid" or (mode == "permissive" and case.permissive_ok):
            t = call(label, open_, allowed=())
            assert isinstance(t, hc.CsfTensor)
        else:
            with pytest.raises(hc.ValidationError) as info:
                open_()
            violations = info.value.violations
            assert len(violations) == 1, label
            # Strict mode names the manifest's rule; permissive mode rejects only
            # structural breakages, each by that same rule.
            assert violations[0].rule == case.rule, label
            assert violations[0].clause and violations[0].message, label
            assert f"[{case.rule};" in str(info.value), label


@pytest.mark.parametrize("case", [c for c in CASES if c.permissive_ok], ids=lambda c: c.name)
def test_accessors_are_total_on_what_permissive_mode_accepts(case: Case) -> None:
    t = hc.load(case.path, validate="permissive")
    exercise(t, case.name)
    u = hc.from_bytes(case.path.read_bytes(), validate="permissive")
    exercise(u, case.name)
    exercise_conversions(u, case.name)


CONVERSIONS = [("pyarrow", "to_pyarrow"), ("sparse", "to_sparse"), ("torch", "to_torch")]


@pytest.mark.parametrize("case", [c for c in CASES if c.kind == "strict" and c.permissive_ok], ids=lambda c: c.name)
def test_conversions_validate_what_was_read_permissively(case: Case) -> None:
    """Arrow and torch index memory with the coordinates they are given: a
    tensor read permissively is validated strictly before it is handed over
    (with each of pyarrow, sparse and torch that is installed)."""
    available = [(p, m) for p, m in CONVERSIONS if have(p)]
    if not available:
        pytest.skip("none of pyarrow, sparse, torch installed")
    t = hc.load(case.path, validate="permissive")
    for package, method in available:
        with pytest.raises(hc.ValidationError) as info:
            getattr(t, method)()
        assert info.value.violations[0].rule == case.rule, package
    # Reading what it can stays possible.
    exercise(t, case.name)


def test_conversions_of_a_valid_file_read_permissively() -> None:
    t = hc.load(BY_NAME["valid-rank-4"].path, validate="permissive")
    exercise_conversions(t, "valid-rank-4")
    if have("sparse"):
        assert np.array_equal(t.to_sparse().todense(), t.to_dense())


@pytest.mark.parametrize("case", [c for c in CASES if c.kind == "valid"], ids=lambda c: c.name)
def test_valid_files_read_consistently(case: Case) -> None:
    """On a valid file the accessors agree with one another."""
    t = hc.load(case.path)
    coords, values = t.to_coo()
    assert coords.shape == (t.nnz, t.rank) and values.shape == (t.nnz,)
    assert t.find(coords).tolist() == list(range(t.nnz))
    looked_up = t.lookup(coords)
    assert looked_up.dtype == values.dtype
    np.testing.assert_array_equal(looked_up, values)
    for row, v in zip(coords[:5].tolist(), values[:5]):
        got = t[tuple(row)]
        assert got == v or (np.isnan(got) and np.isnan(v))
    if all(e < 64 for e in t.shape) and np.prod(t.shape, dtype=float) <= 4096:
        dense = t.to_dense()
        np.testing.assert_array_equal(dense[tuple(coords.astype(np.int64).T)], values)
        assert np.count_nonzero(dense) == np.count_nonzero(values)
    # Re-ordering keeps every value.
    u = t.reorder(list(range(t.rank))[::-1])
    assert hc.validate(u.to_bytes()).valid
    if t.quantization is None:
        np.testing.assert_array_equal(u.lookup(coords), values)
    assert t.to_bytes() == case.path.read_bytes()


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_validate_reports_the_manifest_rule(case: Case) -> None:
    for source in (case.path, str(case.path), case.path.read_bytes(), bytearray(case.path.read_bytes())):
        report = hc.validate(source)
        assert isinstance(report, hc.Report)
        rules = [e.rule for e in report.errors]
        if case.kind == "valid":
            assert report.valid and rules == [] and not report.truncated
            assert [w.rule for w in report.warnings] == case.warnings
        elif case.kind == "decode":
            assert not report.valid and rules == ["decode"]
            assert report.errors[0].message
        else:
            assert not report.valid
            # The first error is the one strict validation stops at.
            assert rules[0] == case.rule
    # max_errors caps the report.
    capped = hc.validate(case.path, max_errors=1)
    assert len(capped.errors) <= 1
    full = hc.validate(case.path, max_errors=100)
    if len(full.errors) > 1:
        assert capped.truncated


def test_validate_collects_every_violation() -> None:
    # Two breakages in one file: empty-crd-leaf-nonempty breaks terminal-count and leaf-count.
    report = hc.validate(BY_NAME["empty-crd-leaf-nonempty"].path)
    assert [e.rule for e in report.errors] == ["terminal-count", "leaf-count"]
    e = report.errors[0]
    assert e.clause.startswith("csf-layout") and e.level is not None and e.buffer is not None


def test_validate_permissive_mode_and_bad_mode() -> None:
    path = BY_NAME["sibling-order-leaf"].path
    assert not hc.validate(path).valid
    assert hc.validate(path, validate="permissive").valid
    with pytest.raises(ValueError):
        hc.validate(path, validate="lenient")
    with pytest.raises(ValueError):
        hc.load(path, validate="lenient")


def test_validation_error_carries_warnings_and_violations() -> None:
    with pytest.raises(hc.ValidationError) as info:
        hc.load(BY_NAME["pos-start-level-1"].path)
    v = info.value.violations[0]
    assert isinstance(v, hc.Violation)
    assert (v.rule, v.level) == ("pos-start", 1)
    assert v.found is not None and v.expected == 0
    assert isinstance(info.value.warnings, list)


def test_errors_name_their_byte_in_the_file() -> None:
    """A violation about an element of a buffer, and a file that does not
    decode, give the byte from the start of the file."""
    # crd_2 = [1, 3, 2, 0]: crd_2 is the last buffer, and element 3 its last 8 bytes.
    path = BY_NAME["sibling-order-leaf"].path
    byte = path.stat().st_size - 8
    with pytest.raises(hc.ValidationError) as info:
        hc.load(path)
    v = info.value.violations[0]
    assert (v.rule, v.buffer, v.index, v.offset) == ("sibling-order", 6, 3, byte)
    assert str(info.value).startswith(f"byte {byte}: sibling coordinates")
    assert hc.validate(path).errors[0].offset == byte
    # A rule about a whole buffer names no byte.
    r = hc.validate(BY_NAME["values-size-f32-short"].path)
    assert (r.errors[0].rule, r.errors[0].offset) == ("values-size", None)
    with pytest.raises(hc.FormatError) as undecoded:
        hc.load(BY_NAME["decode-bad-magic"].path)
    assert undecoded.value.offset == 0
    r = hc.validate(BY_NAME["decode-buffer-misaligned"].path)
    assert r.errors[0].rule == "decode"
    assert r.errors[0].message.startswith(f"byte {r.errors[0].offset}: buffer ")


# -- byte mutations of valid files -------------------------------------------------

SEEDS = [c.path.read_bytes() for c in CASES if c.kind == "valid"]


def _build_seeds() -> List[bytes]:
    rng = np.random.default_rng(7)
    coords = rng.integers(0, 6, (40, 4))
    values = rng.standard_normal(40).astype(np.float32)
    out = [hc.from_coo(coords, values, (6, 6, 6, 6), duplicates="last", mode_order=[2, 0, 3, 1]).to_bytes()]
    for q in ("per-tensor", "per-block:block=4:i4", "nf4:block=4"):
        out.append(hc.from_coo(coords, values, (6, 6, 6, 6), duplicates="last", quantize=q).to_bytes())
    return out


SEEDS += _build_seeds()


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    data = bytearray(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["flip", "set", "word", "insert", "delete", "truncate"]))
        if not data:
            break
        at = draw(st.integers(0, len(data) - 1))
        if kind == "flip":
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif kind == "set":
            data[at] = draw(st.sampled_from([0, 1, 2, 0x7F, 0x80, 0xFF]))
        elif kind == "word":
            # An aligned little-endian u64: a pos/crd entry or a length field.
            at -= at % 8
            word = draw(st.sampled_from([0, 1, 2, 3, 5, 2**32, 2**63, 2**64 - 1]))
            data[at : at + 8] = word.to_bytes(8, "little")[: len(data) - at]
        elif kind == "insert":
            data[at:at] = bytes([draw(st.integers(0, 255))]) * draw(st.integers(1, 8))
        elif kind == "delete":
            del data[at : at + draw(st.integers(1, 8))]
        else:
            del data[at:]
    return bytes(data)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=mutated())
def test_mutated_bytes_raise_only_format_or_validation_errors(data: bytes) -> None:
    for mode in ("strict", "permissive"):
        t = call(f"from_bytes {mode}", lambda: hc.from_bytes(data, validate=mode), allowed=(hc.FormatError, hc.ValidationError))
        if t is not None:
            exercise(t, f"mutant ({mode})")
            exercise_conversions(t, f"mutant ({mode})")
            if mode == "strict":
                assert hc.validate(data).valid
        report = call("validate", lambda: hc.validate(data, validate=mode), allowed=())
        assert report is not None  # nothing is allowed: call fails the test instead
        assert report.valid == (t is not None)
