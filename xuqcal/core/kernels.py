"""Numba kernels: statistics of a weighted sample, bootstrap blocks and jackknife values.

Everything here works on plain NumPy arrays along one ``sample`` axis and knows statistics only
by integer code; labels, laziness and validation live in the layers above.

The central idea: a bootstrap resample, the full data set and a leave-one-out sample are all the
same data with integer **multiplicities** ``counts`` (all ones; multinomial; one zero). One kernel,
:func:`evaluate_counts`, computes every statistic from ``(data, counts)`` in O(M):

* moment statistics from weighted sums;
* binned statistics by walking the points in the order of the binning variable (prepared once
  with a stable sort), cutting the expanded sequence of ``sum(counts)`` points into equal-count
  bins ``[floor(b n / N), floor((b + 1) n / N))`` — a resample is thus re-sorted and re-binned
  exactly, in O(M) instead of O(M log M);
* ``cc`` (Spearman) from average ranks of the weighted sample, computed by walking the points in
  the order of ``uE`` and of ``|E|`` with their tie groups.

Every kernel is compiled with ``error_model="numpy"``: a float division by zero gives ``inf`` or
NaN (which the layers above name, see :class:`xuqcal.UndefinedStatisticWarning`),
never a ``ZeroDivisionError``; the arguments are checked before any kernel runs.

Ties of the binning variable inside a resample keep the resample's row order, i.e. the order in
which the copies were drawn (the stable sort of the drawn sequence, as R's ``order()`` on
``x[idx]``): only tie groups whose copies straddle a bin boundary need it, and only their draws
are recorded. See ``docs/design.md``.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np
from llvmlite import ir
from numba.core import cgutils, types
from numba.core.errors import TypingError
from numba.extending import intrinsic

from xuqcal.core import ziggurat_tables as _ziggurat

# ------------------------------------------------------------------------------ random streams
# The SplitMix64 streams of :mod:`xuqcal.core.random` (documented there). They are defined in
# this file because the kernels below inline them: Numba invalidates a cached (``cache=True``)
# function only when its own file changes, so jitted code called across files could be reloaded
# stale after an edit. Keeping every jitted function that a cached kernel calls in this one file
# makes Numba's own check sufficient.

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
_S3 = np.uint64(3)
_S8 = np.uint64(8)
_S9 = np.uint64(9)
_BYTE = np.uint64(0xFF)
_LOW52 = np.uint64((1 << 52) - 1)

# The ziggurat layers (xuqcal.core.ziggurat_tables, written by tools/ziggurat_tables.py) are
# frozen into the cached machine code of the kernels below, and Numba checks only this file for
# changes: the tables' digest is therefore written here, and a change of the tables fails at
# import until this line changes too (which invalidates the cache).
_ZIGGURAT_SHA256 = "da003c13158c85ed712d5bfa11afb89aa484d02e435aefd2bbffb09bf36007d6"
if _ziggurat.digest() != _ZIGGURAT_SHA256:
    raise ImportError("xuqcal.core.ziggurat_tables does not match the digest written in "
                      "xuqcal/core/kernels.py (_ZIGGURAT_SHA256): write the new digest there")
_ZN_R = _ziggurat.NORMAL_R
_ZN_K = np.array(_ziggurat.NORMAL_K, dtype=np.uint64)
_ZN_W = np.array(_ziggurat.NORMAL_W)
_ZN_F = np.array(_ziggurat.NORMAL_F)
_ZE_R = _ziggurat.EXPONENTIAL_R
_ZE_K = np.array(_ziggurat.EXPONENTIAL_K, dtype=np.uint64)
_ZE_W = np.array(_ziggurat.EXPONENTIAL_W)
_ZE_F = np.array(_ziggurat.EXPONENTIAL_F)
# The Student-t ziggurats (stream version 4): row ν - _ZT_FIRST_NU of each table is ν's.
_ZT_FIRST_NU = _ziggurat.STUDENT_NU[0]
_ZT_LAST_NU = _ziggurat.STUDENT_NU[-1]
if _ziggurat.STUDENT_NU != tuple(range(_ZT_FIRST_NU, _ZT_LAST_NU + 1)):
    raise ImportError("xuqcal.core.ziggurat_tables: the Student-t ziggurats' ν must be "
                      "consecutive integers")
_ZT_R = np.array(_ziggurat.STUDENT_R)
_ZT_K = np.array(_ziggurat.STUDENT_K, dtype=np.uint64)
_ZT_W = np.array(_ziggurat.STUDENT_W)
_ZT_F = np.array(_ziggurat.STUDENT_F)
# exp(t) of _exp_arithmetic: ln 2 split so that k * _LN2_HIGH is exact for |k| < 2**11 (fdlibm's
# constants), the Taylor coefficients 1/n! and the powers 2**-j
_LN2_HIGH = 6.93147180369123816490e-01
_LN2_LOW = 1.90821492927058770002e-10
_INV_LN2 = 1.44269504088896338700e+00
_EXP_TAYLOR = np.array([1.0 / math.factorial(n) for n in range(14)])
_HALF_POWERS = np.array([2.0 ** -j for j in range(64)])

# Codes of the generative distributions understood by the kernels (see xuqcal.generators).
NORMAL = 0
STUDENT = 1
UNIFORM = 2
LAPLACE = 3
NORMP = 4
#: The generators whose draws are the steps of :func:`next_variate` (one variate after the
#: other from the stream; ``normp`` fills its set in :func:`fill_variates` alone): the ones
#: :func:`simulate_block` draws while it sums, and the GPU simulates.
VARIATE_CODES = (NORMAL, STUDENT, UNIFORM, LAPLACE)
#: The ``form`` (:func:`variate_constants`) of a Student-t drawn by its own ziggurat
#: (:func:`next_student_ziggurat`: integer ν from 3 to 6, stream version 4).
STUDENT_ZIGGURAT = -1


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
def lemire_threshold(bound):
    """``(2**32 - bound) % bound``: the smallest low word that Lemire's test accepts for
    indices below ``bound`` (``0 < bound < 2**32``), uint64."""
    b = np.uint64(bound)
    return (_TWO32 - b) % b


@nb.njit(inline="always")
def lemire_accept(bits, bound, threshold):
    """Lemire's test on one raw number ``bits`` (``bound``, ``threshold`` uint64, the latter
    :func:`lemire_threshold`): ``(accepted, index)``, the draw accepted when the low 32 bits of
    ``(bits mod 2**32) * bound`` are at least ``threshold``. :func:`next_below` makes the same
    decision (it tests ``low >= bound`` first, which implies the rest as ``threshold <
    bound``, and computes the threshold only when that fails); the batched draws
    (:func:`accepted_below`) and the GPU's (:mod:`xuqcal.core.gpu`) call this."""
    product = (bits & _LOW32) * bound
    return (product & _LOW32) >= threshold, np.int64(product >> _S32)


@nb.njit(inline="always")
def next_below(state, bound):
    """Uniform integer in ``[0, bound)`` for ``0 < bound < 2**32`` (Lemire, exact)."""
    b = np.uint64(bound)
    while True:
        bits, state = next_u64(state)
        m = (bits & _LOW32) * b
        low = m & _LOW32
        if low >= b or low >= lemire_threshold(b):
            return np.int64(m >> _S32), state


#: Raw numbers drawn at once by :func:`accepted_below`.
_RAW_BATCH = 64


@nb.njit(inline="always")
def accepted_below(state, bound, threshold, raw, out, soon):
    """The draws of :func:`next_below` (``bound``; ``threshold``: :func:`lemire_threshold`)
    that the next :data:`_RAW_BATCH` raw numbers of the stream give: ``(n, new_state)``, the
    ``n`` draws in ``out[:n]`` in order (``out`` holds at least ``_RAW_BATCH``) and the state
    after those raw numbers. Calls one after the other give ``next_below``'s draws, in order;
    a caller that needs fewer uses the first ones and drops the stream (the end of a
    replicate's draws). ``soon[j]`` is prefetched for writing as draw ``j`` is accepted (the
    counts the caller increments: issued there, the loads overlap more than from a loop of
    their own after this one, which was slower in a trial).

    The raw numbers are made into ``raw`` (uint64 scratch) from their counters,
    ``mix64(state + (t + 1) γ)``: a loop without a dependence from one number to the next,
    which LLVM vectorizes (``_mix64``'s 64-bit multiplications eight at a time with AVX-512),
    where ``next_below`` makes them one after the other; Lemire's test then keeps the accepted
    ones. The bootstrap of zms at M = 2·10⁶ (:func:`moment_replicates_block`): 2.13 → 1.78 ns
    per draw, of five moment statistics 2.59 → 2.22, one thread
    (``benchmarks/measured/ab-kernels-raw-batch-*``)."""
    for t in range(_RAW_BATCH):
        raw[t] = _mix64(state + np.uint64(t + 1) * _GAMMA)
    b = np.uint64(bound)
    n = 0
    for t in range(_RAW_BATCH):
        accepted, j = lemire_accept(raw[t], b, threshold)
        if accepted:
            out[n] = j
            _prefetch_write(soon, j)
            n += 1
    return n, state + np.uint64(_RAW_BATCH) * _GAMMA


@nb.njit(inline="always")
def _exp_arithmetic(t):
    """``exp(t)`` for ``-43 < t <= 0`` with IEEE additions, multiplications and one rounding
    to an integer only (Cody-Waite reduction ``t = k ln 2 + r``, ``|r| <= ln(2) / 2``, and
    the Taylor polynomial of degree 13, truncation error below 1e-17): the same bits on every
    target, where a libm ``exp`` may differ in the last place. The ziggurats' accept-or-reject
    decisions use it, so that a stream draws the same variates on the CPU and the GPU."""
    k = math.floor(t * _INV_LN2 + 0.5)
    r = (t - k * _LN2_HIGH) - k * _LN2_LOW
    p = _EXP_TAYLOR[13]
    for n in range(12, -1, -1):
        p = p * r + _EXP_TAYLOR[n]
    return p * _HALF_POWERS[np.int64(-k)]


@nb.njit(inline="always")
def next_exponential(state):
    """Standard exponential variate (ziggurat of Marsaglia & Tsang 2000, 256 layers, 53 random
    bits per draw, NumPy's layout); returns ``(x, new_state)``.

    97.8 % of the draws take one 64-bit number and no function call (the tables' mean of
    ``K / 2**53``). A draw in a wedge is accepted against :func:`_exp_arithmetic`; a draw in
    the tail beyond ``R`` returns ``R`` plus a new exponential variate (the exponential forgets
    its past)."""
    shift = 0.0
    while True:
        bits, state = next_u64(state)
        idx = np.int64((bits >> _S3) & _BYTE)
        j = bits >> _S11
        x = np.float64(j) * _ZE_W[idx]
        if j < _ZE_K[idx]:
            return shift + x, state
        if idx == 0:
            shift += _ZE_R
            continue
        u, state = next_uniform(state)
        if (_ZE_F[idx - 1] - _ZE_F[idx]) * u + _ZE_F[idx] < _exp_arithmetic(-x):
            return shift + x, state


@nb.njit(inline="always")
def next_normal(state):
    """Standard normal variate (ziggurat of Marsaglia & Tsang 2000, 256 layers, 52 random bits
    and a sign bit per draw, NumPy's layout); returns ``(x, new_state)``.

    98.5 % of the draws take one 64-bit number and no function call (the tables' mean of
    ``K / 2**52``). A draw in a wedge is accepted against :func:`_exp_arithmetic`; the tail
    beyond ``R`` is Marsaglia's (1964) ``R + a / R`` for exponentials ``a``, ``b`` with
    ``2 b > (a / R)²``, drawn by :func:`next_exponential`. No libm function decides or makes a
    draw, so the GPU draws the same bits."""
    while True:
        bits, state = next_u64(state)
        idx = np.int64(bits & _BYTE)
        negative = (bits >> _S8) & _ONE
        j = (bits >> _S9) & _LOW52
        x = np.float64(j) * _ZN_W[idx]
        if j < _ZN_K[idx]:
            return (-x if negative else x), state
        if idx == 0:
            while True:
                a, state = next_exponential(state)
                b, state = next_exponential(state)
                a = a / _ZN_R
                if b + b > a * a:
                    x = _ZN_R + a
                    return (-x if negative else x), state
        u, state = next_uniform(state)
        if (_ZN_F[idx - 1] - _ZN_F[idx]) * u + _ZN_F[idx] < _exp_arithmetic(-0.5 * x * x):
            return (-x if negative else x), state


@nb.njit(inline="always")
def _student_density(x, nu, power, root):
    """The Student-t's unnormalised density ``(1 + x²/ν)^(-(ν+1)/2)`` (1 at 0) for integer
    ν: ``w = 1 + x²/ν`` to the integer ``power = (ν + 1) // 2`` by multiplications, times
    ``sqrt(w)`` when ``root`` (even ν), inverted. Divisions, multiplications and ``sqrt`` only,
    each correctly rounded: the same bits on every target."""
    w = 1.0 + x * x / nu
    p = w
    for _ in range(power - 1):
        p = p * w
    if root:
        p = p * math.sqrt(w)
    return 1.0 / p


@nb.njit(inline="always")
def next_student_ziggurat(state, nu):
    """Student-t(ν) variate for an integer ν from 3 to 6 by a ziggurat of its own (stream
    version 4; Marsaglia & Tsang 2000, 256 layers, the normal's layout: 52 random bits and a
    sign bit per draw, the tables of ``tools/ziggurat_tables.py``); returns ``(t, new_state)``.

    98.2 % of the draws take one 64-bit number and no function call (t6; 97.9 % for t3; the
    tables' mean of ``K / 2**52``), where version 3 drew t4 and t6 as ``Z sqrt(ν / χ²)`` from
    a normal and ν/2 exponentials (``1 + ν/2`` ziggurat draws) and t3 and t5 from a normal and
    a gamma (about 3 raw draws): one thread, t6 10.09 → 2.01 ns per variate at M = 13 885,
    10.63 → 2.40 at M = 2·10⁶
    (``benchmarks/measured/ab-kernels-student-ziggurat-*``). A draw in a
    wedge is accepted against the density (:func:`_student_density`). The tail beyond ``R``
    (about 0.06 % of the draws for t6) is drawn by rejection from the Pareto density
    ``2 R² / x³`` (``x = R / sqrt(u)``), accepted with probability ``f(x) x³ / (f(R) R³)``:
    ``f(x) x³`` decreases beyond ``sqrt(3ν / (ν - 2))``, below every ``R`` of the tables.
    Every decision uses additions, multiplications, divisions and ``sqrt`` only, so the GPU
    draws the same bits. Each table is named once (a local), so that the GPU's compiler
    places it once in constant memory."""
    k_table = _ZT_K
    w_table = _ZT_W
    f_table = _ZT_F
    whole = np.int64(nu)
    row = whole - _ZT_FIRST_NU
    power = (whole + 1) // 2
    root = (whole & 1) == 0
    while True:
        bits, state = next_u64(state)
        idx = np.int64(bits & _BYTE)
        negative = (bits >> _S8) & _ONE
        j = (bits >> _S9) & _LOW52
        x = np.float64(j) * w_table[row, idx]
        if j < k_table[row, idx]:
            return (-x if negative else x), state
        if idx == 0:
            r = _ZT_R[row]
            top = _student_density(r, nu, power, root) * (r * r * r)
            while True:
                u, state = next_uniform(state)
                v, state = next_uniform(state)
                x = r / math.sqrt(u)
                if v * top < _student_density(x, nu, power, root) * (x * x * x):
                    return (-x if negative else x), state
        u, state = next_uniform(state)
        f_outer = f_table[row, idx]
        if ((f_table[row, idx - 1] - f_outer) * u + f_outer
                < _student_density(x, nu, power, root)):
            return (-x if negative else x), state


@nb.njit(inline="always")
def next_student(state, nu):
    """Student-t(ν) variate for ν > 2 (stream version 3): ``Z sqrt(ν / (2 G))`` with ``Z`` a
    :func:`next_normal` and ``G ~ Gamma(ν / 2)`` by Marsaglia & Tsang (2000) with their
    squeeze (for ν/2 > 1 a try accepts without a logarithm unless ``u >= 1 - 0.0331 x⁴``);
    returns ``(t, new_state)``.

    Version 2 drew Bailey's polar t (Math. Comp. 62, 1994), whose ``pow`` per variate cost
    twice these draws (at M = 2·10⁶, one thread: 18.79 → 9.48 ns per variate at ν = 8263,
    tfit's ν on NIG(6) data, and 39.25 → 27.84 ns per point of a simulated set of zms, cc, ence
    and zmse; ``benchmarks/measured/ab-kernels-student-gamma-issue26-2026-11-27.json``).
    The variate is formed with multiplications, a division and ``sqrt`` (correctly rounded on
    every target); only the tries past the squeeze (``u >= 1 - 0.0331 x⁴``) compare
    logarithms. Scalar functions from :mod:`math`, for the GPU (:func:`next_variate`)."""
    z, state = next_normal(state)
    d = 0.5 * nu - 1.0 / 3.0
    c = 1.0 / math.sqrt(9.0 * d)
    while True:
        x, state = next_normal(state)
        v = 1.0 + c * x
        if v <= 0.0:
            continue
        v = v * v * v
        u, state = next_uniform(state)
        x2 = x * x
        if u < 1.0 - 0.0331 * (x2 * x2) or math.log(u) < 0.5 * x2 + d * (1.0 - v + math.log(v)):
            g = d * v
            return z * math.sqrt(nu / (g + g)), state


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
    raw = np.empty(_RAW_BATCH, np.uint64)
    batch = np.empty(_RAW_BATCH, np.int64)
    threshold = lemire_threshold(n)
    done = 0
    while done < n:  # the draws of next_below, a batch of raw numbers at a time
        k, state = accepted_below(state, n, threshold, raw, batch, counts)
        k = min(k, n - done)
        for t in range(k):
            counts[batch[t]] += 1
        done += k


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


