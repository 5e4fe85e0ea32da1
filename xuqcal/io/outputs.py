"""Checks of output paths before any computation, and manifests of the files xuqcal wrote.

One rule for every command and writer of the package:

- the folder an output goes to must exist and be writable (it is never created with its
  parents: a missing folder is usually a typo);
- an output file must not be a folder, and an existing one is replaced only with
  ``overwrite``;
- an output never replaces an input, with or without ``overwrite``;
- in a folder of results (a report, the demo), ``overwrite`` replaces only the files that
  xuqcal itself wrote there, listed with their SHA-256 in ``.xuqcal-manifest.json``; a file
  that is not listed, or that was changed since, is never replaced or removed;
- an output is never inside an input folder (e.g. a chunk of an input Zarr store);
- a manifest entry authorises a replacement or a removal only when it carries xuqcal's
  signature (an HMAC-SHA256 of the name and the SHA-256, keyed by a secret in the user's
  configuration folder, :func:`manifest_key`): a manifest written by hand, by another user
  account or by an older xuqcal authorises nothing;
- temporary files and staging folders carry the writer's process id
  (``.NAME.xuqcal-PID-HEX.tmp``, ``.xuqcal-staging-PID-HEX``): those of a dead process are
  removed by the next run that writes in their folder (:func:`remove_leftovers`) and never
  count as content;
- a write that fails (a full disk, an I/O error) names the file, the errno and what was kept
  (:func:`write_error`), and leaves the old file or set, or nothing.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import hmac
import json
import os
import re
import secrets
import shutil
import signal
import stat
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePosixPath

from xuqcal.io.locks import is_lock_file, locked

MANIFEST = ".xuqcal-manifest.json"
"""Name of the manifest of the files xuqcal wrote in a folder."""

PathLike = str | os.PathLike[str]

WRITE_ERRNOS = frozenset({errno.ENOSPC, errno.EIO, errno.EDQUOT, errno.EFBIG, errno.EROFS})
"""Errnos of a failed write that are the environment's, not a bug (full disk, I/O error...)."""

_LEFTOVER = re.compile(r"^(?:\.xuqcal-staging-(?P<staging>\d+)-[0-9a-f]{12}"
                       r"|\..*\.xuqcal-(?P<pid>\d+)-[0-9a-f]{12}\.(?:tmp|old))$", re.S)


def temporary_path(path: PathLike, kind: str = "tmp") -> Path:
    """A hidden temporary path beside ``path``, naming this process:
    ``.NAME.xuqcal-PID-HEX.tmp`` (``kind`` ``old``: the backup of a file being replaced).

    Examples
    --------
    >>> leftover_pid(temporary_path("out.nc").name) == os.getpid()
    True
    """
    path = Path(path)
    # a short prefix of the name: the temporary name must not exceed the file system's limit
    return path.with_name(f".{path.name[:40]}.xuqcal-{os.getpid()}-{secrets.token_hex(6)}"
                          f".{kind}")


def leftover_pid(name: str) -> int | None:
    """The process id in the name of a temporary file or staging folder of xuqcal, or None.

    Examples
    --------
    >>> leftover_pid(".v.nc.xuqcal-4242-0123456789ab.tmp"), leftover_pid("v.nc")
    (4242, None)
    """
    match = _LEFTOVER.match(name)
    if match is None:
        return None
    return int(match.group("staging") or match.group("pid"))


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # e.g. another user's process: alive
        return True
    return True


def remove_leftovers(folder: PathLike) -> list[Path]:
    """Remove the temporary files and staging folders that a dead xuqcal process left in
    ``folder`` (killed, or its machine stopped); those of a running process are kept.
    Returns what was removed."""
    removed: list[Path] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        pid = leftover_pid(entry.name)
        if pid is None or _alive(pid):
            continue
        with contextlib.suppress(OSError):
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path)
            else:
                os.unlink(entry.path)
            removed.append(Path(entry.path))
    return removed


def fsync_path(path: PathLike) -> None:
    """``fsync`` a file or a folder (its entries: renames into it; a file system that cannot
    ``fsync`` a folder is let be)."""
    try:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as error:
        if not (os.path.isdir(path) and error.errno in (errno.EINVAL, errno.ENOTSUP,
                                                        errno.EBADF, errno.EACCES,
                                                        errno.EPERM)):
            raise


