"""Validation of statistics against reference values, with ζ-scores (METHODS §4–5).

The result of :func:`validate` is a Dataset over ``statistic × scheme``:

===========  ====================================  ============================================
scheme       reference                             interval
===========  ====================================  ============================================
``BS``       predefined value (zms = 1, ...)       bootstrap BCa interval of the data
``Sim<g>``   simulated mean with generator g,      bootstrap BCa interval of the data
             ``U_ref = 2 se``
``Sim2<g>``  simulated mean                        the simulated 2.5–97.5 % quantiles:
                                                   ``ζ = (θ - mean) / |mean - q|``, q on θ's
                                                   side
===========  ====================================  ============================================

``<g>`` is ``N`` for ``normal``, ``T`` for ``t6`` and ``[name]`` for any other generator, so the
default generators give the schemes ``BS, SimN, SimT, Sim2N, Sim2T``. ζ is NaN where a scheme
does not apply (``BS`` without a predefined reference). A statistic is ``valid`` under a scheme
when ``|ζ| ≤ 1``.

The ``verdict`` follows the recommended workflow: a predefined reference decides by ``BS``;
otherwise, with a known generator, by ``Sim2`` with that generator (the simulated distribution
of the statistic *is* its sampling distribution under calibration: an exact Monte Carlo test);
otherwise, if the simulated references of all generators agree within their combined
uncertainty (``|Δ mean| ≤ sqrt(U_1² + U_2²)``, ``U = 2 se``), ``Sim`` with the first generator
decides (its interval, the bootstrap interval of the data, does not depend on the unknown D),
and ``Sim2`` is reported for comparison only; if they differ, the statistic is still decided
when every generator's ``Sim`` ζ leads to the same decision ("pass under every generator
(normal, t6, tfit)", "fail under every generator (...)": the unknown D does not matter among
those tried, :func:`agreed_decision`), and is *not usable for validation when D is unknown*
only when the decisions differ. The default generators include the data-informed ``tfit``.
``simulated_scheme`` overrides the deciding scheme in both cases
(see :func:`validate` and ``docs/design.md`` for why the known-D case does not use ``Sim``).
A verdict is *undecided* when the deciding ζ is NaN: the BCa interval is undefined when every
bootstrap replicate lies on one side of the estimate (a
:class:`~xuqcal.DegenerateIntervalWarning` says so).

An estimate may lie outside its own BCa interval when the bootstrap bias exceeds the interval's
half-width (frequent for ``ence`` and ``zmse``). A ζ built on that interval divides by the
distance from the estimate to a bound on the wrong side and can explode (ζ = −11 for an ENCE
0.186 with interval [0.131, 0.184] against a reference 0.2045). The result flags such estimates
(``estimate_outside_interval``) and says in ``verdict_note`` (and in the printed table and the
report) when such a ζ decided the verdict, whether the interval contains the reference, and
what to do instead; a *not usable* verdict's note lists the next steps.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor

import dask.array as da
import numpy as np
import xarray as xr

from xuqcal.analysis.binning import n_bins_for
from xuqcal.analysis.dependent import (
    Dependence,
    arrange_prepared,
    check_dependence,
    dependent_bootstrap_replicates,
    dependent_jackknife,
    dependent_mean_intervals,
    resolve_dependence,
)
from xuqcal.analysis.lazy import is_lazy, lazy_result, rows_at, shared, template
from xuqcal.analysis.precision import (
    AUTO,
    Rounds,
    bootstrap_shortfall,
    check_precision,
    computed,
    computes_when_auto,
    count_or_ceiling,
    describe,
    is_auto,
    reference_shortfall,
    round_chunks,
)
from xuqcal.analysis.resampling import (
    _bootstrap_iv,
    bootstrap_attrs,
    bootstrap_checked,
    bootstrap_replicates,
    bootstrap_result,
    jackknife_values_alongside,
    prepare_lazily,
)
from xuqcal.analysis.simulation import (
    NU_TFIT_ATTRS,
    _simulate_iv,
    reference_result,
    simulate_checked,
    simulated_replicates,
    simulation_device,
)
from xuqcal.analysis.slices import broadcast
from xuqcal.core import defaults
from xuqcal.core.binning import FewPointsPerBinWarning
from xuqcal.core.checks import (
    check_bool,
    check_skewness_threshold,
    check_tolerance,
    minimum_replicates,
    user_stacklevel,
)
from xuqcal.core.coverage import band_zeta
from xuqcal.core.generators import (
    FITTED,
    Generator,
    check_generators,
    fit_generators,
    fitted_nu,
    generator_coords,
)
from xuqcal.core.intervals import acceleration, coverage_validity, zeta
from xuqcal.core.provenance import provenance
from xuqcal.core.statistics import (
    Statistic,
    beta_gm,
    codes_of,
    coverage_counts,
    get_statistics,
    point_columns,
    statistic_coords,
    undefined_factor_reason,
)
from xuqcal.core.summaries import U_REF_FACTOR, generator_sensitive
from xuqcal.io import by_role
from xuqcal.io.schema import extra_dims, roles
from xuqcal.options import convention

DEFAULT_STATISTICS = ("zms", "rce", "zm", "zv", "nll", "cc", "ence", "zmse")
#: Factor k of the reference uncertainty ``U_ref = k se`` of the Sim scheme.

PASS = "pass"
FAIL = "fail"
#: Schemes that can decide the verdict of a statistic without a predefined reference.
SIMULATED_SCHEMES = ("Sim", "Sim2")
UNDECIDED = "undecided: the interval of the deciding scheme is undefined"
NOT_USABLE = "not usable for validation: reference depends on the generator"
#: Verdicts of a statistic whose references differ between generators, when every generator
#: leads to the same decision (:func:`agreed_decision`).
PASS_EVERY = PASS + " under every generator ({generators})"
FAIL_EVERY = FAIL + " under every generator ({generators})"
#: The verdict of a tail-sensitive statistic (``zms``) of heavy-tailed z-scores.
NOT_TESTABLE_PREFIX = "not testable: heavy tails"
NOT_TESTABLE = NOT_TESTABLE_PREFIX + " (β_GM(Z²) = {beta:.3f} > {threshold:g})"


def scheme_suffix(generator: str) -> str:
    """Short label of a generator in scheme names: ``N``, ``T`` (t6) or ``[name]``.

    Examples
    --------
    >>> [scheme_suffix(g) for g in ("normal", "t6", "tfit", "uniform")]
    ['N', 'T', 'Tfit', '[uniform]']
    """
    return {"normal": "N", "t6": "T", FITTED: "Tfit"}.get(generator, f"[{generator}]")


def _validate_iv(ds, statistics, *, n_boot, n_mc, seed, n_bins, generators,
                 known_generator, level, by, chunks, E, uE, all_schemes=False,
                 mc_precision=defaults.MC_PRECISION,
                 heavy_tail_threshold=defaults.HEAVY_TAIL_THRESHOLD,
                 tol=defaults.COVERAGE_TOLERANCE, resample="iid", groups=None, block=None,
                 block_length=None, coverage_rule=None, nu_method=None):
    """Argument checks of :func:`xuqcal.validate`, before any computation (no data are read):
    those of :func:`~xuqcal.bootstrap` and :func:`simulate` under the names of
    :func:`~xuqcal.validate` (``n_boot``, ``n_mc``, ``generators``), each run once. Returns
    the statistics, the generator names (``known_generator`` appended if missing),
    ``known_generator`` and the normalised arguments of
    :func:`~xuqcal.analysis.resampling.bootstrap_checked` and
    :func:`~xuqcal.analysis.simulation.simulate_checked`.

    Examples
    --------
    >>> import xuqcal
    >>> ds = xuqcal.synthetic.nig(100, nu=6, seed=0)
    >>> _validate_iv(ds, ["zms"], n_boot=2, n_mc=100, seed=0, n_bins=20,
    ...              generators=["normal"], known_generator=None, level=0.95, by="uE",
    ...              chunks=None, E="E", uE="uE")
    Traceback (most recent call last):
    ...
    ValueError: n_boot: expected an integer >= 40 (an interval at level 0.95 needs at least \
ceil(2 / (1 - level)) replicates, one per tail beyond it on average), got 2
    """
    stats = get_statistics(statistics, coverage=True, coverage_rule=coverage_rule,
                           nu_method=nu_method)
    check_tolerance(tol)
    for name, count in (("n_boot", n_boot), ("n_mc", n_mc)):
        if isinstance(count, str) and not is_auto(count):
            raise ValueError(f"{name}: expected a number of replicates or {AUTO!r} (a count "
                             f"driven by the precision mc_precision), got {count!r}")
    check_bool(all_schemes, "all_schemes")
    check_heavy_tail_threshold(heavy_tail_threshold)
    names = [g.name for g in check_generators(generators, "generators", fitted=True)]
    if known_generator is not None:
        known_generator = check_generators(known_generator, "known_generator")[0].name
        if known_generator not in names:
            names.append(known_generator)
    # the bootstrap and simulation arguments are checked with the kernel statistics (with
    # coverage statistics only, with zm: the checks of counts, level, seed and chunks need a
    # statistic, and zm needs no more points than a coverage and its jackknife)
    keys = [s.key for s in stats if not s.is_coverage] or ["zm"]
    requested_boot, requested_mc = n_boot, n_mc
    if is_auto(n_boot) or is_auto(n_mc):
        check_precision(mc_precision)
        if chunks is not None and not isinstance(chunks, int | np.integer):
            raise ValueError(f"chunks: a sequence of chunk sizes {chunks!r} fixes the number "
                             "of replicates; give one integer (replicates per task) with "
                             "n_boot='auto' or n_mc='auto'")
    _, n_boot, _, level, seed, chunks, by_checked = _bootstrap_iv(
        ds, keys, n_boot=count_or_ceiling(n_boot, defaults.N_BOOT), method="bca", level=level,
        seed=seed, chunks=chunks, n_bins=n_bins, by=by, keep_replicates=False, E=E, uE=uE,
        n_name="n_boot")
    _, gens, n_mc, _, _ = _simulate_iv(
        ds, keys, generators=names, n_mc=count_or_ceiling(n_mc, defaults.N_MC), seed=seed,
        n_bins=n_bins, by=by, chunks=chunks, keep_replicates=False, E=E, uE=uE, n_name="n_mc",
        generator_name="generators")
    if is_auto(requested_boot) or is_auto(requested_mc):
        n_boot = AUTO if is_auto(requested_boot) else n_boot
        n_mc = AUTO if is_auto(requested_mc) else n_mc
    dependence = check_dependence(ds, resample, groups, block, block_length)
    bootstrap_arguments = dict(n_boot=n_boot, method="bca", level=level, seed=seed,
                               chunks=chunks, n_bins=n_bins, by=by_checked,
                               keep_replicates=False, E=E, uE=uE,
                               dependence=None if dependence.iid else dependence)
    simulate_arguments = dict(n_mc=n_mc, seed=seed, n_bins=n_bins, by=by, chunks=chunks,
                              keep_replicates=False, E=E, uE=uE, warn_undefined=False)
    return stats, names, known_generator, gens, bootstrap_arguments, simulate_arguments


def _checked_arguments(ds, statistics, *, simulated_scheme, n_boot, n_mc, seed, n_bins,
                       generators, known_generator, all_schemes, mc_precision,
                       heavy_tail_threshold, tol, level, by, chunks, resample, groups, block,
                       block_length, E, uE, coverage_rule=None, nu_method=None):
    """The argument checks of :func:`validate` (messages start with the parameter name), before
    any computation: no data are read. Returns what :func:`_validate_iv` returns."""
    if simulated_scheme is not None and simulated_scheme not in SIMULATED_SCHEMES:
        raise ValueError(f"simulated_scheme: {simulated_scheme!r} is not one of "
                         f"{', '.join(SIMULATED_SCHEMES)} (or None: Sim2 with a known generator, "
                         "else Sim)")
    statistics = statistics if statistics is not None else DEFAULT_STATISTICS
    return _validate_iv(ds, statistics, n_boot=n_boot, n_mc=n_mc, seed=seed,
                        generators=generators,
                        n_bins=n_bins_for(ds, n_bins, statistics=statistics),
                        known_generator=known_generator, level=level, by=by, chunks=chunks,
                        E=E, uE=uE, all_schemes=all_schemes, mc_precision=mc_precision,
                        heavy_tail_threshold=heavy_tail_threshold, tol=tol, resample=resample,
                        groups=groups, block=block, block_length=block_length,
                        coverage_rule=coverage_rule, nu_method=nu_method)


def _check_before_loading(arguments: dict, given: set) -> None:
    """The argument checks of :func:`validate` on Dask-backed data that an ``"auto"`` run
    (the default) is about to compute: bad arguments are refused before any data are read, as
    with fixed counts. Data with extra dimensions (slices) or a DataTree are checked per slice
    when validated."""
    arguments = dict(arguments)
    ds = arguments.pop("ds")
    if not isinstance(ds, xr.Dataset):
        return
    E, uE = roles(ds, arguments["E"] if "E" in given else None,
                  arguments["uE"] if "uE" in given else None)
    if extra_dims(ds, E, uE):
        return
    arguments.update(E=E, uE=uE)
    with warnings.catch_warnings():  # the number of bins warns once, when validated
        warnings.simplefilter("ignore", FewPointsPerBinWarning)
        _checked_arguments(ds, **arguments)


@computes_when_auto(check=_check_before_loading)
@broadcast
@by_role
def validate(
    ds: xr.Dataset,
    statistics: str | Iterable[str] | None = None,
    *,
    n_boot: int | str = defaults.N_BOOT_VALIDATION,
    n_mc: int | str = defaults.N_MC_VALIDATION,
    seed: int = defaults.SEED,
    n_bins: int | None = None,
    generators: str | Iterable[str] = defaults.VALIDATION_GENERATORS,
    known_generator: str | None = None,
    simulated_scheme: str | None = None,
    all_schemes: bool = defaults.ALL_SCHEMES,
    mc_precision: float = defaults.MC_PRECISION,
    heavy_tail_threshold: float | None = defaults.HEAVY_TAIL_THRESHOLD,
    tol: float = defaults.COVERAGE_TOLERANCE,
    level: float = defaults.LEVEL,
    by: str = defaults.BY,
    chunks: int | Sequence[int] | None = None,
    resample: str = "iid",
    groups: str | None = None,
    block: str | None = None,
    block_length: int | str | None = None,
    E: str = defaults.E,
    uE: str = defaults.UE,
    coverage_rule: str | None = None,
    nu_method: str | None = None,
) -> xr.Dataset:
    """Validate statistics of a data set: estimates, intervals, references, ζ and verdicts.

    Parameters
    ----------
    ds : xarray.Dataset
        Input over ``sample`` with ``E`` and ``uE``.
    statistics : str or sequence of str, optional
        Statistic keys (default: ``zms rce zm zv nll cc ence zmse``), including the coverage
        statistics (PICP, :func:`~xuqcal.core.statistics.coverage_statistic`: ``picp95``,
        ``picp68.3``, ``picpt95``; ``picp`` for the levels of
        ``defaults.COVERAGE_LEVELS``; ``xuqcal.STATISTIC_KEYS`` lists every accepted key). A
        coverage statistic gets the Wilson interval with
        continuity correction of its count (at ``level``) instead of a bootstrap one (its
        ``bias`` is NaN and ``se`` the binomial ``sqrt(p̂ (1 - p̂) / n)``), its nominal level as
        ``BS`` reference, and ζ against the nearer edge of ``[p - tol, p + tol]`` (0 inside):
        it passes when its interval overlaps that band. Its factor k and the ν it rests on are
        reported (``coverage_factor``, ``nu_fitted``).
    n_boot : int or "auto"
        Bootstrap replicates for the BCa intervals, at least ``ceil(2 / (1 - level))`` (40 at
        95 %: each tail beyond the interval must hold one replicate on average); ``"auto"``
        (the default, ``defaults.N_BOOT_VALIDATION``): as many as the precision
        ``mc_precision`` needs (see :mod:`xuqcal.analysis.precision`), at least
        ``ceil(2 / (1 - level))`` (the first round) and at most ``defaults.N_BOOT``.
    n_mc : int or "auto"
        Synthetic error sets per generator for the simulated references; ``"auto"`` (the
        default, ``defaults.N_MC_VALIDATION``): as many as ``mc_precision`` needs, at most
        ``defaults.N_MC``. The defaults are those of every whole-validation entry point
        (``xuqcal validate``, ``xuqcal report``, ``xuqcal demo``, :func:`xuqcal.summary` and
        :func:`xuqcal.report.report`): the same data and seed give the same numbers from all
        of them. Explicit counts give the fixed-count result, lazy on Dask-backed data; the
        published tables are reproduced with ``n_boot=defaults.N_BOOT,
        n_mc=defaults.N_MC`` (10 000 each, the fixed counts of the published tables).
    seed : int
        Seed of every random draw (bootstrap and simulation use independent streams).
    n_bins, by : int or None, str
        Equal-count bins on ``by`` for the binned statistics; ``n_bins`` defaults to the
        recommended number for M points (``defaults.N_BINS`` bins of at least
        ``defaults.MIN_POINTS_PER_BIN_LOCAL`` points, per slice; as :func:`xuqcal.stats`), and
        a number given with fewer points per bin warns.
    generators : str or sequence of str
        Generative distributions D of the simulated references (at least one; two or more for
        the sensitivity check of the recommended workflow). The default adds to ``normal``
        and ``t6`` the data-informed ``tfit``, a Student-t with ν fitted to the z-scores (the
        fit PICP uses, reported as ``nu_tfit``). A statistic whose references differ between
        generators beyond their uncertainty is decided when every generator leads to the same
        decision under the deciding scheme (all ``|ζ| <= 1``: "pass under every generator
        (...)"; all ``|ζ| > 1`` on one side: "fail under every generator (...)"), with the
        scheme nearest to changing it as ``verdict_scheme``; it is *not usable* only when the
        decisions differ.
    known_generator : str, optional
        The generative distribution when it is known (e.g. ``"normal"`` for a Gaussian
        process): statistics without a predefined reference are then validated with it, and
        the sensitivity check is skipped. It is added to ``generators`` if missing.
    simulated_scheme : {None, "Sim", "Sim2"}
        The scheme whose ζ decides the verdict of a statistic validated against a simulated
        reference. ``"Sim"`` compares the reference with the bootstrap BCa interval of the
        data; ``"Sim2"`` compares the estimate with the simulated 2.5–97.5 % range. ``None``
        (the default) takes ``Sim2`` with a known generator, where it is the exact test of
        calibration, and ``Sim`` otherwise (METHODS §5: its interval does not depend on the
        unknown D). With a known generator, ``"Sim"`` rejects calibrated data far more often
        than 5 % for MAD-type statistics (``ence``, ``zmse``), whose bootstrap bias is large
        (see the design notes).
    all_schemes : bool
        Also simulate the references of the statistics that have a predefined reference
        (``zms``, ``rce``, ``zm``, ``zv``, ``nll``), for their ``Sim`` and ``Sim2`` ζ (reported
        for comparison; their verdict is always decided by ``BS``). By default only the
        statistics whose verdict needs a simulated reference are simulated, and none at all
        when every statistic has a predefined reference: their ``Sim``/``Sim2`` ζ, ``sim_*``
        and ``u_ref`` are then NaN.
    mc_precision : float
        With ``n_boot="auto"`` or ``n_mc="auto"``: the largest Monte Carlo standard error of a
        quantity entering a verdict (a BCa bound, a simulated mean, a Sim2 quantile), as a
        fraction of the half-width of the interval it is compared with. The replicates are
        computed in rounds until it is reached (or the ceiling); they are the first ones of the
        fixed-count run, so the result equals that of the fixed count it stopped at, bit for
        bit.
    heavy_tail_threshold : float or None
        Heavy-tail screening: the robust skewness β_GM of Z² (reported as ``beta_gm_z2``) above
        which a statistic that heavy tails make unreliable (``zms``) is *not testable* (its
        verdict says so, with the value) instead of pass or fail; its ζ are still reported.
        ``None`` reports β_GM(Z²) without screening.
    tol : float
        Tolerance of the coverage statistics: valid when the Wilson interval overlaps
        ``[p - tol, p + tol]`` (P. Pernot, arXiv 2408.13089, 2024).
    level : float
        Confidence level of the bootstrap intervals.
    chunks : int or sequence of int, optional
        Replicates per Dask task.
    resample, groups, block, block_length
        How the bootstrap resamples the points, as :func:`xuqcal.bootstrap`: ``"iid"``
        (default), ``"cluster"`` with ``groups`` (whole groups: the atoms of a structure, a
        molecular family), or ``"moving"``, ``"circular"`` or ``"stationary"`` with
        ``block`` (the variable that orders the points) and ``block_length`` (an integer or
        ``"auto"``). The BCa intervals, the BS and Sim ζ-scores built on them and the
        intervals of the coverage statistics (a dependent bootstrap of the coverage
        indicator instead of the Wilson interval) then account for the dependence; the
        Sim2 range simulates independent errors, which a statistic's note says when Sim2
        decides its verdict (:mod:`xuqcal.analysis.dependent`).
    E, uE : str
        Names of the error and uncertainty variables.
    coverage_rule : {"quantile", "pernot2024"}, optional
        The rule of the normal coverage statistics
        (:func:`~xuqcal.core.statistics.coverage_statistic`): ``"pernot2024"`` counts
        ``|Z| <= 1`` and validates it against 0.67 ± tol (``picp68.3``), and ``|Z| <= 1.96``
        against 0.95 ± tol (``picp95``), as P. Pernot's 2024_PICP study. Default ``None``: the
        option ``conventions`` (:func:`xuqcal.options.convention`; ``"quantile"``).
    nu_method : {"ml", "ks"}, optional
        The fit of ν of the Student coverage statistics (``picpt``,
        :func:`xuqcal.core.coverage.fit_student_nu`); default ``None``: the option
        ``conventions`` (``"ml"``). The ν of the ``tfit`` generator stays maximum likelihood.

    Returns
    -------
    xarray.Dataset
        Computed with ``"auto"`` counts, the default (each round's count depends on the
        previous rounds' values; Dask-backed data are loaded first: the bootstrap needs all
        points of a data set in one task anyway). With explicit counts for both ``n_boot``
        and ``n_mc``: lazy for Dask-backed data (one graph: the bootstrap, the simulated
        references and the verdicts built from them are computed together by
        ``.compute()``), computed for NumPy-backed data. Over ``statistic``: ``estimate``, ``bias``,
        ``se``, ``ci_low``, ``ci_high``, ``generator_sensitive``, ``verdict``, ``verdict_scheme``,
        ``estimate_outside_interval`` (the estimate lies outside its own bootstrap interval:
        the ζ-scores built on that interval are then unreliable) and ``verdict_note`` (empty,
        or what the verdict rests on when it needs saying and what to do next, e.g. for a
        statistic *not usable* because its reference depends on the generator). Over
        ``statistic × generator``: ``sim_mean``, ``sim_se``, ``sim_q025``, ``sim_q975``. Over
        ``statistic × scheme``: ``reference``, ``u_ref``, ``zeta``, ``valid``. A scalar:
        ``beta_gm_z2``, the robust skewness of Z². With coverage statistics, over
        ``statistic`` (NaN for the others): ``coverage_factor`` (k) and ``nu_fitted`` (the ν
        of a Student factor, ``inf`` for the normal one).

    Examples
    --------
    >>> import xuqcal
    >>> ds = xuqcal.synthetic.nig(2000, nu=6, seed=3)
    >>> v = validate(ds, ["zms", "ence"], n_boot=500, n_mc=500)
    >>> v.scheme.values.tolist()
    ['BS', 'SimN', 'SimT', 'SimTfit', 'Sim2N', 'Sim2T', 'Sim2Tfit']
    >>> str(v.verdict_scheme.sel(statistic="zms").values)
    'BS'
    """
    # argument checks, before any computation (messages start with the parameter name)
    stats, names, known_generator, gens, bootstrap_arguments, simulate_arguments = \
        _checked_arguments(ds, statistics, simulated_scheme=simulated_scheme, n_boot=n_boot,
                           n_mc=n_mc, seed=seed, n_bins=n_bins, generators=generators,
                           known_generator=known_generator, all_schemes=all_schemes,
                           mc_precision=mc_precision,
                           heavy_tail_threshold=heavy_tail_threshold, tol=tol, level=level,
                           by=by, chunks=chunks, resample=resample, groups=groups,
                           block=block, block_length=block_length, E=E, uE=uE,
                           coverage_rule=convention("coverage_rule", coverage_rule),
                           nu_method=convention("nu_method", nu_method))
    # (checked above, before any work) the warning of an iid validation of dependent points,
    # or the automatic block length (the data are read now)
    dependence = resolve_dependence(ds, bootstrap_arguments["dependence"] or Dependence("iid"),
                                    E=E, uE=uE, warn_as="validate")
    dependence = bootstrap_arguments["dependence"] = None if dependence.iid else dependence
    # the bootstrap and the simulations are those of the kernel statistics; the coverage
    # statistics (PICP) are counted when the verdicts are made (_validate_body)
    kernel = [s for s in stats if not s.is_coverage]
    simulated = simulated_statistics(kernel, all_schemes)
    schemes = ["BS", *[f"Sim{scheme_suffix(g)}" for g in names],
               *[f"Sim2{scheme_suffix(g)}" for g in names]]
    n_boot, n_mc = bootstrap_arguments["n_boot"], simulate_arguments["n_mc"]
    if is_auto(n_boot) or is_auto(n_mc):
        return _validate_precise(ds, stats, simulated, gens, names, schemes,
                                 bootstrap_arguments, simulate_arguments,
                                 known_generator=known_generator,
                                 simulated_scheme=simulated_scheme, mc_precision=mc_precision,
                                 heavy_tail_threshold=heavy_tail_threshold, tol=tol)
    lazy_bootstrap = _with_coverage_rows(_over_all_statistics(
        bootstrap_checked(ds, kernel, **bootstrap_arguments) if kernel else None, stats,
        bootstrap_arguments, ds.sizes["sample"]), stats)
    lazy_reference = _references(ds, stats, simulated, gens, simulate_arguments)
    layout = _layout(lazy_bootstrap, lazy_reference, schemes, names, known_generator,
                     simulated_scheme, n_mc if simulated else 0, simulated,
                     heavy_tail_threshold, tol, stats, gens)
    # one graph: the verdicts are a task of the bootstrap and simulation results, so both are
    # computed once, together (NumPy-backed data: computed here; Dask-backed: lazy)
    result = lazy_result(_validate_body,
                         (lazy_bootstrap, lazy_reference, ds[uE].data, ds[E].data,
                          _dependence_values(ds, dependence)), layout,
                         stats=stats, names=names, schemes=schemes,
                         known_generator=known_generator, simulated_scheme=simulated_scheme,
                         heavy_tail_threshold=heavy_tail_threshold, tol=tol,
                         dependence=dependence)
    return result if is_lazy(ds, [E, uE, by if by in ds.variables else uE]) else result.compute()


def simulated_statistics(stats: Sequence[Statistic], all_schemes: bool = False
                         ) -> list[Statistic]:
    """The statistics whose simulated references :func:`validate` computes: those without a
    predefined reference (their verdict needs one), or every statistic with ``all_schemes``.

    Coverage statistics are never simulated (their reference is their nominal level).

    Examples
    --------
    >>> from xuqcal.core.statistics import get_statistics
    >>> [s.key for s in simulated_statistics(get_statistics(["zms", "nll", "cc", "ence"]))]
    ['cc', 'ence']
    """
    kernel = [s for s in stats if not s.is_coverage]
    return kernel if all_schemes else [s for s in kernel if not s.has_reference]


def _references(ds: xr.Dataset, stats: Sequence[Statistic], simulated: Sequence[Statistic],
                gens, simulate_arguments: dict) -> xr.Dataset:
    """Simulated references of the ``simulated`` statistics, laid out over every statistic of
    ``stats`` (NaN for the others; no simulation at all when none is simulated). The synthetic
    sets of a statistic do not depend on which others are simulated with it: its values are
    bit-identical to those of a simulation of every statistic."""
    if simulated:
        arguments = {**simulate_arguments,
                     "prepared": prepare_lazily(ds, [s for s in stats if not s.is_coverage],
                                                n_bins=simulate_arguments["n_bins"],
                                                by=simulate_arguments["by"],
                                                E=simulate_arguments["E"],
                                                uE=simulate_arguments["uE"],
                                                simulation=True)}
        return simulate_checked(ds, simulated, gens, laid_out=stats, **arguments)
    return _no_reference(stats, gens)


def _over_statistics(result: xr.Dataset, stats: Sequence[Statistic]) -> xr.Dataset:
    """A result over some statistics (the simulated references of the simulated ones, the
    bootstrap of the kernel statistics) laid out over all of ``stats``, NaN for the others:
    ``result.reindex(statistic=keys).assign_coords(statistic_coords(stats))``, the same
    values, variables and coordinates, built with one graph layer per Dask-backed variable
    (:func:`~xuqcal.analysis.lazy.rows_at` per block) where xarray's reindex made two (a take
    and a masked ``where``) and computed its masks with Dask operations: the nine-set one
    call's graph 1 563 → 1 265 tasks (``benchmarks/measured/graph-nine-sets-*``). Variables
    of other dtypes than float64 take xarray's reindex. The lazy references are laid out in
    their summaries' tasks instead (:func:`~xuqcal.analysis.simulation.summarized_lazily`);
    this lays out the bootstrap, and the references of a precision-driven validate."""
    if result.sizes["statistic"] == len(stats):
        return result
    keys = [s.key for s in stats]
    on_statistic = {name: variable for name, variable in result.data_vars.items()
                    if "statistic" in variable.dims}
    if any(v.dtype != np.float64 for v in on_statistic.values()) or any(
            c.chunks is not None for c in result.coords.values()):
        return result.reindex(statistic=keys).assign_coords(statistic_coords(stats))
    positions = result.indexes["statistic"].get_indexer(keys)
    # the layout (variables, coordinates, attributes) from a reindex of NumPy placeholders
    placeholders = result.copy(data={name: np.zeros(v.shape, v.dtype) if name in on_statistic
                                     else v.data for name, v in result.data_vars.items()})
    laid_out = placeholders.reindex(statistic=keys).assign_coords(statistic_coords(stats))
    data = {}
    for name, variable in result.data_vars.items():
        if name not in on_statistic:
            data[name] = variable.data
            continue
        axis = variable.get_axis_num("statistic")
        values = variable.data
        if isinstance(values, da.Array):
            if len(values.chunks[axis]) > 1:
                values = values.rechunk({axis: -1})
            chunks = tuple((len(keys),) if a == axis else c for a, c in enumerate(values.chunks))
            data[name] = values.map_blocks(rows_at, positions, axis, chunks=chunks,
                                           dtype=np.float64)
        else:
            data[name] = rows_at(np.asarray(values), positions, axis)
    return laid_out.copy(data=data)


def _over_all_statistics(bootstrap_result: xr.Dataset | None, stats: Sequence[Statistic],
                         bootstrap_arguments: dict, m: int) -> xr.Dataset:
    """The bootstrap result of the kernel statistics laid out over all of ``stats`` (NaN for
    the coverage statistics, whose Wilson intervals :func:`_validate_body` fills in);
    ``None`` (coverage statistics only: nothing is bootstrapped) gives NaN everywhere and
    ``n_boot = 0``."""
    if bootstrap_result is None:
        b = bootstrap_arguments
        nan = np.full(len(stats), np.nan)
        return xr.Dataset(
            {name: ("statistic", nan.copy()) for name in ("estimate", "bias", "se",
                                                             "ci_low", "ci_high")},
            coords=statistic_coords(stats),
            attrs={**bootstrap_attrs(stats, method="bca", level=b["level"], n_boot=0,
                                     seed=b["seed"], n_bins=b["n_bins"], by=b["by"], m=m),
                   **(b["dependence"].attrs() if b.get("dependence") is not None else {})})
    return _over_statistics(bootstrap_result, stats)


def _with_coverage_rows(bootstrap_result: xr.Dataset, stats: Sequence[Statistic]
                        ) -> xr.Dataset:
    """A computed bootstrap result whose coverage rows :func:`_validate_body` fills in, made
    Dask-backed so that :func:`~xuqcal.analysis.lazy.lazy_result` takes its variables from
    the body (it keeps the layout's computed values as known in advance); unchanged without
    coverage statistics."""
    if any(s.is_coverage for s in stats) and any(
            v.chunks is None for v in bootstrap_result.data_vars.values()):
        return bootstrap_result.chunk()
    return bootstrap_result


def _no_reference(stats: Sequence[Statistic], gens) -> xr.Dataset:
    """The simulated references when nothing is simulated: NaN over statistic × generator."""
    nan = np.full((len(stats), len(gens)), np.nan)
    return xr.Dataset(
        {name: (("statistic", "generator"), nan, {"long_name": text}) for name, text in
         _REFERENCE_LONG_NAMES.items()},
        coords={**statistic_coords(stats), **generator_coords(gens)})


def _in_thread(function, *args) -> Future:
    """``function(*args)`` started now in a thread of its own; its :class:`Future` gives its
    value or raises its exception (the caller goes on at once; the thread ends with the call).

    Examples
    --------
    >>> _in_thread(sum, [1, 2, 3]).result()
    6
    """
    executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="xuqcal")
    try:
        return executor.submit(function, *args)
    finally:
        executor.shutdown(wait=False)


def _validate_precise(ds, all_stats, simulated, gens, names, schemes, bootstrap_arguments,
                      simulate_arguments, *, known_generator, simulated_scheme,
                      mc_precision, heavy_tail_threshold, tol) -> xr.Dataset:
    """:func:`validate` with ``n_boot="auto"`` or ``n_mc="auto"`` (see
    :mod:`xuqcal.analysis.precision`). Bootstrap replicates and synthetic sets are computed in
    rounds until the ζ-scores that decide verdicts are precise enough (``BS``; the deciding
    ``Sim`` or ``Sim2`` of a usable simulated statistic) and every simulated mean is precise
    against its simulated range; each round's summaries are those of the fixed-count run of
    that size, and the result is built by the same functions as the fixed-count one."""
    b, r = bootstrap_arguments, simulate_arguments
    E, uE, seed, chunks, level = b["E"], b["uE"], b["seed"], b["chunks"], b["level"]
    stats = [s for s in all_stats if not s.is_coverage]  # the coverage ones: _validate_body
    if not stats:  # coverage statistics only: nothing to bootstrap or simulate
        return _precise_result(ds, all_stats, None, _no_reference(all_stats, gens), [], 0, 0.0,
                               gens=gens, names=names, schemes=schemes, b=b, r=r,
                               known_generator=known_generator,
                               simulated_scheme=simulated_scheme, mc_precision=mc_precision,
                               heavy_tail_threshold=heavy_tail_threshold, tol=tol)
    # tfit's ν, a scipy fit (seconds at M = 10^6), is fitted in a thread while the data are
    # prepared and the first bootstrap round runs; the synthetic sets wait for it (the data
    # are read here: the thread gets NumPy arrays, never a file or a Dask graph)
    fitting = (_in_thread(fitted_nu, np.asarray(ds[E].values), np.asarray(ds[uE].values))
               if simulated and any(g.fitted for g in gens) else None)
    # the heavy-tail screen β_GM(Z²) (a sort of the M values), which the result needs only
    # at the end, in a thread too: the last step no longer waits for it
    screening = _in_thread(robust_skewness_z2, np.asarray(ds[E].values),
                           np.asarray(ds[uE].values))
    prepared = prepare_lazily(ds, stats, n_bins=b["n_bins"], by=r["by"], E=E, uE=uE,
                              analysis="validate", jackknife=True,
                              simulation=bool(simulated)).compute()
    codes = codes_of(stats)
    estimate = prepared.evaluate(codes)
    in_graph = shared(prepared)  # sent to a cluster's workers once, not with every round
    dependence = b["dependence"]
    def round_replicates(grown: list[int], start: int, stop: int):
        """The lazy bootstrap replicates ``start .. stop - 1`` of the statistics ``grown``."""
        if dependence is not None:
            return dependent_bootstrap_replicates(
                arranged_in_graph, codes[grown], stop - start, seed, dependence.resample,
                round_chunks(stop - start, chunks), first=start)
        return bootstrap_replicates(in_graph, codes[grown], stop - start, seed,
                                    round_chunks(stop - start, chunks), first=start)

    # the bootstrap's first round holds at least the replicates a fixed count needs at this
    # level (minimum_replicates: 2000 at 0.999), so that no bound is an extreme replicate
    first_boot = max(defaults.AUTO_FIRST, minimum_replicates(level))
    initial = None  # the first bootstrap round, when computed beside the jackknife
    if dependence is None:
        # in C order, its only copy (the summaries of every round would copy an (M,
        # statistic) transpose, 640 MB for eight statistics at M = 10^7); the first bootstrap
        # round is drawn in the same call as its first batch (the cores that cc's one task
        # leaves idle draw replicates meanwhile), the accelerations being needed only after it
        n_first = Rounds.first_count(b["n_boot"], ceiling=defaults.N_BOOT, first=first_boot)
        jack, initial = jackknife_values_alongside(
            in_graph, codes, prepared.size, round_replicates(list(range(len(stats))), 0,
                                                              n_first))
        initial = np.asarray(initial).T
    else:  # the resampling rows of the points, and the delete-one-group/block jackknife
        by_values = ds[b["by"]].values if b["by"] != uE else ds[uE].values
        arranged = arrange_prepared(prepared, np.asarray(by_values),
                                    np.asarray(ds[dependence.variable].values), dependence)
        jack = np.ascontiguousarray(dependent_jackknife(arranged.layout, prepared,
                                                        arranged.rows_of, codes))
        arranged_in_graph = shared(arranged)
    # once, for every round (the rounds' intervals take them instead of the jackknife values)
    accelerations = acceleration(jack, parallel=True)
    del jack  # 640 MB for eight statistics at M = 10^7: freed before the rounds
    deciding = deciding_scheme(known_generator, simulated_scheme)
    agreeing = agreement_scheme(simulated_scheme)
    rows = [stats.index(s) for s in simulated]
    sim_codes = codes_of(simulated) if simulated else codes[:0]

    def bootstrap_rounds(grown: list[int], start: int, stop: int) -> np.ndarray:
        return computed(round_replicates(grown, start, stop)).T

    def simulation_rounds(start: int, stop: int) -> np.ndarray:
        return computed(da.stack(
            [simulated_replicates(in_graph, sim_codes, g, stop - start, seed,
                                  round_chunks(stop - start, chunks), first=start).T
             for g in gens], axis=1))

    # the bootstrap grows per statistic: a round computes the statistics still short of
    # precision only (at M = 2e6, the moment statistics' replicates cost a fraction of the
    # binned and rank statistics'); each keeps the prefix of its fixed-count replicates
    boot = Rounds(bootstrap_rounds, b["n_boot"], ceiling=defaults.N_BOOT, first=first_boot,
                  statistics=len(stats), initial=initial)
    if fitting is not None:
        gens = fit_generators(gens, fitting.result())
    sims = Rounds(simulation_rounds, r["n_mc"], ceiling=defaults.N_MC) if simulated else None
    uE_values = np.asarray(ds[uE].values)
    predefined = np.array([s.reference_value(uE_values) if s.has_reference else np.nan
                           for s in stats])
    # the generator whose Sim or Sim2 zeta decides a simulated statistic's verdict
    decider = names.index(known_generator) if known_generator is not None else 0
    while True:
        with warnings.catch_warnings(record=True) as caught:  # said once, of the last round
            warnings.simplefilter("always")
            bootstrap = _precise_bootstrap(boot, estimate, accelerations, stats, level=level,
                                           seed=seed, n_bins=b["n_bins"], by=b["by"],
                                           m=prepared.size, dependence=dependence)
        # the reference each bootstrap interval is compared with in a deciding zeta: the
        # predefined one (BS), the deciding generator's simulated mean (Sim), and for a
        # statistic whose references differ between generators, the mean of the generator
        # nearest to changing their agreed decision when Sim judges it (agreed_decision);
        # else none (NaN: Sim2 does not use the bootstrap interval, and a statistic whose
        # generators disagree decides nothing)
        reference_value, u_ref = predefined.copy(), np.zeros(len(stats))
        if sims is not None:
            reference = reference_result(
                xr.DataArray(sims.values, dims=("statistic", "generator", "replicate")),
                simulated, gens, n_mc=sims.n, seed=seed, n_bins=r["n_bins"], by=r["by"],
                m=prepared.size, keep_replicates=False, warn_undefined=False)
            mean, se = reference["mean"].values, reference["se"].values
            # (a statistic with a predefined reference is decided by BS whatever its Sim)
            sensitive = (np.full(len(simulated), False) if known_generator is not None
                         else generator_sensitive(mean, se)
                         & np.array([not s.has_reference for s in simulated]))
            # the generator whose zeta decides each simulated statistic (-1: none)
            deciders = np.where(sensitive, -1, decider)
            theta = estimate[rows][:, np.newaxis]
            agreement_zeta = (sim2_zeta(theta, mean, reference["q025"].values,
                                        reference["q975"].values) if agreeing == "Sim2" else
                              zeta(theta, mean, bootstrap.ci_low.values[rows][:, np.newaxis],
                                   bootstrap.ci_high.values[rows][:, np.newaxis],
                                   U_REF_FACTOR * se))
            for k in np.flatnonzero(sensitive):
                agreed = agreed_decision(agreement_zeta[k], names)
                deciders[k] = -1 if agreed is None else agreed[1]
            scheme = np.full(mean.shape, "", dtype=object)
            decided = np.flatnonzero(deciders >= 0)
            scheme[decided, deciders[decided]] = np.where(sensitive[decided], agreeing,
                                                          deciding)
            by_sim = decided[scheme[decided, deciders[decided]] == "Sim"]
            rows_index = np.asarray(rows, dtype=np.int64)
            if deciding == "Sim":  # (as before: a sensitive statistic has no reference)
                reference_value[rows_index] = np.nan
            reference_value[rows_index[by_sim]] = mean[by_sim, deciders[by_sim]]
            u_ref[rows_index[by_sim]] = U_REF_FACTOR * se[by_sim, deciders[by_sim]]
        grew_boot = boot.grow(np.concatenate([
            bootstrap_shortfall(boot.values[i][np.newaxis], estimate[i:i + 1],
                                accelerations[i:i + 1], level, reference_value[i:i + 1],
                                u_ref[i:i + 1], mc_precision) for i in range(len(stats))]))
        grew_sims = sims is not None and sims.grow(reference_shortfall(
            sims.values, mc_precision, estimate=estimate[rows],
            low=bootstrap.ci_low.values[rows], high=bootstrap.ci_high.values[rows],
            scheme=scheme))
        if not (grew_boot or grew_sims):
            break
    for caught_warning in caught:
        warnings.warn(caught_warning.message, caught_warning.category,
                      stacklevel=user_stacklevel())
    if sims is None:
        reference, n_mc, mc_worst = _no_reference(all_stats, gens), 0, 0.0
    else:
        reference = _over_statistics(reference, all_stats)
        n_mc, mc_worst = sims.n, sims.worst
    return _precise_result(ds, all_stats, bootstrap, reference, simulated, n_mc,
                           max(boot.worst, mc_worst), gens=gens, names=names, schemes=schemes,
                           b=b, r=r, known_generator=known_generator,
                           simulated_scheme=simulated_scheme, mc_precision=mc_precision,
                           heavy_tail_threshold=heavy_tail_threshold, tol=tol,
                           beta_gm_z2=screening.result())


def _precise_result(ds, all_stats, bootstrap, reference, simulated, n_mc, worst, *, gens,
                    names, schemes, b, r, known_generator, simulated_scheme, mc_precision,
                    heavy_tail_threshold, tol, beta_gm_z2=None) -> xr.Dataset:
    """The result of a precision-driven :func:`validate` from its last round's bootstrap
    result of the kernel statistics (``None`` when there are none: coverage statistics only,
    nothing bootstrapped or simulated) and simulated references, by the functions of the
    fixed-count path; ``worst`` is the largest shortfall ratio of the last round;
    ``beta_gm_z2``, the heavy-tail screen when computed already (else computed here)."""
    uE_values = np.asarray(ds[b["uE"]].values)
    bootstrap = _with_coverage_rows(_over_all_statistics(bootstrap, all_stats, b,
                                                         ds.sizes["sample"]), all_stats)
    layout = _layout(bootstrap, reference, schemes, names, known_generator, simulated_scheme,
                     n_mc, simulated, heavy_tail_threshold, tol, all_stats, gens)
    layout.attrs.update({
        "n_boot_requested": str(b["n_boot"]), "n_mc_requested": str(r["n_mc"]),
        "mc_precision": mc_precision, "mc_precision_reached": float(worst * mc_precision),
        "precision_rule": describe([b["n_boot"], r["n_mc"]])})
    return lazy_result(_validate_body, (bootstrap, reference, uE_values,
                                        np.asarray(ds[b["E"]].values),
                                        _dependence_values(ds, b["dependence"])), layout,
                       stats=all_stats, names=names, schemes=schemes,
                       known_generator=known_generator, simulated_scheme=simulated_scheme,
                       heavy_tail_threshold=heavy_tail_threshold, tol=tol,
                       dependence=b["dependence"], beta_gm_z2=beta_gm_z2).compute()


def _dependence_values(ds: xr.Dataset, dependence) -> object:
    """The values of the dependence variable (``groups`` or ``block``) that the coverage
    statistics' dependent bootstrap reads, or ``None`` for independent points."""
    return None if dependence is None else ds[dependence.variable].data


def _precise_bootstrap(boot: Rounds, estimate: np.ndarray, accelerations: np.ndarray,
                       stats: Sequence[Statistic], *, level: float, seed: int, n_bins: int,
                       by: str, m: int, dependence=None) -> xr.Dataset:
    """The bootstrap result of a precision-driven round: the summaries of every statistic's
    replicates so far. With one count for all, one :func:`bootstrap_result` (as a fixed-count
    run); with counts that differ, one per statistic, each equal to the bootstrap of that
    statistic alone at its count, concatenated (``accelerations``: the BCa acceleration of
    each statistic, computed once from its jackknife values for every round); the
    attribute ``n_boot`` is then the largest count and ``n_boot_per_statistic`` lists them.
    ``dependence``: the dependent resample, whose attributes are added."""
    def attrs(chosen: Sequence[Statistic], n: int) -> dict:
        values = bootstrap_attrs(chosen, method="bca", level=level, n_boot=n, seed=seed,
                                 n_bins=n_bins, by=by, m=m)
        return values if dependence is None else {**values, **dependence.attrs()}

    def result(rows: slice, values: np.ndarray, n: int) -> xr.Dataset:
        chosen = stats[rows]
        return bootstrap_result(
            xr.DataArray(estimate[rows], dims="statistic"),
            xr.DataArray(values, dims=("statistic", "replicate")), None, stats=chosen,
            method="bca", level=level, keep_replicates=False, attrs=attrs(chosen, n),
            accelerations=xr.DataArray(accelerations[rows], dims="statistic"))

    counts = boot.n.tolist()
    if len(set(counts)) == 1:
        return result(slice(None), np.stack(boot.values), counts[0])
    parts = [result(slice(i, i + 1), boot.values[i][np.newaxis], n)
             for i, n in enumerate(counts)]
    combined = xr.concat(parts, dim="statistic", combine_attrs="drop_conflicts")
    combined.attrs = attrs(stats, max(counts))
    combined.attrs["n_boot_per_statistic"] = ", ".join(
        f"{s.key}: {n}" for s, n in zip(stats, counts, strict=True))
    return combined


#: Long names of the simulated-reference variables (as :func:`~xuqcal.simulate` names them).
_REFERENCE_LONG_NAMES = {
    "mean": "simulated reference value (mean)",
    "se": "standard error of the simulated mean",
    "q025": "2.5 % quantile of the simulated values",
    "q975": "97.5 % quantile of the simulated values",
}


_LONG_NAMES = {
    "reference": "reference value of the statistic",
    "u_ref": "standard uncertainty of the reference",
    "zeta": "zeta-score of the estimate",
    "valid": "|zeta| <= 1",
}


def _layout(bootstrap_result: xr.Dataset, simulated: xr.Dataset, schemes: list[str],
            names: list[str], known_generator: str | None, simulated_scheme: str | None,
            n_mc: int, simulated_stats: Sequence[Statistic],
            heavy_tail_threshold: float | None, tol: float,
            stats: Sequence[Statistic], gens: Sequence[Generator]) -> xr.Dataset:
    """The layout of a :func:`validate` result: the bootstrap result's variables, then the
    references, ζ-scores and verdicts (shapes known from the statistics and generators;
    ``stats``, the statistics validated, in the order of the bootstrap result's)."""
    n_stat = bootstrap_result.sizes["statistic"]
    coverage = [s.key for s in stats if s.is_coverage]
    f8 = np.float64
    sim_vars = {f"sim_{name}": (("statistic", "generator"), f8, {
        "long_name": f"simulated reference: {simulated[name].attrs.get('long_name', name)}"})
        for name in ("mean", "se", "q025", "q975")}
    added = template(
        {**{name: (("statistic", "scheme"), bool if name == "valid" else f8,
                   {"long_name": long_name}) for name, long_name in _LONG_NAMES.items()},
         **sim_vars,
         "generator_sensitive": (("statistic",), bool, {
             "long_name": "simulated references of the generators differ by more than their "
                          "combined uncertainty (U = 2 se)"}),
         "verdict": (("statistic",), object, {"long_name": "verdict of the recommended "
                                                           "workflow"}),
         "verdict_scheme": (("statistic",), object, {"long_name": "scheme of the verdict"}),
         "estimate_outside_interval": (("statistic",), bool, {
             "long_name": "the estimate lies outside its own bootstrap interval",
             "comment": "a bootstrap bias larger than the interval's half-width; the "
                        "zeta-scores that use this interval (BS, Sim) are then unreliable"}),
         "verdict_note": (("statistic",), object, {
             "long_name": "what the verdict rests on, when it needs saying, and what to do "
                          "next"}),
         "beta_gm_z2": ((), f8, {
             "long_name": "robust skewness beta_GM of the squared z-scores",
             "comment": "(mean - median) / mean |Z^2 - median|, Harrell-Davis median; about "
                        "0.64 for normal errors, larger for heavier tails"}),
         **({"nu_tfit": ((), f8, NU_TFIT_ATTRS)} if FITTED in names and simulated_stats
            else {}),
         **(_COVERAGE_VARIABLES if coverage else {})},
        {"statistic": n_stat, "scheme": len(schemes), "generator": len(names)},
        {"scheme": ("scheme", schemes), "scheme_generator": ("scheme", ["", *names, *names]),
         "generator": simulated.generator.values})
    layout = xr.merge([bootstrap_result, added.assign_coords(
        statistic=bootstrap_result.statistic)], combine_attrs="override")
    layout = layout.assign_coords({c: simulated[c] for c in simulated.coords
                                   if c not in layout.coords})
    layout.attrs = provenance({
        **bootstrap_result.attrs,
        "schemes": ", ".join(schemes),
        "generators": ", ".join(names),
        "known_generator": known_generator or "",
        "simulated_scheme": deciding_scheme(known_generator, simulated_scheme),
        "n_mc": n_mc,
        "simulated_statistics": ", ".join(s.key for s in simulated_stats),
        "u_ref": "Sim schemes: U_ref = 2 se of the simulated mean",
        "validation_rule": "valid when |zeta| <= 1",
        "heavy_tail_threshold": ("none" if heavy_tail_threshold is None
                                 else float(heavy_tail_threshold)),
        "heavy_tail_screening": ", ".join(s.key for s in stats if s.tail_sensitive),
    })
    # where the simulated references ran (the bootstrap's own ``device`` comes with its attrs)
    device = simulation_device(codes_of(simulated_stats), gens) if simulated_stats else None
    if device is not None:
        layout.attrs["simulation_device"] = device
    if coverage:
        layout.attrs.update({
            "coverage_statistics": ", ".join(coverage),
            "coverage_tolerance": float(tol),
            "coverage_interval": "Wilson score interval with continuity correction of the "
                                 "count of |Z| <= k, at the confidence level 'level'",
            "coverage_rule": "valid when the interval overlaps [p - tol, p + tol]: zeta "
                             "against the nearer edge of that band (0 inside it), |zeta| <= 1"
                             + ("; rule pernot2024 (2024_PICP): k rounded to two decimals, "
                                "the 1-sigma level p = 0.683 against 0.67"
                                if any(s.coverage_rule == "pernot2024" for s in stats
                                       if s.is_coverage) else ""),
        })
    return layout


#: The variables a :func:`validate` result has when coverage statistics are validated.
_COVERAGE_VARIABLES = {
    "coverage_factor": (("statistic",), np.float64, {
        "long_name": "coverage factor k of a coverage statistic (|Z| <= k)"}),
    "nu_fitted": (("statistic",), np.float64, {
        "long_name": "nu of the Student-t coverage factor (inf: the normal factor)",
        "comment": "scaled F(1, nu) fit of Z^2"}),
}


def sim2_zeta(estimate, mean, q025, q975):
    """ζ of the Sim2 scheme: ``(θ - mean) / |mean - q|``, ``q`` the simulated quantile on θ's
    side (``q025`` when θ ≤ mean). It is :func:`xuqcal.core.intervals.zeta` with the roles
    exchanged (the simulated interval surrounds the reference, not the estimate) and mirrored
    (``x → -x``, exact), so that a tie θ = mean takes ``q025``.

    Examples
    --------
    >>> round(float(sim2_zeta(1.2, 1.0, 0.8, 1.1)), 6), float(sim2_zeta(0.9, 1.0, 0.8, 1.1))
    (2.0, -0.5)
    """
    return zeta(-np.asarray(mean), -np.asarray(estimate), -np.asarray(q975), -np.asarray(q025))


def _validate_body(parts, *, stats, names, schemes, known_generator, simulated_scheme,
                   heavy_tail_threshold, tol, dependence=None, beta_gm_z2=None) -> xr.Dataset:
    """The result of :func:`validate` from the computed bootstrap and simulation results, the
    uncertainties, the errors and the values of the dependence variable (``None`` for
    independent points; one task of the graph); ``beta_gm_z2``, the heavy-tail screen
    :func:`robust_skewness_z2` of the errors when computed already (else computed here)."""
    result, simulated, uE_values, E_values, dependence_values = parts
    uE_values = np.asarray(uE_values)
    coverage = [i for i, s in enumerate(stats) if s.is_coverage]
    if coverage:
        result = _with_coverage(result, stats, np.asarray(E_values), uE_values,
                                dependence=dependence, dependence_values=dependence_values)
    estimate = result.estimate.values
    reference_value = np.full((len(stats), len(schemes)), np.nan)
    u_ref = np.zeros_like(reference_value)
    z = np.full_like(reference_value, np.nan)
    for i, s in enumerate(stats):
        if s.has_reference:
            reference_value[i, 0] = s.reference_value(uE_values)
    z[:, 0] = zeta(estimate, reference_value[:, 0], result.ci_low.values, result.ci_high.values)
    if coverage:  # against the band [p - tol, p + tol]: |zeta| <= 1 when the interval meets it
        z[coverage, 0] = band_zeta(estimate[coverage], reference_value[coverage, 0], tol,
                                   result.ci_low.values[coverage],
                                   result.ci_high.values[coverage])
    for j, g in enumerate(names):
        sim = simulated.sel(generator=g)
        mean, se = sim["mean"].values, sim["se"].values
        col, col2 = 1 + j, 1 + len(names) + j
        reference_value[:, col] = mean
        u_ref[:, col] = U_REF_FACTOR * se
        z[:, col] = zeta(estimate, mean, result.ci_low.values, result.ci_high.values,
                         U_REF_FACTOR * se)
        reference_value[:, col2] = mean
        # Sim2: the simulated 95 % range plays the role of the interval, centred on the mean
        z[:, col2] = sim2_zeta(estimate, mean, sim["q025"].values, sim["q975"].values)

    dims = ("statistic", "scheme")
    result = result.assign_coords({"scheme": ("scheme", schemes),
                                   "scheme_generator": ("scheme", ["", *names, *names])})
    result["reference"] = xr.DataArray(reference_value, dims=dims)
    result["u_ref"] = xr.DataArray(u_ref, dims=dims)
    result["zeta"] = xr.DataArray(z, dims=dims)
    result["valid"] = xr.DataArray(np.abs(z) <= 1.0, dims=dims)
    for name in ("mean", "se", "q025", "q975"):
        result[f"sim_{name}"] = simulated[name]
    if "nu_tfit" in simulated:  # the nu of the simulations that drew from tfit
        result["nu_tfit"] = simulated["nu_tfit"]
    result = result.assign_coords(df=simulated.df)
    sensitive = generator_sensitive(simulated["mean"].values, simulated["se"].values)
    result["generator_sensitive"] = xr.DataArray(sensitive, dims="statistic")
    beta = robust_skewness_z2(E_values, uE_values) if beta_gm_z2 is None else beta_gm_z2
    result["beta_gm_z2"] = xr.DataArray(beta)
    # tail-sensitive statistics of heavy-tailed z-scores are not testable (their zeta stays)
    heavy_tails = heavy_tail_threshold is not None and beta > heavy_tail_threshold
    not_testable = NOT_TESTABLE.format(beta=beta, threshold=heavy_tail_threshold) \
        if heavy_tails else None
    verdicts, used = _verdicts(stats, result, sensitive, names, known_generator,
                               simulated_scheme, not_testable)
    result["verdict"] = xr.DataArray(np.array(verdicts, dtype=object), dims="statistic")
    result["verdict_scheme"] = xr.DataArray(np.array(used, dtype=object), dims="statistic")
    outside = estimate_outside_interval(result)
    result["estimate_outside_interval"] = xr.DataArray(outside, dims="statistic")
    result["verdict_note"] = xr.DataArray(
        np.array(_verdict_notes(stats, result, outside), dtype=object), dims="statistic")
    return result


def _with_coverage(result: xr.Dataset, stats: Sequence[Statistic], E_values: np.ndarray,
                   uE_values: np.ndarray, *, dependence=None,
                   dependence_values=None) -> xr.Dataset:
    """``result`` with the estimates, Wilson-cc intervals (at the result's ``level``) and
    binomial standard errors of the coverage statistics of ``stats``, and their factors.

    With a dependent resample ``dependence`` (``dependence_values``: its variable's values),
    the interval and standard error are instead those of the dependent BCa bootstrap of the
    mean of the coverage indicator ``|Z| <= k`` (the streams of the other statistics'
    bootstrap, the delete-one-unit jackknife): the Wilson interval assumes independent
    points."""
    z = E_values / uE_values
    m = z.shape[0]
    level = float(result.attrs["level"])
    result = result.copy()
    columns = {name: result[name].values.copy() for name in ("estimate", "se", "ci_low",
                                                            "ci_high")}
    factor, nu_fitted = np.full(len(stats), np.nan), np.full(len(stats), np.nan)
    indicators = {}
    for i, (covered, factor[i], nu_fitted[i]) in coverage_counts(stats, z).items():
        if not math.isfinite(factor[i]):
            continue  # a Student factor with nu <= 2: undefined, NaN (the note says why)
        fraction, low, high, _ = coverage_validity(covered, m, stats[i].level, level, 0.0)
        columns["estimate"][i] = stats[i].from_sums({"count": m, "covered": covered})
        columns["ci_low"][i], columns["ci_high"][i] = low, high
        columns["se"][i] = math.sqrt(fraction * (1.0 - fraction) / m)
        indicators[i] = (np.abs(z) <= factor[i]).astype(np.float64)
    if dependence is not None and indicators:
        rows = list(indicators)
        _, se, low, high = dependent_mean_intervals(
            np.stack([indicators[i] for i in rows], axis=1), np.asarray(dependence_values),
            dependence, n_boot=int(result.attrs.get("n_boot") or 0) or defaults.N_BOOT,
            seed=int(result.attrs["seed"]), level=level)
        for k, i in enumerate(rows):  # (estimate: the same fraction, covered / M)
            columns["se"][i] = se[k]
            columns["ci_low"][i], columns["ci_high"][i] = low[k], high[k]
    for name, values in columns.items():
        result[name] = result[name].copy(data=values)
    result["coverage_factor"] = xr.DataArray(factor, dims="statistic",
                                             attrs=_COVERAGE_VARIABLES["coverage_factor"][2])
    result["nu_fitted"] = xr.DataArray(nu_fitted, dims="statistic",
                                       attrs=_COVERAGE_VARIABLES["nu_fitted"][2])
    return result


def robust_skewness_z2(E: np.ndarray, uE: np.ndarray) -> float:
    """β_GM of the squared z-scores (:func:`xuqcal.beta_gm`), the heavy-tail screen of
    :func:`validate`; NaN for fewer than two points.

    Examples
    --------
    >>> import xuqcal
    >>> ds = xuqcal.synthetic.nig(20_000, nu=6, seed=1)  # normal z-scores: Z² ~ χ²(1)
    >>> abs(robust_skewness_z2(ds.E.values, ds.uE.values) - 0.636) < 0.02  # χ²(1): 0.636
    True
    """
    # constant Z²: 0 / 0; |Z| beyond 1e154: Z² = inf; both give NaN, without NumPy warnings
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        z2 = point_columns(np.asarray(E, dtype=np.float64), np.asarray(uE, dtype=np.float64),
                           ["z2"])["z2"]
        if z2.size < 2:
            return math.nan
        return beta_gm(z2)


def check_heavy_tail_threshold(threshold) -> None:
    """``heavy_tail_threshold`` of :func:`validate`: ``None`` or a number in (0, 1) (β_GM of
    the positive Z² lies between -1 and 1, above 0 for any right-skewed distribution;
    :func:`~xuqcal.core.checks.check_skewness_threshold`).

    Examples
    --------
    >>> check_heavy_tail_threshold(1.5)
    Traceback (most recent call last):
    ValueError: heavy_tail_threshold: expected None or a robust skewness beta_GM(Z^2) in (0, 1) \
(about 0.64 for normal errors; default 0.85), got 1.5
    """
    check_skewness_threshold(threshold, default=defaults.HEAVY_TAIL_THRESHOLD)


def agreement_scheme(simulated_scheme: str | None = None) -> str:
    """The scheme whose ζ of every generator decides a statistic whose references differ
    between generators (D unknown, :func:`agreed_decision`): ``Sim2``, the exact Monte Carlo
    test of calibration under each generator (the data's bootstrap interval cannot be compared
    with references that disagree, and for the MAD-type statistics it is biased: see
    ``docs/design.md``), unless ``simulated_scheme`` names one.

    Examples
    --------
    >>> agreement_scheme(), agreement_scheme("Sim")
    ('Sim2', 'Sim')
    """
    return simulated_scheme if simulated_scheme is not None else "Sim2"


def deciding_scheme(known_generator: str | None, simulated_scheme: str | None = None) -> str:
    """The scheme (``Sim`` or ``Sim2``) that decides verdicts against simulated references.

    Examples
    --------
    >>> deciding_scheme("normal"), deciding_scheme(None), deciding_scheme("normal", "Sim")
    ('Sim2', 'Sim', 'Sim')
    """
    if simulated_scheme is not None:
        return simulated_scheme
    return "Sim2" if known_generator is not None else "Sim"


def agreed_decision(zetas: Sequence[float], names: Sequence[str]) -> tuple[str, int] | None:
    """The verdict of a statistic whose simulated references differ between generators, when
    every generator's deciding ζ leads to the same decision: all ``|ζ| <= 1`` (pass), or all
    ``|ζ| > 1`` on the same side (fail). Generators whose ζ is NaN (an undefined reference,
    e.g. ``tfit`` with ν ≤ 2) take no part. Returns the verdict (``"pass under every
    generator (normal, t6)"``) and the index of the generator whose ζ is nearest to changing
    the decision (the largest ``|ζ|`` of a pass, the smallest of a fail: its scheme is
    reported as the deciding one), or ``None`` when the decisions differ (the statistic is
    then *not usable* when D is unknown).

    Examples
    --------
    >>> agreed_decision([-5.5, -6.4, -5.9], ["normal", "t6", "tfit"])
    ('fail under every generator (normal, t6, tfit)', 0)
    >>> agreed_decision([0.4, -0.8, float("nan")], ["normal", "t6", "tfit"])
    ('pass under every generator (normal, t6)', 1)
    >>> agreed_decision([0.4, 1.8], ["normal", "t6"]) is None
    True
    """
    z = np.asarray(zetas, dtype=np.float64)
    taking_part = np.flatnonzero(np.isfinite(z))
    if taking_part.size == 0:
        return None
    zs = z[taking_part]
    listed = ", ".join(names[k] for k in taking_part)
    if np.all(np.abs(zs) <= 1.0):
        return PASS_EVERY.format(generators=listed), int(taking_part[np.argmax(np.abs(zs))])
    if np.all(zs > 1.0) or np.all(zs < -1.0):
        return FAIL_EVERY.format(generators=listed), int(taking_part[np.argmin(np.abs(zs))])
    return None


def verdict_outcome(verdict: str) -> str | None:
    """``"pass"`` or ``"fail"`` for a verdict that decides (``pass``, ``fail``, and their
    agreement forms ``pass/fail under every generator (...)``), else ``None`` (not usable,
    not testable, undecided).

    Examples
    --------
    >>> [verdict_outcome(v) for v in ("pass", "fail under every generator (normal, t6)",
    ...                               NOT_USABLE)]
    ['pass', 'fail', None]
    """
    verdict = str(verdict)
    for outcome in (PASS, FAIL):
        if verdict == outcome or verdict.startswith(f"{outcome} under every generator"):
            return outcome
    return None


def _verdicts(stats, result, sensitive, names, known_generator, simulated_scheme,
              not_testable: str | None = None):
    """The verdict and deciding scheme of every statistic; ``not_testable``: the verdict of
    the tail-sensitive statistics when the z-scores are heavy-tailed (else ``None``). A
    statistic whose generators' references differ is decided when every generator leads to
    the same decision (:func:`agreed_decision`), else *not usable*."""
    verdicts, used = [], []
    agreeing = agreement_scheme(simulated_scheme)
    simulated_scheme = deciding_scheme(known_generator, simulated_scheme)
    for i, s in enumerate(stats):
        if s.has_reference:
            scheme = "BS"
        elif known_generator is not None:
            scheme = f"{simulated_scheme}{scheme_suffix(known_generator)}"
        elif sensitive[i]:
            schemes = [f"{agreeing}{scheme_suffix(g)}" for g in names]
            agreed = agreed_decision(
                result["zeta"].isel(statistic=i).sel(scheme=schemes).values, names)
            if agreed is None:
                verdicts.append(NOT_USABLE)
                used.append("")
            else:
                verdicts.append(agreed[0])
                used.append(schemes[agreed[1]])
            continue
        else:
            scheme = f"{simulated_scheme}{scheme_suffix(names[0])}"
        z = float(result["zeta"].isel(statistic=i).sel(scheme=scheme))
        if not_testable is not None and s.tail_sensitive:
            verdicts.append(not_testable)
        else:
            verdicts.append(UNDECIDED if np.isnan(z) else PASS if abs(z) <= 1.0 else FAIL)
        used.append(scheme)
    return verdicts, used


def estimate_outside_interval(result: xr.Dataset) -> np.ndarray:
    """Whether each estimate lies outside its own bootstrap interval ``[ci_low, ci_high]``.

    A bootstrap bias larger than the interval's half-width puts a BCa interval beside the
    estimate (frequent for the MAD-type statistics ``ence`` and ``zmse``, see
    ``docs/design.md``). ζ-scores built on that interval (``BS``, ``Sim``) then divide by the
    distance from the estimate to the far bound or by a tiny one, and are unreliable. NaN
    estimates or bounds give ``False``.

    Examples
    --------
    >>> import xarray as xr
    >>> r = xr.Dataset({"estimate": ("statistic", [0.1859, 1.0]),
    ...                 "ci_low": ("statistic", [0.131, 0.9]),
    ...                 "ci_high": ("statistic", [0.184, 1.1])})
    >>> estimate_outside_interval(r).tolist()
    [True, False]
    """
    estimate = np.asarray(result["estimate"].values, dtype=np.float64)
    low = np.asarray(result["ci_low"].values, dtype=np.float64)
    high = np.asarray(result["ci_high"].values, dtype=np.float64)
    return (estimate < low) | (estimate > high)


def _next_steps(statistic) -> str:
    steps = ["pass known_generator= (CLI --known-generator) when the errors' distribution is "
             "known", "validate with a statistic that has a predefined reference (zms, rce, zm, "
             "zv, nll)"]
    if statistic.needs_bins:
        steps.append("extrapolate the binned statistic to zero bins "
                     "(xuqcal.studies.zero_bins_extrapolation), where its reference is 0")
    return "Next: " + "; ".join(steps[:-1]) + "; or " + steps[-1] + "."


def _verdict_notes(stats, result: xr.Dataset, outside: np.ndarray) -> list[str]:
    """One note per statistic (empty when the verdict needs no comment)."""
    notes = []
    for i, s in enumerate(stats):
        r = result.isel(statistic=i)
        verdict, scheme = str(r.verdict.values), str(r.verdict_scheme.values)
        parts = []
        means = ", ".join(f"{g}: {float(m):.4g}" for g, m in
                          zip(result.generator.values, r.sim_mean.values, strict=True))
        if verdict == NOT_USABLE:
            parts.append(f"The simulated references differ between generators ({means}) "
                         f"beyond their uncertainty, and so do the decisions they lead to. "
                         f"{_next_steps(s)}")
        elif " under every generator " in verdict:
            outcome = verdict_outcome(verdict)
            parts.append(f"The simulated references differ between generators ({means}), but "
                         f"every generator leads to the same decision ({outcome}); the "
                         f"{scheme} zeta ({float(r.zeta.sel(scheme=scheme)):.3g}) is the one "
                         f"nearest to changing it.")
        if s.is_coverage and not np.isfinite(float(r.coverage_factor)):
            parts.append(f"The coverage factor is undefined: "
                         f"{undefined_factor_reason(float(r.nu_fitted))}.")
        if verdict.startswith(NOT_TESTABLE_PREFIX):
            zeta_text = float(r.zeta.sel(scheme=scheme)) if scheme else math.nan
            parts.append(f"The z-scores are heavy-tailed: the robust skewness of Z² exceeds "
                         f"the threshold (heavy_tail_threshold), where the {s.key.upper()} "
                         f"test is unreliable (P. Pernot, arXiv 2408.13089, 2024); its "
                         f"{scheme} zeta ({zeta_text:.3g}) is reported for information only. "
                         f"Next: look at the tails (xuqcal.describe), and validate with "
                         f"statistics that heavy tails affect less.")
        resample = result.attrs.get("resample", "iid")
        if resample != "iid" and scheme.startswith("Sim2"):
            parts.append(f"Sim2 compares the estimate with the range of statistics simulated "
                         f"from independent errors, but the points are resampled as "
                         f"dependent (resample={resample!r}): with positive dependence the "
                         f"statistic varies more than that range, so this verdict fails "
                         f"calibrated data too often. The BS and Sim zeta use the dependent "
                         f"bootstrap interval.")
        if outside[i]:
            low, high = float(r.ci_low), float(r.ci_high)
            text = (f"The estimate {float(r.estimate):.4g} lies outside its own interval "
                    f"[{low:.4g}, {high:.4g}] (bootstrap bias {float(r.bias):.3g}).")
            if scheme == "BS" or (scheme.startswith("Sim") and not scheme.startswith("Sim2")):
                ref = float(r.reference.sel(scheme=scheme))
                inside = "contains" if low <= ref <= high else "does not contain"
                text += (f" The {scheme} zeta-score that decided the verdict divides by the "
                         f"distance from the estimate to a bound and is unreliable; the "
                         f"interval {inside} the reference {ref:.4g}.")
                if not s.has_reference:
                    text += (" With a known errors' distribution, pass known_generator= (CLI "
                             "--known-generator) for the exact Sim2 test.")
            elif scheme:
                text += f" The verdict ({scheme}) does not use that interval."
            parts.append(text)
        notes.append(" ".join(parts))
    return notes


def summary_table(result: xr.Dataset, *, digits: int = 4) -> str:
    """A plain-text table of a :func:`validate` result (``to_dataframe`` and pandas'
    ``DataFrame.to_string``): one row per statistic, the ζ of every scheme, and the verdict
    with the scheme that decided it (``*`` when a note below the table explains it).

    Examples
    --------
    >>> import xuqcal
    >>> v = validate(xuqcal.synthetic.nig(500, nu=6, seed=3), ["zms"], n_boot=500, n_mc=200)
    >>> print(summary_table(v).splitlines()[0].split()[:5])
    ['statistic', 'estimate', 'ci_low', 'ci_high', 'ζ_BS']
    """
    # nothing simulated (only statistics with a predefined reference): no Sim columns
    nothing_simulated = result.attrs.get("simulated_statistics", None) == ""
    schemes = [str(s) for s in result.scheme.values
               if not (nothing_simulated and str(s).startswith("Sim"))]
    table = result[["estimate", "ci_low", "ci_high"]].reset_coords(drop=True).to_dataframe()
    zetas = result["zeta"].reset_coords(drop=True).to_dataframe()["zeta"].unstack("scheme")
    table = table.join(zetas[schemes].rename(columns=lambda s: f"ζ_{s}"))
    notes = verdict_notes(result)
    table["verdict"] = [
        str(v) + (f" ({s})" if str(s) else "") + (" *" if str(k) in notes else "")
        for k, v, s in zip(result.statistic.values, result.verdict.values,
                           result.verdict_scheme.values, strict=True)]
    table = table.rename_axis("statistic").reset_index()
    table["statistic"] = table["statistic"].astype(str)
    left = {name: table[name].str.len().max() for name in ("statistic", "verdict")}
    formatters = {
        "statistic": lambda v: v.ljust(max(left["statistic"], len("statistic"))),
        "verdict": lambda v: v.ljust(max(left["verdict"], len("verdict"))),
        **{name: (lambda v: _fmt(v, digits)) for name in ("estimate", "ci_low", "ci_high")},
        **{f"ζ_{s}": (lambda v: _fmt(v, 2)) for s in schemes},
    }
    header = [name.ljust(max(left[name], len(name))) if name in left else name
              for name in table.columns]
    text = table.to_string(index=False, formatters=formatters, na_rep="nan", header=header)
    lines = text.splitlines()
    strip = min(len(line) - len(line.lstrip()) for line in lines)
    table = "\n".join(line[strip:].rstrip() for line in lines)
    rules = rule_lines(result)
    if rules:
        table += "\n\n" + "\n".join(rules)
    notes = verdict_notes(result)
    if notes:
        table += "\n\nnotes (* in the verdict column):\n" + "\n".join(
            f"  {key}: {note}" for key, note in notes.items())
    return table


def rule_lines(result: xr.Dataset) -> list[str]:
    """The lines under a validation table that say how verdicts were screened and decided
    beyond ``|ζ| <= 1``: β_GM(Z²) and the heavy-tail screening (for a single data set), and
    the rule of the coverage statistics (when there are any).

    Examples
    --------
    >>> import xuqcal
    >>> v = validate(xuqcal.synthetic.nig(500, nu=6, seed=3), ["picp95"])
    >>> for line in rule_lines(v):  # doctest: +NORMALIZE_WHITESPACE
    ...     print(line)
    β_GM(Z²) = 0.599 (heavy-tail screening of picp95 above 0.85)
    coverage statistics (picp95): Wilson intervals with continuity correction, valid when they
    overlap [p - 0.005, p + 0.005]
    """
    lines = []
    if "beta_gm_z2" in result and result["beta_gm_z2"].ndim == 0:
        threshold = result.attrs.get("heavy_tail_threshold", "none")
        screen = ("no heavy-tail screening" if threshold == "none" else
                  f"heavy-tail screening of {result.attrs.get('heavy_tail_screening', '')} "
                  f"above {threshold:g}")
        lines.append(f"β_GM(Z²) = {float(result['beta_gm_z2']):.3f} ({screen})")
    if result.attrs.get("coverage_statistics"):
        tol = result.attrs["coverage_tolerance"]
        lines.append(f"coverage statistics ({result.attrs['coverage_statistics']}): Wilson "
                     f"intervals with continuity correction, valid when they overlap "
                     f"[p - {tol:g}, p + {tol:g}]")
    return lines


def verdict_notes(result: xr.Dataset) -> dict[str, str]:
    """The non-empty ``verdict_note`` of a :func:`validate` result, by statistic key.

    Examples
    --------
    >>> import xuqcal
    >>> v = validate(xuqcal.synthetic.nig(500, nu=6, seed=3), ["zms"], n_boot=500, n_mc=200)
    >>> verdict_notes(v)
    {}
    """
    if "verdict_note" not in result:
        return {}
    return {str(k): str(n) for k, n in zip(result.statistic.values,
                                           result.verdict_note.values, strict=True) if str(n)}


def _fmt(value, digits: int) -> str:
    v = float(value)
    return "nan" if np.isnan(v) else f"{v:.{digits}g}" if digits > 2 else f"{v:.{digits}f}"
