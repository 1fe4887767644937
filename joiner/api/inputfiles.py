"""The files a command has read, so that none of its outputs is written over one of them.

Every input file goes through one reader (``api.manifests.yamlio.read_text``), which notes
the file here while a command records (``recording``: the CLI's root callback starts it
for each command). A command asks ``check_not_input`` before it writes a file: writing
over a Scenario, a dump, a results file or a kubeconfig it was given would lose the user's
data (``joiner sweep report results.html`` once replaced its own results with the report).
Files are compared by device and inode, so a symlink, a hard link or another spelling of
the same path is the same file.
"""

from __future__ import annotations

import os
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
