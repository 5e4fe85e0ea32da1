"""One writer at a time for an output file: an advisory lock beside it (issue 23).

A read-modify-write of an output (``cube extend`` reads the cube, adds cells and replaces it)
must not run twice at once: both would read the old file and the second rename would drop the
first one's addition (a lost update). :func:`locked` holds an exclusive :func:`fcntl.flock`
lock on ``.<name>.lock`` beside the output for the whole read-modify-write. A second writer is
refused at once (or after ``timeout`` seconds) with a :class:`FileInUseError` that names the
output and the process holding it::

    cube.nc is in use by process 4242 (xuqcal cube extend, since 2026-11-26 07:01:02 UTC);
    wait for it to finish (or stop it), then run this again

The lock dies with its process (the kernel releases it, even after ``kill -9``); a lock file
left by a dead process is taken over by the next writer and removed when it is done. The lock
file is removed on release, and a writer that opened a lock file that was removed meanwhile
tries again with the new one, so two writers never hold locks on different files. Where the
folder cannot hold the lock file (missing or read-only), no lock is taken: the output cannot be
written there either, and the writer's own checks name the folder. On systems without
:mod:`fcntl` (Windows) or on file systems that do not support ``flock``, writers are not
serialised.
"""

from __future__ import annotations

import contextlib
import errno
import os
import time
from collections.abc import Iterator
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None

__all__ = ["FileInUseError", "holder", "lock_path", "locked"]

#: Errors of flock on file systems without locks: the writer goes on unlocked.
_UNSUPPORTED = {errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL}


class FileInUseError(BlockingIOError):
    """Another process is writing this output (its lock is held)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.errno = errno.EWOULDBLOCK


def lock_path(path: str | os.PathLike) -> Path:
    """The lock file of the output ``path``: ``.<name>.lock`` in the same folder.

    Examples
    --------
    >>> lock_path("results/cube.nc")
    PosixPath('results/.cube.nc.lock')
    """
    path = Path(path)
    return path.with_name(f".{path.name}.lock")


def holder(path: str | os.PathLike) -> str | None:
    """Who holds (or last held) the lock of ``path``, as recorded in its lock file:
    ``"process 4242 (xuqcal cube extend, since ...)"``; None when nothing is recorded."""
    try:
        text = lock_path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    lines = text.splitlines()
    if not lines or not lines[0].strip().isdigit():
        return None
    detail = ", ".join(line.strip() for line in lines[1:3] if line.strip())
    return f"process {lines[0].strip()}" + (f" ({detail})" if detail else "")


def _open_lock(lock: Path) -> int | None:
    """A descriptor of the lock file (created if needed), or None where the folder cannot hold
    it (the output cannot be written there either)."""
    try:
        return os.open(lock, os.O_RDWR | os.O_CREAT, 0o666)
    except PermissionError:
        if lock.exists():  # another user's lock file: flock works on a read-only descriptor
            try:
                return os.open(lock, os.O_RDONLY)
            except OSError as err:
                raise PermissionError(
                    f"cannot lock {lock.with_name(lock.name[1:-5])}: its lock file {lock} "
                    f"cannot be opened ({err.strerror or err}); remove it if no xuqcal is "
                    "writing that file") from None
        return None
    except OSError as err:
        if err.errno in (errno.ENOENT, errno.EROFS, errno.EACCES, errno.ENOTDIR):
            return None
        raise type(err)(f"cannot lock {lock.with_name(lock.name[1:-5])}: its lock file {lock} "
                        f"cannot be created ({err.strerror or err})") from None


def _try_lock(fd: int) -> bool | None:
    """True when locked, False when another process holds the lock, None when the file
    system has no locks."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as err:
        if err.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return False
        if err.errno in _UNSUPPORTED:
            return None
        raise
    return True


def _same_file(fd: int, lock: Path) -> bool:
    try:
        on_disk = os.stat(lock)
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (on_disk.st_dev, on_disk.st_ino) == (mine.st_dev, mine.st_ino)


@contextlib.contextmanager
def locked(path: str | os.PathLike, what: str, *, timeout: float = 0.0) -> Iterator[None]:
    """Hold the lock of the output ``path`` (``what`` says who holds it, e.g. ``"xuqcal cube
    extend"``, for the message another writer gets).

    Raises :class:`FileInUseError` when another process holds it for ``timeout`` seconds
    (default 0: refused at once; never an unbounded wait).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "cube.nc"
    >>> with locked(out, "an example"):
    ...     lock_path(out).exists()
    True
    >>> lock_path(out).exists()
    False
    """
    if fcntl is None:  # pragma: no cover - Windows
        yield
        return
    path = Path(path)
    lock = lock_path(path)
    deadline = time.monotonic() + max(float(timeout), 0.0)
    fd = None
    for _attempt in range(1000):  # bounded: a new lock file only when one was just released
        fd = _open_lock(lock)
        if fd is None:
            break
        state = _try_lock(fd)
        if state is None:  # no locks on this file system
            os.close(fd)
            fd = None
            break
        if state and _same_file(fd, lock):
            break
        os.close(fd)
        fd = None
        if not state:
            if time.monotonic() >= deadline:
                who = holder(path) or "another process"
                raise FileInUseError(
                    f"{os.fspath(path)} is in use by {who}; wait for it to finish (or stop it), "
                    "then run this again")
            time.sleep(min(0.1, max(deadline - time.monotonic(), 0.0)))
    else:  # pragma: no cover - a lock file replaced a thousand times in a row
        raise FileInUseError(f"{os.fspath(path)} is in use by other "
                             "processes; wait for them to finish, then run this again")
    if fd is None:
        yield
        return
    try:
        with contextlib.suppress(OSError):  # a read-only lock file keeps its old record
            stamp = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n{what}\nsince {stamp}\n".encode())
        yield
    finally:
        with contextlib.suppress(OSError):  # removed while locked: no one can hold it now
            if _same_file(fd, lock):
                os.unlink(lock)
        os.close(fd)
