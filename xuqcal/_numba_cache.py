"""Where Numba caches the compiled kernels of :mod:`xuqcal.core.kernels`.

The kernels are compiled with ``cache=True``: the first call on a machine compiles (minutes
for all of them), later processes load the machine code from the cache. By default Numba
writes that cache to ``__pycache__`` next to the source, which works in a checkout or a user's
own environment; an installed package in a read-only ``site-packages`` cannot be written there.
Importing :mod:`xuqcal` then points Numba at a user cache directory, :func:`user_cache_dir`
``/numba`` (``$XDG_CACHE_HOME/xuqcal/numba``, by default ``~/.cache/xuqcal/numba``), through
``NUMBA_CACHE_DIR``. The choice (:func:`numba_cache_dir`):

1. ``NUMBA_CACHE_DIR`` set by the user: left as it is (xuqcal sets nothing);
2. ``XUQCAL_CACHE_DIR`` set: ``$XUQCAL_CACHE_DIR/numba``, always;
3. the folder of :mod:`xuqcal.core.kernels` (or its ``__pycache__``) not writable: the user
   cache directory above;
4. otherwise nothing is set, and Numba writes ``__pycache__`` next to the source, as before.

``NUMBA_CACHE_DIR`` is read by every Numba function of the process (and inherited by its
subprocesses, Dask workers included), so the other packages' caches go under the same folder
while it is set. Deleting the folder is safe: the kernels are compiled again on next use.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

#: Environment variable naming xuqcal's cache folder (the Numba cache is its ``numba`` folder).
ENV_CACHE_DIR = "XUQCAL_CACHE_DIR"
#: The folder of :mod:`xuqcal.core.kernels`, whose ``__pycache__`` Numba writes by default.
KERNELS_DIR = Path(__file__).resolve().parent / "core"
#: The line ``xuqcal demo`` prints (to stderr) before compiling on a cold cache.
COMPILING_MESSAGE = ("xuqcal: compiling the numerical kernels (once per machine, a few "
                     "minutes; later runs load them from the cache)...")


def user_cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """xuqcal's user cache folder: ``$XUQCAL_CACHE_DIR``, else ``$XDG_CACHE_HOME/xuqcal``, else
    ``~/.cache/xuqcal`` (``%LOCALAPPDATA%\\xuqcal\\Cache`` on Windows).

    Parameters
    ----------
    environ : mapping, optional
        The environment (default :data:`os.environ`).

    Returns
    -------
    pathlib.Path
        The folder (not created).

    Examples
    --------
    >>> user_cache_dir({"XDG_CACHE_HOME": "/tmp/c"}).as_posix()
    '/tmp/c/xuqcal'
    """
    environ = os.environ if environ is None else environ
    if environ.get(ENV_CACHE_DIR):
        return Path(environ[ENV_CACHE_DIR]).expanduser()
    if sys.platform == "win32" and environ.get("LOCALAPPDATA"):
        return Path(environ["LOCALAPPDATA"]) / "xuqcal" / "Cache"
    if environ.get("XDG_CACHE_HOME"):
        return Path(environ["XDG_CACHE_HOME"]).expanduser() / "xuqcal"
    return Path.home() / ".cache" / "xuqcal"


def writable(folder: Path) -> bool:
    """Whether Numba can write its in-tree cache for the sources in ``folder``: its
    ``__pycache__`` if that exists, else the folder itself (where it would be created).

    Parameters
    ----------
    folder : pathlib.Path
        The folder of the source files.

    Returns
    -------
    bool
    """
    pycache = folder / "__pycache__"
    target = pycache if pycache.is_dir() else folder
    return os.access(target, os.W_OK | os.X_OK)


def numba_cache_dir(environ: Mapping[str, str] | None = None,
                    kernels_dir: Path = KERNELS_DIR) -> Path | None:
    """The folder to give Numba as ``NUMBA_CACHE_DIR``, or None to leave Numba's default.

    Parameters
    ----------
    environ : mapping, optional
        The environment (default :data:`os.environ`).
    kernels_dir : pathlib.Path, optional
        The folder of the kernel sources (default that of :mod:`xuqcal.core.kernels`).

    Returns
    -------
    pathlib.Path or None
        None when ``NUMBA_CACHE_DIR`` is set already, or when no ``XUQCAL_CACHE_DIR`` is set
        and Numba can write next to the sources; else ``user_cache_dir() / "numba"``.

    Examples
    --------
    >>> numba_cache_dir({"NUMBA_CACHE_DIR": "/tmp/mine", "XUQCAL_CACHE_DIR": "/tmp/x"}) is None
    True
    >>> numba_cache_dir({"XUQCAL_CACHE_DIR": "/tmp/x"}).as_posix()
    '/tmp/x/numba'
    """
    environ = os.environ if environ is None else environ
    if environ.get("NUMBA_CACHE_DIR"):
        return None
    if not environ.get(ENV_CACHE_DIR) and writable(kernels_dir):
        return None
    return user_cache_dir(environ) / "numba"


def configure() -> Path | None:
    """Set ``NUMBA_CACHE_DIR`` to :func:`numba_cache_dir` when that is not None (called when
    :mod:`xuqcal` is imported, before Numba is); also updates Numba's configuration when Numba
    was imported before xuqcal.

    Returns
    -------
    pathlib.Path or None
        The folder set, or None when nothing was set.
    """
    folder = numba_cache_dir()
    if folder is None:
        return None
    os.environ["NUMBA_CACHE_DIR"] = str(folder)
    config = sys.modules.get("numba.core.config")
    if config is not None:  # Numba read its environment already
        config.CACHE_DIR = str(folder)
    return folder


def kernels_cold() -> bool:
    """Whether no kernel of :mod:`xuqcal.core.kernels` has machine code in Numba's cache for the
    current sources (a first run on this machine, or after an upgrade): the next analysis
    compiles them.

    Returns
    -------
    bool
        True when not one cached kernel has an index entry; False when any has, or when the
        cache cannot be inspected (never a reason to fail).
    """
    try:
        from numba.core.dispatcher import Dispatcher

        from xuqcal.core import kernels

        caches = [f._cache for f in vars(kernels).values()
                  if isinstance(f, Dispatcher) and getattr(f, "_cache", None) is not None
                  and type(f._cache).__name__ == "FunctionCache"]
        if not caches:
            return False
        # the index of a kernel whose source changed (its stamp differs) loads empty
        return not any(cache._cache_file._load_index() for cache in caches)
    except Exception:  # a private Numba API: when it changes, say nothing
        return False


def announce_if_cold(stream=None) -> bool:
    """Print :data:`COMPILING_MESSAGE` to ``stream`` (default stderr) when :func:`kernels_cold`.

    Parameters
    ----------
    stream : file-like, optional
        Where to print (default :data:`sys.stderr`).

    Returns
    -------
    bool
        Whether the message was printed.
    """
    if not kernels_cold():
        return False
    print(COMPILING_MESSAGE, file=sys.stderr if stream is None else stream, flush=True)
    return True


#: The folder set as ``NUMBA_CACHE_DIR`` when :mod:`xuqcal` was imported (None: nothing set).
#: :mod:`xuqcal` imports this module before any module that imports Numba.
CONFIGURED = configure()