@nb.njit(inline="always")
def variate_constants(code, parameter):
    """``(scale, form)`` of the unit-variance draws of :func:`next_variate`: the factor of its
    draws (``sqrt((ν - 2) / ν)`` for Student-t, ``sqrt(3)`` for the uniform, ``1 / sqrt(2)``
    for Laplace, 1 for the normal) and the construction of a Student-t: ``form =``
    :data:`STUDENT_ZIGGURAT` for an integer ν from 3 to 6 (:func:`next_student_ziggurat`),
    ``ν / 2`` for another even ν ≤ 32 (the chi-square from ν/2 exponentials), 0 otherwise (the
    gamma construction of :func:`next_student`; 0 for the other generators)."""
    if code == STUDENT:
        scale = np.sqrt((parameter - 2.0) / parameter)
        whole = int(parameter // 1.0)
        if parameter == whole and _ZT_FIRST_NU <= whole <= _ZT_LAST_NU:
            return scale, STUDENT_ZIGGURAT
        half = int(parameter // 2.0)
        even = parameter == 2.0 * half and half <= 16
        return scale, half if even else 0
    if code == UNIFORM:
        return np.sqrt(3.0), 0
    if code == LAPLACE:
        return 1.0 / np.sqrt(2.0), 0
    return 1.0, 0


@nb.njit(inline="always")
def is_variate_code(code):
    """Whether generator ``code`` is one of :data:`VARIATE_CODES`."""
    return code == NORMAL or code == STUDENT or code == UNIFORM or code == LAPLACE


@nb.njit(inline="always")
def next_variate(state, code, parameter, scale, form):
    """One unit-variance draw of generator ``code`` (NORMAL, STUDENT, UNIFORM or LAPLACE;
    ``scale``, ``form`` from :func:`variate_constants`), the step of :func:`fill_variates`
    (and of the GPU's simulation, :mod:`xuqcal.core.gpu`); returns ``(x, new_state)``.

    Normal: :func:`next_normal` (ziggurat). Student-t of integer ν from 3 to 6 (``form =``
    :data:`STUDENT_ZIGGURAT`): its own ziggurat (:func:`next_student_ziggurat`). Other even
    ν ≤ 32 (``form = ν / 2 > 0``): ``t = Z sqrt(ν / χ²)``, with ``χ²_ν = 2 (E_1 + ... +
    E_{ν/2})`` from ν/2 exponentials (:func:`next_exponential`; exact, and no libm function).
    Other ν: ``Z sqrt(ν / (2 G))`` with a Marsaglia-Tsang gamma ``G`` (:func:`next_student`).
    Uniform and Laplace: one uniform each.

    Scalar functions come from :mod:`math`, not NumPy: the GPU compiles this function too, and
    numba-cuda 0.30.4 with NumPy 2.5 could not lower ``np.sqrt`` of a scalar (``KeyError`` in
    its ufunc table, on an H200). On the CPU both lower to the same correctly rounded
    operations; the draws are unchanged."""
    if code == NORMAL:
        return next_normal(state)
    if code == STUDENT:
        if form == STUDENT_ZIGGURAT:
            t, state = next_student_ziggurat(state, parameter)
            return scale * t, state
        if form > 0:
            g, state = next_normal(state)
            total = 0.0
            for _ in range(form):
                e, state = next_exponential(state)
                total += e
            return scale * g * math.sqrt(parameter / (total + total)), state
        t, state = next_student(state, parameter)
        return scale * t, state
    u, state = next_uniform(state)
    if code == UNIFORM:
        return scale * (2.0 * u - 1.0), state
    d = u - 0.5  # LAPLACE
    return -scale * math.copysign(1.0, d) * math.log(1.0 - 2.0 * abs(d)), state


@nb.njit(nogil=True, cache=True)
def fill_variates(key, replicate, code, parameter, out):
    """Fill ``out`` with unit-variance, zero-mean draws of one generative distribution.

    ``code`` is one of NORMAL, STUDENT (``parameter`` = degrees of freedom ν > 2), UNIFORM,
    LAPLACE, NORMP (``parameter`` = p > 0).
    """
    state = stream_start(key, replicate)
    n = out.shape[0]
    if is_variate_code(code):
        scale, form = variate_constants(code, parameter)
        for i in range(n):
            out[i], state = next_variate(state, code, parameter, scale, form)
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


# --------------------------------------------------------------------------------- prefetch
# At M = 10^6 - 10^7 the per-point arrays are tens of MB: a random load (a bootstrap draw, a
# rank scattered by a sort permutation) misses every cache, and the loops were bound by memory
# latency, not by arithmetic. A software prefetch issued some iterations ahead overlaps those
# misses. It is only a hint (``llvm.prefetch``): it never faults and changes no value, so every
# loop keeps its order of operations and its results bit for bit.

#: Iterations ahead at which the loops that walk a permutation prefetch (enough to cover a
#: memory latency, few enough to stay in the L1 fill buffers).
_AHEAD = 32


def _prefetch_codegen(write):
    def codegen(context, builder, signature, args):
        array_type, index_type = signature.args
        array = context.make_array(array_type)(context, builder, args[0])
        index = context.cast(builder, args[1], index_type, types.intp)
        pointer = cgutils.get_item_pointer(context, builder, array_type, array, [index])
        i8_pointer = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        function = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [i8_pointer, i32, i32, i32]),
            "llvm.prefetch.p0i8")  # the typed-pointer name; LLVM >= 15 upgrades it
        # (address, write, locality 3 = keep in all cache levels, data cache)
        builder.call(function, [builder.bitcast(pointer, i8_pointer), i32(int(write)), i32(3),
                                i32(1)])
        return context.get_dummy_value()
    return codegen


@intrinsic
def _prefetch(typingctx, array, index):
    """Hint: ``array[index]`` (1-D array) will be read soon. No effect on any value."""
    return types.void(array, index), _prefetch_codegen(False)


@intrinsic
def _prefetch_write(typingctx, array, index):
    """Hint: ``array[index]`` (1-D array) will be written soon. No effect on any value."""
    return types.void(array, index), _prefetch_codegen(True)


# ---------------------------------------------------------------------------------- formulas
# The one definition of every statistic's formula. Each finisher is a scalar function of column
# sums, written with operators and NumPy ufuncs only: jitted, the kernels inline it (dispatch on
# the integer code: :func:`finalize_moment`, :func:`bin_term`); its ``py_func`` serves NumPy
# arrays (:meth:`xuqcal.core.statistics.Statistic.from_sums`). The registry
# (:data:`xuqcal.core.statistics.STATISTICS`) attaches them to the statistics by code.

# Statistic codes (the registry in xuqcal.core.statistics maps keys to these).
MSE, RMSE, MV, RMV, ZM, ZMS, ZV, RCE, NLL, ZISD, ENCE, UCE, ZMSE, CC = range(14)
N_MOMENT = 10  # codes below this are moment statistics
BINNED_CODES = (ENCE, UCE, ZMSE)
LOG_2PI = math.log(2.0 * math.pi)

# Indices of the weighted sums of moment statistics, and the per-point columns they sum
# (``zd = z - z_shift``: shifted z-scores keep the variance accurate; ``z_shift`` is any
# constant, 0 for unshifted sums).
S_N, S_E2, S_U2, S_Z2, S_LNU2, S_ZD, S_ZD2 = range(7)
N_SUMS = 7
COLUMNS = ("e2", "u2", "z2", "lnu2", "zd", "zd2")  # the packed columns (:func:`pack_moments`)
#: The columns each moment statistic sums (indices into :data:`COLUMNS`).
MOMENT_COLUMNS = {MSE: (0,), RMSE: (0,), MV: (1,), RMV: (1,), ZM: (4,), ZMS: (2,), ZV: (4, 5),
                  RCE: (0, 1), NLL: (2, 3), ZISD: (4, 5)}
#: The columns each binned statistic sums per bin (with the count).
BIN_COLUMNS = {ENCE: (0, 1), UCE: (0, 1), ZMSE: (2,)}

_formula = nb.njit(inline="always", error_model="numpy")


@_formula
def finish_mse(n, e2, u2, z2, lnu2, zd, zd2, z_shift):
    """MSE = <E²>."""
    return e2 / n


@_formula
def finish_rmse(n, e2, u2, z2, lnu2, zd, zd2, z_shift):
    """RMSE = sqrt(<E²>)."""
    return np.sqrt(e2 / n)


@_formula
def finish_mv(n, e2, u2, z2, lnu2, zd, zd2, z_shift):
    """MV = <uE²>."""
    return u2 / n


@_formula
def finish_rmv(n, e2, u2, z2, lnu2, zd, zd2, z_shift):
    """RMV = sqrt(<uE²>)."""
    return np.sqrt(u2 / n)


@_formula
def finish_zm(n, e2, u2, z2, lnu2, zd, zd2, z_shift):
    """ZM = <Z> = z_shift + <Z - z_shift>."""
    return z_shift + zd / n


@_formula
def finish_zms(n, e2, u2, z2, lnu2, zd, zd2, z_shift):
    """ZMS = <Z²>."""
    return z2 / n


@_formula
def finish_zv(n, e2, u2, z2, lnu2, zd, zd2, z_shift):
    """ZV = Var(Z) with the denominator n - 1 (sums of the shifted z-scores)."""
    return (zd2 - zd * zd / n) / (n - 1.0)


@_formula
def finish_rce(n, e2, u2, z2, lnu2, zd, zd2, z_shift):
    """RCE = (RMV - RMSE) / RMV."""
    rmv = np.sqrt(u2 / n)
    return (rmv - np.sqrt(e2 / n)) / rmv


@_formula
def finish_nll(n, e2, u2, z2, lnu2, zd, zd2, z_shift):
    """NLL = ½ (<Z²> + <ln uE²> + ln 2π) (normal likelihood, per point)."""
    return 0.5 * (z2 / n + lnu2 / n + LOG_2PI)


@_formula
def finish_zisd(n, e2, u2, z2, lnu2, zd, zd2, z_shift):
    """ZISD = 1 / SD(Z) = 1 / sqrt(Var(Z)), Var(Z) with the denominator n - 1 (as ZV)."""
    return 1.0 / np.sqrt((zd2 - zd * zd / n) / (n - 1.0))


@_formula
def term_ence(n, e2, u2, z2):
    """ENCE's term of one bin: |RMV_b - RMSE_b| / RMV_b."""
    rmv = np.sqrt(u2 / n)
    return np.abs(rmv - np.sqrt(e2 / n)) / rmv


@_formula
def term_uce(n, e2, u2, z2):
    """UCE's term of one bin: |MV_b - MSE_b|."""
    return np.abs(u2 / n - e2 / n)


@_formula
def term_zmse(n, e2, u2, z2):
    """ZMSE's term of one bin: |ln <Z²>_b|."""
    return np.abs(np.log(z2 / n))


#: The finisher of each moment statistic and the per-bin term of each binned statistic.
FINISHERS = {MSE: finish_mse, RMSE: finish_rmse, MV: finish_mv, RMV: finish_rmv, ZM: finish_zm,
             ZMS: finish_zms, ZV: finish_zv, RCE: finish_rce, NLL: finish_nll,
             ZISD: finish_zisd}
BIN_TERMS = {ENCE: term_ence, UCE: term_uce, ZMSE: term_zmse}


@_formula
def finalize_moment(code, s_n, s_e2, s_u2, s_z2, s_lnu2, s_zd, s_zd2, z_shift):
    """Value of moment statistic ``code`` from weighted sums (dispatch to its finisher)."""
    if code == MSE:
        return finish_mse(s_n, s_e2, s_u2, s_z2, s_lnu2, s_zd, s_zd2, z_shift)
    if code == RMSE:
        return finish_rmse(s_n, s_e2, s_u2, s_z2, s_lnu2, s_zd, s_zd2, z_shift)
    if code == MV:
        return finish_mv(s_n, s_e2, s_u2, s_z2, s_lnu2, s_zd, s_zd2, z_shift)
    if code == RMV:
        return finish_rmv(s_n, s_e2, s_u2, s_z2, s_lnu2, s_zd, s_zd2, z_shift)
    if code == ZM:
        return finish_zm(s_n, s_e2, s_u2, s_z2, s_lnu2, s_zd, s_zd2, z_shift)
    if code == ZMS:
        return finish_zms(s_n, s_e2, s_u2, s_z2, s_lnu2, s_zd, s_zd2, z_shift)
    if code == ZV:
        return finish_zv(s_n, s_e2, s_u2, s_z2, s_lnu2, s_zd, s_zd2, z_shift)
    if code == RCE:
        return finish_rce(s_n, s_e2, s_u2, s_z2, s_lnu2, s_zd, s_zd2, z_shift)
    if code == NLL:
        return finish_nll(s_n, s_e2, s_u2, s_z2, s_lnu2, s_zd, s_zd2, z_shift)
    if code == ZISD:
        return finish_zisd(s_n, s_e2, s_u2, s_z2, s_lnu2, s_zd, s_zd2, z_shift)
    return np.nan * s_n



@_formula
def bin_term(code, n, e2, u2, z2):
    """Term of one bin of binned statistic ``code`` (dispatch to its term)."""
    if code == ENCE:
        return term_ence(n, e2, u2, z2)
    if code == UCE:
        return term_uce(n, e2, u2, z2)
    return term_zmse(n, e2, u2, z2)


@_formula
def bin_start(b, n_total, n_bins):
    """First position of equal-count bin ``b``: ``floor(b n / N)`` (the jitted twin of
    :func:`xuqcal.core.binning.equal_count_bounds`)."""
    return (b * n_total) // n_bins


@nb.njit(inline="always", error_model="numpy")
def _finalize_binned(code, n_bins, b_n, b_e2, b_u2, b_z2):
    """A binned statistic: the mean of its bin terms (summed in bin order)."""
    total = 0.0
    for b in range(n_bins):
        total += bin_term(code, b_n[b], b_e2[b], b_u2[b], b_z2[b])
    return total / n_bins


@nb.njit(inline="always", error_model="numpy")
def _bin_sums(counts, e2, u2, z2, n_bins, b_n, b_e2, b_u2, b_z2):
    """Equal-count bins of the expanded weighted sequence (points in binning order)."""
    n_total = 0
    for p in range(counts.shape[0]):
        n_total += counts[p]
    _clear_bins(b_n, b_e2, b_u2, b_z2)
    b = 0
    pos = 0
    next_start = bin_start(1, n_total, n_bins)
    s_n = 0.0
    s_e2 = 0.0
    s_u2 = 0.0
    s_z2 = 0.0
    for p in range(counts.shape[0]):
        pos, b, next_start, s_n, s_e2, s_u2, s_z2 = _add_run(
            p, counts[p], e2, u2, z2, n_bins, n_total, b_n, b_e2, b_u2, b_z2, pos, b,
            next_start, s_n, s_e2, s_u2, s_z2)
    _store_bin(b, b_n, b_e2, b_u2, b_z2, s_n, s_e2, s_u2, s_z2)


@nb.njit(inline="always", error_model="numpy")
def _store_bin(b, b_n, b_e2, b_u2, b_z2, s_n, s_e2, s_u2, s_z2):
    b_n[b] = s_n
    b_e2[b] = s_e2
    b_u2[b] = s_u2
    b_z2[b] = s_z2


@nb.njit(inline="always", error_model="numpy")
def _add_run(p, c, e2, u2, z2, n_bins, n_total, b_n, b_e2, b_u2, b_z2, pos, b, next_start,
             s_n, s_e2, s_u2, s_z2):
    """:func:`_add_copies` with the sums of the current bin ``b`` held in ``s_*`` (registers)
    instead of read and written in memory per point, and without a branch on ``c`` in the
    common case; returns ``(pos, b, next_start, s_n, s_e2, s_u2, s_z2)``. The caller stores
    ``s_*`` into bin ``b`` at the end (:func:`_store_bin`).

    Bit-identical: bins are filled in increasing order and each one's additions are the same
    ``take * value`` in the same order, from 0.0. When the copies stay in bin ``b``
    (``pos + c <= next_start``, always so for ``c == 0``), :func:`_add_copies` makes at most
    one addition, of ``take = c`` copies; for ``c == 0`` it makes none, and here ``+0.0``
    is added instead (``0 * 0.0``: the value is replaced by 0.0, so an infinite value gives no
    NaN), which changes no sum: ``x + 0.0`` is ``x`` bit for bit unless ``x`` is -0.0, and a
    sum started at +0.0 is never -0.0 (round to nearest). Otherwise the run crosses a
    boundary: the sums are stored, :func:`_add_copies` adds it in memory, and the sums of the
    new current bin are loaded back."""
    if pos + c <= next_start:
        nonzero = c != 0
        x = e2[p]
        y = u2[p]
        w = z2[p]
        s_n += c
        s_e2 += c * (x if nonzero else 0.0)
        s_u2 += c * (y if nonzero else 0.0)
        s_z2 += c * (w if nonzero else 0.0)
        return pos + c, b, next_start, s_n, s_e2, s_u2, s_z2
    _store_bin(b, b_n, b_e2, b_u2, b_z2, s_n, s_e2, s_u2, s_z2)
    pos, b, next_start = _add_copies(p, c, e2, u2, z2, n_bins, n_total, b_n, b_e2, b_u2, b_z2,
                                     pos, b, next_start)
    return pos, b, next_start, b_n[b], b_e2[b], b_u2[b], b_z2[b]


@nb.njit(inline="always", error_model="numpy")
def _clear_bins(b_n, b_e2, b_u2, b_z2):
    b_n[:] = 0.0
    b_e2[:] = 0.0
    b_u2[:] = 0.0
    b_z2[:] = 0.0