def write_error(error: OSError, path: PathLike, kept: str, option: str | None = None) -> OSError:
    """The error of a failed write on one line: the output (and ``option``), the reason with its
    errno, and what was kept; of the same type and errno as ``error``.

    Examples
    --------
    >>> print(write_error(OSError(errno.ENOSPC, "No space left on device"), "v.nc",
    ...                   "the old file is unchanged", "-o"))
    -o: cannot write v.nc: No space left on device (ENOSPC, errno 28); the old file is unchanged
    """
    code = error.errno if isinstance(error.errno, int) and error.errno > 0 else None
    reason = error.strerror or (os.strerror(code) if code else str(error))
    tag = f" ({errno.errorcode.get(code, '?')}, errno {code})" if code else ""
    prefix = f"{option}: " if option else ""
    new = type(error)(f"{prefix}cannot write {path}: {reason}{tag}; {kept}")
    new.errno = code
    return new


def disk_errno(folder: PathLike) -> int | None:
    """Whether the file system of ``folder`` fails writes now: ``ENOSPC`` when less than 1 MiB
    is free, else the errno of writing and ``fsync``-ing a 64 KiB probe (e.g. ``EIO``,
    ``EDQUOT``), else None. Tells what a library's error hides (netCDF/HDF5 reports a full
    disk as ``RuntimeError: NetCDF: HDF error``)."""
    try:
        info = os.statvfs(folder)
        if info.f_bavail * info.f_frsize < 1 << 20:
            return errno.ENOSPC
    except OSError:
        pass
    probe = temporary_path(Path(folder) / "xuqcal-probe")
    try:
        fd = os.open(probe, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        try:
            os.write(fd, b"\0" * (1 << 16))
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as error:
        return error.errno if error.errno in WRITE_ERRNOS else None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(probe)
    return None


@contextlib.contextmanager
def signals_deferred():
    """Defer SIGINT and SIGTERM (in the main thread) while a set of files is renamed into
    place: the set is committed whole, then the signal acts."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    wanted = {signal.SIGINT, signal.SIGTERM}
    old = signal.pthread_sigmask(signal.SIG_BLOCK, wanted)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def commit_set(pairs: Iterable[tuple[PathLike, PathLike]], *, overwrite: bool = False,
               option: str | None = None) -> None:
    """Rename each written and ``fsync``-ed temporary onto its final path, as one set: when a
    rename fails, the files already renamed are put back (the old ones restored from their
    backups, the new ones removed), so that the old set, or nothing, remains."""
    pairs = [(Path(tmp), Path(final)) for tmp, final in pairs]
    done: list[tuple[Path, Path | None]] = []
    with signals_deferred():
        try:
            for tmp, final in pairs:
                backup = None
                if os.path.lexists(final):
                    if not overwrite:
                        raise FileExistsError(f"{option + ': ' if option else ''}{final} "
                                              "already exists; pass --overwrite "
                                              "(overwrite=True) to replace it")
                    backup = temporary_path(final, "old")
                    os.replace(final, backup)
                done.append((final, backup))
                os.replace(tmp, final)
            for folder in {final.parent for _, final in pairs}:
                fsync_path(folder)
        except BaseException as error:
            for final, backup in reversed(done):
                with contextlib.suppress(OSError):
                    if backup is not None:
                        os.replace(backup, final)
                    else:
                        os.unlink(final)
            if isinstance(error, OSError) and not isinstance(error, FileExistsError) and \
                    pairs:
                raise write_error(error, ", ".join(str(f) for _, f in pairs),
                                  "the old files are unchanged", option) from error
            raise
    for _, backup in done:
        if backup is not None:
            with contextlib.suppress(OSError):
                os.unlink(backup)


def same_file(a: PathLike, b: PathLike) -> bool:
    """Whether two paths name the same file (resolved paths, or the same inode).

    Examples
    --------
    >>> same_file("x/../a.csv", "a.csv")
    True
    """
    a, b = Path(a), Path(b)
    if a.resolve() == b.resolve():
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def check_not_input(path: PathLike, inputs: Iterable[PathLike], option: str = "output") -> None:
    """Refuse an output ``path`` that is one of the ``inputs`` (whatever ``overwrite`` says).

    Examples
    --------
    >>> check_not_input("out.nc", ["in.csv"])
    >>> check_not_input("in.csv", ["./in.csv"])
    Traceback (most recent call last):
    ValueError: output: in.csv is also an input file; choose another output path
    """
    for source in inputs:
        if source is not None and same_file(path, source):
            raise ValueError(f"{option}: {path} is also an input file; choose another output "
                             "path")
        if source is not None and os.path.isdir(source) and _inside(path, source):
            raise ValueError(f"{option}: {path} is inside the input folder {source} (e.g. a "
                             "Zarr store); choose an output path outside it")


def _inside(path: PathLike, folder: PathLike) -> bool:
    """Whether ``path`` lies inside ``folder`` (resolved paths, links followed)."""
    try:
        real, top = Path(path).resolve(), Path(folder).resolve()
    except (OSError, RuntimeError):
        return False
    return real != top and top in real.parents


def check_folder_writable(folder: PathLike, option: str = "output") -> None:
    """Refuse a folder that does not exist, is not a folder or cannot be written to.

    Examples
    --------
    >>> check_folder_writable("no/such/folder")
    Traceback (most recent call last):
    FileNotFoundError: output: the folder no/such/folder does not exist; create it first
    """
    folder = Path(folder)
    shown = folder if str(folder) else Path(".")
    if not folder.exists():
        raise FileNotFoundError(f"{option}: the folder {shown} does not exist; create it first")
    if not folder.is_dir():
        raise NotADirectoryError(f"{option}: {shown} is a file, not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise PermissionError(f"{option}: the folder {shown} is not writable")
    probe = temporary_path(folder / "xuqcal-probe")
    try:  # what os.access cannot tell (e.g. /proc, some network or read-only mounts)
        os.close(os.open(probe, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except OSError as error:
        raise PermissionError(f"{option}: the folder {shown} is not writable "
                              f"({error.strerror or error})") from None
    os.unlink(probe)


def check_output_file(path: PathLike, *, overwrite: bool = False,
                      inputs: Iterable[PathLike] = (), option: str = "output") -> Path:
    """Check an output file before any computation and return it as a :class:`~pathlib.Path`.

    The path must not be an input or a folder, its folder must exist and be writable, and an
    existing file is refused unless ``overwrite``.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> check_output_file(folder / "out.nc").name
    'out.nc'
    >>> check_output_file(folder, overwrite=True)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    IsADirectoryError: output: ... is a folder; give a file name
    """
    shown = os.fspath(path)
    if shown.endswith(("/", os.sep)) and shown.rstrip("/" + os.sep):
        raise IsADirectoryError(f"{option}: {shown} ends with '/', which names a folder; give "
                                "a file name")
    path = Path(path)
    if os.path.isdir(path.parent):
        check_name_length(path, option)
    check_not_input(path, inputs, option)
    if path.is_dir():
        raise IsADirectoryError(f"{option}: {path} is a folder; give a file name")
    check_folder_writable(path.parent, option)
    if os.path.lexists(path):
        if not overwrite:
            raise FileExistsError(f"{option}: {path} already exists; pass --overwrite "
                                  "(overwrite=True) to replace it")
        check_replaceable(path, option)
    return path


_KINDS = ((stat.S_ISFIFO, "a named pipe"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def check_replaceable(path: PathLike, option: str = "output") -> None:
    """Refuse to replace an existing ``path`` that is not a regular file (a device, a named
    pipe, a socket: replacing it would destroy it, e.g. ``/dev/null``) or that is read-only
    (its write permission removed, the usual way to protect a file), even with ``overwrite``.

    A symbolic link is judged by its target; replacing it replaces the link, not the target.

    Examples
    --------
    >>> import tempfile, pathlib, os
    >>> file = pathlib.Path(tempfile.mkdtemp()) / "old.nc"
    >>> _ = file.write_text("old")
    >>> check_replaceable(file)
    >>> file.chmod(0o444)
    >>> check_replaceable(file)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    PermissionError: output: .../old.nc is read-only; make it writable (chmod u+w) to let ...
    """
    try:
        mode = os.stat(path).st_mode
    except OSError:  # a dangling symbolic link: replacing it loses nothing
        return
    for test, kind in _KINDS:
        if test(mode):
            raise ValueError(f"{option}: {path} is {kind}, not a regular file; xuqcal writes "
                             "a new file in its place, which would destroy it: choose "
                             "another path")
    if not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH) or not os.access(path, os.W_OK):
        raise PermissionError(f"{option}: {path} is read-only; make it writable (chmod u+w) to "
                              "let --overwrite replace it, or choose another path")


def check_name_length(path: PathLike, option: str = "output") -> None:
    """Refuse a file name longer than the file system allows (checked before computing).

    Examples
    --------
    >>> check_name_length("x" * 300 + ".nc")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ValueError: output: the file name xxx...x.nc is 303 bytes long; this file system allows ...
    """
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    try:
        limit = os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError, AttributeError):
        limit = 255
    size = len(os.fsencode(path.name))
    if size > limit:
        short = f"{path.name[:3]}...{path.name[-4:]}"
        raise ValueError(f"{option}: the file name {short} is {size} bytes long; this file "
                         f"system allows at most {limit}: choose a shorter name")


# ------------------------------------------------------------------------------- manifests


def file_digest(path: PathLike) -> str:
    """SHA-256 of a file's content (hex)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _valid_entry(name: object) -> bool:
    if not isinstance(name, str) or not name or "\\" in name:
        return False
    parts = PurePosixPath(name).parts
    return not PurePosixPath(name).is_absolute() and ".." not in parts and MANIFEST not in parts


def config_dir() -> Path:
    """xuqcal's configuration folder: ``$XUQCAL_CONFIG_DIR``, else
    ``$XDG_CONFIG_HOME/xuqcal``, else ``~/.config/xuqcal``."""
    if os.environ.get("XUQCAL_CONFIG_DIR"):
        return Path(os.environ["XUQCAL_CONFIG_DIR"])
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"),
                                                             ".config")
    return Path(base) / "xuqcal"


