"""One writer at a time for an output: an advisory lock beside it.

Every output that xuqcal writes (``validate -o``, the ``report`` and ``demo`` folders, the set
of ``recalibrate``, a cube of ``cube build``/``cube extend``, :func:`xuqcal.to_netcdf`) is
written under :func:`locked`: an exclusive :func:`fcntl.flock` lock on ``.<name>.lock`` beside
the output (beside a folder, in its parent, so it is never a file of the folder). A
read-modify-write (``cube extend`` reads the cube, adds cells and replaces it) and a check
then write (the output does not exist yet, or was written by xuqcal) thus never run twice at
once: both would read the old state and the second rename would drop the first one's work (a
lost update). A second writer is refused at once (or after ``timeout`` seconds) with a
:class:`FileInUseError` that names the output and the process holding it::

    cube.nc is in use by process 4242 (xuqcal cube extend, since 2026-11-26 07:01:02 UTC);
    wait for it to finish (or stop it), then run this again

The lock is re-entrant in the thread that holds it (the ``xuqcal validate`` command holds the
lock of its output and then calls :func:`xuqcal.to_netcdf`, which takes it again); another
thread of the same process is refused like another process. :func:`locked_set` takes the
locks of several outputs (a set written together) in one fixed order, so that two writers of
overlapping sets never wait for each other in a cycle.

The lock dies with its process (the kernel releases it, even after ``kill -9``); a lock file
left by a dead process is taken over by the next writer of that output and removed when it is
done, and it never counts as content of a folder (:func:`is_lock_file`). The lock file is
removed on release (only by its holder), and a writer that opened a lock file that was removed
meanwhile tries again with the new one, so two writers never hold locks on different files.
Where the folder cannot hold the lock file (missing or read-only, or its path too long), no
lock is taken: the output cannot be written there either, and the writer's own checks name
the folder. On
systems without :mod:`fcntl` (Windows) or on file systems that do not support ``flock``,
writers are not serialised.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None

__all__ = ["FileInUseError", "holder", "is_lock_file", "lock_path", "locked",
           "locked_set"]

#: Errors of flock on file systems without locks: the writer goes on unlocked.
_UNSUPPORTED = {errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL}

#: Names longer than this (in bytes) get a shortened lock file name (a name limit is 255).
_LONG_NAME = 200

#: The locks held by each thread: (st_dev, st_ino) of the lock file -> nesting depth.
_HELD = threading.local()


class FileInUseError(BlockingIOError):
    """Another process is writing this output (its lock is held)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.errno = errno.EWOULDBLOCK


def lock_path(path: str | os.PathLike) -> Path:
    """The lock file of the output ``path``: ``.<name>.lock`` in the same folder (for a folder,
    in its parent; ``.`` and ``..`` are made absolute first; a name too long for the file
    system is shortened and ends with a hash of the whole name).

    Examples
    --------
    >>> lock_path("results/cube.nc")
    PosixPath('results/.cube.nc.lock')
    >>> lock_path("reports/run1/")
    PosixPath('reports/.run1.lock')
    """
    path = Path(path)
    if path.name in ("", ".."):
        path = Path(os.path.abspath(path))
    if not path.name:
        raise ValueError(f"{os.fspath(path)}: the root folder has no lock file")
    name = path.name
    if len(os.fsencode(name)) > _LONG_NAME:
        digest = hashlib.sha256(os.fsencode(name)).hexdigest()[:16]
        name = f"{name[:40]}-{digest}"  # at most 4 bytes a character
    return path.with_name(f".{name}.lock")


