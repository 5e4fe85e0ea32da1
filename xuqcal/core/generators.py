"""Generative distributions D of the errors: ``E = uE * eps``, ``eps ~ D(0, 1)`` (METHODS §1).

Every generator has zero mean and unit variance and is addressed by name:

=============  ==========================================================================
``normal``     N(0, 1)
``t<ν>``       Student-t(ν) / sqrt(ν / (ν - 2)), any ν > 2 (``t6``, ``t3.5``)
``uniform``    U(-√3, √3)
``laplace``    Laplace(0, 1/√2)
``normp<p>``   generalized normal, density ∝ ``exp(-|x|^p / p)``, rescaled to unit variance
``tfit``       data-informed: the unit-variance Student-t whose ν is fitted to the data's
               z-scores (the scaled F(1, ν) fit of Z² that PICP uses,
               :func:`xuqcal.core.coverage.fit_student_nu`); resolved per data set by
               :func:`fit_generators` (:func:`xuqcal.validate` and :func:`xuqcal.simulate`
               only)
=============  ==========================================================================

Draws come from the counter-based streams of :mod:`xuqcal._random`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from xuqcal._lazy import lazy_module
from xuqcal.core import random as _random
from xuqcal.core.checks import MAX_SEED, check_count, check_seed

stats = lazy_module("scipy.stats")

_FIXED = {"normal": _random.NORMAL, "uniform": _random.UNIFORM, "laplace": _random.LAPLACE}
_PATTERN = re.compile(r"^(t|normp)(\d+(?:\.\d+)?)$")
#: Name of the data-informed generator: a Student-t with ν fitted to the data's z-scores.
FITTED = "tfit"


@dataclass(frozen=True)
class Generator:
    """A named generative distribution.

    Attributes
    ----------
    name : str
        Canonical name (``"t6"``).
    code : int
        Kernel code in :mod:`xuqcal._random`.
    parameter : float
        ν for ``t``, p for ``normp``, NaN otherwise.
    """

    name: str
    code: int
    parameter: float = math.nan

    @property
    def fitted(self) -> bool:
        """Whether this is the data-informed generator ``tfit`` (its ν comes from the data:
        :func:`fit_generators`)."""
        return self.name == FITTED

    @property
    def df(self) -> float:
        """Degrees of freedom of a Student-t generator (NaN for the others, and for ``tfit``,
        whose ν is a property of a data set: the result variable ``nu_tfit``)."""
        return self.parameter if self.code == _random.STUDENT and not self.fitted else math.nan

    def distribution(self):
        """The distribution as a frozen ``scipy.stats`` object at unit variance (for its
        ``cdf``, ``ppf``, ``pdf``, ...).

        Examples
        --------
        >>> round(float(get_generator("t6").distribution().var()), 12)
        1.0
        >>> round(float(get_generator("normal").distribution().ppf(0.975)), 4)
        1.96
        """
        if self.code == _random.NORMAL:
            return stats.norm()
        if self.code == _random.STUDENT:
            nu = self.parameter
            return stats.t(nu, scale=math.sqrt((nu - 2.0) / nu))
        if self.code == _random.UNIFORM:
            return stats.uniform(-math.sqrt(3.0), 2.0 * math.sqrt(3.0))
        if self.code == _random.LAPLACE:
            return stats.laplace(scale=1.0 / math.sqrt(2.0))
        # normp: density ∝ exp(-|x|^p / p) is scipy's gennorm(p); rescale to unit variance
        p = self.parameter
        return stats.gennorm(p, scale=1.0 / math.sqrt(stats.gennorm(p).var()))

    def sample(self, size: int, *, seed: int, replicate: int = 0,
               purpose: str = "generator") -> np.ndarray:
        """Draw ``size`` unit-variance variates from stream ``(seed, purpose, replicate)``.

        Examples
        --------
        >>> x = get_generator("t6").sample(100_000, seed=0)
        >>> abs(float(x.mean())) < 0.02 and abs(float(x.var()) - 1) < 0.05
        True
        """
        size = check_count(size, "size", 0)
        seed = check_seed(seed)
        replicate = check_count(replicate, "replicate", 0, maximum=MAX_SEED)
        out = np.empty(size)
        key = _random.stream_key(seed, f"{purpose}:{self.name}")
        _random.fill_variates(key, _random.as_int64(replicate), self.code, self.parameter,
                              out)
        return out


def get_generator(name: str | Generator) -> Generator:
    """Parse a generator name into its canonical form.

    Names are normalised: case and spaces are ignored and the number is written in its
    shortest form, so ``"t6.0"``, ``"T6"`` and ``"t 06"`` are all ``t6`` (one distribution,
    one name, one random stream).

    Examples
    --------
    >>> get_generator("t3.5")
    Generator(name='t3.5', code=1, parameter=3.5)
    >>> get_generator("T6.0").name
    't6'
    >>> get_generator("t2")
    Traceback (most recent call last):
    ...
    ValueError: generator: 't2' has ν = 2, but a unit-variance Student-t needs ν > 2
    """
    if isinstance(name, Generator):
        return name
    if not isinstance(name, str):
        raise ValueError(f"generator: expected a name such as 'normal' or 't6', got {name!r}")
    key = re.sub(r"\s+", "", name).lower()
    if key in _FIXED:
        return Generator(key, _FIXED[key])
    if key == FITTED:  # ν unknown until fitted to a data set (fit_generators)
        return Generator(FITTED, _random.STUDENT)
    match = _PATTERN.match(key)
    if match is None:
        raise ValueError(
            f"generator: unknown generator {name!r}; use 'normal', 'uniform', 'laplace', "
            "'t<ν>' (ν > 2, e.g. 't6'), 'normp<p>' (p > 0, e.g. 'normp4') or 'tfit' (a "
            "Student-t fitted to the z-scores)"
        )
    family, value = match.group(1), float(match.group(2))
    # canonical spelling: one name per distribution ("t6.0", "T 6" and "t06" are "t6")
    label = f"{family}{repr(value).removesuffix('.0')}"
    if family == "t":
        if value <= 2:
            raise ValueError(
                f"generator: {name!r} has ν = {value:g}, but a unit-variance Student-t needs ν > 2"
            )
        return Generator(label, _random.STUDENT, value)
    if value <= 0:
        raise ValueError(f"generator: {name!r} needs p > 0")
    return Generator(label, _random.NORMP, value)


def check_generators(generators: object, name: str = "generators", *,
                     fitted: bool = False) -> list:
    """Distinct :class:`~xuqcal.generators.Generator` objects from one name or a sequence of
    names; two spellings of one distribution (``t6`` and ``t6.0``) are refused. The
    data-informed ``tfit`` (ν fitted to a data set's z-scores) is accepted only with
    ``fitted`` (the analyses that fit it: :func:`xuqcal.validate`, :func:`xuqcal.simulate`).

    Examples
    --------
    >>> [g.name for g in check_generators(["normal", "T6.0"])]
    ['normal', 't6']
    >>> check_generators(["t6", "t6.0"])
    Traceback (most recent call last):
    ValueError: generators: t6 and t6.0 are the same distribution (t6); list it once
    """
    if isinstance(generators, str | Generator):
        generators = [generators]
    if not isinstance(generators, Iterable):
        raise ValueError(f"{name}: expected a generator name such as 'normal' or 't6', or a "
                         f"list of them, got {generators!r}")
    given = list(generators)
    if not given:
        raise ValueError(f"{name}: the list of generators is empty (at least one is needed)")
    out: list = []
    seen: dict[str, object] = {}
    for g in given:
        try:
            gen = get_generator(g)
        except ValueError as error:
            raise ValueError(f"{name}: {str(error).removeprefix('generator: ')}") from None
        if gen.fitted and not fitted:
            raise ValueError(f"{name}: {gen.name!r} (a Student-t with ν fitted to the data's "
                             "z-scores) is a generator of validate and simulate only; name a "
                             "distribution such as 'normal' or 't6' here")
        if gen.name in seen:
            first = seen[gen.name]
            a = first if isinstance(first, str) else gen.name
            b = g if isinstance(g, str) else gen.name
            if a == b:
                raise ValueError(f"{name}: {gen.name} is listed twice")
            raise ValueError(f"{name}: {a} and {b} are the same distribution ({gen.name}); "
                             "list it once")
        seen[gen.name] = g
        out.append(gen)
    return out


def generator_coords(generators: Iterable[str | Generator]) -> dict:
    """Coordinates of a ``generator`` dimension: names and the numeric ``df`` (NaN if none)."""
    gens = check_generators(list(generators), "generator", fitted=True)
    names = [g.name for g in gens]
    return {
        "generator": ("generator", names),
        "df": ("generator", np.array([g.df for g in gens])),
    }


def fitted_nu(E, uE) -> float:
    """ν of the data-informed generator ``tfit`` for errors ``E`` and uncertainties ``uE``:
    :func:`xuqcal.core.coverage.fit_student_nu` of ``Z = E / uE`` over the points where both
    are finite; NaN when the fit is undefined or gives ν ≤ 2 (no unit-variance Student-t).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> u = rng.uniform(0.5, 2.0, 20_000)
    >>> nu = fitted_nu(u * rng.standard_t(5, 20_000), u)
    >>> bool(4.3 < nu < 5.8)
    True
    """
    from xuqcal.core.coverage import fit_student_nu

    E = np.asarray(E, dtype=np.float64)
    uE = np.asarray(uE, dtype=np.float64)
    present = np.isfinite(E) & np.isfinite(uE)
    with np.errstate(divide="ignore", invalid="ignore"):
        nu = fit_student_nu(E[present] / uE[present])
    return nu if nu > 2.0 else math.nan


def fit_generators(generators: Iterable[Generator], nu) -> list[Generator]:
    """``generators`` with the data-informed ``tfit`` given its fitted ``nu``
    (:func:`fitted_nu`; a number, or a Dask Delayed computing it for lazy data: the tasks
    that draw from it receive the value); the others unchanged.

    Examples
    --------
    >>> [g.parameter for g in fit_generators([get_generator("normal"), get_generator("tfit")],
    ...                                      4.5)][1]
    4.5
    """
    return [Generator(g.name, g.code, nu) if g.fitted else g for g in generators]