def manifest_key(create: bool = True) -> bytes | None:
    """The secret that signs the manifests of this user account (``manifest.key`` in
    :func:`config_dir`, readable by the user alone; made on first use), or None when it
    cannot be read or made (then manifests are unsigned and authorise nothing)."""
    path = config_dir() / "manifest.key"
    with contextlib.suppress(OSError, ValueError):
        return bytes.fromhex(path.read_text(encoding="ascii").strip()) or None
    if not create:
        return None
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = temporary_path(path)
        fd = os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as handle:
            handle.write(secrets.token_hex(32) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.link(tmp, path)  # the first process to make it wins
        except FileExistsError:
            pass
        finally:
            os.unlink(tmp)
        return bytes.fromhex(path.read_text(encoding="ascii").strip()) or None
    except (OSError, ValueError):
        return None


def _signature(key: bytes, name: str, digest: str) -> str:
    return hmac.new(key, f"xuqcal-manifest\0{name}\0{digest}".encode(), "sha256").hexdigest()


def manifest_entries(folder: PathLike) -> tuple[dict[str, str], dict[str, str]]:
    """The entries of the manifest of ``folder``: (those signed by xuqcal for this user
    account, all of them); relative path -> SHA-256."""
    path = Path(folder) / MANIFEST
    if not path.is_file():
        return {}, {}
    try:
        content = json.loads(path.read_text(encoding="utf-8"))
        files = content["files"]
        signatures = content.get("signatures", {})
        if not isinstance(files, Mapping) or not isinstance(signatures, Mapping):
            raise TypeError
    except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError) as error:
        raise ValueError(f"{path}: not a valid xuqcal manifest ({error or 'bad structure'}); "
                         "remove it, and the files it listed, by hand") from None
    every = {str(k): str(v) for k, v in files.items() if _valid_entry(k)}
    key = manifest_key(create=False) if every else None
    signed = {k: v for k, v in every.items() if key is not None and isinstance(
        signatures.get(k), str) and hmac.compare_digest(signatures[k], _signature(key, k, v))}
    return signed, every


