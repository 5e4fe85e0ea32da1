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

Bounded integers use Lemire's multiply-shift with rejection (exactly uniform); variates are drawn
with the Marsaglia polar method (normal, both variates of a pair used), the chi-square
construction ``Z sqrt(ν / χ²_ν)``, ``χ²_ν = -2 ln(U_1 ... U_{ν/2})``, for Student-t with even
integer ν and Bailey's polar method for any other ν, and Marsaglia & Tsang (gamma).
See ``docs/design.md``.
"""

from __future__ import annotations

import math
import zlib
from pathlib import Path

import numba as nb
import numpy as np

#: Modules whose Numba functions are called by kernels of other modules (all cached with
#: ``cache=True``): when one of them changes, every cached kernel of the package is dropped.
KERNEL_MODULES = ("_random.py", "_kernels.py")


def invalidate_stale_kernel_caches(package: Path = Path(__file__).parent) -> int:
    """Remove Numba's cache files when a kernel module is newer than them.

    Numba invalidates a cached function only when its *own* file changes, not when a function
    it calls in another module does; after an edit of ``_random.py`` (e.g. in an editable
    install) a kernel of ``_kernels.py`` could otherwise reload stale machine code. Returns the
    number of files removed; a read-only install is left alone.
    """
    cache = package / "__pycache__"
    try:
        files = [f for f in cache.iterdir() if f.suffix in (".nbi", ".nbc")]
        if not files:
            return 0
        newest_source = max((package / name).stat().st_mtime for name in KERNEL_MODULES)
        if newest_source <= min(f.stat().st_mtime for f in files):
            return 0
        for f in files:
            f.unlink()
        return len(files)
    except OSError:
        return 0


invalidate_stale_kernel_caches()

_GAMMA = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S30 = np.uint64(30)
_S27 = np.uint64(27)
_S31 = np.uint64(31)
_S32 = np.uint64(32)
_S11 = np.uint64(11)
_LOW32 = np.uint64(0xFFFFFFFF)
_TWO32 = np.uint64(1 << 32)
_ONE = np.uint64(1)
_INV53 = 1.0 / 9007199254740992.0  # 2**-53

# Codes of the generative distributions understood by the kernels (see xuqcal.generators).
NORMAL = 0
STUDENT = 1
UNIFORM = 2
LAPLACE = 3
NORMP = 4


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


@nb.njit(inline="always")
def _mix64(z):
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    return z ^ (z >> _S31)


@nb.njit(inline="always")
def stream_start(key, replicate):
    """Starting state of the stream of ``replicate`` under ``key``."""
    return _mix64(key ^ _mix64(np.uint64(replicate) * _GAMMA + _ONE))


@nb.njit(inline="always")
def next_u64(state):
    """Next 64 random bits; returns ``(bits, new_state)``."""
    state = state + _GAMMA
    return _mix64(state), state


@nb.njit(inline="always")
def next_uniform(state):
    """Uniform double in the open interval (0, 1); returns ``(u, new_state)``."""
    bits, state = next_u64(state)
    return (np.float64(bits >> _S11) + 0.5) * _INV53, state


@nb.njit(inline="always")
def next_below(state, bound):
    """Uniform integer in ``[0, bound)`` for ``0 < bound < 2**32`` (Lemire, exact)."""
    b = np.uint64(bound)
    while True:
        bits, state = next_u64(state)
        m = (bits & _LOW32) * b
        low = m & _LOW32
        if low >= b or low >= (_TWO32 - b) % b:
            return np.int64(m >> _S32), state


@nb.njit(inline="always")
def next_normal_pair(state):
    """Two independent standard normal variates (Marsaglia polar method);
    returns ``(x, y, new_state)``."""
    while True:
        u, state = next_uniform(state)
        v, state = next_uniform(state)
        u = 2.0 * u - 1.0
        v = 2.0 * v - 1.0
        s = u * u + v * v
        if 0.0 < s < 1.0:
            f = np.sqrt(-2.0 * np.log(s) / s)
            return u * f, v * f, state


@nb.njit(inline="always")
def next_normal(state):
    """One standard normal variate (the first of a polar pair); returns ``(x, new_state)``."""
    x, _, state = next_normal_pair(state)
    return x, state


@nb.njit(inline="always")
def next_student(state, nu):
    """Student-t(ν) variate, Bailey's polar method (Math. Comp. 62, 1994), exact for ν > 0;
    returns ``(t, new_state)``."""
    while True:
        u, state = next_uniform(state)
        v, state = next_uniform(state)
        u = 2.0 * u - 1.0
        v = 2.0 * v - 1.0
        w = u * u + v * v
        if 0.0 < w < 1.0:
            return u * np.sqrt(nu * (w ** (-2.0 / nu) - 1.0) / w), state


@nb.njit(inline="always")
def next_gamma(state, shape):
    """Gamma(shape, 1) variate (Marsaglia & Tsang 2000); returns ``(x, new_state)``."""
    boost = 1.0
    if shape < 1.0:
        u, state = next_uniform(state)
        boost = u ** (1.0 / shape)
        shape = shape + 1.0
    d = shape - 1.0 / 3.0
    c = 1.0 / np.sqrt(9.0 * d)
    while True:
        x, state = next_normal(state)
        v = 1.0 + c * x
        if v <= 0.0:
            continue
        v = v * v * v
        u, state = next_uniform(state)
        if np.log(u) < 0.5 * x * x + d - d * v + d * np.log(v):
            return d * v * boost, state


@nb.njit(nogil=True, cache=True)
def fill_counts(key, replicate, counts):
    """Bootstrap multiplicities: draw ``len(counts)`` indices with replacement, count each."""
    n = counts.shape[0]
    counts[:] = 0
    state = stream_start(key, replicate)
    for _ in range(n):
        j, state = next_below(state, n)
        counts[j] += 1


@nb.njit(nogil=True, cache=True)
def fill_draws(key, replicate, draws):
    """The drawn sequence behind :func:`fill_counts`: ``len(draws)`` indices with
    replacement, in the order drawn (the resample's row order)."""
    n = draws.shape[0]
    state = stream_start(key, replicate)
    for i in range(n):
        draws[i], state = next_below(state, n)


@nb.njit(nogil=True, cache=True)
def fill_gamma(key, replicate, shape, out):
    """Fill ``out`` with Gamma(shape, 1) variates from stream ``(key, replicate)``."""
    state = stream_start(key, replicate)
    for i in range(out.shape[0]):
        out[i], state = next_gamma(state, shape)


@nb.njit(nogil=True, cache=True)
def fill_variates(key, replicate, code, parameter, out):
    """Fill ``out`` with unit-variance, zero-mean draws of one generative distribution.

    ``code`` is one of NORMAL, STUDENT (``parameter`` = degrees of freedom ν > 2), UNIFORM,
    LAPLACE, NORMP (``parameter`` = p > 0).
    """
    state = stream_start(key, replicate)
    n = out.shape[0]
    if code == NORMAL:
        for i in range(0, n - 1, 2):
            out[i], out[i + 1], state = next_normal_pair(state)
        if n % 2:
            out[n - 1], state = next_normal(state)
    elif code == STUDENT:
        scale = np.sqrt((parameter - 2.0) / parameter)
        half = int(parameter // 2.0)
        if parameter == 2.0 * half and half <= 16:
            # even integer ν: t = Z sqrt(ν / χ²) with χ²_ν = -2 ln(U_1 ... U_{ν/2}), exact and
            # cheaper than a power per draw; both normals of each polar pair are used
            for i in range(0, n, 2):
                x, y, state = next_normal_pair(state)
                product = 1.0
                for _ in range(half):
                    u, state = next_uniform(state)
                    product *= u
                out[i] = scale * x * np.sqrt(parameter / (-2.0 * np.log(product)))
                if i + 1 < n:
                    product = 1.0
                    for _ in range(half):
                        u, state = next_uniform(state)
                        product *= u
                    out[i + 1] = scale * y * np.sqrt(parameter / (-2.0 * np.log(product)))
        else:
            for i in range(n):
                t, state = next_student(state, parameter)
                out[i] = scale * t
    elif code == UNIFORM:
        root3 = np.sqrt(3.0)
        for i in range(n):
            u, state = next_uniform(state)
            out[i] = root3 * (2.0 * u - 1.0)
    elif code == LAPLACE:
        b = 1.0 / np.sqrt(2.0)
        for i in range(n):
            u, state = next_uniform(state)
            d = u - 0.5
            out[i] = -b * np.sign(d) * np.log(1.0 - 2.0 * np.abs(d))
    elif code == NORMP:
        p = parameter
        # |X|^p / p ~ Gamma(1/p); Var(X) = p^(2/p) Γ(3/p) / Γ(1/p)
        log_var = (2.0 / p) * np.log(p) + math.lgamma(3.0 / p) - math.lgamma(1.0 / p)
        scale = np.exp(-0.5 * log_var)
        for i in range(n):
            g, state = next_gamma(state, 1.0 / p)
            u, state = next_uniform(state)
            sign = 1.0 if u < 0.5 else -1.0
            out[i] = sign * scale * (p * g) ** (1.0 / p)
    else:
        raise ValueError("unknown generator code")
