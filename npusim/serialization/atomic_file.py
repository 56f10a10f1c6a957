"""Atomic writes to a path: a temporary file beside it, fsync, then rename over it.

A reader sees either the previous file or the complete new one: a process
killed in the middle of a save leaves the old file intact (and, at worst, a
``.<name>.<random>.tmp`` file beside it). The directory is fsynced after the
rename so the new name survives a power loss too. Paths that are not regular files
(a FIFO, ``/dev/null``) are written in place instead, as torch does: renaming
over them would replace the device or pipe with a file.
"""
from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat


class _DirectoryTargetError(IsADirectoryError, RuntimeError):
    """Saving to a directory: an OSError as open() raises it, and the RuntimeError torch.save raises."""


def _open_temp(path: str):
    """Create the temporary file next to ``path`` (mode 0o666 minus the umask, as open() would)."""
    directory, base = os.path.split(path)
    for _ in range(100):
        tmp = os.path.join(directory, f".{base}.{secrets.token_hex(6)}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
        except FileExistsError:
            continue
        return tmp, os.fdopen(fd, "wb")
    raise FileExistsError(errno.EEXIST, "could not create a unique temporary file", path)


def _fsync_directory(directory: str) -> None:
    try:
        fd = os.open(directory or ".", os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return  # platforms without directory handles (Windows) persist the rename without it
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def target_path(path) -> str:
    """The file a save to ``path`` replaces: symlinks are followed, the parent directory must exist."""
    path = os.fspath(path)
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    if os.path.islink(path):
        path = os.path.realpath(path)
    if os.path.isdir(path):
        raise _DirectoryTargetError(errno.EISDIR, "cannot save to a directory: open file failed with strerror: Is "
                                    "a directory", path)
    parent = os.path.dirname(path)
    if parent and not os.path.isdir(parent):
        raise RuntimeError(f"Parent directory {parent} does not exist.")
    return path


def is_special_file(path: str) -> bool:
    """Whether ``path`` exists and is not a regular file (a FIFO, a device): it is written in place."""
    try:
        return not stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


@contextlib.contextmanager
def atomic_write(path: str):
    """Yield a binary file; on success it replaces ``path`` atomically, on error ``path`` is untouched."""
    tmp, f = _open_temp(path)
    try:
        try:
            mode = os.stat(path).st_mode & 0o7777
        except FileNotFoundError:
            mode = None
        yield f
        f.flush()
        os.fsync(f.fileno())
        f.close()
        if mode is not None:
            os.chmod(tmp, mode)  # replacing a file keeps its permissions, as writing into it would
        os.replace(tmp, path)
        tmp = None
        _fsync_directory(os.path.dirname(path))
    finally:
        if not f.closed:
            f.close()
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