@nb.njit(inline="always", error_model="numpy")
def _add_copies(p, c, e2, u2, z2, n_bins, n_total, b_n, b_e2, b_u2, b_z2, pos, b, next_start):
    """Add ``c`` copies of point ``p`` from sorted position ``pos`` on to the bin sums, split at
    the bin boundaries ``floor(b n / N)``; returns the new ``(pos, b, next_start)``."""
    while c > 0:
        while pos >= next_start:
            b += 1
            next_start = bin_start(b + 1, n_total, n_bins)
        take = min(c, next_start - pos)
        b_n[b] += take
        b_e2[b] += take * e2[p]
        b_u2[b] += take * u2[p]
        b_z2[b] += take * z2[p]
        pos += take
        c -= take
    return pos, b, next_start


@nb.njit(inline="always", error_model="numpy")
def finish_spearman(sab, saa, sbb):
    """Spearman's correlation from the sums of products of centred ranks: ``sab / sqrt(saa
    sbb)``, NaN when a variable is constant (the denominator is 0: undefined). The one
    finisher of cc's walks (:func:`_spearman`, :func:`_spearman_unit` and their sorted forms),
    of its jackknife (:func:`jackknife_spearman`) and of the GPU's
    (:func:`xuqcal.core.gpu.spearman_from_sums`)."""
    denominator = np.sqrt(saa * sbb)
    return sab / denominator if denominator > 0.0 else np.nan


@nb.njit(nogil=True, cache=True, error_model="numpy")
def finish_spearman_rows(sums, out):
    """:func:`finish_spearman` of each row ``(sab, saa, sbb)`` of ``sums`` (``(n, 3)``) into
    ``out[i]``: the GPU's sums finished on the host (:func:`xuqcal.core.gpu.spearman_from_sums`)
    by the CPU's finisher, compiled, not called from Python once per replicate."""
    for i in range(sums.shape[0]):
        out[i] = finish_spearman(sums[i, 0], sums[i, 1], sums[i, 2])


@nb.njit(inline="always", error_model="numpy")
def _group_end(tie, k, m):
    """The end (exclusive) of the tie group that begins at sorted position ``k`` of ``m``: the
    positions after ``k`` flagged (``tie[j]``) as tied with the one before."""
    end = k + 1
    while end < m and tie[end]:
        end += 1
    return end


@nb.njit(inline="always", error_model="numpy")
def _group_weight(order, counts, k, end, rank):
    """The weight of the tie group at sorted positions ``k .. end - 1``: the sum, in order, of
    ``counts[order[j]]``. ``counts`` and ``rank`` (which the caller then writes at the same
    points) are prefetched :data:`_AHEAD` positions ahead: random accesses when ``order`` is
    a sort permutation."""
    m = order.shape[0]
    group = 0.0
    for j in range(k, end):
        if j + _AHEAD < m:
            ahead = order[j + _AHEAD]
            _prefetch(counts, ahead)
            _prefetch_write(rank, ahead)
        group += counts[order[j]]
    return group


@nb.njit(inline="always", error_model="numpy")
def _average_ranks(order, tie, counts, rank):
    """Average ranks (1-based) of the weighted sample; ``tie[k]`` marks ``order[k]`` as tied
    with ``order[k - 1]``. Points of zero weight get a rank too; it is never used.

    ``counts[order[j]]`` and ``rank[order[j]]`` are random accesses when ``order`` is a sort
    permutation: both are prefetched :data:`_AHEAD` positions ahead.

    With at most a quarter of the positions tied, each position is first ranked as a group of
    its own (the weight before it an integer: no chain of floating-point additions), then each
    tie group is given its average rank; with more ties, group after group. The ranks are
    multiples of 1/2 below 2^52, exact either way: the same values. The bootstrap of cc, one
    thread, errors without ties: 5.49 → 5.19 ns per draw at QM9's size, 10.51 → 7.97 at 2·10⁶
    points (``benchmarks/measured/ab-kernels-rank-prefix-*``)."""
    m = order.shape[0]
    n_tied = 0
    for j in range(m):
        n_tied += tie[j]
    if 4 * n_tied > m:
        _average_ranks_by_group(order, tie, counts, rank)
        return
    below = 0
    for j in range(m):
        if j + _AHEAD < m:
            ahead = order[j + _AHEAD]
            _prefetch(counts, ahead)
            _prefetch_write(rank, ahead)
        p = order[j]
        c = counts[p]
        rank[p] = np.float64(below) + 0.5 * (c + 1.0)
        below += c
    k = 1
    while n_tied > 0 and k < m:  # the tie groups: positions start .. end - 1 share one rank
        if not tie[k]:
            k += 1
            continue
        start = k - 1
        end = _group_end(tie, k, m)
        first = order[start]
        before = rank[first] - 0.5 * (counts[first] + 1.0)
        group = 0.0
        for i in range(start, end):
            group += counts[order[i]]
        value = before + 0.5 * (group + 1.0)
        for i in range(start, end):
            rank[order[i]] = value
        n_tied -= end - k
        k = end


@nb.njit(inline="always", error_model="numpy")
def _average_ranks_by_group(order, tie, counts, rank):
    """:func:`_average_ranks` group after group (many ties)."""
    m = order.shape[0]
    below = 0.0
    k = 0
    while k < m:
        end = _group_end(tie, k, m)
        group = _group_weight(order, counts, k, end, rank)
        value = below + 0.5 * (group + 1.0)
        for j in range(k, end):
            rank[order[j]] = value
        below += group
        k = end


@nb.njit(inline="always", error_model="numpy")
def _average_unit_ranks(order, tie, rank):
    """:func:`_average_ranks` with every count 1, without reading counts.

    Bit-identical: there the size of a tie group is a float sum of ones, which is exact (an
    integer below 2**53), i.e. ``float(end - k)``; ``below`` and the ranks are then the same
    sums of the same integers. Only the scattered ``rank[order[j]]`` is a random access (one
    gather fewer than with an array of ones), prefetched :data:`_AHEAD` positions ahead.

    As there, with at most a quarter of the positions tied each position first gets its own
    rank ``j + 1``, then each tie group its average ``(start + end + 1) / 2``; with more ties
    the group walk. A simulated set of zms, cc, ence and zmse at 2·10⁶ points, one thread:
    normal 18.06 → 16.94 ns per point, t6 25.66 → 24.86
    (``benchmarks/measured/ab-kernels-rank-prefix-unit-2e6-*``)."""
    m = order.shape[0]
    n_tied = 0
    for j in range(m):
        n_tied += tie[j]
    if 4 * n_tied > m:
        below = 0.0
        k = 0
        while k < m:
            end = _group_end(tie, k, m)
            group = np.float64(end - k)
            value = below + 0.5 * (group + 1.0)
            for j in range(k, end):
                if j + _AHEAD < m:
                    _prefetch_write(rank, order[j + _AHEAD])
                rank[order[j]] = value
            below += group
            k = end
        return
    for j in range(m):
        if j + _AHEAD < m:
            _prefetch_write(rank, order[j + _AHEAD])
        rank[order[j]] = j + 1.0
    k = 1
    while n_tied > 0 and k < m:  # the tie groups: positions start .. end - 1 share one rank
        if not tie[k]:
            k += 1
            continue
        start = k - 1
        end = _group_end(tie, k, m)
        value = 0.5 * (start + end + 1.0)
        for i in range(start, end):
            rank[order[i]] = value
        n_tied -= end - k
        k = end


@nb.njit(nogil=True, cache=True, error_model="numpy")
def average_ranks(order, tie, counts, rank):
    """:func:`_average_ranks`, compiled into the cache for callers in Python (the jackknife's
    tie groups, :meth:`xuqcal.core.statistics.PreparedData.tie_groups`): the inlined function,
    called from Python, was compiled again in every process (a fresh-process ``xuqcal
    validate`` of 1 000 points: ``benchmarks/measured/ab-cli-validate-process-cached-ranks-*``)."""
    _average_ranks(order, tie, counts, rank)


@nb.njit(nogil=True, cache=True, error_model="numpy")
def centred_unit_ranks(order, tie, rank):
    """:func:`_centred_unit_ranks` (the centred average ranks of unit-weight points into
    ``rank``, and the sum of their squares), compiled into the cache for callers in Python
    (the GPU's simulated cc, :func:`xuqcal.core.gpu.centred_unit_ranks`)."""
    return _centred_unit_ranks(order, tie, rank)


@nb.njit(inline="always", error_model="numpy")
def _spearman(counts, order_u, tie_u, order_e, tie_e, rank_u, rank_e):
    """Spearman correlation of |E| and uE for the sample weighted by ``counts`` (average ranks
    of tied points). Up to :data:`_EXACT_RANK_SUMS` weighted points the rank sums are exact,
    and the E ranks are walked in their sorted order (:func:`_spearman_sorted`); above, the E
    ranks are scattered to the points and summed in point order."""
    _average_ranks(order_u, tie_u, counts, rank_u)
    n = 0.0
    for p in range(counts.shape[0]):
        n += counts[p]
    if n <= _EXACT_RANK_SUMS:
        return _spearman_sorted(counts, n, order_e, tie_e, rank_u, rank_e)
    return _spearman_scattered(counts, n, order_e, tie_e, rank_u, rank_e)


@nb.njit(inline="always", error_model="numpy")
def _spearman_scattered(counts, n, order_e, tie_e, rank_u, rank_e):
    """The weighted :func:`_spearman` (``n`` weighted points, ``rank_u`` the uE ranks) with
    the E ranks scattered to ``rank_e`` and every sum in point order."""
    _average_ranks(order_e, tie_e, counts, rank_e)
    centre = 0.5 * (n + 1.0)
    sab = 0.0
    saa = 0.0
    sbb = 0.0
    # branch-free: a point of count 0 adds (0 a) b = ±0.0, which changes no sum (x + ±0.0 is
    # x bit for bit unless x is -0.0, and these sums start at +0.0 so are never -0.0; the ranks
    # are finite), as skipping it did
    for p in range(counts.shape[0]):
        c = counts[p]
        a = rank_u[p] - centre
        b = rank_e[p] - centre
        sab += c * a * b
        saa += c * a * a
        sbb += c * b * b
    return finish_spearman(sab, saa, sbb)


@nb.njit(inline="always", error_model="numpy")
def _centred_unit_ranks(order, tie, rank):
    """Average ranks of unit-weight points minus their mean, and the sum of their squares."""
    _average_unit_ranks(order, tie, rank)
    centre = 0.5 * (rank.shape[0] + 1.0)
    total = 0.0
    for p in range(rank.shape[0]):
        rank[p] -= centre
        total += rank[p] * rank[p]
    return total


@nb.njit(inline="always", error_model="numpy")
def _spearman_unit(centred_u, saa, order_e, tie_e, rank_e):
    """Spearman correlation of unit-weight points whose centred uE ranks are known."""
    _average_unit_ranks(order_e, tie_e, rank_e)
    centre = 0.5 * (rank_e.shape[0] + 1.0)
    sab = 0.0
    sbb = 0.0
    for p in range(rank_e.shape[0]):
        b = rank_e[p] - centre
        sab += centred_u[p] * b
        sbb += b * b
    return finish_spearman(sab, saa, sbb)


#: Points up to which the rank sums of a unit-weight Spearman correlation are exact in any
#: order (see :func:`_spearman_unit_sorted`).
_EXACT_RANK_SUMS = 2**17


@nb.njit(inline="always", error_model="numpy")
def _spearman_unit_sorted(centred_u, saa, order_e, tie_e):
    """:func:`_spearman_unit` walked in the sorted order of E: one pass gathering the centred
    uE rank of each point, instead of scattering the E ranks and summing in point order.

    Bit-identical for ``m <= _EXACT_RANK_SUMS``: the centred ranks are multiples of 1/2 of
    magnitude at most m/2, so every product is a multiple of 1/4 and every partial sum a
    multiple of 1/4 of magnitude at most m³/4, which a double holds exactly while m³ <= 2^53:
    no addition rounds, and the sums do not depend on their order.

    So they are formed in the order that costs least: each point with the rank of its sorted
    position, in four interleaved chains (no tie group walked, no chain of dependent
    additions per point), then, where ties exist, each tie group's difference between its
    average rank and those positions (terms of the same kind: multiples of 1/4, the partial
    sums below m³/2). A simulated set at QM9's size, one thread:
    ``benchmarks/measured/ab-kernels-rank-chains-*``."""
    m = order_e.shape[0]
    centre = 0.5 * (m + 1.0)
    sab0, sab1, sab2, sab3 = 0.0, 0.0, 0.0, 0.0
    sbb0, sbb1, sbb2, sbb3 = 0.0, 0.0, 0.0, 0.0
    n_tied = 0
    j = 0
    while j + 4 <= m:
        b0 = (j + 1.0) - centre
        b1 = (j + 2.0) - centre
        b2 = (j + 3.0) - centre
        b3 = (j + 4.0) - centre
        sab0 += centred_u[order_e[j]] * b0
        sab1 += centred_u[order_e[j + 1]] * b1
        sab2 += centred_u[order_e[j + 2]] * b2
        sab3 += centred_u[order_e[j + 3]] * b3
        sbb0 += b0 * b0
        sbb1 += b1 * b1
        sbb2 += b2 * b2
        sbb3 += b3 * b3
        n_tied += tie_e[j] + tie_e[j + 1] + tie_e[j + 2] + tie_e[j + 3]
        j += 4
    while j < m:
        b0 = (j + 1.0) - centre
        sab0 += centred_u[order_e[j]] * b0
        sbb0 += b0 * b0
        n_tied += tie_e[j]
        j += 1
    sab = (sab0 + sab1) + (sab2 + sab3)
    sbb = (sbb0 + sbb1) + (sbb2 + sbb3)
    k = 1
    while n_tied > 0 and k < m:  # the tie groups: positions start .. end - 1 share one rank
        if not tie_e[k]:
            k += 1
            continue
        start = k - 1
        end = _group_end(tie_e, k, m)
        b = 0.5 * (start + end + 1.0) - centre
        for j in range(start, end):
            position = (j + 1.0) - centre
            sab += centred_u[order_e[j]] * (b - position)
            sbb += b * b - position * position
        n_tied -= end - k
        k = end
    return finish_spearman(sab, saa, sbb)


@nb.njit(inline="always", error_model="numpy")
def _sorted_lane(counts, order_e, rank_u, prefix, j, below, centre):
    """One sorted position ``j`` of :func:`_spearman_sorted`'s first pass, ranked as a group
    of its own: ``(c a b, c a a, c b b, below + c)``, its weight before it written to
    ``prefix[j]``."""
    p = order_e[j]
    c = np.float64(counts[p])
    a = rank_u[p] - centre
    b = (below + 0.5 * (c + 1.0)) - centre
    prefix[j] = below
    ca = c * a
    return ca * b, ca * a, c * b * b, below + c


@nb.njit(inline="always", error_model="numpy")
def _spearman_sorted(counts, n, order_e, tie_e, rank_u, prefix):
    """The weighted :func:`_spearman` (``n`` weighted points, ``rank_u`` the uE ranks) walked
    in the sorted order of E, gathering the count and uE rank of each point, instead of
    scattering the E ranks and summing in point order (one random pass and one pass over
    three arrays fewer).

    Bit-identical for ``n <= _EXACT_RANK_SUMS`` (as :func:`_spearman_unit_sorted`): the
    centred ranks are multiples of 1/2 of magnitude below n/2 and the counts integers adding
    to n, so every product ``c a b`` is a multiple of 1/4 and every partial sum one of
    magnitude at most n³/4, which a double holds exactly while n³ <= 2^53: no addition
    rounds, and the sums do not depend on their order.

    So, as there, each sorted position is first ranked as a group of its own (its rank from
    the weight before it, ``prefix``: float64 scratch of the length of ``order_e``), in four
    interleaved chains; then each tie group adds the difference its average rank makes
    (terms of the same kind, partial sums below n³). The bootstrap of cc at QM9's size, one
    thread: ``benchmarks/measured/ab-kernels-weighted-rank-chains-*``."""
    m = order_e.shape[0]
    centre = 0.5 * (n + 1.0)
    below = 0.0
    sab0, sab1, sab2, sab3 = 0.0, 0.0, 0.0, 0.0
    saa0, saa1, saa2, saa3 = 0.0, 0.0, 0.0, 0.0
    sbb0, sbb1, sbb2, sbb3 = 0.0, 0.0, 0.0, 0.0
    n_tied = 0
    j = 0
    while j + 4 <= m:
        x, y, z, below = _sorted_lane(counts, order_e, rank_u, prefix, j, below, centre)
        sab0 += x
        saa0 += y
        sbb0 += z
        x, y, z, below = _sorted_lane(counts, order_e, rank_u, prefix, j + 1, below, centre)
        sab1 += x
        saa1 += y
        sbb1 += z
        x, y, z, below = _sorted_lane(counts, order_e, rank_u, prefix, j + 2, below, centre)
        sab2 += x
        saa2 += y
        sbb2 += z
        x, y, z, below = _sorted_lane(counts, order_e, rank_u, prefix, j + 3, below, centre)
        sab3 += x
        saa3 += y
        sbb3 += z
        n_tied += tie_e[j] + tie_e[j + 1] + tie_e[j + 2] + tie_e[j + 3]
        j += 4
    while j < m:
        x, y, z, below = _sorted_lane(counts, order_e, rank_u, prefix, j, below, centre)
        sab0 += x
        saa0 += y
        sbb0 += z
        n_tied += tie_e[j]
        j += 1
    sab = (sab0 + sab1) + (sab2 + sab3)
    saa = (saa0 + saa1) + (saa2 + saa3)
    sbb = (sbb0 + sbb1) + (sbb2 + sbb3)
    k = 1
    while n_tied > 0 and k < m:  # the tie groups: positions start .. end - 1 share one rank
        if not tie_e[k]:
            k += 1
            continue
        start = k - 1
        end = _group_end(tie_e, k, m)
        group = 0.0
        for i in range(start, end):
            group += counts[order_e[i]]
        b = (prefix[start] + 0.5 * (group + 1.0)) - centre
        for i in range(start, end):
            p = order_e[i]
            c = np.float64(counts[p])
            own = (prefix[i] + 0.5 * (c + 1.0)) - centre
            sab += c * (rank_u[p] - centre) * (b - own)
            sbb += c * (b * b - own * own)
        n_tied -= end - k
        k = end
    return finish_spearman(sab, saa, sbb)


