"""The package's exceptions: one hierarchy with ``HurrayError`` at its root.

Bad arguments raise ``ValueError``, ``TypeError`` or ``IndexError`` and files
``OSError``, as Python code expects; what is wrong with a tensor or a build
raises a ``HurrayError``.
"""

from __future__ import annotations

from typing import Any, List, NamedTuple, Optional, Sequence, Tuple


class Violation(NamedTuple):
    """One broken rule: its id, the clause of the spec, where, and what.

    ``offset`` is the byte of the file, from its start, that the violation is
    about (an element of a buffer, or where a file that does not decode goes
    wrong), or ``None``."""

    rule: str
    clause: str
    message: str
    level: Optional[int] = None
    buffer: Optional[int] = None
    index: Optional[int] = None  # type: ignore[assignment]  # the element index; it shadows tuple.index
    found: Optional[int] = None
    expected: Optional[int] = None
    offset: Optional[int] = None

    def __str__(self) -> str:
        return f"{self.message} [{self.rule}; {self.clause}]"


class Warning_(NamedTuple):
    """A SHOULD the file does not follow (it stays valid)."""

    rule: str
    message: str

    def __str__(self) -> str:
        return f"{self.message} [{self.rule}]"


class HurrayError(Exception):
    """The root of every error this package raises about tensors."""


class FormatError(HurrayError):
    """The bytes are not a Hurray container: bad magic, version, descriptor,
    buffer placement, or a file cut short (docs/format.md §4-6).

    ``offset`` is the byte, from the start of the input, where it goes wrong
    (``None`` only for a buffer that starts past any file)."""

    def __init__(self, message: str, offset: Optional[int] = None):
        super().__init__(message)
        self.offset = offset

    def __reduce__(self) -> Tuple[Any, Tuple[Any, ...]]:
        # Pickled with every argument (Dask and multiprocessing send errors
        # between processes; the default would call the class with the message only).
        return (type(self), (str(self), self.offset))


class ValidationError(HurrayError):
    """The container is sound but the tensor breaks a rule of the CSF spec.

    ``violations`` lists what was found (the first one when validation stops
    at the first), ``warnings`` the SHOULDs not followed.
    """

    def __init__(self, message: str, violations: Sequence[Any] = (), warnings: Sequence[Any] = ()):
        super().__init__(message)
        self.violations: List[Violation] = [_violation(v) for v in violations]
        self.warnings: List[Warning_] = [_warning(w) for w in warnings]

    def __reduce__(self) -> Tuple[Any, Tuple[Any, ...]]:
        return (type(self), (str(self), self.violations, self.warnings))


class BuildError(HurrayError):
    """The builder could not make a tensor of valid input (a quantizer that
    meets a value that is not finite, say)."""


class DuplicateError(BuildError):
    """Two entries share an index under ``duplicates="error"``.

    ``first`` and ``second`` are their positions in the input, ``index`` the
    logical index they share.
    """

    def __init__(self, message: str, first: int, second: int, index: Sequence[int]):
        super().__init__(message)
        self.first = first
        self.second = second
        self.index = tuple(index)

    def __reduce__(self) -> Tuple[Any, Tuple[Any, ...]]:
        return (type(self), (str(self), self.first, self.second, self.index))


def _violation(v: Any) -> Violation:
    return v if isinstance(v, Violation) else Violation(**v)


def _warning(w: Any) -> Warning_:
    return w if isinstance(w, Warning_) else Warning_(**w)
