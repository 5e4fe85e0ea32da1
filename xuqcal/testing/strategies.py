"""Hypothesis strategies for valid xuqcal inputs and chunkings (needs ``hypothesis``, a test
extra), as flox's and xarray's strategies.

Examples
--------
>>> from hypothesis import given, settings
>>> from xuqcal.testing.strategies import chunkings, datasets
>>> @settings(max_examples=5, deadline=None)
... @given(datasets(min_size=10, max_size=30))
... def test_sizes(ds):
...     assert 10 <= ds.sizes["sample"] <= 30
>>> test_sizes()
"""

from __future__ import annotations

import itertools

import numpy as np
import xarray as xr
from hypothesis import strategies as st

__all__ = ["chunkings", "datasets", "seeds"]


def seeds() -> st.SearchStrategy[int]:
    """Seeds of the counter-based random streams (the full accepted range, 0 … 2**64 - 1)."""
    return st.integers(min_value=0, max_value=2**64 - 1)


@st.composite
def chunkings(draw, size: int, max_chunks: int | None = None) -> tuple[int, ...]:
    """A tuple of positive chunk sizes adding up to ``size`` (one chunk, equal chunks or random
    cuts), for ``chunks=`` along ``replicate`` or ``ds.chunk(sample=...)``.

    Examples
    --------
    >>> from hypothesis import given
    >>> @given(chunkings(10))
    ... def test_sum(chunks):
    ...     assert sum(chunks) == 10
    >>> test_sum()
    """
    if size < 1:
        raise ValueError(f"size: expected a positive integer, got {size!r}")
    limit = size if max_chunks is None else min(size, max_chunks)
    cuts = draw(st.sets(st.integers(1, size - 1), max_size=limit - 1)) if size > 1 else set()
    bounds = [0, *sorted(cuts), size]
    return tuple(b - a for a, b in itertools.pairwise(bounds))


@st.composite
def datasets(draw, *, min_size: int = 2, max_size: int = 200, ties: bool = True,
             features: int = 0, E: str = "E", uE: str = "uE") -> xr.Dataset:
    """A valid input Dataset over ``sample``: finite ``E``, finite positive ``uE`` (with ties
    when ``ties``: uE drawn from a few distinct values), and ``features`` numeric features
    ``X1, X2, ...``; variable names by role (``E=``, ``uE=``).

    Examples
    --------
    >>> from hypothesis import given, settings
    >>> @settings(max_examples=5, deadline=None)
    ... @given(datasets(E="err", uE="sigma"))
    ... def test_names(ds):
    ...     assert set(ds.data_vars) == {"err", "sigma"}
    >>> test_names()
    """
    m = draw(st.integers(min_size, max_size))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    if ties and draw(st.booleans()):
        levels = rng.uniform(0.1, 2.0, size=draw(st.integers(1, max(1, m // 3))))
        sigma = rng.choice(levels, size=m)
    else:
        sigma = rng.uniform(0.1, 2.0, size=m)
    error = sigma * rng.standard_normal(m)
    data = {E: ("sample", error), uE: ("sample", sigma)}
    for k in range(features):
        data[f"X{k + 1}"] = ("sample", rng.standard_normal(m))
    return xr.Dataset(data)
