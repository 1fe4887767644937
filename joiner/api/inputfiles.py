"""The files a command has read, so that none of its outputs is written over one of them.

Every input file goes through one reader (``api.manifests.yamlio.read_text``), which notes
the file here while a command records (``recording``: the CLI's root callback starts it
for each command). A command asks ``check_not_input`` before it writes a file: writing
over a Scenario, a dump, a results file or a kubeconfig it was given would lose the user's
data (``joiner sweep report results.html`` once replaced its own results with the report).
Files are compared by device and inode, so a symlink, a hard link or another spelling of
the same path is the same file.

An output must also be a regular file or nothing yet (``check_output``,
``check_output_dir``): writing to a FIFO blocks until some other process reads it, a
device such as ``/dev/zero`` or ``/dev/full`` swallows or refuses the output, and a
directory cannot be written as a file; each is refused before the command does its work.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

from joiner.api.errors import InputError

_FileId = tuple[int, int]

#: (device, inode) of each file read while recording; None when not recording (library use).
_READ: ContextVar[dict[_FileId, str] | None] = ContextVar("joiner_inputs_read", default=None)


@contextmanager
def recording() -> Iterator[dict[tuple[int, int], str]]:
    """Note every file read through the one reader until the block ends; yields the files
    read so far, by (device, inode), each with the path it was first read by."""
    seen: dict[_FileId, str] = {}
    token = _READ.set(seen)
    try:
        yield seen
    finally:
        _READ.reset(token)


def start_recording() -> None:
    """Note every file read from now on in this context (a CLI command: one per process)."""
    _READ.set({})


def _file_id(path: Path) -> _FileId | None:
    """``path``'s (device, inode), or None when nothing is there (or it cannot be stat'ed,
    in which case nothing can be written over either: the write itself reports why)."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return (st.st_dev, st.st_ino)


def note_read(path: Path) -> None:
    """Record that the running command read ``path`` (a no-op when not recording)."""
    seen = _READ.get()
    if seen is None:
        return
    fid = _file_id(path)
    if fid is not None:
        seen.setdefault(fid, str(path))


def check_not_input(path: Path, *, field: str, inputs: Iterable[Path] = ()) -> None:
    """Refuse to write ``path`` when it is a file the command reads: one of ``inputs`` (read
    later, or not through the one reader) or one read so far.

    Raises:
        InputError: naming ``path``, the input it is, and ``field`` (the option choosing it).
    """
    fid = _file_id(path)
    if fid is None:
        return
    named = {f: str(p) for p in inputs if (f := _file_id(p)) is not None}
    seen = _READ.get() or {}
    source = named.get(fid) or seen.get(fid)
    if source is None:
        return
    same = "" if os.path.abspath(source) == os.path.abspath(path) else f" (it is {source})"
    raise InputError(
        f"would be written over an input of this command{same}; choose another path",
        file=str(path),
        field=field,
    )


def _kind(mode: int) -> str:
    """What a non-regular file is, in words."""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _mode(path: Path, field: str) -> int | None:
    """``path``'s mode (following symlinks), or None when nothing is there yet (a missing
    parent included: the write creates it, or reports why not).

    Raises:
        InputError: ``path`` cannot be looked at (too long a name, a symlink loop, no
            permission).
    """
    try:
        return os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return None
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise InputError(f"cannot use: {reason}", file=str(path), field=field) from exc


def check_output(path: Path, *, field: str, inputs: Iterable[Path] = ()) -> None:
    """Refuse ``path`` as an output file unless it is a regular file or nothing yet, and
    refuse it when it is an input of the command (``check_not_input``).

    Raises:
        InputError: ``path`` is a directory, a FIFO, a device or a socket, cannot be looked
            at, or is an input; naming ``path`` and ``field`` (the option choosing it).
    """
    mode = _mode(path, field)
    if mode is not None and not stat.S_ISREG(mode):
        raise InputError(
            f"is {_kind(mode)}, not a regular file; give the path of a file to write",
            file=str(path),
            field=field,
        )
    check_not_input(path, field=field, inputs=inputs)


def check_output_dir(path: Path, *, field: str, files: Iterable[str] = ()) -> None:
    """Refuse ``path`` as an output directory unless it is a directory or nothing yet, and
    refuse each of ``files`` (names inside it the command writes) as ``check_output`` does.

    Raises:
        InputError: ``path`` is a file, a FIFO, a device or a socket, or one of ``files``
            in it would be refused; naming the path and ``field``.
    """
    mode = _mode(path, field)
    if mode is not None and not stat.S_ISDIR(mode):
        kind = "a file" if stat.S_ISREG(mode) else _kind(mode)
        raise InputError(
            f"is {kind}, not a directory; give a directory to write into",
            file=str(path),
            field=field,
        )
    for name in files:
        check_output(path / name, field=field)
