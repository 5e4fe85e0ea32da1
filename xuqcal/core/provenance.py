"""The attributes that say how a result was computed, attached in one place.

Every result of xuqcal carries ``xuqcal_version`` and ``created`` (UTC, ISO 8601 to the second)
besides its parameters; :func:`attach` is the only place that writes them.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, TypeVar

from xuqcal._version import __version__

T = TypeVar("T")


def created() -> str:
    """The current time as recorded in ``created`` attributes (``2026-11-22T19:51:40+00:00``)."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def provenance(parameters: Mapping[str, Any] | None = None, **more: Any) -> dict[str, Any]:
    """The attributes of a result: its parameters (``None`` values dropped), the version and
    the creation time.

    Examples
    --------
    >>> sorted(provenance({"seed": 0, "chunks": None}))
    ['created', 'seed', 'xuqcal_version']
    """
    attrs = {k: v for k, v in {**(parameters or {}), **more}.items() if v is not None}
    attrs["xuqcal_version"] = __version__
    attrs["created"] = created()
    return attrs


def attach(result: T, parameters: Mapping[str, Any] | None = None, **more: Any) -> T:
    """``result`` (a Dataset or DataArray) with :func:`provenance` added to its attributes
    (existing attributes kept unless a parameter of the same name replaces them)."""
    result.attrs.update(provenance(parameters, **more))
    return result