@nb.njit(inline="always", error_model="numpy")
def _moment_sums(counts, packed, sums):
    """Weighted sums of the packed per-point moment columns (branch-free)."""
    s_n = 0.0
    s_e2 = 0.0
    s_u2 = 0.0
    s_z2 = 0.0
    s_lnu2 = 0.0
    s_zd = 0.0
    s_zd2 = 0.0
    for p in range(counts.shape[0]):
        c = np.float64(counts[p])
        s_n += c
        s_e2 += c * packed[p, 0]
        s_u2 += c * packed[p, 1]
        s_z2 += c * packed[p, 2]
        s_lnu2 += c * packed[p, 3]
        s_zd += c * packed[p, 4]
        s_zd2 += c * packed[p, 5]
    _store_sums(sums, s_n, s_e2, s_u2, s_z2, s_lnu2, s_zd, s_zd2)


@nb.njit(inline="always", error_model="numpy")
def _store_sums(sums, s_n, s_e2, s_u2, s_z2, s_lnu2, s_zd, s_zd2):
    sums[S_N] = s_n
    sums[S_E2] = s_e2
    sums[S_U2] = s_u2
    sums[S_Z2] = s_z2
    sums[S_LNU2] = s_lnu2
    sums[S_ZD] = s_zd
    sums[S_ZD2] = s_zd2



@nb.njit(inline="always", error_model="numpy")
def _store_column_sums(sums, s_n, columns, values):
    """:func:`_store_sums` of a walk over the compact columns ``columns`` of
    :func:`pack_moments` (:func:`_compact_rows`): ``values[c]`` is the sum of column
    ``columns[c]``; the columns not walked are 0 (no statistic asked reads them)."""
    sums[S_N] = s_n
    for c in range(6):
        sums[S_E2 + c] = 0.0  # S_E2 .. S_ZD2 follow the order of COLUMNS
    for c in range(columns.shape[0]):
        sums[S_E2 + columns[c]] = values[c]


@nb.njit(inline="always", error_model="numpy")
def _finish_moments(codes, sums, z_shift, out):
    """``out[k]``: moment statistic ``codes[k]`` from the weighted sums ``sums`` (as
    :func:`_evaluate` finishes one)."""
    for k in range(codes.shape[0]):
        out[k] = finalize_moment(codes[k], sums[S_N], sums[S_E2], sums[S_U2], sums[S_Z2],
                                 sums[S_LNU2], sums[S_ZD], sums[S_ZD2], z_shift)

def pack_moments(e2, u2, z, z2, lnu2, z_shift):
    """Per-point moment columns in one row-major array: one cache line per drawn point."""
    zd = z - z_shift
    return np.ascontiguousarray(np.stack([e2, u2, z2, lnu2, zd, zd * zd], axis=1))


@nb.njit(inline="always", error_model="numpy")
def _evaluate(codes, counts, sums, have_sums, n_bins, packed, e2, u2, z2, z_shift,
              order_u, tie_u, order_e, tie_e, work, out, cc_given=np.nan, have_bins=False):
    _, b_n, b_e2, b_u2, b_z2, rank_u, rank_e = work
    for k in range(codes.shape[0]):
        code = codes[k]
        if code < N_MOMENT:
            if not have_sums:
                _moment_sums(counts, packed, sums)
                have_sums = True
            out[k] = finalize_moment(code, sums[S_N], sums[S_E2], sums[S_U2], sums[S_Z2],
                                      sums[S_LNU2], sums[S_ZD], sums[S_ZD2], z_shift)
        elif code == CC:
            if np.isnan(cc_given):
                out[k] = _spearman(counts, order_u, tie_u, order_e, tie_e, rank_u, rank_e)
            else:
                out[k] = cc_given
        else:
            if not have_bins:
                _bin_sums(counts, e2, u2, z2, n_bins, b_n, b_e2, b_u2, b_z2)
                have_bins = True
            out[k] = _finalize_binned(code, n_bins, b_n, b_e2, b_u2, b_z2)


@nb.njit(nogil=True, cache=True, error_model="numpy")
def evaluate_counts(codes, counts, n_bins, packed, e2, u2, z2, z_shift,
                    order_u, tie_u, order_e, tie_e, work, out):
    """Every statistic of ``codes`` for the sample weighted by ``counts``.

    Arrays are in the order of the binning variable; ``packed`` holds the moment columns
    (:func:`pack_moments`). ``work`` is a scratch tuple
    ``(sums, b_n, b_e2, b_u2, b_z2, rank_u, rank_e)`` (:func:`make_work`).
    """
    _evaluate(codes, counts, work[0], False, n_bins, packed, e2, u2, z2, z_shift,
              order_u, tie_u, order_e, tie_e, work, out)


@nb.njit(nogil=True, cache=True)
def fill_counts_block(key, start, stop, counts):
    """The multiplicities of replicates ``start .. stop - 1`` (:func:`fill_counts`), one row
    of ``counts`` each: the resamples of the rows that every model of a paired comparison
    shares (:func:`paired_counts_block`)."""
    for r in range(start, stop):
        fill_counts(key, r, counts[r - start])


@nb.njit(nogil=True, cache=True, error_model="numpy")
def paired_counts_block(row_counts, rows_of, codes, n_bins, packed, e2, u2, z2, z_shift,
                        order_u, tie_u, order_e, tie_e, work, out):
    """The statistics of one model for resamples given as multiplicities of the rows of a
    shared sample: ``out[i]`` for ``row_counts[i]``, the model's point at position ``p`` (its
    arrays are in the order of its binning variable) being row ``rows_of[p]``.

    Every model of a paired comparison (:func:`xuqcal.compare`) evaluates the same rows'
    multiplicities, drawn once (:func:`fill_counts_block`), through :func:`evaluate_counts`'s
    weighted evaluation: sums of count-weighted columns, bins of the weighted points in the
    order of the binning variable, ranks with multiplicities.
    """
    m = rows_of.shape[0]
    counts = np.empty(m, np.int32)
    for i in range(row_counts.shape[0]):
        shared = row_counts[i]
        for p in range(m):
            counts[p] = shared[rows_of[p]]
        _evaluate(codes, counts, work[0], False, n_bins, packed, e2, u2, z2, z_shift,
                  order_u, tie_u, order_e, tie_e, work, out[i])


#: The block schemes of :func:`fill_block_counts_block`.
BLOCK_MOVING, BLOCK_CIRCULAR, BLOCK_STATIONARY = 0, 1, 2


@nb.njit(nogil=True, cache=True)
def fill_group_counts_block(key, start, stop, group_of_row, n_groups, counts):
    """Cluster bootstrap: replicate ``r`` draws ``n_groups`` groups with replacement from its
    stream, and ``counts[r - start, i]`` is the multiplicity of row ``i``'s group
    (``group_of_row``: codes ``0 .. n_groups - 1``)."""
    times = np.zeros(n_groups, np.int32)
    for r in range(start, stop):
        times[:] = 0
        state = stream_start(key, r)
        for _ in range(n_groups):
            g, state = next_below(state, n_groups)
            times[g] += 1
        row = counts[r - start]
        for i in range(group_of_row.shape[0]):
            row[i] = times[group_of_row[i]]


@nb.njit(nogil=True, cache=True)
def fill_block_counts_block(key, start, stop, length, scheme, counts):
    """Block bootstraps of rows in their order (time, a spatial index): replicate ``r`` joins
    blocks of consecutive rows, drawn from its stream, until it holds M rows (the last block
    cut); ``counts[r - start, i]`` is how often row ``i`` was drawn.

    ``scheme``: :data:`BLOCK_MOVING` (blocks of ``length`` rows starting uniformly in
    ``0 .. M - length``), :data:`BLOCK_CIRCULAR` (starting anywhere, wrapping around) or
    :data:`BLOCK_STATIONARY` (Politis & Romano 1994: circular blocks of geometric length with
    mean ``length``)."""
    m = counts.shape[1]
    for r in range(start, stop):
        row = counts[r - start]
        row[:] = 0
        state = stream_start(key, r)
        filled = 0
        while filled < m:
            if scheme == BLOCK_MOVING:
                first, state = next_below(state, m - length + 1)
                size = length
            else:
                first, state = next_below(state, m)
                size = length
                if scheme == BLOCK_STATIONARY:
                    u, state = next_uniform(state)
                    # geometric with success probability 1 / length: 1 + floor(ln u / ln(1 - p))
                    size = 1 if length <= 1 else 1 + int(np.log(1.0 - u)
                                                         / np.log(1.0 - 1.0 / length))
            size = min(size, m - filled)
            for k in range(size):
                row[(first + k) % m] += 1
            filled += size


@nb.njit(nogil=True, cache=True)
def fill_tile_counts_block(key, start, stop, shape, tile, scheme, counts):
    """Tile bootstraps of a complete grid (Lahiri 2003, ch. 12; Politis & Romano 1993 on the
    torus): replicate ``r`` lays ``ceil(shape[k] / tile[k])`` tiles along every axis ``k``
    (row-major), each a copy of the ``tile[0] × tile[1] × ...`` cells whose origin it draws
    from its stream, one coordinate per axis in axis order, cut to the grid's size where the
    last tile of an axis overhangs it; ``counts[r - start, c]`` is how often cell ``c`` (the
    row-major index of the grid of ``shape``) was drawn, and every row sums to the number of
    cells.

    ``scheme``: :data:`BLOCK_CIRCULAR` (origins anywhere, the tiles wrapping around the torus)
    or :data:`BLOCK_MOVING` (origins where the whole tile fits). On a one-axis grid the draws
    are those of :func:`fill_block_counts_block`."""
    d = shape.shape[0]
    n_tiles = np.empty(d, np.int64)
    stride = np.empty(d, np.int64)
    total = 1
    for k in range(d - 1, -1, -1):
        n_tiles[k] = (shape[k] + tile[k] - 1) // tile[k]
        stride[k] = total
        total *= shape[k]
    tiles = 1
    for k in range(d):
        tiles *= n_tiles[k]
    origin = np.empty(d, np.int64)
    kept = np.empty(d, np.int64)
    outer = np.empty(d, np.int64)  # the offsets of the outer axes within the tile (odometer)
    last = d - 1
    for r in range(start, stop):
        row = counts[r - start]
        row[:] = 0
        state = stream_start(key, r)
        for t in range(tiles):
            rest = t  # the tile's place along each axis, row-major
            for k in range(d - 1, -1, -1):
                place = rest % n_tiles[k]
                rest //= n_tiles[k]
                kept[k] = min(tile[k], shape[k] - place * tile[k])
            lines = 1
            for k in range(d):
                if scheme == BLOCK_MOVING:
                    origin[k], state = next_below(state, shape[k] - tile[k] + 1)
                else:
                    origin[k], state = next_below(state, shape[k])
                if k < last:
                    lines *= kept[k]
                outer[k] = 0
            # the tile's cells: lines along the last axis, each in at most two runs (it wraps)
            first = origin[last]
            run = min(kept[last], shape[last] - first)
            wrapped = kept[last] - run
            for _ in range(lines):
                base = 0
                for k in range(last):
                    i = origin[k] + outer[k]
                    if i >= shape[k]:
                        i -= shape[k]
                    base += i * stride[k]
                for j in range(base + first, base + first + run):
                    row[j] += 1
                for j in range(base, base + wrapped):
                    row[j] += 1
                for k in range(last - 1, -1, -1):  # the next line: advance the odometer
                    outer[k] += 1
                    if outer[k] < kept[k]:
                        break
                    outer[k] = 0


def make_work(m: int, n_bins: int):
    """Scratch arrays for :func:`evaluate_counts` (one set per task)."""
    nb_ = max(n_bins, 1)
    return (np.zeros(N_SUMS), np.zeros(nb_), np.zeros(nb_), np.zeros(nb_), np.zeros(nb_),
            np.zeros(m), np.zeros(m))


@nb.njit(inline="always", error_model="numpy")
def _tie_groups_of(tie):
    """Tie-group number of each point (points in sorted order) and the number of groups
    (int32, exact: a bootstrap has fewer than 2**31 points, as its int32 draws)."""
    m = tie.shape[0]
    group = np.empty(m, np.int32)
    g = -1
    for p in range(m):
        if not tie[p]:
            g += 1
        group[p] = g
    return group, g + 1


@nb.njit(inline="always", error_model="numpy")
def _bin_sums_in_draw_order(counts, draws, group, n_groups, e2, u2, z2, n_bins, work,
                            straddles, fill, slots):
    """Equal-count bin sums of a resample sorted stably by the binning variable: tied points
    keep the order in which they were drawn (``draws``: the draws into tie groups, in order).

    Only a tie group whose copies straddle a bin boundary depends on that order; its copies are
    laid out in draw order (a counting sort of ``draws``), every other point is added with its
    multiplicity as in :func:`_bin_sums`.
    """
    _, b_n, b_e2, b_u2, b_z2, _, _ = work
    m = counts.shape[0]
    n_total = 0
    for p in range(m):
        n_total += counts[p]
    # pass 1: which groups straddle a boundary, and where their copies go in ``slots``
    straddles[:] = False
    pos = 0
    b = 0
    next_start = bin_start(1, n_total, n_bins)
    used = 0
    p = 0
    while p < m:
        q = p
        g = 0
        while q < m and group[q] == group[p]:
            g += counts[q]
            q += 1
        if g > 0:
            while pos >= next_start:
                b += 1
                next_start = bin_start(b + 1, n_total, n_bins)
            if q - p > 1 and pos + g > next_start:
                straddles[group[p]] = True
                fill[group[p]] = used
                used += g
            pos += g
        p = q
    # pass 2: the copies of straddling groups in draw order
    n_draws = draws.shape[0]
    for i in range(n_draws):
        if i + _AHEAD < n_draws:
            _prefetch(group, draws[i + _AHEAD])
        j = draws[i]
        gj = group[j]
        if straddles[gj]:
            slots[fill[gj]] = j
            fill[gj] += 1
    # pass 3: walk the sorted resample
    _clear_bins(b_n, b_e2, b_u2, b_z2)
    b = 0
    pos = 0
    next_start = bin_start(1, n_total, n_bins)
    s_n = 0.0
    s_e2 = 0.0
    s_u2 = 0.0
    s_z2 = 0.0
    slot = 0
    p = 0
    while p < m:
        if straddles[group[p]]:
            q = p
            g = 0
            while q < m and group[q] == group[p]:
                g += counts[q]
                q += 1
            for k in range(slot, slot + g):
                pos, b, next_start, s_n, s_e2, s_u2, s_z2 = _add_run(
                    slots[k], 1, e2, u2, z2, n_bins, n_total, b_n, b_e2, b_u2, b_z2, pos, b,
                    next_start, s_n, s_e2, s_u2, s_z2)
            slot += g
            p = q
            continue
        pos, b, next_start, s_n, s_e2, s_u2, s_z2 = _add_run(
            p, counts[p], e2, u2, z2, n_bins, n_total, b_n, b_e2, b_u2, b_z2, pos, b,
            next_start, s_n, s_e2, s_u2, s_z2)
        p += 1
    _store_bin(b, b_n, b_e2, b_u2, b_z2, s_n, s_e2, s_u2, s_z2)


