"""Counter-based random streams: one independent stream per (seed, purpose, replicate).

Every random draw in xuqcal comes from a stream whose starting state is a function of
``(seed, purpose, replicate)`` only. A chunk of replicates ``[start, stop)`` therefore draws
exactly the same numbers whichever task, thread, process or cluster worker computes it, and
however the ``replicate`` dimension is chunked: determinism does not depend on the scheduler.

The generator is SplitMix64 (Steele, Lea & Flood 2014; the seeding generator recommended for the
xoshiro family): a Weyl sequence ``s += 0x9E3779B97F4A7C15`` passed through a 64-bit finaliser.
The per-purpose key is derived from the user's seed with :class:`numpy.random.SeedSequence`
(``spawn_key=(crc32(purpose), *extra)``), so seeds are hashed by NumPy's well-tested scheme;
the replicate index is mixed into that key to start the replicate's own stream.

Bounded integers use Lemire's multiply-shift with rejection (exactly uniform). Variates
(stream version :data:`STREAM_VERSION`): normal and exponential by the ziggurat of Marsaglia &
Tsang (2000, 256 layers, one 64-bit number for 98.5 % of the normal draws), Student-t of
integer ν from 3 to 6 by a ziggurat of its own (the same layout), of another even integer
ν ≤ 32 as ``Z sqrt(ν / χ²_ν)`` with ``χ²_ν = 2 (E_1 + ... + E_{ν/2})`` from exponentials,
``Z sqrt(ν / (2 G))`` with a Marsaglia & Tsang gamma ``G ~ Gamma(ν/2)`` for any other ν, and
Marsaglia & Tsang (gamma). Version 1 (xuqcal before issue 26) drew normals by Marsaglia's
polar method and the chi-square as ``-2 ln(U_1 ... U_{ν/2})``; version 2 drew the Student-t
of ν other than an even integer ≤ 32 by Bailey's polar method; version 3 drew t4 and t6 from
exponentials and t3 and t5 from a gamma, as other ν: the same distributions, other draws.
See ``docs/design.md``.
"""

from __future__ import annotations

import zlib

import numpy as np

# The jitted stream functions live in xuqcal.core.kernels, next to the kernels that inline
# them: Numba's cache (``cache=True``) is invalidated only when the file of the cached function
# changes, so a callee in another file could leave stale machine code behind.
from xuqcal.core.kernels import (  # noqa: F401  (re-exported: the public names of this module)
    LAPLACE,
    NORMAL,
    NORMP,
    STUDENT,
    UNIFORM,
    fill_counts,
    fill_draws,
    fill_gamma,
    fill_variates,
    next_below,
    next_exponential,
    next_gamma,
    next_normal,
    next_student,
    next_student_ziggurat,
    next_u64,
    next_uniform,
    stream_start,
)

#: Version of the variate streams: 2 = ziggurat normal and exponential, 3 = the Student-t of
#: ν other than an even integer ≤ 32 from a normal and a gamma, 4 = the Student-t of integer ν
#: from 3 to 6 by its own ziggurat (see the module's text).
#: Results name it in their ``random_streams`` attribute; a cube checkpoint or an extended cube
#: made under another version is refused rather than mixed.
STREAM_VERSION = 4


def stream_key(seed: int, purpose: str, *extra: int) -> np.uint64:
    """Derive the 64-bit key of the streams used for one purpose.

    Parameters
    ----------
    seed : int
        The user's seed (a non-negative integer).
    purpose : str
        What the draws are for (``"bootstrap"``, ``"reference:t6"``, ...): different purposes
        get statistically independent streams from the same seed.
    *extra : int
        Further non-negative integers that select a sub-family of streams.

    Returns
    -------
    numpy.uint64

    Examples
    --------
    >>> int(stream_key(0, "bootstrap")) == int(stream_key(0, "bootstrap"))
    True
    >>> bool(stream_key(0, "bootstrap") != stream_key(1, "bootstrap"))
    True
    """
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ValueError(f"seed: expected a non-negative integer, got {seed!r}")
    sequence = np.random.SeedSequence(int(seed), spawn_key=(zlib.crc32(purpose.encode()), *extra))
    return sequence.generate_state(1, dtype=np.uint64)[0]


def as_int64(replicate: int) -> int:
    """A replicate number from 0 to 2**64 - 1 as the int64 with the same 64 bits (the kernels
    take int64 and cast it to uint64 in :func:`stream_start`; numbers up to 2**63 - 1 are
    unchanged, larger ones overflowed the int64 argument).

    Examples
    --------
    >>> as_int64(5), as_int64(2**64 - 1)
    (5, -1)
    """
    replicate = int(replicate)
    return replicate - 2**64 if replicate >= 2**63 else replicate