def read_manifest(folder: PathLike) -> dict[str, str]:
    """The files xuqcal wrote in ``folder``: relative path -> SHA-256 (empty if none); only
    the entries that carry xuqcal's signature (see :func:`manifest_key`).

    Examples
    --------
    >>> read_manifest("no/such/folder")
    {}
    """
    return manifest_entries(folder)[0]


def write_manifest(folder: PathLike, files: Mapping[str, str]) -> None:
    """Write the manifest of ``folder`` atomically (a temporary file renamed), each entry
    signed with :func:`manifest_key`."""
    folder = Path(folder)
    key = manifest_key()
    files = dict(sorted(files.items()))
    signatures = {k: _signature(key, k, v) for k, v in files.items()} if key else {}
    text = json.dumps({"written_by": "xuqcal", "files": files, "signatures": signatures},
                      indent=1)
    tmp = temporary_path(folder / MANIFEST)
    try:
        try:
            with open(tmp, "w", encoding="utf-8") as handle:
                handle.write(text + "\n")
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, folder / MANIFEST)
        except OSError as error:
            raise write_error(error, folder / MANIFEST, "the old manifest is unchanged") \
                from error
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)


def owned(folder: PathLike, name: str, manifest: Mapping[str, str]) -> bool:
    """Whether ``folder/name`` is a file xuqcal wrote and nobody changed since."""
    path = Path(folder) / name
    return name in manifest and path.is_file() and file_digest(path) == manifest[name]


