"""Checks of output paths before any computation, and manifests of the files xuqcal wrote.

One rule for every command and writer of the package:

- the folder an output goes to must exist and be writable (it is never created with its
  parents: a missing folder is usually a typo);
- an output file must not be a folder, and an existing one is replaced only with
  ``overwrite``;
- an output never replaces an input, with or without ``overwrite``;
- in a folder of results (a report, the demo), ``overwrite`` replaces only the files that
  xuqcal itself wrote there, listed with their SHA-256 in ``.xuqcal-manifest.json``; a file
  that is not listed, or that was changed since, is never replaced or removed.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import shutil
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePosixPath

MANIFEST = ".xuqcal-manifest.json"
"""Name of the manifest of the files xuqcal wrote in a folder."""

PathLike = str | os.PathLike[str]


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
    probe = folder / f".xuqcal-probe-{secrets.token_hex(6)}.tmp"
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


def read_manifest(folder: PathLike) -> dict[str, str]:
    """The files xuqcal wrote in ``folder``: relative path -> SHA-256 (empty if none).

    Examples
    --------
    >>> read_manifest("no/such/folder")
    {}
    """
    path = Path(folder) / MANIFEST
    if not path.is_file():
        return {}
    try:
        content = json.loads(path.read_text(encoding="utf-8"))
        files = content["files"]
        if not isinstance(files, Mapping):
            raise TypeError
    except (ValueError, KeyError, TypeError, UnicodeDecodeError) as error:
        raise ValueError(f"{path}: not a valid xuqcal manifest ({error or 'bad structure'}); "
                         "remove it, and the files it listed, by hand") from None
    return {str(k): str(v) for k, v in files.items() if _valid_entry(k)}


def write_manifest(folder: PathLike, files: Mapping[str, str]) -> None:
    """Write the manifest of ``folder`` atomically (a temporary file renamed)."""
    folder = Path(folder)
    text = json.dumps({"written_by": "xuqcal", "files": dict(sorted(files.items()))},
                      indent=1)
    tmp = folder / f".{MANIFEST}.{secrets.token_hex(6)}.tmp"
    try:
        tmp.write_text(text + "\n", encoding="utf-8")
        os.replace(tmp, folder / MANIFEST)
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)


def owned(folder: PathLike, name: str, manifest: Mapping[str, str]) -> bool:
    """Whether ``folder/name`` is a file xuqcal wrote and nobody changed since."""
    path = Path(folder) / name
    return name in manifest and path.is_file() and file_digest(path) == manifest[name]


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
    if refuse_nonempty and not overwrite and any(folder.iterdir()):
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
            raise FileExistsError(
                f"{option}: {path} was not written by xuqcal (or was changed since), so "
                "--overwrite does not replace it; move it away or choose another folder")


class ManagedFolder:
    """Writes files into a results folder through a hidden staging folder, and moves them into
    place only when the run is complete (:meth:`close`): a run that fails or is interrupted
    (:meth:`abort`, or leaving a ``with`` block on an exception) leaves the folder as it was,
    and removes it when this run created it.

    :meth:`close` records the files in the folder's manifest and removes the files of an
    earlier run that this run did not write again, when they are unchanged; nothing else in
    the folder is touched.

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
                 option: str = "output") -> None:
        self.folder = Path(folder)
        self.overwrite = overwrite
        self.inputs = [Path(p) for p in inputs if p is not None]
        self.option = option
        self.created = not self.folder.exists()
        if self.created:
            check_folder_writable(self.folder.parent, option)
            self.folder.mkdir()
        check_manifest_file(self.folder, option)
        self.previous = read_manifest(self.folder) if overwrite else {}
        self.files = {k: v for k, v in self.previous.items() if (self.folder / k).is_file()}
        self.written: set[str] = set()  # staged, moved into place by close()
        self.staging = self.folder / f".xuqcal-staging-{secrets.token_hex(6)}"
        self.staging.mkdir()
        self.closed = False

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
            raise FileExistsError(
                f"{self.option}: {path} exists and was not written by xuqcal (or was changed "
                "since); it is left alone: move it away or choose another folder")
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
        path = self.target(name)
        return path.with_name(f".{path.name[:40]}.{secrets.token_hex(6)}.tmp")

    def commit(self, name: str, tmp: Path | None = None) -> Path:
        """Record the staged ``name`` (moving ``tmp`` onto it first, when given); it is moved
        into the folder by :meth:`close`. Returns its final path."""
        if tmp is not None:
            os.replace(tmp, self.staging / name)
        self.written.add(name)
        return self.folder / name

    def write_text(self, name: str, text: str) -> Path:
        """Write a text file (staged) and record it."""
        tmp = self.temporary(name)
        try:
            tmp.write_text(text, encoding="utf-8")
            return self.commit(name, tmp)
        finally:
            if os.path.lexists(tmp):
                os.unlink(tmp)

    def close(self) -> None:
        """Move the staged files into place, record them in the manifest, and remove the
        unchanged files of an earlier run that this run did not write again."""
        if self.closed:
            return
        for name in sorted(self.written):  # checked again: the folder may have changed
            self._check_target(name)
        try:
            for name in sorted(self.written):
                path = self.folder / name
                path.parent.mkdir(parents=True, exist_ok=True)
                digest = file_digest(self.staging / name)
                os.replace(self.staging / name, path)
                self.files[name] = digest
            for name in list(self.files):
                if name in self.written:
                    continue
                if owned(self.folder, name, self.previous):
                    (self.folder / name).unlink()
                del self.files[name]
        finally:
            write_manifest(self.folder, self.files)
            shutil.rmtree(self.staging, ignore_errors=True)
            self.closed = True

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
