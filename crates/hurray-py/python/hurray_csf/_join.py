"""Joining part files into one file: ``concat`` (csf-build's ``join_files``)."""

from __future__ import annotations

import os
from typing import Any, NamedTuple, Optional, Sequence

from . import _native
from ._atomic import atomic_target, path_argument
from ._common import quantize_argument


class JoinReport(NamedTuple):
    """What ``concat`` wrote."""

    path: str
    parts: int
    nnz: int
    bytes_written: int


def concat(
    paths: Sequence[Any],
    out: Any,
    *,
    quantize: Optional[str] = None,
    statistics: bool = True,
    remove_parts: bool = False,
    temp_dir: Optional[Any] = None,
) -> JoinReport:
    """Joins Hurray files holding consecutive storage-order key ranges of one
    tensor into the file ``out``, in one streaming pass (``hurray concat``).

    Every part must have the first's shape, mode order and element type, be
    unquantized, and hold only keys above the previous part's (empty parts
    are skipped); a level-0 coordinate may continue from one part into the
    next, and its path is then stored once. The result is byte for byte the
    file ``from_coo`` writes of all the parts' entries. Parts are untrusted:
    each is checked as it is copied, and a bad one raises ``FormatError``
    naming its file.

    Memory holds one part at a time: the output's arrays go to spill files
    in a private folder under ``temp_dir`` (default: ``out``'s folder),
    removed at the end. ``quantize`` (a scheme of ``from_coo``'s) is applied
    to the joined values, as ``from_coo`` would apply it to the whole.
    ``out`` is written atomically (a temporary file renamed into place), and
    with ``remove_parts=True`` the parts are deleted once it is. The GIL is
    released while Rust works.
    """
    if isinstance(paths, (str, bytes, os.PathLike)):
        raise TypeError("paths must be a sequence of paths, not one path")
    files = [path_argument(p, "each part") for p in paths]
    if not files:
        raise ValueError("concat needs at least one part")
    target = path_argument(out, "out")
    spill = path_argument(temp_dir, "temp_dir") if temp_dir is not None else os.path.dirname(os.path.abspath(target))
    scheme = quantize_argument(quantize)
    with atomic_target(target) as tmp:
        parts, nnz, written = _native.join_files(files, tmp, scheme, bool(statistics), spill)
    if remove_parts:
        for f in files:
            try:
                os.unlink(f)
            except FileNotFoundError:
                pass
    return JoinReport(target, parts, nnz, written)