def _not_owned_reason(folder: PathLike, name: str) -> str:
    """Why ``folder/name`` is not replaced (for messages)."""
    with contextlib.suppress(ValueError):
        signed, every = manifest_entries(folder)
        if name in every and name not in signed:
            return (f"its entry in {MANIFEST} does not carry xuqcal's signature for this user "
                    "account (a manifest written by hand, copied from another account, or by "
                    "an older xuqcal), so it authorises nothing")
    return "it was not written by xuqcal (or was changed since)"


def check_folder(folder: PathLike, planned: Iterable[str], *, overwrite: bool = False,
                 inputs: Iterable[PathLike] = (), refuse_nonempty: bool = False,
                 option: str = "output") -> None:
    """Check a results folder before any computation; nothing is changed.

    ``planned`` lists the files (relative paths) xuqcal will write there. The folder's parent
    (or the folder, when it exists) must be writable; without ``overwrite`` an existing planned
    file (or, with ``refuse_nonempty``, any file) is refused; with it, a planned file that
    exists must be one that xuqcal wrote (listed in the manifest and unchanged). No planned
    file may be an input.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "index.html").write_text("mine")
    >>> check_folder(folder, ["index.html"], overwrite=True)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    FileExistsError: output: .../index.html was not written by xuqcal ...
    """
    folder = Path(folder)
    planned = list(planned)
    for name in planned:
        check_not_input(folder / name, inputs, option)
    if not folder.exists():
        check_folder_writable(folder.parent, option)
        return
    if not folder.is_dir():
        raise NotADirectoryError(f"{option}: {folder} is a file, not a folder")
    check_folder_writable(folder, option)
    check_manifest_file(folder, option)
    if refuse_nonempty and not overwrite and has_content(folder):
        raise FileExistsError(f"{option}: {folder} already exists and is not empty; pass "
                              "--overwrite (overwrite=True) to replace what xuqcal wrote there")
    manifest = read_manifest(folder) if overwrite else {}
    for name in planned:
        path = folder / name
        for parent in reversed(PurePosixPath(name).parents[:-1]):
            sub = folder / parent
            if sub.exists() and not sub.is_dir():
                raise NotADirectoryError(f"{option}: {sub} is a file, not a folder")
            if sub.is_dir():
                check_folder_writable(sub, option)
        if not os.path.lexists(path):
            continue
        if not overwrite:
            raise FileExistsError(f"{option}: {path} already exists; pass --overwrite "
                                  "(overwrite=True) to replace it")
        if path.is_dir() or not owned(folder, name, manifest):
            why = _not_owned_reason(folder, name)
            if why.startswith("it was not"):
                raise FileExistsError(
                    f"{option}: {path} was not written by xuqcal (or was changed since), so "
                    "--overwrite does not replace it; move it away or choose another folder")
            raise FileExistsError(f"{option}: {path} was not written by xuqcal as far as it "
                                  f"can tell: {why}; --overwrite does not replace it: move it "
                                  "away or choose another folder")


def has_content(folder: PathLike) -> bool:
    """Whether ``folder`` holds anything but the leftovers of xuqcal's runs (temporary files,
    staging folders, the lock files of outputs written inside it: they never make a folder
    non-empty)."""
    return any(leftover_pid(p.name) is None and not is_lock_file(p)
               for p in Path(folder).iterdir())


