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

import hashlib
import json
import os
import secrets
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
    path = Path(path)
    check_not_input(path, inputs, option)
    if path.is_dir():
        raise IsADirectoryError(f"{option}: {path} is a folder; give a file name")
    check_folder_writable(path.parent, option)
    if os.path.lexists(path) and not overwrite:
        raise FileExistsError(f"{option}: {path} already exists; pass --overwrite "
                              "(overwrite=True) to replace it")
    return path


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
    """Writes files into a results folder, keeping its manifest up to date after each file.

    Files of an earlier run that this run did not write again are removed by :meth:`close`
    when they are unchanged; nothing else in the folder is touched.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> folder = ManagedFolder(pathlib.Path(tempfile.mkdtemp()) / "r", overwrite=False)
    >>> folder.write_text("index.html", "<html></html>").name
    'index.html'
    >>> folder.close()
    >>> sorted(read_manifest(folder.folder))
    ['index.html']
    """

    def __init__(self, folder: PathLike, *, overwrite: bool, inputs: Iterable[PathLike] = (),
                 option: str = "output") -> None:
        self.folder = Path(folder)
        self.overwrite = overwrite
        self.inputs = [Path(p) for p in inputs if p is not None]
        self.option = option
        if not self.folder.exists():
            check_folder_writable(self.folder.parent, option)
            self.folder.mkdir()
        self.previous = read_manifest(self.folder) if overwrite else {}
        self.files = {k: v for k, v in self.previous.items() if (self.folder / k).is_file()}
        self.written: set[str] = set()

    def target(self, name: str) -> Path:
        """The path of ``name`` in the folder, checked: absent, or written by xuqcal."""
        if not _valid_entry(name):
            raise ValueError(f"{self.option}: {name!r} is not a file name inside the folder")
        path = self.folder / name
        check_not_input(path, self.inputs, self.option)
        mine = name in self.written and owned(self.folder, name, self.files)
        if os.path.lexists(path) and not mine and not (
                self.overwrite and owned(self.folder, name, self.previous)):
            raise FileExistsError(
                f"{self.option}: {path} exists and was not written by xuqcal (or was changed "
                "since); it is left alone: move it away or choose another folder")
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    def temporary(self, name: str) -> Path:
        """A temporary path beside ``name`` (same folder, so that a rename is atomic)."""
        path = self.target(name)
        return path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")

    def commit(self, name: str, tmp: Path | None = None) -> Path:
        """Record ``name`` (moving ``tmp`` onto it first, when given) in the manifest."""
        path = self.folder / name
        if tmp is not None:
            os.replace(tmp, path)
        self.files[name] = file_digest(path)
        self.written.add(name)
        write_manifest(self.folder, self.files)
        return path

    def write_text(self, name: str, text: str) -> Path:
        """Write a text file atomically and record it."""
        tmp = self.temporary(name)
        try:
            tmp.write_text(text, encoding="utf-8")
            return self.commit(name, tmp)
        finally:
            if os.path.lexists(tmp):
                os.unlink(tmp)

    def close(self) -> None:
        """Remove the unchanged files of an earlier run that this run did not write again."""
        for name in list(self.files):
            if name in self.written:
                continue
            if owned(self.folder, name, self.previous):
                (self.folder / name).unlink()
            del self.files[name]
        write_manifest(self.folder, self.files)
