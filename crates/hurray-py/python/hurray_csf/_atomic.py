"""Writing a file atomically: a temporary file beside the target, flushed to
disk and renamed over it, so that a failure never leaves a partial file and a
reader of the old file keeps its bytes (what ``save`` and
``CsfTensor.save`` do)."""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
from typing import Any, Iterator, Tuple, Union

import numpy as np
import numpy.typing as npt

PathLike = Union[str, "os.PathLike[str]"]


def path_argument(path: Any, what: str) -> str:
    try:
        return os.fspath(path)  # type: ignore[no-any-return]
    except TypeError:
        raise TypeError(f"{what} must be a path (str or os.PathLike), not {type(path).__name__}") from None


def write_atomically(data: npt.NDArray[np.uint8], path: Any) -> None:
    """Writes ``data`` to ``path`` atomically. ``path`` must not be a folder
    (``IsADirectoryError``); an error making the temporary file (a missing
    or read-only folder) names ``path``."""
    with atomic_target(path, "path") as tmp:
        with open(tmp, "wb") as f:
            f.write(data.data)
            f.flush()
            os.fsync(f.fileno())


@contextlib.contextmanager
def atomic_target(path: Any, what: str = "out") -> Iterator[str]:
    """A temporary path beside ``path`` for the caller to write; renamed
    over ``path`` when the block ends normally, removed when it raises
    (``KeyboardInterrupt`` included)."""
    target = path_argument(path, what)
    if os.path.isdir(target):
        raise IsADirectoryError(errno.EISDIR, "cannot save a tensor over a folder", target)
    folder = os.path.dirname(os.path.abspath(target))
    try:
        fd, tmp = _temporary(folder, os.path.basename(target))
    except OSError as e:
        # Name the file asked for, not the temporary one beside it.
        raise type(e)(e.errno, f"cannot write beside it: {e.strerror}", target) from e
    os.close(fd)
    try:
        yield tmp
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _temporary(folder: str, name: str) -> Tuple[int, str]:
    """A new file in ``folder``, made as ``open(path, "wb")`` makes one: mode
    0o666 less the umask (``tempfile.mkstemp``'s 0o600 would make every saved
    file readable by its owner only)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    for _ in range(100):
        tmp = os.path.join(folder, f".{name}.{secrets.token_hex(6)}.tmp")
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no unused temporary file name", folder)