class ManagedFolder:
    """Writes files into a results folder through a hidden staging folder, and moves them into
    place only when the run is complete (:meth:`close`): a run that fails or is interrupted
    (:meth:`abort`, or leaving a ``with`` block on an exception) leaves the folder as it was,
    and removes it when this run created it.

    :meth:`close` records the files in the folder's manifest and removes the files of an
    earlier run that this run did not write again, when they are unchanged; nothing else in
    the folder is touched.

    The folder is locked (:func:`xuqcal.io.locks.locked`, its lock file ``.<folder>.lock`` in
    the parent folder) from its creation or its checks to :meth:`close` or :meth:`abort`:
    another writer of the same folder is refused at once with a
    :class:`~xuqcal.io.locks.FileInUseError` naming this process and ``what``.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> with ManagedFolder(pathlib.Path(tempfile.mkdtemp()) / "r", overwrite=False) as folder:
    ...     _ = folder.write_text("index.html", "<html></html>")
    ...     (folder.folder / "index.html").exists()  # not yet in place
    False
    >>> sorted(read_manifest(folder.folder))
    ['index.html']
    """

    def __init__(self, folder: PathLike, *, overwrite: bool, inputs: Iterable[PathLike] = (),
                 option: str = "output", what: str = "xuqcal, writing a results folder",
                 ) -> None:
        self.folder = Path(folder)
        self.overwrite = overwrite
        self.inputs = [Path(p) for p in inputs if p is not None]
        self.option = option
        self.closed = True  # until staged
        self._lock = contextlib.ExitStack()
        self._lock.enter_context(locked(self.folder, what, option=option))
        try:
            self._open()
        except BaseException:
            self._lock.close()
            raise
        self.closed = False

    def _open(self) -> None:
        """Check the folder (created when missing) and make the staging folder."""
        option = self.option
        self.created = not self.folder.exists()
        if self.created:
            check_folder_writable(self.folder.parent, option)
            self.folder.mkdir()
        else:
            remove_leftovers(self.folder)
        check_manifest_file(self.folder, option)
        self.previous = read_manifest(self.folder) if self.overwrite else {}
        self.files = {k: v for k, v in self.previous.items() if (self.folder / k).is_file()}
        self.written: set[str] = set()  # staged, moved into place by close()
        self.staging = self.folder / f".xuqcal-staging-{os.getpid()}-{secrets.token_hex(6)}"
        self.staging.mkdir()

    def __enter__(self) -> ManagedFolder:
        return self

    def __exit__(self, kind, value, tb) -> None:
        if kind is None:
            self.close()
        else:
            self.abort()

    def _check_target(self, name: str) -> Path:
        if not _valid_entry(name):
            raise ValueError(f"{self.option}: {name!r} is not a file name inside the folder")
        path = self.folder / name
        check_not_input(path, self.inputs, self.option)
        if os.path.lexists(path) and not (self.overwrite and owned(self.folder, name,
                                                                   self.previous)):
            why = _not_owned_reason(self.folder, name)
            raise FileExistsError(
                f"{self.option}: {path} exists and {why[3:]}; it is left alone: move it "
                "away or choose another folder")
        return path

    def target(self, name: str) -> Path:
        """Where to write ``name`` (in the staging folder), after checking that its final place
        is free or holds a file xuqcal wrote; then :meth:`commit` it."""
        self._check_target(name)
        staged = self.staging / name
        staged.parent.mkdir(parents=True, exist_ok=True)
        return staged

    def temporary(self, name: str) -> Path:
        """A temporary path beside the staged ``name`` (renamed onto it by :meth:`commit`)."""
        return temporary_path(self.target(name))

    def commit(self, name: str, tmp: Path | None = None) -> Path:
        """Record the staged ``name`` (moving ``tmp`` onto it first, when given); it is moved
        into the folder by :meth:`close`. Returns its final path."""
        try:
            fsync_path(tmp if tmp is not None else self.staging / name)
            if tmp is not None:
                os.replace(tmp, self.staging / name)
        except OSError as error:
            raise self.write_error(error, name) from error
        self.written.add(name)
        return self.folder / name

    def write_text(self, name: str, text: str) -> Path:
        """Write a text file (staged) and record it."""
        tmp = self.temporary(name)
        try:
            try:
                tmp.write_text(text, encoding="utf-8")
            except OSError as error:
                raise self.write_error(error, name) from error
            return self.commit(name, tmp)
        finally:
            if os.path.lexists(tmp):
                os.unlink(tmp)

    def write_error(self, error: OSError, name: str) -> OSError:
        """The one-line error of a failed write of ``name`` (:func:`write_error`)."""
        kept = ("nothing of this run is left" if self.created else
                "the folder is left as it was")
        if "cannot write" in str(error):  # already named (by io.to_netcdf): keep its reason
            error = OSError(error.errno, os.strerror(error.errno)) if error.errno else error
        return write_error(error, self.folder / name, kept, self.option)

    def close(self) -> None:
        """Move the staged files into place, record them in the manifest, and remove the
        unchanged files of an earlier run that this run did not write again: as one set (the
        files replaced or removed are kept in the staging folder until the manifest is
        written; on a failure they are put back, and the folder is as it was)."""
        if self.closed:
            return
        for name in sorted(self.written):  # checked again: the folder may have changed
            self._check_target(name)
        backups = self.staging / ".old"
        moved: list[tuple[str, bool]] = []  # (name, whether an old file was kept aside)
        removed: list[str] = []
        files = dict(self.files)
        try:
            with signals_deferred():
                try:
                    for name in sorted(self.written):
                        path = self.folder / name
                        path.parent.mkdir(parents=True, exist_ok=True)
                        digest = file_digest(self.staging / name)
                        kept = os.path.lexists(path)
                        if kept:
                            (backups / name).parent.mkdir(parents=True, exist_ok=True)
                            os.replace(path, backups / name)
                        moved.append((name, kept))
                        os.replace(self.staging / name, path)
                        files[name] = digest
                    for name in list(files):
                        if name in self.written:
                            continue
                        if owned(self.folder, name, self.previous):
                            (backups / name).parent.mkdir(parents=True, exist_ok=True)
                            os.replace(self.folder / name, backups / name)
                            removed.append(name)
                        del files[name]
                    write_manifest(self.folder, files)
                    for sub in {(self.folder / name).parent for name in self.written}:
                        fsync_path(sub)
                except BaseException as error:
                    for name, kept in reversed(moved):
                        with contextlib.suppress(OSError):
                            if kept:
                                os.replace(backups / name, self.folder / name)
                            else:
                                os.unlink(self.folder / name)
                    for name in removed:
                        with contextlib.suppress(OSError):
                            os.replace(backups / name, self.folder / name)
                    if isinstance(error, OSError) and "cannot write" not in str(error):
                        raise self.write_error(error, moved[-1][0] if moved else MANIFEST) \
                            from error
                    raise
            self.files = files
        finally:
            shutil.rmtree(self.staging, ignore_errors=True)
            self.closed = True
            if self.created and not self.files:
                with contextlib.suppress(OSError):
                    self.folder.rmdir()  # only if empty
            self._lock.close()

    def abort(self) -> None:
        """Forget the staged files: the folder is left as it was (and removed when this run
        created it and it holds nothing else)."""
        if self.closed:
            return
        shutil.rmtree(self.staging, ignore_errors=True)
        self.closed = True
        if self.created:
            with contextlib.suppress(OSError):
                self.folder.rmdir()  # only if empty
        self._lock.close()


def check_manifest_file(folder: PathLike, option: str = "output") -> None:
    """Refuse a folder whose manifest path is not a regular file (e.g. a folder)."""
    path = Path(folder) / MANIFEST
    if os.path.lexists(path) and (path.is_symlink() or not path.is_file()):
        raise ValueError(f"{option}: {path} is not a file written by xuqcal (it is a "
                         f"{'symbolic link' if path.is_symlink() else 'folder'}); move it away")


def remove_written(folder: PathLike) -> None:
    """Remove what xuqcal wrote in ``folder`` (the unchanged files of its manifest, the
    manifest), then the folders left empty: the undo of a run that created ``folder``."""
    folder = Path(folder)
    try:
        manifest = read_manifest(folder)
    except ValueError:
        return
    for name in manifest:
        if owned(folder, name, manifest):
            (folder / name).unlink()
    with contextlib.suppress(OSError):
        (folder / MANIFEST).unlink()
    for sub in sorted((p for p in folder.rglob("*") if p.is_dir()), reverse=True):
        with contextlib.suppress(OSError):
            sub.rmdir()
    with contextlib.suppress(OSError):
        folder.rmdir()