@nb.njit(nogil=True, cache=True, error_model="numpy")
def bootstrap_block(key, start, stop, codes, n_bins, packed, e2, u2, z2, z_shift,
                    order_u, tie_u, order_e, tie_e, tie_bin, work, out):
    """Replicates ``start .. stop - 1``: ``out[r - start, k]`` is statistic ``codes[k]``.

    Replicate ``r`` draws M positions from its own stream (as :func:`fill_counts`; the drawn
    sequence is :func:`~xuqcal.core.random.fill_draws`). Moment sums are accumulated while drawing;
    multiplicities are counted only when a binned or rank statistic needs them. ``tie_bin``
    flags ties of the binning variable (points in its order); binned statistics sort the drawn
    sequence stably, so tied points keep their draw order.

    At M = 10^6 and more the walk is bound by random loads (a row of the moment columns and a
    count per draw, from arrays of tens of MB): draws are made in batches of :data:`_BATCH`
    whose loads are prefetched. Below :data:`_COUNTED_SUMS_FROM` points the moment columns of
    the drawn rows are summed in draw order (one cache line per draw, :func:`_compact_rows`);
    from there on the walk only counts the draws, and the moment sums are the counted sums of
    :func:`_counted_sums` (the same multiplicities, in point order: no row gathered per draw).
    Either way a replicate's sums depend only on M, the data and the stream.
    """
    m = e2.shape[0]
    need_counts = False
    need_bins = False
    for k in range(codes.shape[0]):
        if codes[k] >= N_MOMENT:
            need_counts = True
        if codes[k] >= N_MOMENT and codes[k] != CC:
            need_bins = True
    # draws into tie groups of the binning variable are recorded in draw order (see
    # _bin_sums_in_draw_order); without ties the multiplicities say everything
    group, n_groups = _tie_groups_of(tie_bin)
    record = need_bins and n_groups < m
    tied = np.zeros(m if record else 0, np.bool_)
    if record:
        for p in range(1, m):
            if tie_bin[p]:
                tied[p] = True
                tied[p - 1] = True
    draws = np.empty(m if record else 0, np.int32)
    straddles = np.zeros(n_groups if record else 0, np.bool_)
    fill = np.zeros(n_groups if record else 0, np.int64)
    slots = np.empty(m if record else 0, np.int32)
    # only the moment columns the requested statistics use are gathered per draw (each column
    # is summed on its own, so a value does not depend on which other statistics are asked)
    columns = _moment_columns(codes)
    n_columns = columns.shape[0]
    flat, stride = _compact_rows(packed, columns)
    accumulated = np.zeros(6)
    # from _COUNTED_SUMS_FROM points the moment sums are counted sums (no row gathered per draw)
    counted = m >= _COUNTED_SUMS_FROM and n_columns > 0
    need_counts = need_counts or counted
    counts = np.zeros(m if need_counts else 0, np.int32)
    batch = np.empty(_BATCH, np.int64)
    partial = np.zeros((4, 8))  # rows of up to 8 doubles (_counted_sums)
    # the batched walk pays off once the randomly read arrays outgrow the caches; below that
    # the plain walk is faster (zms at M = 1e5: benchmarks/ab_revisions.py bootstrap_zms_nig_1e5)
    footprint = 8 * m * np.int64(stride) + (4 * m if need_counts else 0)
    batched = counted or footprint > _PLAIN_WALK_BYTES
    sums = work[0]
    for r in range(start, stop):
        state = stream_start(key, r)
        if need_counts:
            counts[:] = 0
        a0 = 0.0
        a1 = 0.0
        a2 = 0.0
        a3 = 0.0
        a4 = 0.0
        a5 = 0.0
        n_draws = 0
        # the two walks below have the same body, written out twice: an inlined helper taking
        # the arrays made every draw slower (reference counting of its array arguments)
        for _ in range(0 if batched else m):
            j, state = next_below(state, m)
            if need_counts:
                counts[j] += 1
                if record and tied[j]:
                    draws[n_draws] = j
                    n_draws += 1
            row = np.uint64(j) * stride
            a0 += flat[row]
            if n_columns > 1:
                a1 += flat[row + np.uint64(1)]
                if n_columns > 2:
                    a2 += flat[row + np.uint64(2)]
                    if n_columns > 3:
                        a3 += flat[row + np.uint64(3)]
                        if n_columns > 4:
                            a4 += flat[row + np.uint64(4)]
                            if n_columns > 5:
                                a5 += flat[row + np.uint64(5)]
        done = 0
        while batched and done < m:
            # draw a batch of the stream (the same numbers in the same order) and prefetch
            # what each draw reads, then gather and sum in draw order: the random loads of a
            # batch overlap instead of waiting for each other, and no sum changes order
            n = min(_BATCH, m - done)
            for t in range(n):
                j, state = next_below(state, m)
                batch[t] = j
                if not counted:
                    _prefetch(flat, np.uint64(j) * stride)
                if need_counts:
                    _prefetch_write(counts, j)
                    if record:
                        _prefetch(tied, j)
            for t in range(n):
                j = batch[t]
                if need_counts:
                    counts[j] += 1
                    if record and tied[j]:
                        draws[n_draws] = j
                        n_draws += 1
                if counted:
                    continue
                row = np.uint64(j) * stride
                a0 += flat[row]
                if n_columns > 1:
                    a1 += flat[row + np.uint64(1)]
                    if n_columns > 2:
                        a2 += flat[row + np.uint64(2)]
                        if n_columns > 3:
                            a3 += flat[row + np.uint64(3)]
                            if n_columns > 4:
                                a4 += flat[row + np.uint64(4)]
                                if n_columns > 5:
                                    a5 += flat[row + np.uint64(5)]
            done += n
        if counted:
            _counted_sums(counts, flat, stride, n_columns, partial, accumulated)
        else:
            accumulated[0] = a0
            accumulated[1] = a1
            accumulated[2] = a2
            accumulated[3] = a3
            accumulated[4] = a4
            accumulated[5] = a5
        _store_column_sums(sums, np.float64(m), columns, accumulated)
        if record:
            _bin_sums_in_draw_order(counts, draws[:n_draws], group, n_groups, e2, u2, z2,
                                    n_bins, work, straddles, fill, slots)
        _evaluate(codes, counts, sums, n_columns > 0, n_bins, packed, e2, u2, z2, z_shift,
                  order_u, tie_u, order_e, tie_e, work, out[r - start], np.nan, record)


def uses_moment_replicates(codes: np.ndarray, m: int) -> bool:
    """Whether :func:`bootstrap_replicates` computes replicates of the statistics ``codes`` on
    M points with :func:`moment_replicates_block`: moment statistics only, from
    :data:`_COUNTED_SUMS_FROM` points."""
    return m >= _COUNTED_SUMS_FROM and codes.shape[0] > 0 and bool(np.all(codes < N_MOMENT))


def bootstrap_replicates(key, start, stop, codes, n_bins, packed, e2, u2, z2, z_shift,
                         order_u, tie_u, order_e, tie_e, tie_bin, work, out) -> None:
    """Replicates ``start .. stop - 1`` of :func:`bootstrap_block` (the same arguments and the
    same values), computed by :func:`moment_replicates_block` when
    :func:`uses_moment_replicates` (M = 2·10⁶: zms 5.52 → 3.73 ns per draw per core on 2
    threads, ``benchmarks/measured/ab-kernels-grouped-counts-2threads-issue26-2026-11-26.json``),
    else by :func:`bootstrap_block`. A Python function, so that each kernel is compiled only
    when it is used."""
    if uses_moment_replicates(codes, e2.shape[0]):
        moment_replicates_block(key, start, stop, codes, packed, z_shift, work, out)
    else:
        bootstrap_block(key, start, stop, codes, n_bins, packed, e2, u2, z2, z_shift,
                        order_u, tie_u, order_e, tie_e, tie_bin, work, out)


#: Draws per batch of the bootstrap walk (drawn and prefetched, then gathered in draw order;
#: 32 to 128 measured alike at M = 2e6, 16 slower).
_BATCH = 64
#: Bytes of randomly read arrays (moment rows and counts) up to which the bootstrap walks
#: without batches and prefetches.
_PLAIN_WALK_BYTES = 2 << 20
#: Points from which a bootstrap replicate's moment sums (:func:`bootstrap_block`,
#: :func:`mean_block`) are counted sums, :func:`_counted_sums`, instead of sums in draw order:
#: the random load of a row per draw becomes the increment of a 4-byte count, and the rows are
#: read once, in order (zms at M = 2·10⁶: ``bootstrap_zms`` of
#: ``benchmarks/measured/ab-kernels-session-2e6-issue26-2026-11-26b.json``). A function of M
#: only, so a statistic's replicates do not depend on which other statistics are asked.
_COUNTED_SUMS_FROM = 1 << 18


@nb.njit(error_model="numpy")
def _counted_sums(counts, flat, stride, n_columns, partial, out):
    """``out[c] = Σ_j counts[j] flat[j stride + c]`` for the columns ``c < n_columns``, in
    point order as four interleaved partial sums: ``s_k`` adds the points ``j ≡ k (mod 4)``
    below ``4 ⌊M / 4⌋`` in increasing order, the sum is ``(s_0 + s_1) + (s_2 + s_3)`` and the
    last ``M mod 4`` points are then added one by one. ``partial`` is scratch of 4 rows of at
    least ``max(n_columns, stride)`` columns, C order. Rows of 2, 4 or 8 doubles (those of
    :func:`_compact_rows`) are added as vectors (:func:`_make_tile_sums`: the same sums)."""
    m = counts.shape[0]
    quarter = m // 4
    partial[:, :] = 0.0
    if not _add_tile(counts, flat, 0, 4 * quarter, partial, np.int64(stride)):
        for q in range(quarter):  # rows of another width (mean_block's columns)
            for k in range(4):
                j = 4 * q + k
                count = np.float64(counts[j])
                row = np.uint64(j) * stride
                for c in range(n_columns):
                    partial[k, c] += count * flat[row + np.uint64(c)]
    _finish_counted(counts, flat, stride, n_columns, partial, out)


@nb.njit(inline="always", error_model="numpy")
def _add_tile(counts, flat, lo, hi, partial, width):
    """The tile step (:func:`_tile_sums_1`, :func:`_make_tile_sums`) for rows of ``width``
    doubles, 1, 2, 4 or 8; returns False, adding nothing, for another width."""
    if width == 1:
        _tile_sums_1(counts, flat, lo, hi, partial)
    elif width == 2:
        _tile_sums_2(counts, flat, lo, hi, partial)
    elif width == 4:
        _tile_sums_4(counts, flat, lo, hi, partial)
    elif width == 8:
        _tile_sums_8(counts, flat, lo, hi, partial)
    else:
        return False
    return True


