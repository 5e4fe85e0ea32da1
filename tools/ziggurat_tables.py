"""Write ``xuqcal/core/ziggurat_tables.py``: the layers of the ziggurat samplers of the normal
and the exponential distribution (Marsaglia & Tsang 2000, J. Stat. Softw. 5(8), with 256
layers and the 64-bit layout of NumPy's ``random_standard_normal``/``_exponential``).

The layer edges are computed with mpmath at 60 significant digits and written as the shortest
decimal strings that read back to the correctly rounded doubles, so the tables are the same bits
on every machine (a table computed at import with the platform's ``exp``/``log`` could differ in
the last bit, and every variate with it). mpmath is needed here only, never at run time.

Usage::

    python tools/ziggurat_tables.py            # rewrite the module
    python tools/ziggurat_tables.py --check    # exit 1 if the module differs from a new build

After a change of the tables, write their new digest (``ziggurat_tables.digest()``) into
``xuqcal/core/kernels.py`` (``_ZIGGURAT_SHA256``): the kernels freeze the tables into Numba's
cached machine code, and only a change of ``kernels.py`` itself invalidates that cache.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import mpmath as mp

LAYERS = 256
TARGET = Path(__file__).resolve().parents[1] / "xuqcal" / "core" / "ziggurat_tables.py"


def _edges(density, inverse, tail_area, guess):
    """``(r, v, x)``: the base layer's edge ``r``, the common area ``v`` of the layers and the
    edges ``x[0] = 0 < x[1] < ... < x[255] = r`` for an unnormalised decreasing ``density`` on
    ``[0, inf)`` with ``density(0) = 1`` and its ``inverse``."""

    def walk(r):
        v = r * density(r) + tail_area(r)
        edges = [r]
        for _ in range(LAYERS - 2):
            edges.append(inverse(v / edges[-1] + density(edges[-1])))
        return v, edges

    def closing(r):  # the top layer, [0, x_1] x [f(x_1), 1], has area v as well
        v, edges = walk(r)
        return v / edges[-1] + density(edges[-1]) - 1

    # the secant steps may pass through edges where the inverse is complex (a density above
    # its maximum): the root is real, and only its real part is kept
    r = mp.re(mp.findroot(closing, mp.mpf(guess)))
    v, edges = walk(r)
    if any(mp.im(edge) != 0 for edge in edges):
        raise ValueError(f"the layers from r = {r} are not real: another guess is needed")
    return r, v, [mp.mpf(0), *edges[::-1]]


def tables(density, inverse, tail_area, guess, bits):
    """``(r, k, w, f)`` of one sampler: a draw of ``bits`` random bits ``j`` in layer ``i``
    is ``x = j w[i]``, accepted at once when ``j < k[i]``; ``f[i]`` is the density at the layer
    edge ``x[i]`` (``f[0] = 1``, the top). Layer 0 is the base strip with the tail: its width
    ``w[0] = v / f(r) / 2**bits`` makes its area ``v`` as well."""
    r, v, x = _edges(density, inverse, tail_area, guess)
    scale = mp.mpf(2) ** bits
    base_width = v / density(r)
    w = [base_width / scale] + [x[i] / scale for i in range(1, LAYERS)]
    k = [int(mp.floor(r / base_width * scale)), 0]
    k += [int(mp.floor(x[i - 1] / x[i] * scale)) for i in range(2, LAYERS)]
    f = [mp.mpf(1)] + [density(x[i]) for i in range(1, LAYERS)]
    return float(r), k, [float(value) for value in w], [float(value) for value in f]


#: The degrees of freedom ν of the Student-t ziggurats (stream version 4), and the guesses
#: of their base layer's edge for the root finder.
STUDENT_NU = (3, 4, 5, 6)
_STUDENT_GUESS = {3: "12.9403", 4: "9.0872", 5: "7.4253", 6: "6.5215"}


def student_tables(nu: int):
    """``(r, k, w, f)`` of the Student-t(ν) ziggurat: 52 bits and a sign bit, the density
    ``(1 + x²/ν)^(-(ν+1)/2)`` (1 at 0), its inverse ``sqrt(ν (y^(-2/(ν+1)) - 1))`` and its
    tail area ``B(ν/2, 1/2) I_{ν/(ν+r²)}(ν/2, 1/2) sqrt(ν) / 2`` (the regularised incomplete
    beta function: half the two-sided tail of the t distribution, over its density's
    normalising constant ``1 / (sqrt(ν) B(ν/2, 1/2))``)."""
    n = mp.mpf(nu)
    half_power = -(n + 1) / 2

    def density(x):
        return (1 + x * x / n) ** half_power

    def inverse(y):
        return mp.sqrt(n * (y ** (-2 / (n + 1)) - 1))

    def tail_area(r):
        return (mp.betainc(n / 2, mp.mpf(1) / 2, 0, n / (n + r * r), regularized=True)
                * mp.beta(n / 2, mp.mpf(1) / 2) * mp.sqrt(n) / 2)

    return tables(density, inverse, tail_area, _STUDENT_GUESS[nu], 52)


def _lines(name: str, values, per_line: int) -> list[str]:
    lines = [f"{name} = ("]
    for start in range(0, len(values), per_line):
        lines.append("    " + ", ".join(repr(value) for value in values[start:start + per_line])
                     + ",")
    lines.append(")")
    return lines


def module_text() -> str:
    """The text of ``xuqcal/core/ziggurat_tables.py``."""
    mp.mp.dps = 60
    normal = tables(lambda x: mp.exp(-x * x / 2), lambda y: mp.sqrt(-2 * mp.log(y)),
                    lambda r: mp.sqrt(mp.pi / 2) * mp.erfc(r / mp.sqrt(2)),
                    "3.6541528853610088", 52)
    exponential = tables(lambda x: mp.exp(-x), lambda y: -mp.log(y), lambda r: mp.exp(-r),
                         "7.69711747013104972", 53)
    out = [
        '"""Layers of the ziggurat samplers of :mod:`xuqcal.core.kernels` (Marsaglia & Tsang',
        "2000, 256 layers, NumPy's 64-bit layout).",
        "",
        "Written by ``tools/ziggurat_tables.py`` (mpmath, 60 digits; each double correctly",
        "rounded); do not edit. A draw of random bits ``j`` in layer ``i`` is ``x = j * W[i]``,",
        "accepted at once when ``j < K[i]``; ``F[i]`` is the unnormalised density at the layer's",
        "outer edge (``F[0] = 1``: the top), ``R`` the edge of the base layer, beyond which lies",
        "the tail.",
        "Normal: 52 bits, density ``exp(-x²/2)``; exponential: 53 bits, density ``exp(-x)``;",
        "Student-t(ν) for ν in ``STUDENT_NU`` (row ``i`` of each ``STUDENT_`` table is",
        "``STUDENT_NU[i]``): 52 bits, density ``(1 + x²/ν)^(-(ν+1)/2)``.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "import hashlib",
        "",
    ]
    for prefix, (r, k, w, f) in (("NORMAL", normal), ("EXPONENTIAL", exponential)):
        out.append(f"{prefix}_R = {r!r}")
        out += _lines(f"{prefix}_K", k, 5)
        out += _lines(f"{prefix}_W", w, 3)
        out += _lines(f"{prefix}_F", f, 3)
        out.append("")
    student = [student_tables(nu) for nu in STUDENT_NU]
    out.append(f"STUDENT_NU = {STUDENT_NU!r}")
    out.append(f"STUDENT_R = {tuple(table[0] for table in student)!r}")
    for name, column, per_line in (("K", 1, 5), ("W", 2, 3), ("F", 3, 3)):
        out.append(f"STUDENT_{name} = (")
        for table in student:
            rows = _lines("", table[column], per_line)[1:-1]
            out += ["    (", *("    " + row for row in rows), "    ),"]
        out.append(")")
    out.append("")
    out += [
        "",
        "def digest() -> str:",
        '    """SHA-256 of the tables\' values (``repr`` of each, in order), written in',
        "    :mod:`xuqcal.core.kernels`, whose cached machine code holds the tables.",
        "",
        "    Examples",
        "    --------",
        "    >>> len(digest())",
        "    64",
        '    """',
        "    values = (NORMAL_R, *NORMAL_K, *NORMAL_W, *NORMAL_F,",
        "              EXPONENTIAL_R, *EXPONENTIAL_K, *EXPONENTIAL_W, *EXPONENTIAL_F,",
        "              *STUDENT_NU, *STUDENT_R,",
        "              *(value for table in (STUDENT_K, STUDENT_W, STUDENT_F)",
        "                for row in table for value in row))",
        '    return hashlib.sha256(" ".join(map(repr, values)).encode()).hexdigest()',
        "",
    ]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="exit with status 1 if the module differs from a new build")
    args = parser.parse_args(argv)
    text = module_text()
    if args.check:
        same = TARGET.exists() and TARGET.read_text() == text
        print(f"{TARGET}: {'up to date' if same else 'differs from a new build'}")
        return 0 if same else 1
    TARGET.write_text(text)
    print(f"wrote {TARGET}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