def is_lock_file(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a lock file of :func:`locked` (``.<name>.lock`` holding a process
    id on its first line, or empty while it is being written): never the content of a folder,
    whether its writer is running or dead.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "out.nc"
    >>> with locked(out, "an example"):
    ...     is_lock_file(lock_path(out))
    True
    """
    path = Path(path)
    if not (path.name.startswith(".") and path.name.endswith(".lock")) or path.is_symlink():
        return False
    try:
        with open(path, "rb") as handle:
            first = handle.read(64).split(b"\n", 1)[0]
    except OSError:
        return False
    return not first or first.strip().isdigit()


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


def _open_lock(lock: Path, output: Path) -> int | None:
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
                    f"cannot lock {output}: its lock file {lock} cannot be opened "
                    f"({err.strerror or err}); remove it if no xuqcal is writing that "
                    "file") from None
        return None
    except OSError as err:
        if err.errno in (errno.ENOENT, errno.EROFS, errno.EACCES, errno.ENOTDIR,
                         errno.ENAMETOOLONG, errno.ELOOP):
            return None
        error = type(err)(f"cannot lock {output}: its lock file {lock} cannot be created "
                          f"({err.strerror or err})")
        error.errno = err.errno  # e.g. ENOSPC: reported as a failed write
        raise error from None


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


def _key(stat: os.stat_result) -> tuple[int, int]:
    return (stat.st_dev, stat.st_ino)


def _same_file(fd: int, lock: Path) -> bool:
    """Whether the descriptor ``fd`` is (still) the file at ``lock``."""
    try:
        on_disk = os.stat(lock)
    except FileNotFoundError:
        return False
    return _key(on_disk) == _key(os.fstat(fd))


def _held() -> dict[tuple[int, int], int]:
    """The locks this thread holds: (st_dev, st_ino) of the lock file -> nesting depth."""
    if not hasattr(_HELD, "locks"):
        _HELD.locks = {}
    return _HELD.locks


@contextlib.contextmanager
def locked(path: str | os.PathLike, what: str, *, timeout: float = 0.0,
           option: str | None = None) -> Iterator[None]:
    """Hold the lock of the output ``path`` (a file or a folder) while writing it.

    Parameters
    ----------
    path : str or path-like
        The output (its lock file is :func:`lock_path`).
    what : str
        Who holds it, e.g. ``"xuqcal cube extend"``, for the message another writer gets.
    timeout : float, default 0
        How long to wait for another writer to finish (default 0: refused at once; never an
        unbounded wait).
    option : str, optional
        The option that named ``path`` (e.g. ``"-o/--output"``), put before the message of
        the :class:`FileInUseError`.

    Raises
    ------
    FileInUseError
        When another process (or another thread of this one) holds the lock for ``timeout``
        seconds. The thread that holds it may take it again (nested: re-entrant); the lock is
        released when the outermost ``with`` ends.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "cube.nc"
    >>> with locked(out, "an example"):
    ...     with locked(out, "the same thread again"):  # re-entrant
    ...         pass
    ...     lock_path(out).exists()
    True
    >>> lock_path(out).exists()
    False
    """
    if fcntl is None:  # pragma: no cover - Windows
        yield
        return
    path = Path(path)
    try:
        lock = lock_path(path)
    except ValueError:  # the root folder: never an output xuqcal writes
        yield
        return
    held = _held()
    try:
        key = _key(os.stat(lock))
    except OSError:
        key = None
    if key is not None and key in held:  # this thread holds it: no one else can remove it
        held[key] += 1
        try:
            yield
        finally:
            held[key] -= 1
        return
    deadline = time.monotonic() + max(float(timeout), 0.0)
    fd = None
    for _attempt in range(1000):  # bounded: a new lock file only when one was just released
        fd = _open_lock(lock, path)
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
                    f"{option + ': ' if option else ''}{os.fspath(path)} is in use by {who}; "
                    "wait for it to finish (or stop it), then run this again")
            time.sleep(min(0.1, max(deadline - time.monotonic(), 0.0)))
    else:  # pragma: no cover - a lock file replaced a thousand times in a row
        raise FileInUseError(f"{option + ': ' if option else ''}{os.fspath(path)} is in use by "
                             "other processes; wait for them to finish, then run this again")
    if fd is None:
        yield
        return
    key = _key(os.fstat(fd))
    held[key] = 1
    try:
        with contextlib.suppress(OSError):  # a read-only lock file keeps its old record
            stamp = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n{what}\nsince {stamp}\n".encode())
        yield
    finally:
        del held[key]
        with contextlib.suppress(OSError):  # removed while locked: no one can hold it now
            if _same_file(fd, lock):
                os.unlink(lock)
        os.close(fd)


@contextlib.contextmanager
def locked_set(paths: Iterable[str | os.PathLike], what: str, *, timeout: float = 0.0,
               option: str | None = None) -> Iterator[None]:
    """Hold the locks of several outputs written as one set (:func:`locked` for each).

    The locks are taken in the order of their absolute lock file paths, whatever the order of
    ``paths`` (two writers of overlapping sets never wait for each other in a cycle), and
    released in the reverse order; when one is refused, those already taken are released.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> with locked_set([folder / "b.nc", folder / "a.nc"], "an example"):
    ...     sorted(p.name for p in folder.iterdir())
    ['.a.nc.lock', '.b.nc.lock']
    >>> list(folder.iterdir())
    []
    """
    order: dict[str, Path] = {}
    for path in paths:
        path = Path(path)
        try:
            order.setdefault(os.path.abspath(lock_path(path)), path)
        except ValueError:  # the root folder: no lock
            continue
    with contextlib.ExitStack() as stack:
        for name in sorted(order):
            stack.enter_context(locked(order[name], what, timeout=timeout, option=option))
        yield
