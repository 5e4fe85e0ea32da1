"""Computing with Dask's own progress display (cubes and simulation studies).

With ``progress`` on (the argument, else the option ``progress`` of
:func:`xuqcal.set_options`), a computation shows :class:`dask.diagnostics.ProgressBar` on
the local schedulers, or :func:`distributed.progress` when a ``dask.distributed`` client is
active. The numbers never depend on it.
"""

from __future__ import annotations

import sys
from typing import Any

import dask

from xuqcal.core.checks import check_bool
from xuqcal.options import OPTIONS

__all__ = ["compute", "enabled"]


def enabled(progress: bool | None) -> bool:
    """Whether to show progress: ``progress`` when given, else the option ``progress``.

    Examples
    --------
    >>> import xuqcal
    >>> enabled(None), enabled(True)
    (False, True)
    >>> with xuqcal.set_options(progress=True):
    ...     enabled(None)
    True
    """
    if progress is None:
        return bool(OPTIONS["progress"])
    return check_bool(progress, "progress")


def _client() -> Any:
    """The active ``dask.distributed`` client, or None."""
    try:
        from distributed import default_client
    except ImportError:  # pragma: no cover - distributed is a dependency of the CLI only
        return None
    try:
        return default_client()
    except ValueError:
        return None


def compute(*collections: Any, progress: bool | None = None) -> tuple[Any, ...]:
    """``dask.compute(*collections)``, showing Dask's progress when :func:`enabled`.

    Examples
    --------
    >>> import dask.array as da
    >>> compute(da.ones(4, chunks=2).sum(), progress=False)
    (np.float64(4.0),)
    """
    if not enabled(progress):
        return dask.compute(*collections)
    client = _client()
    if client is None:
        from dask.diagnostics import ProgressBar

        with ProgressBar(out=sys.stderr):
            return dask.compute(*collections)
    from distributed import progress as show

    persisted = client.persist(list(collections))
    show(*persisted)
    return dask.compute(*persisted)
