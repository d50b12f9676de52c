"""Bytes and files: ``from_bytes``, ``load``, ``save`` and ``validate``."""

from __future__ import annotations

import mmap
import os
from typing import Any, List, NamedTuple, Optional, Union

import numpy as np
import numpy.typing as npt

from . import _native
from ._atomic import PathLike, path_argument, write_atomically
from ._common import freeze, integer, renamed, validation_mode
from ._errors import Violation, Warning_
from ._tensor import CsfTensor

class Report(NamedTuple):
    """The result of ``validate``: every violation (up to ``max_errors``) and warning."""

    valid: bool
    errors: List[Violation]
    warnings: List[Warning_]
    truncated: bool


def _read_only_bytes(buffer: Any, what: str) -> npt.NDArray[np.uint8]:
    """A read-only ``uint8`` array over ``buffer``, copied only when the buffer
    is writable: the readers must never see bytes change under them."""
    if isinstance(buffer, str):
        raise TypeError(f"{what} must be a bytes-like object (bytes, memoryview, mmap, uint8 array), not str")
    try:
        raw = np.frombuffer(buffer, dtype=np.uint8)
    except (TypeError, ValueError, BufferError):
        raise TypeError(f"{what} must be a bytes-like object (bytes, memoryview, mmap, uint8 array), not {type(buffer).__name__}") from None
    if raw.flags.writeable:
        raw = raw.copy()
    return freeze(raw)


def from_bytes(buffer: Any, *, validate: str = "strict") -> CsfTensor:
    """A tensor over any object with the buffer protocol, without copying a
    read-only one (``bytes``, a read-only ``mmap`` or ``memoryview``); a
    writable buffer is copied first. ``validate="strict"`` checks every rule
    (``ValidationError``); ``"permissive"`` only what safe reading needs.
    Framing errors raise ``FormatError``."""
    strict = validation_mode(validate)
    raw = _read_only_bytes(buffer, "buffer")
    _native.open(raw, strict)
    return CsfTensor(raw, _strict=strict)


def load(path: PathLike, *, validate: str = "strict", mmap: bool = True) -> CsfTensor:
    """The tensor in the file at ``path``, validated as ``from_bytes`` does.

    With ``mmap=True`` (the default) the file is memory-mapped, not read:
    opening costs the validation only, and the tensor's arrays are views of
    the map. The map is only as stable as the file: if another process
    truncates the file while it is mapped, reading the lost pages kills this
    process with ``SIGBUS`` (the operating system's rule for every memory
    map; no check can catch it), and bytes another process writes in place
    appear in the tensor after validation. Map only files nothing else
    changes (files are written atomically by ``save`` and ``hurray
    convert``: a new file replaces the old, which stays intact for its
    readers). ``mmap=False`` reads the file into memory instead, immune to
    both. ``t.close()`` or ``with hc.load(path) as t:`` unmaps the file."""
    strict = validation_mode(validate)
    target = path_argument(path, "path")
    with open(target, "rb") as f:
        if not mmap:
            data: Any = f.read()
            memory = None
        elif os.fstat(f.fileno()).st_size == 0:
            data, memory = b"", None
        else:
            data = memory = _map(f.fileno())
    raw = _read_only_bytes(data, "the file")
    try:
        _native.open(raw, strict)
    except BaseException:
        del raw
        if memory is not None:
            memory.close()
        raise
    return CsfTensor(raw, _strict=strict, _map=memory)


def _map(fd: int) -> "mmap.mmap":
    return mmap.mmap(fd, 0, access=mmap.ACCESS_READ)


def save(tensor: CsfTensor, path: PathLike) -> None:
    """Writes ``tensor`` to ``path`` atomically: a temporary file beside it is
    written, flushed to disk and renamed over ``path``, so that a failure
    never leaves a partial file. ``path`` must not be a folder
    (``IsADirectoryError``); an error making the temporary file (a missing
    or read-only folder) names ``path``."""
    if not isinstance(tensor, CsfTensor):
        raise TypeError(f"tensor must be a CsfTensor, not {type(tensor).__name__}")
    write_atomically(tensor._bytes(), path)


def validate(
    source: Union[PathLike, Any],
    *,
    validate: Optional[str] = None,
    max_errors: int = 100,
    mode: Optional[str] = None,
) -> Report:
    """Every violation (up to ``max_errors``) and warning of a file (a path)
    or of bytes (any buffer), checked as ``validate="strict"`` (every rule)
    or ``"permissive"`` says, the argument ``load`` and ``from_bytes`` take.
    A file that does not decode gives one error with rule ``decode``.
    (``mode=`` is the deprecated spelling of ``validate=``.)"""
    strict = validation_mode(renamed("mode", "validate", mode, validate, "strict"))
    limit = integer(max_errors, "max_errors")
    if not 0 <= limit < 1 << 32:
        raise ValueError(f"max_errors must be between 0 and 2^32 - 1, not {limit}")
    if isinstance(source, (str, os.PathLike)):
        with open(source, "rb") as f:
            data: Any = f.read()
    else:
        data = source
    r = _native.report(_read_only_bytes(data, "source"), strict, limit)
    errors = [Violation(**{k: e.get(k) for k in Violation._fields}) for e in r["errors"]]
    warnings = [Warning_(**w) for w in r["warnings"]]
    return Report(bool(r["valid"]), errors, warnings, bool(r["truncated"]))