@nb.njit(inline="always", error_model="numpy")
def _finish_counted(counts, flat, stride, n_columns, partial, out):
    """``out[c]`` of the counted sums from the four chains in ``partial``: ``(s_0 + s_1) +
    (s_2 + s_3)``, then the last ``M mod 4`` points one by one (rows of ``stride``)."""
    m = counts.shape[0]
    for c in range(n_columns):
        total = (partial[0, c] + partial[1, c]) + (partial[2, c] + partial[3, c])
        for j in range(4 * (m // 4), m):
            total += np.float64(counts[j]) * flat[np.uint64(j) * stride + np.uint64(c)]
        out[c] = total


#: Replicates of one group of :func:`moment_replicates_block`: their multiplicities are
#: counted one replicate after the other, then their counted sums are made in one pass over
#: the rows, which are read once per group instead of once per replicate.
_COUNTED_GROUP = 8
#: Points per tile of that pass (a multiple of 4): a tile's rows stay in the L2 cache while
#: every replicate of the group adds its counts times them.
_COUNTED_TILE = 2048


@nb.njit(inline="always", error_model="numpy")
def _count_draws_u8(key, replicate, n_draws, counts, batch):
    """Draw ``n_draws`` indices below ``len(counts)`` from the stream ``(key, replicate)`` (as
    :func:`fill_counts`, which draws ``len(counts)``) and count them modulo 256 in the uint8
    ``counts``: a quarter of the bytes of int32 counts, so that the randomly incremented array
    of M = 2·10⁶ points is 2 MB. Returns whether a count wrapped past 255 (a point drawn 256
    times: the multiplicities are then wrong, and the caller counts again with
    :func:`fill_counts`). ``batch`` is scratch of :data:`_BATCH` int64."""
    m = counts.shape[0]
    state = stream_start(key, replicate)
    counts[:] = 0
    wrapped = False
    done = 0
    raw = np.empty(_RAW_BATCH, np.uint64)
    threshold = lemire_threshold(m)
    while done < n_draws:
        n, state = accepted_below(state, m, threshold, raw, batch, counts)
        n = min(n, n_draws - done)
        for t in range(n):
            j = batch[t]
            c = counts[j] + np.uint8(1)
            counts[j] = c
            wrapped |= (c & 0xFF) == 0
        done += n
    return wrapped


def _make_tile_sums(width):
    """The tile step of :func:`_group_counted_sums` (and the head of :func:`_counted_sums`)
    for rows of ``width`` doubles: ``tile_sums(counts, flat, lo, hi, partial)`` adds, for
    ``j = lo, lo + 4, .. < hi`` and ``k < 4``, ``counts[j + k]`` times the row ``j + k`` of
    ``flat`` to the row ``k`` of ``partial`` (4 rows of at least ``width`` float64, C order;
    their first ``width`` columns), each column a chain of additions in point order.

    An intrinsic whose LLVM IR holds the four partial rows as vectors of ``width`` doubles:
    Numba turns LLVM's SLP vectorizer off, so the same loop written in Python kept 32 scalar
    chains (or the rows of ``partial`` in memory, reloaded and stored at every point). Each
    lane is the scalar IEEE multiplication and addition (no fast-math flag, no contraction:
    no FMA), so every sum is the scalar loop's bit for bit. The bootstrap of five moment
    statistics (rows of 8 doubles) at M = 2·10⁶: 3.93 → 2.44 ns per draw on one thread, 4.80
    → 3.35 per draw per core on two (``benchmarks/measured/ab-kernels-vector-tiles-*``)."""
    @intrinsic
    def tile_sums(typingctx, counts, flat, lo, hi, partial):
        if not (isinstance(counts, types.Array) and counts.ndim == 1
                and isinstance(counts.dtype, types.Integer)):
            raise TypingError(f"counts: a 1-D integer array, not {counts}")
        if not (isinstance(flat, types.Array) and flat.ndim == 1
                and flat.dtype == types.float64 and flat.layout == "C"):
            raise TypingError(f"flat: a C-contiguous 1-D float64 array, not {flat}")
        if not (isinstance(partial, types.Array) and partial.ndim == 2
                and partial.dtype == types.float64 and partial.layout == "C"):
            raise TypingError(f"partial: a C-contiguous 2-D float64 array, not {partial}")
        return types.void(counts, flat, lo, hi, partial), _tile_sums_codegen(width)
    return tile_sums


def _tile_sums_codegen(width):
    def codegen(context, builder, signature, args):
        counts_type, flat_type, lo_type, hi_type, partial_type = signature.args
        counts = context.make_array(counts_type)(context, builder, args[0])
        flat = context.make_array(flat_type)(context, builder, args[1])
        partial = context.make_array(partial_type)(context, builder, args[4])
        intp = context.get_value_type(types.intp)
        lo = context.cast(builder, args[2], lo_type, types.intp)
        hi = context.cast(builder, args[3], hi_type, types.intp)
        vector = ir.VectorType(ir.DoubleType(), width)
        vector_pointer = vector.as_pointer()
        # the rows of partial in stack slots, which LLVM promotes to vector registers
        rows = []
        for k in range(4):
            row = builder.bitcast(cgutils.get_item_pointer(
                context, builder, partial_type, partial, [intp(k), intp(0)]), vector_pointer)
            slot = cgutils.alloca_once(builder, vector)
            builder.store(builder.load(row, align=8), slot)
            rows.append((row, slot))
        broadcast = ir.Constant(ir.VectorType(ir.IntType(32), width), [0] * width)
        undefined = ir.Constant(vector, ir.Undefined)
        with cgutils.for_range_slice(builder, lo, hi, intp(4), intp) as (j, _):
            for k, (_, slot) in enumerate(rows):
                point = builder.add(j, intp(k))
                count = builder.load(cgutils.get_item_pointer(context, builder, counts_type,
                                                              counts, [point]))
                count = context.cast(builder, count, counts_type.dtype, types.float64)
                count = builder.shuffle_vector(
                    builder.insert_element(undefined, count, ir.IntType(32)(0)), undefined,
                    broadcast)
                values = builder.load(builder.bitcast(cgutils.get_item_pointer(
                    context, builder, flat_type, flat, [builder.mul(point, intp(width))]),
                    vector_pointer), align=8)
                builder.store(builder.fadd(builder.load(slot), builder.fmul(count, values)),
                              slot)
        for row, slot in rows:
            builder.store(builder.load(slot), row, align=8)
        return context.get_dummy_value()
    return codegen


_tile_sums_2 = _make_tile_sums(2)
_tile_sums_4 = _make_tile_sums(4)
_tile_sums_8 = _make_tile_sums(8)


@nb.njit(inline="always", error_model="numpy")
def _tile_sums_1(counts, flat, lo, hi, partial):
    s0 = partial[0, 0]
    s1 = partial[1, 0]
    s2 = partial[2, 0]
    s3 = partial[3, 0]
    for j in range(lo, hi, 4):
        s0 += np.float64(counts[j]) * flat[j]
        s1 += np.float64(counts[j + 1]) * flat[j + 1]
        s2 += np.float64(counts[j + 2]) * flat[j + 2]
        s3 += np.float64(counts[j + 3]) * flat[j + 3]
    partial[0, 0] = s0
    partial[1, 0] = s1
    partial[2, 0] = s2
    partial[3, 0] = s3


@nb.njit(error_model="numpy")
def _group_counted_sums(counts, n_group, flat, stride, n_columns, partial, out):
    """``out[q, c]``: the counted sums of :func:`_counted_sums` of the multiplicities
    ``counts[q]`` (``q < n_group``), bit for bit (the same four interleaved partial sums in
    point order, the same final additions), made tile by tile of :data:`_COUNTED_TILE`
    points so that every replicate of the group reads a tile of rows from the cache.
    ``flat`` holds rows of ``stride`` doubles (1, 2, 4 or 8; padding zero, its sums unused);
    ``partial`` is ``(_COUNTED_GROUP, 4, 8)`` scratch."""
    m = counts.shape[1]
    head = 4 * (m // 4)
    width = np.int64(stride)
    partial[:n_group] = 0.0
    for lo in range(0, head, _COUNTED_TILE):
        hi = min(lo + _COUNTED_TILE, head)
        for q in range(n_group):
            _add_tile(counts[q], flat, lo, hi, partial[q], width)
    for q in range(n_group):
        _finish_counted(counts[q], flat, stride, n_columns, partial[q], out[q])


@nb.njit(error_model="numpy")
def _int32_counted_sums(key, replicate, flat, stride, n_columns, partial, out):
    """The counted sums of replicate ``replicate`` from int32 multiplicities
    (:func:`fill_counts`, :func:`_counted_sums`): the fallback of
    :func:`moment_replicates_block` when a uint8 count wrapped."""
    counts = np.empty(flat.shape[0] // np.int64(stride), np.int32)
    fill_counts(key, replicate, counts)
    _counted_sums(counts, flat, stride, n_columns, partial, out)


@nb.njit(nogil=True, cache=True, error_model="numpy")
def moment_replicates_block(key, start, stop, codes, packed, z_shift, work, out):
    """The replicates ``start .. stop - 1`` of :func:`bootstrap_block` when every statistic
    of ``codes`` is a moment statistic and M is at least :data:`_COUNTED_SUMS_FROM`: the same
    counted sums, bit for bit, with the multiplicities of :data:`_COUNTED_GROUP` replicates
    counted in uint8 (:func:`_count_draws_u8`) and summed in one pass over the rows
    (:func:`_group_counted_sums`). A replicate whose count wrapped is counted again in int32
    (:func:`fill_counts`) and summed alone (:func:`_counted_sums`).

    Called through :func:`bootstrap_replicates`, which chooses between the two kernels in
    Python: inside :func:`bootstrap_block` this path made every process compile it, also
    those that never bootstrap large data (``bootstrap_block`` compiled in 14.8 s with it and
    11.0 s without, ``benchmarks/measured/compile-time-issue26-2026-11-26.json`` and
    ``…-26b.json``)."""
    columns = _moment_columns(codes)
    n_columns = columns.shape[0]
    flat, stride = _compact_rows(packed, columns)
    m = flat.shape[0] // np.int64(stride)
    group = min(_COUNTED_GROUP, stop - start)
    counts = np.empty((group, m), np.uint8)
    wrapped = np.zeros(group, np.bool_)
    batch = np.empty(_BATCH, np.int64)
    partial = np.zeros((_COUNTED_GROUP, 4, 8))
    totals = np.zeros((group, 6))
    sums = work[0]
    for first in range(start, stop, group):
        n_group = min(group, stop - first)
        for q in range(n_group):
            wrapped[q] = _count_draws_u8(key, first + q, m, counts[q], batch)
        _group_counted_sums(counts, n_group, flat, stride, n_columns, partial, totals)
        for q in range(n_group):
            if wrapped[q]:
                _int32_counted_sums(key, first + q, flat, stride, n_columns, partial[0],
                                    totals[q])
            _store_column_sums(sums, np.float64(m), columns, totals[q])
            _finish_moments(codes, sums, z_shift, out[first + q - start])


@nb.njit(inline="always", error_model="numpy")
def _compact_rows(packed, columns):
    """The moment columns ``columns`` of ``packed``, one row per point: ``(flat, stride)``
    with column ``c`` of point ``j`` at ``flat[j * stride + c]``; ``stride`` is unsigned, and
    so are the indices of the walk (no negative-index wraparound code per load).

    Rows are padded to 1, 2, 4 or 8 doubles in storage aligned to 64 bytes, so that a draw
    touches one cache line: rows of 3 (or 5, 6) doubles straddle two lines for 1 in 4 (or 1 in
    2) points, which slows the walk. Without columns
    the stride is 0 and ``flat`` one element: the walk reads ``flat[0]`` (a sum never used)
    instead of testing for columns at every draw."""
    m = packed.shape[0]
    n_columns = columns.shape[0]
    if n_columns == 0:
        return np.zeros(1), np.uint64(0)
    width = 1
    while width < n_columns:
        width *= 2
    n = m * width
    # zeros: the padding of a row is added (times the count) by the grouped counted sums,
    # whose sums of it are never used; other values there could be slow (subnormal) or NaN
    storage = np.zeros(n + 8)
    line = np.uint64(64)
    offset = np.int64((line - storage.ctypes.data % line) % line) // 8
    flat = storage[offset:offset + n]
    for i in range(m):
        for c in range(n_columns):
            flat[i * width + c] = packed[i, columns[c]]
    return flat, np.uint64(width)


_COLUMN_USED = np.zeros((N_MOMENT, len(COLUMNS)), np.bool_)
for _code, _columns in MOMENT_COLUMNS.items():
    _COLUMN_USED[_code, list(_columns)] = True


@nb.njit(inline="always", error_model="numpy")
def _moment_columns(codes):
    """Columns of :func:`pack_moments` (e2, u2, z2, lnu2, zd, zd2) used by ``codes``."""
    used = np.zeros(6, np.bool_)
    for k in range(codes.shape[0]):
        if codes[k] < N_MOMENT:
            for c in range(6):
                if _COLUMN_USED[codes[k], c]:
                    used[c] = True
    return np.flatnonzero(used)


@nb.njit(nogil=True, cache=True, error_model="numpy")
def mean_block(key, start, stop, values, out):
    """Bootstrap replicates ``start .. stop - 1`` of the means of the columns of ``values``
    (``M × k``, per-point quantities such as proper scores): ``out[r - start, c]``.

    Replicate ``r`` draws the M positions of :func:`bootstrap_block` from the same stream
    (with the key of the bootstrap, the same points as the replicate ``r`` of the data's
    statistics) and sums the drawn rows as that kernel sums a moment column (in draw order, or
    from :data:`_COUNTED_SUMS_FROM` points the counted sums of :func:`_counted_sums`): the
    replicates of the mean of ``Z²`` are those of ``zms``, bit for bit.
    """
    m = values.shape[0]
    k = values.shape[1]
    total = np.zeros(k)
    if m >= _COUNTED_SUMS_FROM and k > 0:
        flat = np.ascontiguousarray(values).ravel()
        counts = np.zeros(m, np.int32)
        partial = np.zeros((4, max(k, 8)))
        for r in range(start, stop):
            fill_counts(key, r, counts)  # the multiplicities of replicate r's draws
            _counted_sums(counts, flat, np.uint64(k), k, partial, total)
            for c in range(k):
                out[r - start, c] = total[c] / m
        return
    for r in range(start, stop):
        state = stream_start(key, r)
        total[:] = 0.0
        for _ in range(m):
            j, state = next_below(state, m)
            for c in range(k):
                total[c] += values[j, c]
        for c in range(k):
            out[r - start, c] = total[c] / m


@nb.njit(nogil=True, cache=True, error_model="numpy")
def counts_means_block(row_counts, row_of_point, values, out):
    """Means of the columns of ``values`` (``M × k``, per point) over resamples given as row
    multiplicities: ``out[i, c] = Σ_p n_p values[p, c] / Σ_p n_p`` with
    ``n_p = row_counts[i, row_of_point[p]]``, summed in the order of the points (the
    dependent resamples of :mod:`xuqcal.analysis.dependent`)."""
    m = values.shape[0]
    k = values.shape[1]
    total = np.zeros(k)
    for i in range(row_counts.shape[0]):
        counts = row_counts[i]
        total[:] = 0.0
        weight = 0
        for p in range(m):
            n = counts[row_of_point[p]]
            if n:
                weight += n
                for c in range(k):
                    total[c] += n * values[p, c]
        for c in range(k):
            out[i, c] = total[c] / weight


# ----------------------------------------------------------------------------- jackknife


@nb.njit(nogil=True, cache=True, error_model="numpy")
def moment_totals(e2, u2, z, z2, lnu2, z_shift):
    """The sums over all points that the leave-one-out moments subtract from: ``e2``, ``u2``,
    ``z2``, ``lnu2``, ``z - z_shift`` and its square (in that order), computed once per data set
    and shared by every block of :func:`jackknife_moments`."""
    t_e2 = 0.0
    t_u2 = 0.0
    t_z2 = 0.0
    t_lnu2 = 0.0
    t_zd = 0.0
    t_zd2 = 0.0
    for p in range(e2.shape[0]):
        zd = z[p] - z_shift
        t_e2 += e2[p]
        t_u2 += u2[p]
        t_z2 += z2[p]
        t_lnu2 += lnu2[p]
        t_zd += zd
        t_zd2 += zd * zd
    return np.array([t_e2, t_u2, t_z2, t_lnu2, t_zd, t_zd2])


@nb.njit(nogil=True, cache=True, error_model="numpy")
def jackknife_moments(codes, e2, u2, z, z2, lnu2, z_shift, totals, start, stop, out):
    """Leave-one-out values of moment statistics of points ``start:stop`` in closed form, O(1)
    per point, from the sums over all points (``totals``: :func:`moment_totals`)."""
    t_e2 = totals[0]
    t_u2 = totals[1]
    t_z2 = totals[2]
    t_lnu2 = totals[3]
    t_zd = totals[4]
    t_zd2 = totals[5]
    m = e2.shape[0]
    n = m - 1.0
    for i in range(start, stop):
        zd = z[i] - z_shift
        r_e2 = _without(e2, i, t_e2)
        r_u2 = _without(u2, i, t_u2)
        r_z2 = _without(z2, i, t_z2)
        for k in range(codes.shape[0]):
            out[i - start, k] = finalize_moment(codes[k], n, r_e2, r_u2, r_z2,
                                                 t_lnu2 - lnu2[i], t_zd - zd,
                                                 t_zd2 - zd * zd, z_shift)


@nb.njit(nogil=True, cache=True, error_model="numpy")
def _range_without(values, prefix, lo, hi, q):
    """Sum of the non-negative ``values[lo:hi]`` without point ``q`` (if inside), from the
    prefix sums; summed directly instead when the difference of prefix sums has lost more than
    half of its digits (a bin of small values after a huge one: 1 + 1e-177 - 1 = 0). Ordinary
    data never take that path (bit-identical)."""
    total = prefix[hi] - prefix[lo]
    if lo <= q < hi:
        total -= values[q]
    if total < prefix[hi] * 2.0**-26:
        total = 0.0
        for p in range(lo, hi):
            if p != q:
                total += values[p]
    return total


@nb.njit(nogil=True, cache=True, error_model="numpy")
def _without(values, i, total):
    """``total - values[i]`` for a column of non-negative values, summed over the other points
    instead when point ``i`` holds nearly all of the total (``total - values[i]`` would have
    lost more than half of its digits: uE = 1 and 1e-89 gave ``Σ uE² - 1 = 0``, an RMV of 0
    and an undefined RCE). Only one point of a column can hold that much, and ordinary data
    never take that path (bit-identical)."""
    rest = total - values[i]
    if rest < total * 2.0**-26:
        rest = 0.0
        for p in range(values.shape[0]):
            if p != i:
                rest += values[p]
    return rest


@nb.njit(nogil=True, cache=True, error_model="numpy")
def binned_prefix_sums(e2, u2, z2):
    """The prefix sums of ``e2``, ``u2`` and ``z2`` over the binning order, ``(3, M + 1)``
    (row ``k``, position ``p``: the sum of the first ``p`` values): computed once per data set
    and shared by every block of :func:`jackknife_binned`."""
    m = e2.shape[0]
    prefix = np.zeros((3, m + 1))
    for p in range(m):
        prefix[0, p + 1] = prefix[0, p] + e2[p]
        prefix[1, p + 1] = prefix[1, p] + u2[p]
        prefix[2, p + 1] = prefix[2, p] + z2[p]
    return prefix


@nb.njit(nogil=True, cache=True, error_model="numpy")
def jackknife_binned(codes, n_bins, e2, u2, z2, prefix, start, stop, out):
    """Leave-one-out values of binned statistics of points ``start:stop``, re-binned exactly,
    O(N) per point.

    With the prefix sums over the binning order (``prefix``: :func:`binned_prefix_sums`), bin
    ``[s, e)`` of the reduced sequence (point ``q`` removed) covers original positions
    ``[lo, hi)`` minus ``q``.
    """
    m = e2.shape[0]
    p_e2 = prefix[0]
    p_u2 = prefix[1]
    p_z2 = prefix[2]
    n = m - 1
    b_n = np.zeros(n_bins)
    b_e2 = np.zeros(n_bins)
    b_u2 = np.zeros(n_bins)
    b_z2 = np.zeros(n_bins)
    for q in range(start, stop):
        for b in range(n_bins):
            s = bin_start(b, n, n_bins)
            e = bin_start(b + 1, n, n_bins)
            lo = s if s < q else s + 1
            hi = e if e <= q else e + 1
            b_n[b] = e - s
            b_e2[b] = _range_without(e2, p_e2, lo, hi, q)
            b_u2[b] = _range_without(u2, p_u2, lo, hi, q)
            b_z2[b] = _range_without(z2, p_z2, lo, hi, q)
        for k in range(codes.shape[0]):
            out[q - start, k] = _finalize_binned(codes[k], n_bins, b_n, b_e2, b_u2, b_z2)


@nb.njit(inline="always", error_model="numpy")
def _tie_group_sums(group, n_groups, a, b):
    """Per tie group: the count, Σ a and Σ b; then each summed over the groups strictly above."""
    count = np.zeros(n_groups + 1)
    sum_a = np.zeros(n_groups + 1)
    sum_b = np.zeros(n_groups + 1)
    for j in range(group.shape[0]):
        count[group[j]] += 1.0
        sum_a[group[j]] += a[j]
        sum_b[group[j]] += b[j]
    above_count = np.zeros(n_groups + 1)
    above_a = np.zeros(n_groups + 1)
    above_b = np.zeros(n_groups + 1)
    for g in range(n_groups - 1, -1, -1):
        above_count[g] = above_count[g + 1] + count[g + 1]
        above_a[g] = above_a[g + 1] + sum_a[g + 1]
        above_b[g] = above_b[g + 1] + sum_b[g + 1]
    return count, sum_a, sum_b, above_count, above_a, above_b


@nb.njit(nogil=True, cache=True, error_model="numpy")
def jackknife_spearman(group_u, group_e, rank_u, rank_e, out):
    """Exact leave-one-out Spearman correlations of all M points, O(M log M) in total.

    Removing point ``i`` lowers the average rank of every other point ``j`` by
    ``d_j = 1`` if ``j`` is above ``i`` and by 1/2 if tied with it (``du`` along uE, ``de``
    along |E|), so with the centred full ranks ``A``, ``B`` (centre ``M / 2``, the mean rank of
    ``M - 1`` points) the reduced sums are

    ``Σ ab = Σ AB - Σ du B - Σ de A + Σ du de``, ``Σ aa = Σ A² - 2 Σ du A + Σ du²``

    (and ``Σ bb`` alike), over all ``j`` with ``du_i = de_i = 1/2``, then without the term of
    ``i``. Every sum but ``Σ du de`` depends on ``i`` only through its tie group (suffix sums
    over groups); ``Σ du de`` counts the points above ``i`` in both variables, which a sweep
    down the uE groups with a Fenwick tree over the |E| groups gives in O(log M) per point.
    ``group_*`` are the tie-group numbers (0, 1, ... in increasing order of the value).
    """
    m = rank_u.shape[0]
    centre = 0.5 * m
    n_u = 0
    n_e = 0
    a = np.empty(m)
    b = np.empty(m)
    t_ab = 0.0
    t_aa = 0.0
    t_bb = 0.0
    for j in range(m):
        n_u = max(n_u, group_u[j] + 1)
        n_e = max(n_e, group_e[j] + 1)
        a[j] = rank_u[j] - centre
        b[j] = rank_e[j] - centre
        t_ab += a[j] * b[j]
        t_aa += a[j] * a[j]
        t_bb += b[j] * b[j]
    cnt_u, sa_u, sb_u, above_cnt_u, above_sa_u, above_sb_u = _tie_group_sums(group_u, n_u, a, b)
    cnt_e, sa_e, sb_e, above_cnt_e, above_sa_e, above_sb_e = _tie_group_sums(group_e, n_e, a, b)

    # Σ du de = N(>,>) + (N(>,=) + N(=,>)) / 2 + N(=,=) / 4, in order of (group_u, group_e)
    key = np.empty(m, np.int64)
    for j in range(m):
        key[j] = group_u[j] * n_e + group_e[j]
    order = np.argsort(key)
    tree = np.zeros(n_e + 1, np.int64)  # Fenwick tree over |E| groups of the points inserted
    inserted = 0
    dd = np.empty(m)
    stop = m
    while stop > 0:
        g = group_u[order[stop - 1]]
        first = stop - 1
        while first > 0 and group_u[order[first - 1]] == g:
            first -= 1
        k = first
        while k < stop:  # runs of equal |E| group within the uE group
            ge = group_e[order[k]]
            k2 = k
            while k2 < stop and group_e[order[k2]] == ge:
                k2 += 1
            at_most = 0  # inserted points (uE group above) with |E| group <= ge
            p = ge + 1
            while p > 0:
                at_most += tree[p]
                p -= p & -p
            below = 0  # ... with |E| group < ge
            p = ge
            while p > 0:
                below += tree[p]
                p -= p & -p
            value = ((inserted - at_most) + 0.5 * (at_most - below) + 0.5 * (stop - k2)
                     + 0.25 * (k2 - k))
            for t in range(k, k2):
                dd[order[t]] = value
            k = k2
        for t in range(first, stop):
            p = group_e[order[t]] + 1
            while p <= n_e:
                tree[p] += 1
                p += p & -p
            inserted += 1
        stop = first

    for i in range(m):
        gu = group_u[i]
        ge = group_e[i]
        du_a = above_sa_u[gu] + 0.5 * sa_u[gu]
        du_b = above_sb_u[gu] + 0.5 * sb_u[gu]
        du_2 = above_cnt_u[gu] + 0.25 * cnt_u[gu]
        de_a = above_sa_e[ge] + 0.5 * sa_e[ge]
        de_b = above_sb_e[ge] + 0.5 * sb_e[ge]
        de_2 = above_cnt_e[ge] + 0.25 * cnt_e[ge]
        sab = t_ab - du_b - de_a + dd[i]
        saa = t_aa - 2.0 * du_a + du_2
        sbb = t_bb - 2.0 * de_b + de_2
        # remove the term of j == i (it was counted with du = de = 1/2)
        a_i = a[i] - 0.5
        b_i = b[i] - 0.5
        sab -= a_i * b_i
        saa -= a_i * a_i
        sbb -= b_i * b_i
        out[i] = finish_spearman(sab, saa, sbb)


# ----------------------------------------------------------------------- simulated references

# The radix sort of the simulated sets (|E~|, and uE² of the NIG sets). It must give the
# stable argsort exactly: the ranks, the tie flags and hence ``cc`` follow from the
# permutation, and any exact stable sort gives the same one.
# The keys (non-negative doubles viewed as uint64: same order) are sorted as ``key - min``, and
# only on the 32 highest bits of that span (``hi``): LSD passes of 8-bit digits move 4-byte
# (hi, index) pairs, each pass reading its input sequentially and writing into 256 streams,
# which stay in the L1 cache (wider digits have more write streams, which thrash the L1 and the
# TLB: 3 passes of 11-bit digits were slower, benchmarks/measured/ab-kernels-radix11-rejected-*);
# a digit that every key shares is skipped. ``hi`` is a non-decreasing function of the
# key, so the stable sort on ``hi`` is the stable sort on the key except inside runs of equal
# ``hi``: a last sequential pass sorts those runs (rare and short for continuous data: two
# doubles share ``hi`` only when they agree to about 22 significant bits) on the full keys,
# stably, and sets the tie flags from the full keys. Against 8 passes of (8-byte key, 4-byte
# index) on the full keys, this moves about a third of the bytes and gives the same permutation.
_RADIX_BITS = 8
_RADIX_SIZE = 1 << _RADIX_BITS
_RADIX_DIGITS = 32 // _RADIX_BITS
_RADIX_MASK = np.uint32(_RADIX_SIZE - 1)
#: The permutations are int32 (4 bytes moved per point and pass instead of 8).
_MAX_SORTED = 2**31 - 1
#: Runs of equal ``hi`` up to this length are fixed up by insertion; longer ones by a merge sort.
_INSERTION_RUN = 16


@nb.njit(inline="always", error_model="numpy")
def _digit_offsets(position, first, m):
    """Turn ``position``, the counts of one digit's values over ``m`` keys (one count per
    digit value, unsigned integers), into the first target position of each value (the
    prefix sums before it), for a counting pass; returns False, leaving the counts, when
    every key has the first key's digit ``first``: the pass would move nothing."""
    if position[first] == m:
        return False
    total = position[first] - position[first]  # 0 of the counts' type
    for v in range(position.shape[0]):
        count = position[v]
        position[v] = total
        total += count
    return True


@nb.njit(inline="always", error_model="numpy")
def _radix_pass(source_keys, source_order, first, target_keys, target_order, position, shift):
    """One stable counting pass on the digit ``key >> shift`` (uint32 keys); ``position`` holds
    the next target position of each digit value. The first pass takes the indices
    ``0 .. m-1``."""
    for i in range(source_keys.shape[0]):
        k = source_keys[i]
        digit = (k >> shift) & _RADIX_MASK
        p = position[digit]
        target_keys[p] = k
        target_order[p] = i if first else source_order[i]
        position[digit] = p + _ONE


@nb.njit(inline="always", error_model="numpy")
def _fix_run(keys, order, start, stop):
    """Stable sort of ``order[start:stop]`` (indices in increasing order: the radix sort is
    stable) by ``keys[order[j]]``: the permutation of the full stable argsort."""
    if stop - start <= _INSERTION_RUN:
        for j in range(start + 1, stop):
            index = order[j]
            key = keys[index]
            i = j - 1
            while i >= start and keys[order[i]] > key:  # strictly greater: stable
                order[i + 1] = order[i]
                i -= 1
            order[i + 1] = index
    else:
        run = np.empty(stop - start, np.uint64)
        for j in range(start, stop):
            run[j - start] = keys[order[j]]
        moved = np.argsort(run, kind="mergesort")  # stable
        indices = order[start:stop].copy()
        for j in range(stop - start):
            order[start + j] = indices[moved[j]]


@nb.njit(inline="always", error_model="numpy")
def _key_span(keys):
    """``(lowest key, bits of the span highest - lowest)`` of a non-empty uint64 array."""
    lowest = keys[0]
    highest = keys[0]
    for i in range(1, keys.shape[0]):
        k = keys[i]
        lowest = min(lowest, k)
        highest = max(highest, k)
    span = highest - lowest
    width = 0
    while span != np.uint64(0):
        width += 1
        span >>= np.uint64(1)
    return lowest, width


@nb.njit(inline="always", error_model="numpy")
def _radix_argsort(keys, hi, hi_buffer, order, buffer, histogram, tie):
    """Stable argsort of non-negative float64 values viewed as uint64 ``keys`` (non-negative
    doubles sort like their bit patterns); ``len(keys) <= 2**31 - 1``.

    ``hi``, ``hi_buffer`` (uint32), ``order`` and ``buffer`` (int32) have the length of
    ``keys``; ``histogram`` is ``(_RADIX_DIGITS, _RADIX_SIZE)`` uint64. ``keys`` is left
    unchanged. Returns the permutation (one of ``order``, ``buffer``) and writes ``tie[k]``:
    ``keys[perm[k]] == keys[perm[k - 1]]`` (``tie[0]`` False).
    """
    m = keys.shape[0]
    if m == 0:
        return order
    lowest, width = _key_span(keys)
    drop = np.uint64(max(width - 32, 0))
    n_digits = (min(width, 32) + _RADIX_BITS - 1) // _RADIX_BITS
    # the high keys and all their histograms in one sequential read
    histogram[:n_digits] = 0
    for i in range(m):
        h = np.uint32((keys[i] - lowest) >> drop)
        hi[i] = h
        for d in range(n_digits):
            histogram[d, (h >> np.uint32(d * _RADIX_BITS)) & _RADIX_MASK] += _ONE
    h0 = hi[0]
    first = True
    source_keys, target_keys = hi, hi_buffer
    source_order, target_order = order, buffer
    for d in range(n_digits):
        shift = np.uint32(d * _RADIX_BITS)
        position = histogram[d]
        if not _digit_offsets(position, (h0 >> shift) & _RADIX_MASK, m):
            continue
        _radix_pass(source_keys, source_order, first, target_keys, target_order, position,
                    shift)
        first = False
        source_keys, target_keys = target_keys, source_keys
        source_order, target_order = target_order, source_order
    if first:  # all high keys equal (or one point): the identity, then the fix-up
        for i in range(m):
            source_order[i] = i
    # runs of equal high keys: flagged in one pass without a branch; when bits were dropped,
    # each run is then sorted on the full keys and flagged from them
    tie[0] = False
    n_equal = 0
    for k in range(1, m):
        equal = source_keys[k] == source_keys[k - 1]
        tie[k] = equal
        n_equal += equal
    if n_equal > 0 and drop != np.uint64(0):
        _fix_runs(keys, source_order, tie)
    return source_order


@nb.njit(nogil=True, cache=True, error_model="numpy")
def stable_order_nonnegative(values):
    """``(order, tie)``: ``np.argsort(values, kind="stable")`` of non-negative, non-NaN float64
    ``values`` without ``-0.0`` (at most ``2**31 - 1``), by the radix sort of the simulated
    sets (:func:`_radix_argsort`): a stable sort's permutation is the only one of its keys, so
    it is the same array (int64); and the sort's tie flags, ``tie[k]``: the ``k``-th sorted
    value equals the one before (keys equal exactly when the values are). The data
    preparation sorts three such columns (the binning variable, ``uE``, ``|E|``).

    Examples
    --------
    >>> order, tie = stable_order_nonnegative(np.array([2.0, 0.5, 2.0, 0.0]))
    >>> order.tolist(), tie.tolist()
    ([3, 1, 0, 2], [False, False, False, True])
    """
    m = values.shape[0]
    keys = values.view(np.uint64)
    hi, hi_buffer = np.empty(m, np.uint32), np.empty(m, np.uint32)
    order, buffer = np.empty(m, np.int32), np.empty(m, np.int32)
    histogram = np.empty((_RADIX_DIGITS, _RADIX_SIZE), np.uint64)
    tie = np.empty(m, np.bool_)
    sorted_order = _radix_argsort(keys, hi, hi_buffer, order, buffer, histogram, tie)
    out = np.empty(m, np.int64)
    for i in range(m):
        out[i] = sorted_order[i]
    return out, tie


@nb.njit(inline="always", error_model="numpy")
def _fix_runs(keys, order, tie):
    """Each run of ``order`` flagged equal on the high keys (``tie[k]``: position ``k`` equals
    ``k - 1``) sorted on the full ``keys`` (:func:`_fix_run`) and flagged from them.

    The argsorts flag the runs in a pass without a branch and call this only when a run exists
    and bits were dropped, instead of walking the runs with a branch at every position. A
    simulated set of zms, cc, ence and zmse, one thread: at M = 2·10⁶ normal 19.69 → 19.01 ns
    per point (t6 27.13 → 27.60, noise); at QM9's size normal 8.49 → 7.95, t6 15.86 → 15.29
    (``benchmarks/measured/ab-kernels-tie-pass-*``)."""
    m = order.shape[0]
    k = 1
    while k < m:
        if not tie[k]:
            k += 1
            continue
        start = k - 1
        stop = _group_end(tie, k, m)
        _fix_run(keys, order, start, stop)
        for j in range(start + 1, stop):
            tie[j] = keys[order[j]] == keys[order[j - 1]]
        k = stop


#: Simulated sets of up to this many points are sorted by :func:`_packed_argsort` (one array
#: read and written per pass; up to 2^17 points 24-bit keys, whose arrays stay in the L2
#: cache, where the passes cost instructions rather than memory traffic); larger ones by
#: :func:`_radix_argsort`. Above 2^17 points, with 32-bit keys, a simulated set of zms, cc,
#: ence and zmse took 9.64 → 8.90 ns per point at 2·10⁵ points and 16.55 → 15.32 at 2·10⁶
#: against the radix argsort's two pairs of arrays, one thread
#: (``benchmarks/measured/ab-kernels-packed-32-*``); beyond 2^21 it was not measured.
_PACKED_SORT_MAX = 2**21
#: Bits of the span that :func:`_packed_argsort` sorts on up to :data:`_SHORT_KEYS_MAX`
#: points (3 passes of 8-bit digits, or 2 of 12-bit digits); above, 32 bits (4 passes of
#: 8-bit digits), as :func:`_radix_argsort`: with more points, more values share shorter keys
#: and are sorted again on the full keys.
_PACKED_KEY_BITS = 24
_SHORT_KEYS_MAX = 2**17
#: Digit bits of :func:`_packed_argsort` from :data:`_WIDE_DIGITS_FROM` points on: simulated
#: sets of 3 834, 5 000 and 13 885 points took less time with 2 passes of 12-bit digits than
#: with 3 of 8-bit digits, one thread (``benchmarks/measured/ab-kernels-wide-digits-*``);
#: smaller sets keep the 8-bit digits, whose counts are 16 times fewer to clear and sum.
_WIDE_BITS = 12
_WIDE_DIGITS_FROM = 3000


@nb.njit(inline="always", error_model="numpy")
def _packed_passes(keys, lowest, drop, width, packed, buffer, histogram, bits, key_bits):
    """The counting passes of :func:`_packed_argsort` on digits of ``bits`` bits: the points
    ``hi << 32 | index`` (``hi`` the ``key_bits`` highest bits of the span) sorted on ``hi``,
    in ``packed`` or ``buffer`` (returned)."""
    m = keys.shape[0]
    size = 1 << bits
    mask = np.uint32(size - 1)
    n_digits = (min(width, key_bits) + bits - 1) // bits
    histogram[:n_digits, :size] = 0
    for i in range(m):
        h = (keys[i] - lowest) >> drop
        packed[i] = (h << np.uint64(32)) | np.uint64(i)
        for d in range(n_digits):
            histogram[d, np.uint32(h >> np.uint64(d * bits)) & mask] += np.uint32(1)
    h0 = packed[0] >> np.uint64(32)
    source, target = packed, buffer
    for d in range(n_digits):
        shift = np.uint64(32 + d * bits)
        position = histogram[d, :size]
        if not _digit_offsets(position, np.uint32(h0 >> np.uint64(d * bits)) & mask, m):
            continue
        for i in range(m):
            x = source[i]
            digit = np.uint32(x >> shift) & mask
            p = position[digit]
            target[p] = x
            position[digit] = p + np.uint32(1)
        source, target = target, source
    return source


@nb.njit(inline="always", error_model="numpy")
def _packed_argsort(keys, packed, buffer, histogram, order, tie):
    """:func:`_radix_argsort` for sets of up to :data:`_PACKED_SORT_MAX` points: the same
    stable argsort into ``order`` and the same tie flags, from other passes.

    Each point is one uint64 ``hi << 32 | index`` (``packed``, ``buffer``: uint64 of the
    length of ``keys``), ``hi`` the highest bits of the span ``key - lowest``: each pass reads
    and writes one array instead of two. Up to :data:`_SHORT_KEYS_MAX` points ``hi`` has
    :data:`_PACKED_KEY_BITS` bits, sorted from :data:`_WIDE_DIGITS_FROM` points in 2 passes of
    12-bit digits, below in 3 passes of 8-bit digits (a 12-bit pass clears and sums 4 096
    counts, which the fewer points of a smaller set do not repay); above, 32 bits in 4 passes
    of 8-bit digits, the radix argsort's keys (``histogram``: uint32, ``(4, 2**12)``).
    Runs of equal ``hi`` (up to 2^17 points two values agreeing to about 19 significant bits,
    or repeated) are ordered on the full keys and flagged as in :func:`_radix_argsort`: such
    runs are few and short. Measured side by side:
    ``benchmarks/measured/ab-kernels-packed-sort-*`` (3 passes against 4),
    ``ab-kernels-wide-digits-*`` (2 against 3) and ``ab-kernels-packed-32-*`` (larger sets)."""
    m = keys.shape[0]
    if m == 0:
        return order
    lowest, width = _key_span(keys)
    key_bits = _PACKED_KEY_BITS if m <= _SHORT_KEYS_MAX else 32
    drop = np.uint64(max(width - key_bits, 0))
    # the digit width a constant in each inlined copy (a width known only at run time made
    # every pass slower)
    if m > _SHORT_KEYS_MAX:
        source = _packed_passes(keys, lowest, drop, width, packed, buffer, histogram,
                                _RADIX_BITS, 32)
    elif m >= _WIDE_DIGITS_FROM:
        source = _packed_passes(keys, lowest, drop, width, packed, buffer, histogram,
                                _WIDE_BITS, _PACKED_KEY_BITS)
    else:
        source = _packed_passes(keys, lowest, drop, width, packed, buffer, histogram,
                                _RADIX_BITS, _PACKED_KEY_BITS)
    for i in range(m):
        order[i] = np.int32(source[i] & _LOW32)
    tie[0] = False
    n_equal = 0
    for k in range(1, m):
        equal = (source[k] >> np.uint64(32)) == (source[k - 1] >> np.uint64(32))
        tie[k] = equal
        n_equal += equal
    if n_equal > 0 and drop != np.uint64(0):
        _fix_runs(keys, order, tie)
    return order


@nb.njit(inline="always", error_model="numpy")
def _make_synthetic_scratch(m, need_cc):
    e2 = np.empty(m)
    z2 = np.empty(m)
    counts = np.ones(m, np.int32)
    n = m if need_cc else 0
    small = m <= _PACKED_SORT_MAX  # sorted by _packed_argsort, else by _radix_argsort
    abs_e = np.empty(n)
    hi = np.empty(0 if small else n, np.uint32)
    hi_buffer = np.empty(0 if small else n, np.uint32)
    order_a = np.empty(n, np.int32)
    order_b = np.empty(0 if small else n, np.int32)
    # each sort's counts only where that sort runs (the packed sort's 64 KiB, the radix's 8)
    histogram = np.empty((0 if small else _RADIX_DIGITS, _RADIX_SIZE), np.uint64)
    tie_e = np.zeros(n, np.bool_)
    packed = np.empty(n if small else 0, np.uint64)
    packed_buffer = np.empty(n if small else 0, np.uint64)
    packed_histogram = np.empty((_RADIX_DIGITS if small and need_cc else 0, 1 << _WIDE_BITS),
                                np.uint32)
    return (e2, z2, counts, abs_e, hi, hi_buffer, order_a, order_b, histogram, tie_e, packed,
            packed_buffer, packed_histogram)


@nb.njit(inline="always", error_model="numpy")
def _check_sortable(m):
    if m > _MAX_SORTED:
        raise ValueError("simulated sets of more than 2**31 - 1 points are not supported")


@nb.njit(inline="always", error_model="numpy")
def _needs_cc(codes):
    for k in range(codes.shape[0]):
        if codes[k] == CC:
            return True
    return False


@nb.njit(error_model="numpy")
def _synthetic_cc(centred_u, saa, need_cc, scratch, work):
    """``(order_e, cc)`` of a synthetic set whose ``|E~|`` is in ``scratch``: the stable
    argsort of ``|E~|`` (its tie flags in ``scratch``) and Spearman's correlation with the
    fixed ranks of uE (``centred_u``, ``saa``); NaN when cc is not asked."""
    (_, _, _, abs_e, hi, hi_buffer, order_a, order_b, histogram, tie_e, packed, packed_buffer,
     packed_histogram) = scratch
    if not need_cc:
        return order_a, np.nan
    # non-negative doubles sort like their bit patterns; the sort sets the tie flags
    if abs_e.shape[0] <= _PACKED_SORT_MAX:
        order_e = _packed_argsort(abs_e.view(np.uint64), packed, packed_buffer,
                                  packed_histogram, order_a, tie_e)
    else:
        order_e = _radix_argsort(abs_e.view(np.uint64), hi, hi_buffer, order_a, order_b,
                                 histogram, tie_e)
    # the uE ranks do not change between synthetic sets: only |E~| is ranked here, once
    # for every number of bins
    if abs_e.shape[0] <= _EXACT_RANK_SUMS:
        return order_e, _spearman_unit_sorted(centred_u, saa, order_e, tie_e)
    return order_e, _spearman_unit(centred_u, saa, order_e, tie_e, work[6])


@nb.njit(error_model="numpy")
def _statistics_of_set(codes, n_bins_list, have_bins, u2, order_u, tie_u, centred_u, saa,
                       need_cc, scratch, work, out):
    """The statistics ``out[j, k]`` of one synthetic set whose moment sums are in ``work[0]``,
    whose E~² and eps² are in ``scratch`` (and, ``have_bins``, whose bin sums for
    ``n_bins_list[0]`` are in ``work``) and whose ``|E~|`` is in ``scratch`` when cc is
    asked. A called function, shared by :func:`simulate_block` and the NIG sets'
    :func:`_evaluate_synthetic`."""
    order_e, cc = _synthetic_cc(centred_u, saa, need_cc, scratch, work)
    no_rows = np.empty((0, 6))
    for j in range(n_bins_list.shape[0]):
        _evaluate(codes, scratch[2], work[0], True, n_bins_list[j], no_rows, scratch[0], u2,
                  scratch[1], 0.0, order_u, tie_u, order_e, scratch[9], work, out[j], cc,
                  have_bins and j == 0)


@nb.njit(error_model="numpy")
def _fused_synthetic_set(key, replicate, code, parameter, uE, bounds, fixed_u2, need_cc,
                         drawn, eps, squares, e2_out, z2_out, abs_e, work):
    """The synthetic set ``E~ = uE * eps`` of replicate ``replicate`` in one pass: its
    variates drawn here (the draws of :func:`fill_variates`, in the same order), or read from
    ``eps`` when ``drawn`` (generators that :func:`next_variate` does not draw: ``normp``), its
    moment sums, and the sums of its equal-count bins (points in binning order: bin ``b`` is
    the positions ``bounds[b] .. bounds[b + 1] - 1``); ``|E~|`` is written to ``abs_e`` when cc
    is asked, and E~² and eps² to ``e2_out`` and ``z2_out`` when ``squares`` (the other numbers
    of bins of a bin-count study are binned from them). Returns ``(Σ E~², Σ eps², Σ eps)``;
    the bin sums go to ``work`` (``fixed_u2``: the bins' sums of uE², the same for every set).

    Bit for bit the values of the evaluation from arrays (:func:`_evaluate_synthetic`, still
    that of the NIG sets): every sum adds the same products in the same order from 0.0 (a
    bin's sums are :func:`_bin_sums` with every count 1), but in general no array of
    variates, E~² or eps² is written and read back: at M = 10⁶ those passes over memory cost
    more than the arithmetic. A called function, not inlined (inlined, it made
    ``simulate_block`` longer to compile)."""
    _, b_n, b_e2, b_u2, b_z2, _, _ = work
    state = stream_start(key, replicate)
    scale, form = variate_constants(code, parameter)
    s_e2 = 0.0
    s_z2 = 0.0
    s_z = 0.0
    for b in range(bounds.shape[0] - 1):
        t_e2 = 0.0
        t_z2 = 0.0
        for i in range(bounds[b], bounds[b + 1]):
            if drawn:
                x = eps[i]
            else:
                x, state = next_variate(state, code, parameter, scale, form)
            e = uE[i] * x
            e2 = e * e
            z2 = x * x
            s_e2 += e2
            s_z2 += z2
            s_z += x
            t_e2 += e2
            t_z2 += z2
            if need_cc:
                abs_e[i] = np.abs(e)
            if squares:
                e2_out[i] = e2
                z2_out[i] = z2
        b_n[b] = np.float64(bounds[b + 1] - bounds[b])
        b_e2[b] = t_e2
        b_u2[b] = fixed_u2[b]
        b_z2[b] = t_z2
    return s_e2, s_z2, s_z


@nb.njit(inline="always", error_model="numpy")
def _evaluate_synthetic(uE, u2, lnu2, s_u2, s_lnu2, eps, order_u, tie_u, centred_u, saa,
                        codes, n_bins_list, need_cc, scratch, work, out):
    """Statistics of ``E~ = uE * eps`` (points in the order of the binning variable) for every
    number of bins of ``n_bins_list``: ``out[j, k]``. One synthetic set serves all bin counts."""
    e2, z2, abs_e = scratch[0], scratch[1], scratch[3]
    m = uE.shape[0]
    s_e2 = 0.0
    s_z2 = 0.0
    s_z = 0.0
    for i in range(m):
        x = eps[i]
        e = uE[i] * x
        e2[i] = e * e
        z2[i] = x * x
        s_e2 += e * e
        s_z2 += x * x
        s_z += x
        if need_cc:
            abs_e[i] = np.abs(e)
    sums = work[0]
    # z_shift = 0 for simulated z-scores (their mean is 0 by construction)
    _store_sums(sums, np.float64(m), s_e2, s_u2, s_z2, s_lnu2, s_z, s_z2)
    _statistics_of_set(codes, n_bins_list, False, u2, order_u, tie_u, centred_u, saa,
                       need_cc, scratch, work, out)


@nb.njit(nogil=True, cache=True, error_model="numpy")
def simulate_block(key, generator_code, generator_parameter, start, stop, codes, n_bins_list,
                   uE, u2, lnu2, order_u, tie_u, work, out):
    """Statistics of synthetic error sets ``E~ = uE * eps``, ``eps ~ D``, for replicates
    ``start .. stop - 1``, keeping the uncertainties and their binning order:
    ``out[r - start, j, k]`` for ``n_bins_list[j]`` and ``codes[k]``."""
    m = uE.shape[0]
    need_cc = _needs_cc(codes)
    if need_cc:
        _check_sortable(m)
    scratch = _make_synthetic_scratch(m, need_cc)
    # generators that next_variate does not draw (normp) fill eps first
    drawn = not is_variate_code(generator_code)
    eps = np.empty(m if drawn else 0)
    s_u2 = 0.0
    s_lnu2 = 0.0
    for i in range(m):
        s_u2 += u2[i]
        s_lnu2 += lnu2[i]
    centred_u = np.empty(m)
    saa = _centred_unit_ranks(order_u, tie_u, centred_u)
    # the first number of bins is binned in the pass; more (a bin-count study) from E~², eps²
    n_bins = n_bins_list[0] if n_bins_list.shape[0] > 0 else 1
    bounds = np.empty(n_bins + 1, np.int64)
    fixed_u2 = np.zeros(n_bins)
    for b in range(n_bins + 1):
        bounds[b] = bin_start(b, m, n_bins)
    for b in range(n_bins):
        for i in range(bounds[b], bounds[b + 1]):
            fixed_u2[b] += u2[i]
    squares = n_bins_list.shape[0] > 1
    for r in range(start, stop):
        if drawn:
            fill_variates(key, r, generator_code, generator_parameter, eps)
        s_e2, s_z2, s_z = _fused_synthetic_set(key, r, generator_code, generator_parameter, uE,
                                               bounds, fixed_u2, need_cc, drawn, eps, squares,
                                               scratch[0], scratch[1], scratch[3], work)
        _store_sums(work[0], np.float64(m), s_e2, s_u2, s_z2, s_lnu2, s_z, s_z2)
        _statistics_of_set(codes, n_bins_list, True, u2, order_u, tie_u, centred_u, saa,
                           need_cc, scratch, work, out[r - start])


@nb.njit(nogil=True, cache=True, error_model="numpy")
def nig_block(key_u, key_e, nu, generator_code, generator_parameter, m, start, stop, codes,
              n_bins_list, work, out):
    """Statistics of synthetic NIG data sets (METHODS §1) for replicates ``start .. stop - 1``:
    ``uE² = (ν/2) / Gamma(ν/2)`` from stream ``(key_u, r)`` (as :func:`xuqcal.synthetic.nig`),
    ``eps ~ D`` from ``(key_e, r)``, points binned in the order of uE; writes
    ``out[r - start, j, k]`` for ``n_bins_list[j]`` and ``codes[k]``."""
    _check_sortable(m)
    need_cc = _needs_cc(codes)
    scratch = _make_synthetic_scratch(m, need_cc)
    gamma = np.empty(m)
    eps = np.empty(m)
    u2_raw = np.empty(m)
    uE = np.empty(m)
    u2 = np.empty(m)
    lnu2 = np.empty(m)
    order_u = np.arange(m)
    tie_u = np.zeros(m, np.bool_)
    centred_u = np.empty(m)
    hi = np.empty(m, np.uint32)
    hi_buffer = np.empty(m, np.uint32)
    order_a = np.empty(m, np.int32)
    order_b = np.empty(m, np.int32)
    histogram = np.empty((_RADIX_DIGITS, _RADIX_SIZE), np.uint64)
    for r in range(start, stop):
        fill_gamma(key_u, r, 0.5 * nu, gamma)
        for i in range(m):
            u2_raw[i] = 0.5 * nu / gamma[i]
        fill_variates(key_e, r, generator_code, generator_parameter, eps)
        # sort the points by uE (positive doubles: radix sort of the bits), keep E = uE * eps;
        # the tie flags of the sorted uE² come with the permutation
        order = _radix_argsort(u2_raw.view(np.uint64), hi, hi_buffer, order_a, order_b,
                               histogram, tie_u)
        s_u2 = 0.0
        s_lnu2 = 0.0
        for k in range(m):
            if k + _AHEAD < m:
                ahead = order[k + _AHEAD]
                _prefetch(eps, ahead)
                _prefetch(u2_raw, ahead)
            u2[k] = u2_raw[order[k]]
            uE[k] = np.sqrt(u2[k])
            lnu2[k] = np.log(u2[k])
            gamma[k] = eps[order[k]]  # reuse as the eps of the sorted points
            s_u2 += u2[k]
            s_lnu2 += lnu2[k]
        saa = _centred_unit_ranks(order_u, tie_u, centred_u) if need_cc else 0.0
        _evaluate_synthetic(uE, u2, lnu2, s_u2, s_lnu2, gamma, order_u, tie_u, centred_u, saa,
                            codes, n_bins_list, need_cc, scratch, work, out[r - start])


# ------------------------------------------------------------------ grouped (per-bin) bootstrap


@nb.njit(nogil=True, cache=True, error_model="numpy")
def grouped_bootstrap_block(keys, members, offsets, start, stop, codes, packed, z_shift, out):
    """Bootstrap replicates of moment statistics within each group (bin) separately.

    Group ``g`` holds the points ``members[offsets[g]:offsets[g + 1]]``; its replicate ``r``
    resamples them with replacement from the stream ``(keys[g], r)``. Writes
    ``out[g, r - start, k]`` for statistic ``codes[k]`` (moment statistics only).

    The moment columns the statistics use are copied for the group's points, in member order,
    into rows of 1, 2, 4 or 8 doubles (:func:`_compact_rows`), and the draws index those rows:
    a group of 10⁵ points and one column (zms) is 800 kB, read from the cache, where the walk
    through the members into all six columns of ``packed`` read a cache line per draw from
    memory. Each column is summed on its own in draw order, as before: the same values.
    """
    n_groups = offsets.shape[0] - 1
    columns = _moment_columns(codes)
    n_columns = columns.shape[0]
    accumulated = np.zeros(6)
    sums = np.zeros(N_SUMS)
    for g in range(n_groups):
        lo = offsets[g]
        size = offsets[g + 1] - lo
        flat, stride = _compact_rows(packed[members[lo:lo + size]], columns)
        for r in range(start, stop):
            state = stream_start(keys[g], r)
            a0 = 0.0
            a1 = 0.0
            a2 = 0.0
            a3 = 0.0
            a4 = 0.0
            a5 = 0.0
            for _ in range(size):
                j, state = next_below(state, size)
                row = np.uint64(j) * stride
                a0 += flat[row]
                if n_columns > 1:
                    a1 += flat[row + np.uint64(1)]
                    if n_columns > 2:
                        a2 += flat[row + np.uint64(2)]
                        if n_columns > 3:
                            a3 += flat[row + np.uint64(3)]
                            if n_columns > 4:
                                a4 += flat[row + np.uint64(4)]
                                if n_columns > 5:
                                    a5 += flat[row + np.uint64(5)]
            accumulated[0] = a0
            accumulated[1] = a1
            accumulated[2] = a2
            accumulated[3] = a3
            accumulated[4] = a4
            accumulated[5] = a5
            _store_column_sums(sums, np.float64(size), columns, accumulated)
            _finish_moments(codes, sums, z_shift, out[g, r - start])


@nb.njit(nogil=True, cache=True, error_model="numpy")
def group_statistics(members, offsets, codes, packed, z_shift, out):
    """Moment statistics of each group: ``out[g, k]``."""
    for g in range(offsets.shape[0] - 1):
        a = np.zeros(6)
        for i in range(offsets[g], offsets[g + 1]):
            for c in range(6):
                a[c] += packed[members[i], c]
        size = np.float64(offsets[g + 1] - offsets[g])
        for k in range(codes.shape[0]):
            out[g, k] = finalize_moment(codes[k], size, a[0], a[1], a[2], a[3], a[4], a[5],
                                         z_shift)


@nb.njit(nogil=True, cache=True, error_model="numpy")
def sample_without_replacement(key, replicate, population, size, out):
    """``size`` distinct indices of ``range(population)`` from stream ``(key, replicate)``
    (partial Fisher–Yates)."""
    pool = np.arange(population)
    state = stream_start(key, replicate)
    for i in range(size):
        j, state = next_below(state, population - i)
        j += i
        pool[i], pool[j] = pool[j], pool[i]
        out[i] = pool[i]


# --- Confidence curves (reference curves of simulated errors, tails of sorted values) ---
@nb.njit(nogil=True, cache=True)
def tail_curve(sorted_values, removed, use_mae, out):
    """RMSE (or MAE) of ``sorted_values[n:]`` for each ``n`` in ``removed`` (sums of squares
    or of absolute values accumulated from the end, i.e. a reverse cumulative sum).

    Examples
    --------
    >>> out = np.empty(2)
    >>> tail_curve(np.array([3.0, 1.0, 1.0]), np.array([0, 1]), False, out)
    >>> out.round(4).tolist()
    [1.9149, 1.0]
    """
    m = sorted_values.shape[0]
    tail = np.empty(m + 1)
    tail[m] = 0.0
    s = 0.0
    for j in range(m - 1, -1, -1):
        x = sorted_values[j]
        s += np.abs(x) if use_mae else x * x
        tail[j] = s
    for i in range(removed.shape[0]):
        n = removed[i]
        mean = tail[n] / (m - n)
        out[i] = mean if use_mae else np.sqrt(mean)


@nb.njit(nogil=True, cache=True)
def reference_curves(key, code, parameter, order, u_sorted, removed, use_mae, start, stop,
                     out):
    """Curves of the synthetic sets ``r = start .. stop - 1``: ``eps`` is drawn in row order
    (as ``Generator.sample``), ``E~ = uE * eps`` is walked in the decreasing-uE ``order``.
    Only one synthetic set (O(M) memory) exists at a time."""
    m = order.shape[0]
    eps = np.empty(m)
    synthetic = np.empty(m)
    for r in range(start, stop):
        fill_variates(key, r, code, parameter, eps)
        for j in range(m):
            synthetic[j] = u_sorted[j] * eps[order[j]]
        tail_curve(synthetic, removed, use_mae, out[r - start])


# --- Random permutations and binomial counts on the counter-based streams (order sensitivity) ---
@nb.njit(nogil=True, cache=True)
def fill_permutation(key, replicate, out):
    """A uniformly random permutation of ``0 .. len(out) - 1`` (Fisher–Yates, ``next_below``).

    Examples
    --------
    >>> from xuqcal.core.random import stream_key
    >>> out = np.empty(5, dtype=np.int64)
    >>> fill_permutation(stream_key(0, "order"), 0, out)
    >>> sorted(out.tolist())
    [0, 1, 2, 3, 4]
    """
    n = out.shape[0]
    for i in range(n):
        out[i] = i
    state = stream_start(key, replicate)
    for i in range(n - 1, 0, -1):
        j, state = next_below(state, i + 1)
        t = out[i]
        out[i] = out[j]
        out[j] = t


@nb.njit(nogil=True, cache=True, error_model="numpy")
def group_log_zms(key, z2, control_z2, size, n_groups, out, control_out):
    """``|ln <Z²>_g|`` of random groups of ``size`` points drawn without replacement, on the
    data's ``z2`` and, with the same groups, on ``control_z2`` (ErrViewLib's ``plotAGV``).

    ``out`` and ``control_out`` are ``(n_mc, n_groups)``: row ``j`` draws its ``n_groups``
    groups from stream ``(key, j)`` by partial Fisher–Yates shuffles of ``0 .. M - 1`` (one
    shuffle per group, continuing the permutation of the previous group of the row).

    Examples
    --------
    >>> from xuqcal.core.random import stream_key
    >>> out, ctl = np.empty((1, 2)), np.empty((1, 2))
    >>> group_log_zms(stream_key(0, "agv"), np.full(4, np.e), np.ones(4), 2, 2, out, ctl)
    >>> out.tolist(), ctl.tolist()
    ([[1.0, 1.0]], [[0.0, 0.0]])
    """
    m = z2.shape[0]
    perm = np.empty(m, dtype=np.int64)
    for j in range(out.shape[0]):
        for i in range(m):
            perm[i] = i
        state = stream_start(key, j)
        for g in range(n_groups):
            total = 0.0
            control = 0.0
            for i in range(size):
                r, state = next_below(state, m - i)
                r += i
                t = perm[i]
                perm[i] = perm[r]
                perm[r] = t
                total += z2[perm[i]]
                control += control_z2[perm[i]]
            out[j, g] = abs(math.log(total / size))
            control_out[j, g] = abs(math.log(control / size))


@nb.njit(nogil=True, cache=True)
def binomial_count(key, replicate, n, p):
    """A Binomial(n, p) count: the number of ``n`` uniforms of stream ``(key, replicate)``
    below ``p``.

    Examples
    --------
    >>> from xuqcal.core.random import stream_key
    >>> binomial_count(stream_key(0, "noise"), 0, 10, 1.0), binomial_count(
    ...     stream_key(0, "noise"), 0, 10, 0.0)
    (10, 0)
    """
    state = stream_start(key, replicate)
    count = 0
    for _ in range(n):
        u, state = next_uniform(state)
        if u < p:
            count += 1
    return count
