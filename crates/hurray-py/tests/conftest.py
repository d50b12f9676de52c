"""Shared helpers of the hurray_csf test suite.

- paths of the spec's golden file and of the malformed-file corpus, and the
  corpus manifest parsed;
- a pure-Python reference of the builder's contract (duplicate policies,
  storage order, the CSF levels of csf-layout.txt) to check results against;
- hypothesis strategies for COO input;
- ``exercise``: every accessor of a tensor, which must work or raise one of the
  package's documented exceptions, never a pyo3 ``PanicException``.
"""

from __future__ import annotations

import itertools
import mmap
import os
from pathlib import Path
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence, Set, Tuple, Type, TypeVar, Union

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import settings
from hypothesis import strategies as st

# CI runs the same examples every time (a failure there is reproducible, never
# a coin toss); HYPOTHESIS_PROFILE=explore searches afresh on each run.
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("explore", deadline=None, print_blob=True)
# HYPOTHESIS_PROFILE=thorough: afresh, and twenty times the examples.
settings.register_profile("thorough", max_examples=2000, deadline=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

import hurray_csf as hc

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
SPEC_EXAMPLE = ROOT / "crates" / "hurray-format" / "tests" / "fixtures" / "spec_example.hurray"
CORPUS = ROOT / "crates" / "csf-validate" / "tests" / "corpus"

# The spec's example (csf-layout.txt § Example).
SPEC_SHAPE = (2, 3, 4)
SPEC_COORDS = np.array([[0, 0, 1], [0, 2, 3], [1, 1, 0], [1, 1, 2]], dtype=np.int64)
SPEC_VALUES = np.array([1.0, 2.0, 3.0, 4.0], dtype=np.float32)
SPEC_LEVELS: List[Tuple[List[int], List[int]]] = [([0, 2], [0, 1]), ([0, 2, 3], [0, 2, 1]), ([0, 1, 2, 4], [1, 3, 0, 2])]

# Every dtype from_coo stores.
DTYPES: List[np.dtype[Any]] = [
    np.dtype(np.bool_),
    np.dtype(np.int8),
    np.dtype(np.int16),
    np.dtype(np.int32),
    np.dtype(np.int64),
    np.dtype(np.uint8),
    np.dtype(np.uint16),
    np.dtype(np.uint32),
    np.dtype(np.uint64),
    np.dtype(np.float16),
    np.dtype(np.float32),
    np.dtype(np.float64),
]
# Types csf-build cannot sum (duplicates="sum" raises TypeError).
UNSUMMABLE: Set[np.dtype[Any]] = {np.dtype(np.float16)}

# What an accessor may raise on data read permissively (or on a bad argument).
ALLOWED: Tuple[Type[BaseException], ...] = (hc.HurrayError, ValueError, IndexError)


# A mode order as the tests draw one: "identity", "auto" or a permutation.
ModeOrder = Union[str, List[int]]

T = TypeVar("T")


# -- the corpus manifest ------------------------------------------------------


class Case(NamedTuple):
    """One line of MANIFEST.tsv: ``name``, ``expectation``, ``description``.

    ``expectation`` is ``valid`` (optionally ``warnings=a,b``),
    ``decode=Variant`` (the container does not decode), or
    ``strict=rule permissive=ok|reject`` (strict validation's first violation,
    and whether permissive mode lets the file through)."""

    name: str
    expectation: str
    description: str

    @property
    def path(self) -> Path:
        return CORPUS / f"{self.name}.hurray"

    def _field(self, key: str) -> Optional[str]:
        for word in self.expectation.split():
            if word.startswith(key + "="):
                return word[len(key) + 1 :]
        return None

    @property
    def kind(self) -> str:
        first = self.expectation.split()[0]
        return first.split("=")[0]  # valid, decode or strict

    @property
    def rule(self) -> Optional[str]:
        return self._field("strict")

    @property
    def decode_error(self) -> Optional[str]:
        return self._field("decode")

    @property
    def permissive_ok(self) -> bool:
        if self.kind == "valid":
            return True
        return self._field("permissive") == "ok"

    @property
    def warnings(self) -> List[str]:
        w = self._field("warnings")
        return [] if w is None else w.split(",")


def manifest() -> List[Case]:
    cases: List[Case] = []
    for line in (CORPUS / "MANIFEST.tsv").read_text().splitlines():
        if not line or line.startswith("#"):
            continue
        name, expectation, description = line.split("\t")
        cases.append(Case(name, expectation, description))
    return cases


# -- a reference of the builder's contract --------------------------------------


def canonical(
    coords: npt.NDArray[np.integer[Any]], values: npt.NDArray[Any], mode_order: Sequence[int], duplicates: str
) -> Tuple[npt.NDArray[np.uint64], npt.NDArray[Any]]:
    """What ``to_coo`` must give for COO input ``(nnz, rank)``: one entry per
    distinct index (``first``/``last`` keep that occurrence in the input,
    ``sum`` adds them in the values' own dtype: integers wrap, bool is OR),
    sorted by the coordinates permuted into storage order."""
    rank = coords.shape[1]
    groups: Dict[Tuple[int, ...], List[int]] = {}
    for i, row in enumerate(coords.tolist()):
        groups.setdefault(tuple(row), []).append(i)
    keys = sorted(groups, key=lambda k: tuple(k[d] for d in mode_order))
    out = np.empty(len(keys), dtype=values.dtype)
    for j, k in enumerate(keys):
        at = groups[k]
        if duplicates == "first":
            out[j] = values[at[0]]
        elif duplicates == "last":
            out[j] = values[at[-1]]
        elif duplicates == "sum":
            out[j] = np.add.reduce(values[at], dtype=values.dtype)
        else:
            assert len(at) == 1
            out[j] = values[at[0]]
    c = np.array(keys, dtype=np.uint64).reshape(len(keys), rank)
    return c, out


def csf_levels(storage_tuples: Sequence[Sequence[int]], rank: int) -> List[Tuple[List[int], List[int]]]:
    """The ``(pos_L, crd_L)`` arrays of csf-layout.txt for distinct tuples
    already in storage order and sorted: level L has one node per distinct
    prefix of length L + 1, its children delimited by ``pos_L``."""
    levels: List[Tuple[List[int], List[int]]] = []
    parents: List[Tuple[int, ...]] = [()]  # the virtual root
    for L in range(rank):
        nodes: List[Tuple[int, ...]] = []
        for t in storage_tuples:
            p = tuple(t[: L + 1])
            if not nodes or nodes[-1] != p:
                nodes.append(p)
        pos = [0]
        i = 0
        for parent in parents:
            while i < len(nodes) and nodes[i][:L] == parent:
                i += 1
            pos.append(i)
        assert i == len(nodes)
        levels.append((pos, [n[L] for n in nodes]))
        parents = nodes
    return levels


def index_bytes(coords: npt.NDArray[np.integer[Any]], order: Sequence[int]) -> int:
    """Bytes of ``pos``/``crd`` that distinct coordinates store in ``order``."""
    tuples = sorted({tuple(row[d] for d in order) for row in coords.tolist()})
    return sum(8 * (len(p) + len(c)) for p, c in csf_levels(tuples, len(order)))


def dense_of(coords: npt.NDArray[np.integer[Any]], values: npt.NDArray[Any], shape: Sequence[int]) -> npt.NDArray[Any]:
    d = np.zeros(shape, dtype=values.dtype)
    for row, v in zip(coords.tolist(), values):
        d[tuple(row)] = v
    return d


def same_dense(a: npt.ArrayLike, b: npt.ArrayLike) -> bool:
    """Equal arrays from another library, a NaN equal to a NaN (libraries
    need not keep a NaN's payload bits)."""
    return bool(np.array_equal(a, b, equal_nan=np.asarray(a).dtype.kind in "fc"))


def same_values(a: npt.NDArray[Any], b: npt.NDArray[Any]) -> bool:
    """Equal dtype and bit for bit equal (NaN payloads and -0.0 included)."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.kind == "f":
        u = np.dtype(f"u{a.dtype.itemsize}")
        return bool(np.array_equal(a.view(u), b.view(u)))
    return bool(np.array_equal(a, b))


def levels_as_lists(t: hc.CsfTensor) -> List[Tuple[List[int], List[int]]]:
    return [(p.tolist(), c.tolist()) for p, c in t.levels]


# -- hypothesis strategies --------------------------------------------------------


def values_strategy(dtype: np.dtype[Any], n: int, *, exact_sums: bool) -> st.SearchStrategy[npt.NDArray[Any]]:
    """``n`` values of ``dtype``: the full range (NaN, inf and -0.0 for floats),
    or, when sums must be exact whatever their order, small integers."""
    from hypothesis.extra import numpy as hnp

    elements: st.SearchStrategy[Any]
    if dtype.kind == "f" and exact_sums:
        elements = st.integers(-64, 64).map(float)
    elif dtype.kind == "f":
        elements = hnp.from_dtype(dtype, allow_nan=True, allow_infinity=True)
    else:
        elements = hnp.from_dtype(dtype)
    return hnp.arrays(dtype, n, elements=elements)


@st.composite
def coo_input(
    draw: st.DrawFn,
    rank: st.SearchStrategy[int] = st.integers(3, 6),
    max_extent: int = 4,
    max_nnz: int = 30,
    allow_zero_extent: bool = True,
) -> Tuple[Tuple[int, ...], npt.NDArray[np.int64]]:
    """``(shape, coords (nnz, rank) int64)``, duplicates and empty tensors included."""
    r = draw(rank)
    low = 0 if allow_zero_extent else 1
    shape = tuple(draw(st.lists(st.integers(low, max_extent), min_size=r, max_size=r)))
    if 0 in shape:
        return shape, np.zeros((0, r), dtype=np.int64)
    rows = draw(
        st.lists(st.tuples(*[st.integers(0, e - 1) for e in shape]), min_size=0, max_size=max_nnz)
    )
    return shape, np.array(rows, dtype=np.int64).reshape(len(rows), r)


def mode_orders(rank: int) -> st.SearchStrategy[ModeOrder]:
    return st.one_of(st.just("identity"), st.just("auto"), st.permutations(list(range(rank))).map(list))


# -- exercising a tensor ------------------------------------------------------------


def is_panic(e: BaseException) -> bool:
    return type(e).__name__ == "PanicException"


def call(what: str, f: Callable[[], T], allowed: Tuple[Type[BaseException], ...] = ALLOWED) -> Optional[T]:
    """Runs ``f``; an allowed exception is fine, anything else fails the test
    (a pyo3 PanicException derives from BaseException: caught here too)."""
    try:
        return f()
    except allowed:
        return None
    except BaseException as e:  # noqa: B036 - a panic is a BaseException
        kind = "a Rust panic" if is_panic(e) else "an unexpected exception"
        pytest.fail(f"{what} raised {kind}: {type(e).__name__}: {e}")


def exercise(t: hc.CsfTensor, label: str = "") -> None:
    """Every accessor: works or raises HurrayError/ValueError/IndexError."""
    call(f"{label} describe", lambda: (t.shape, t.rank, t.nnz, t.dtype, t.element_type, t.mode_order, t.statistics, t.quantization, t.nbytes, repr(t)))
    levels = call(f"{label} levels", lambda: t.levels)
    values = call(f"{label} values", lambda: t.values)
    rank = t.rank
    shape = t.shape
    probes = [(0,) * rank, tuple(max(0, e - 1) for e in shape), tuple(min(e, 1) for e in shape)]
    if levels:
        # Stored coordinates (possibly out of range on a bad file) make probes that descend.
        probes.append(tuple(int(c[0]) if len(c) else 0 for _, c in levels[:rank]))
    for p in probes:
        call(f"{label} t[{p}]", lambda: t[p])
        # The sub-trees under its prefixes (storage order).
        for k in range(rank):
            under = call(f"{label} subtree({p[:k]})", lambda: t.subtree(p[:k]))
            if under is not None:
                assert under[0].shape == (len(under[1]), rank)
    q = np.array(probes, dtype=np.uint64).reshape(len(probes), rank)
    call(f"{label} lookup", lambda: t.lookup(q))
    call(f"{label} find", lambda: t.find(q))
    coo = call(f"{label} to_coo", t.to_coo)
    dense = call(f"{label} to_dense", lambda: t.to_dense(max_elements=4096))
    for order in ("identity", "auto", list(range(rank))[::-1]):
        call(f"{label} reorder({order})", lambda: t.reorder(order))
    call(f"{label} to_bytes", t.to_bytes)
    # Selections (the fast path of dimension mode_order[0] and the pruned walk; a result of
    # rank 1 or 2 with a coordinate of 2^63 or more does not fit sparse.COO), sums,
    # equality and casts run on whatever permissive reading lets through.
    keys: List[Any] = [(0,), (slice(1, None),), (slice(None), 0), (Ellipsis, slice(None, None, -1)), (slice(None), [1, 0, 1])]
    for key in keys:
        call(f"{label} t[{key}]", lambda: t[key], allowed=ALLOWED + (ImportError, OverflowError))
    for axis in (None, 0, tuple(range(1, rank))):
        call(f"{label} sum({axis})", lambda: t.sum(axis, max_elements=4096), allowed=ALLOWED + (TypeError,))
    call(f"{label} equals", lambda: t.equals(t))
    call(f"{label} astype", lambda: t.astype(np.float64), allowed=ALLOWED + (TypeError,))
    call(f"{label} in", lambda: 1 in t)
    if coo is not None:
        coords, vals = coo
        assert coords.shape == (len(vals), rank)
    if dense is not None:
        assert dense.shape == shape
    if values is not None:
        assert not values.flags.writeable


def exercise_conversions(t: hc.CsfTensor, label: str = "") -> None:
    """to_pyarrow (and Arrow's own to_tensor), to_sparse, to_torch, with the
    packages at hand: work, or raise as the accessors may. Arrow and torch
    trust the arrays they get (out-of-bounds coordinates corrupt memory), so a
    tensor read permissively must be validated strictly first."""
    small = all(e <= 64 for e in t.shape) and float(np.prod([float(e) for e in t.shape])) <= 4096
    if have("pyarrow"):
        # OverflowError: a coordinate of 2^63 or more does not fit Arrow's int64.
        a = call(f"{label} to_pyarrow", t.to_pyarrow, allowed=ALLOWED + (OverflowError,))
        if a is not None and small:
            assert same_dense(a.to_tensor().to_numpy(), t.to_dense())
    if have("sparse"):
        s = call(f"{label} to_sparse", t.to_sparse, allowed=ALLOWED + (OverflowError,))
        if s is not None and small:
            assert same_dense(s.todense(), t.to_dense())
    if have("torch"):
        # TypeError: torch has no sparse uint16/32/64 tensors; RuntimeError: torch's
        # own limits (a shape of 2^63 elements or more); OverflowError: an extent of 2^63 or more.
        x = call(f"{label} to_torch", t.to_torch, allowed=ALLOWED + (TypeError, RuntimeError, OverflowError))
        if x is not None and small:
            assert same_dense(x.to_dense().numpy(), t.to_dense())


def base_chain(a: object) -> List[object]:
    """The objects a numpy array's memory comes from: ``base`` of arrays, ``obj`` of memoryviews."""
    chain: List[object] = []
    x: object = a
    while x is not None and len(chain) < 20:
        chain.append(x)
        if isinstance(x, np.ndarray):
            x = x.base
        elif isinstance(x, memoryview):
            x = x.obj
        else:
            x = None
    return chain


def reaches_mmap(a: object) -> bool:
    return any(isinstance(x, mmap.mmap) for x in base_chain(a))


@pytest.fixture(scope="session")
def spec_bytes() -> bytes:
    return SPEC_EXAMPLE.read_bytes()


@pytest.fixture
def spec_tensor() -> hc.CsfTensor:
    return hc.from_coo(SPEC_COORDS, SPEC_VALUES, SPEC_SHAPE)


def all_permutations(rank: int) -> List[List[int]]:
    return [list(p) for p in itertools.permutations(range(rank))]


def have(module: str) -> bool:
    try:
        __import__(module)
        return True
    except ImportError:
        return False
