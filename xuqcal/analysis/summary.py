"""A verdict for each question of a data set's validation, with the evidence behind it.

:func:`summary` answers the three questions of P. Pernot's validation of prediction
uncertainties, and says what the distribution of the z-scores looks like:

====================  ====================================================================
question              evidence (the verdict rule)
====================  ====================================================================
average calibration   ZMS by its BCa interval (``BS``); PICP(0.95) by the overlap rule when
                      Z² is heavy-tailed (ZMS *not testable*); ZM for the bias (reported)
consistency           f_v of LZMS and of LCP(0.95) binned on uE (pass when the Wilson-cc
                      interval of f_v reaches 0.95), and the verdicts of ``cc``, ``ence``
                      and ``zmse`` (decided when every generator agrees,
                      :func:`~xuqcal.analysis.validation.agreed_decision`): fail when any
                      of them fails, pass when none fails and one at least passes
adaptivity            f_v of LZMS binned on each feature (``features``): fail when any
                      fails; *not tested* without features
distribution shape    the PIT of the Gaussian predictive distributions (chi-square test of
                      uniformity) and β_GM(Z²), explained in one sentence
====================  ====================================================================

A question whose evidence decides nothing (no verdict passes or fails) is *inconclusive*.
Accuracy and sharpness come as context: MAE, RMSE, RMV and the mean CRPS of N(0, uE²).
Everything is computed by the library's analyses (:func:`~xuqcal.validate`,
:func:`~xuqcal.local`, :func:`~xuqcal.curves.local_coverage`, :func:`~xuqcal.pit_test`, and the
CRPS of :func:`xuqcal.core.scores.crps_normal` that :func:`~xuqcal.proper_scores` averages);
the summary only reads their results.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import xarray as xr

from xuqcal.analysis import dependent as _dep
from xuqcal.analysis.curves import local_coverage
from xuqcal.analysis.dependent import resolved_dependence
from xuqcal.analysis.lazy import is_lazy, lazy_result, template
from xuqcal.analysis.local import TARGET_FRACTION, local
from xuqcal.analysis.precision import capped_count
from xuqcal.analysis.probabilistic import pit_test
from xuqcal.analysis.slices import broadcast, check_data_variables
from xuqcal.analysis.validation import (
    NOT_TESTABLE_PREFIX,
    validate,
    verdict_outcome,
)
from xuqcal.core import defaults
from xuqcal.core.binning import resolve_n_bins
from xuqcal.core.checks import minimum_replicates
from xuqcal.core.intervals import check_level
from xuqcal.core.provenance import provenance
from xuqcal.core.scores import crps_normal
from xuqcal.io import by_role

#: The questions of a summary, in the order they are shown.
QUESTIONS = ("average calibration", "consistency", "adaptivity", "distribution shape")
#: Statistics of :func:`xuqcal.validate` that a summary reads.
SUMMARY_STATISTICS = ("zms", "zm", "picp95", "cc", "ence", "zmse")
PASS, FAIL = "pass", "fail"
INCONCLUSIVE = "inconclusive"
NOT_TESTED = "not tested"
#: p-value below which the PIT is said not to be uniform.
PIT_ALPHA = 0.05
#: β_GM(Z²) of normal z-scores (χ²(1)); above NORMAL_TAILS + 0.05 the tails are said heavier.
NORMAL_TAILS = 0.636


def _check_features(ds: xr.Dataset, features, E: str, uE: str) -> list[str]:
    if features is None:
        return []
    names = [features] if isinstance(features, str) else list(features)
    missing = [f for f in names if f not in ds.variables]
    if missing:
        raise ValueError(f"features: {', '.join(map(repr, missing))} not in the data set "
                         f"(its variables: {', '.join(map(str, ds.data_vars))})")
    wrong = [f for f in names if "sample" not in ds[f].dims or f in (E, uE)]
    if wrong:
        raise ValueError(f"features: {', '.join(map(repr, wrong))} must be variables over "
                         "'sample' other than E and uE")
    return names


@broadcast
@by_role
def summary(
    ds: xr.Dataset,
    *,
    features: str | Iterable[str] | None = None,
    n_boot: int | str = defaults.N_BOOT_VALIDATION,
    n_mc: int | str = defaults.N_MC_VALIDATION,
    seed: int = defaults.SEED,
    level: float = defaults.LEVEL,
    generators: str | Iterable[str] = defaults.VALIDATION_GENERATORS,
    mc_precision: float = defaults.MC_PRECISION,
    heavy_tail_threshold: float | None = defaults.HEAVY_TAIL_THRESHOLD,
    tol: float = defaults.COVERAGE_TOLERANCE,
    validation_result: xr.Dataset | None = None,
    analyses: Mapping[str, xr.Dataset] | None = None,
    resample: str = "iid",
    groups: str | None = None,
    block: str | dict | None = None,
    block_length: int | str | None = None,
    E: str = defaults.E,
    uE: str = defaults.UE,
) -> xr.Dataset:
    """A verdict for each question (average calibration, consistency, adaptivity,
    distribution shape) with the evidence behind it and advice in plain words.

    Parameters
    ----------
    ds : xarray.Dataset
        Input over ``sample`` with ``E`` and ``uE`` (and the features); extra dimensions
        (models, tasks, data sets) give one summary per slice.
    features : str or sequence of str, optional
        Input features for the adaptivity question (none: *not tested*).
    n_boot, n_mc, seed, level, generators, mc_precision, heavy_tail_threshold, tol
        As :func:`xuqcal.validate` (the defaults of the CLI and of the report: the same
        counts give the same numbers everywhere). The per-bin intervals of the local
        analyses use ``n_boot`` replicates, at most ``defaults.N_BOOT_RELIABILITY`` (that
        many for ``"auto"``; more when ``level`` needs them), over the analyses' default bins
        (:func:`~xuqcal.core.binning.resolve_n_bins`).
    validation_result : xarray.Dataset, optional
        A result of :func:`xuqcal.validate` of ``ds`` to read instead of validating again;
        the statistics it lacks among ``zms zm picp95 cc ence zmse`` are validated here.
    analyses : mapping of str to xarray.Dataset, optional
        Results of the analyses the summary reads, computed already with its settings (the
        report's): ``"local_zms_<by>"`` (:func:`~xuqcal.local` of ``zms`` by ``uE`` and by
        each feature), ``"local_coverage"`` (:func:`~xuqcal.curves.local_coverage` by ``uE``) and
        ``"pit_test"``. A result whose settings (statistic, ``by``,
        bins, replicates, seed, level, and the resample: ``resample``, ``groups``,
        ``block``, ``block_length``) differ from the summary's is refused by name; those
        not given are computed.
    resample : {"iid", "cluster", "moving", "circular", "stationary"}
        How the bootstraps resample the points, as in :func:`xuqcal.validate` (checked by
        :func:`xuqcal.analysis.dependent.check_dependence`): passed to the validation of
        the statistics (those that ``validation_result`` lacks), to the LZMS by ``uE`` and
        by each feature (:func:`~xuqcal.local`) and to the local coverage
        (:func:`~xuqcal.curves.local_coverage`, whose per-bin intervals are then the dependent
        bootstrap of the coverage indicator, with the local analyses' replicates). The PIT
        test still treats the points as independent. ``"iid"`` (default): unchanged, bit
        for bit.
    groups : str, optional
        With ``resample="cluster"``: the variable over ``sample`` holding each point's group.
    block : str or dict, optional
        With a block scheme: the variable over ``sample`` that orders the points (a dict of
        grid variables and tile sizes for a tile bootstrap).
    block_length : int or "auto", optional
        With a block scheme: the points per block, or ``"auto"`` (resolved on ``Z²`` in the
        order of ``block``, the same length for every analysis).
    E, uE : str
        Names of the error and uncertainty variables.

    Returns
    -------
    xarray.Dataset
        Over ``question``: ``verdict`` (``pass``, ``fail``, ``inconclusive``, ``not
        tested``), ``evidence`` (the numbers behind it) and ``advice`` (what it means, in
        plain words). Scalars: the evidence as numbers (``zms``, ``zms_low``, ``zms_high``,
        ``zm``, ..., ``fv_lzms_uE`` with its Wilson-cc bounds, ``fv_lcp_uE``, ``pit_pvalue``,
        ``beta_gm_z2``, ``mae``, ``rmse``, ``rmv``, ``crps``) and, over ``feature``,
        ``fv_feature``. Lazy on Dask-backed data with fixed counts. Under a dependent
        resample, the attributes of :meth:`~xuqcal.analysis.dependent.Dependence.attrs`
        (``resample``, ``groups`` or ``block``, ``block_length``, ...) say how the points
        were resampled (none for iid: the attributes are as they always were).

    Raises
    ------
    ValueError
        For invalid features, ``level``, ``resample``, ``groups``, ``block`` or
        ``block_length``, and for ``analyses`` computed with other settings (named).

    Examples
    --------
    >>> import xuqcal
    >>> ds = xuqcal.synthetic.nig(2000, nu=6, seed=1, uE_scale=0.8)  # uE 20 % too small
    >>> s = summary(ds, n_boot=500, n_mc=500)
    >>> str(s.verdict.sel(question="average calibration").values)
    'fail'
    """
    check_data_variables(ds, E, uE)
    names = _check_features(ds, features, E, uE)
    m = ds.sizes["sample"]
    check_level(level)
    dependence = resolved_dependence(ds, resample, groups, block, block_length, E=E, uE=uE)
    # the arguments as given (an automatic block length is resolved by each analysis, by the
    # same rule on the same Z^2: the same length everywhere, and their attributes say so)
    resampling = ({} if dependence.iid else
                  {"resample": resample, "groups": groups, "block": block,
                   "block_length": block_length})
    counts = dict(n_boot=n_boot, n_mc=n_mc, seed=seed, level=level, generators=generators,
                  mc_precision=mc_precision, heavy_tail_threshold=heavy_tail_threshold,
                  tol=tol, E=E, uE=uE, **resampling)
    wanted = list(SUMMARY_STATISTICS)
    if validation_result is not None:
        have = [str(k) for k in validation_result.statistic.values]
        missing = [k for k in wanted if k not in have]
        rows = [k for k in wanted if k in have]
        parts = [validation_result.sel(statistic=rows)]
        if missing:
            parts.append(validate(ds, missing, **counts))
        beta = (validation_result if "beta_gm_z2" in validation_result else parts[-1])[
            "beta_gm_z2"]
    else:
        parts = [validate(ds, wanted, **counts)]
        beta = parts[0]["beta_gm_z2"]
    # (the parts are read by statistic in the body: a given result and a lazy one of the
    # missing statistics are not concatenated before they are computed)
    valid = tuple(p[["estimate", "ci_low", "ci_high", "verdict", "verdict_scheme",
                     "estimate_outside_interval"]] for p in parts)
    local_boot = max(local_replicates(n_boot), minimum_replicates(level))
    given = _check_analyses(analyses, m, by=[uE, *names], local_boot=local_boot, seed=seed,
                            level=level, dependence=dependence)

    def reuse(key: str, compute):
        return given[key] if key in given else compute()

    coverage_boot = {} if dependence.iid else {"n_boot": local_boot, "seed": seed}
    lzms = reuse(f"local_zms_{uE}", lambda: local(ds, "zms", by=uE, n_boot=local_boot,
                                                  seed=seed, level=level, E=E, uE=uE,
                                                  **resampling))
    lcp = reuse("local_coverage", lambda: local_coverage(ds, by=uE, level=level, E=E, uE=uE,
                                                         **resampling, **coverage_boot))
    adapt = [reuse(f"local_zms_{f}", lambda f=f: _local_or_reason(
        ds, f, n_boot=local_boot, seed=seed, level=level, E=E, uE=uE, **resampling))
        for f in names]
    pit = reuse("pit_test", lambda: pit_test(ds, level=level, E=E, uE=uE))
    bins = {"local": int(lzms.attrs["n_bins"]), "coverage": int(lcp.attrs["n_bins"])}
    fv = ["fraction_valid", "fraction_valid_low", "fraction_valid_high"]
    inputs = (valid, beta, lzms[fv], lcp[fv],
              tuple(a if isinstance(a, str) else a[fv] for a in adapt),
              pit[["chi2_pvalue", "ks_pvalue"]],
              ds[E].data, ds[uE].data)
    layout = _layout(names, bins, local_boot, n_boot=n_boot, n_mc=n_mc, seed=seed,
                     level=level, generators=generators)
    if not dependence.iid:
        layout.attrs.update(dependence.attrs())
    result = lazy_result(_summary_body, inputs, layout, features=names)
    lazy = is_lazy(ds, [E, uE, *names])
    return result if lazy else result.compute()


_NUMBERS = {
    "zms": "ZMS <Z^2>", "zm": "ZM <Z>", "picp95": "PICP at 0.95",
    "cc": "rank correlation of |E| and uE", "ence": "ENCE", "zmse": "ZMSE",
}


def _local_or_reason(ds: xr.Dataset, feature: str, **kwargs) -> xr.Dataset | str:
    """LZMS binned on ``feature``, or why it cannot be computed (a feature too stratified for
    its bins: the summary says so instead of failing)."""
    try:
        return local(ds, "zms", by=feature, **kwargs)
    except ValueError as error:
        return str(error)


def local_replicates(n_boot: int | str) -> int:
    """Bootstrap replicates of the per-bin intervals of the summary's (and the report's)
    local analyses: the validation's count ``n_boot``, at most
    ``defaults.N_BOOT_RELIABILITY`` (that many for ``"auto"``).

    Examples
    --------
    >>> local_replicates("auto"), local_replicates(300), local_replicates(10_000)
    (2000, 300, 2000)
    """
    return capped_count(n_boot, defaults.N_BOOT_RELIABILITY)


def _resample_settings(dependence: _dep.Dependence) -> dict[str, object]:
    """The attributes that a local analysis computed under ``dependence`` records about its
    resample (``resample`` absent, read as ``"iid"``, for the iid bootstrap)."""
    if dependence.iid:
        return {"resample": "iid"}
    attrs = dependence.attrs()
    return {key: attrs.get(key) for key in ("resample", "groups", "block", "block_length")}


def _check_analyses(analyses, m: int, *, by: Sequence[str], local_boot: int, seed: int,
                    level: float, dependence: _dep.Dependence | None = None
                    ) -> dict[str, xr.Dataset]:
    """The precomputed ``analyses`` of :func:`summary`, checked against its settings (and
    its resample ``dependence``: the local analyses and the local coverage must have been
    computed with the same ``resample``, ``groups``, ``block`` and ``block_length``)."""
    dependence = dependence or _dep.Dependence("iid")
    resampled = _resample_settings(dependence)
    if analyses is None:
        return {}
    if not isinstance(analyses, Mapping):
        raise ValueError(f"analyses: expected a mapping of names to results, got "
                         f"{type(analyses).__name__}")
    known = {f"local_zms_{b}" for b in by} | {"local_coverage", "pit_test"}
    unknown = sorted(set(analyses) - known)
    if unknown:
        raise ValueError(f"analyses: {', '.join(map(repr, unknown))} not read by the summary "
                         f"(it reads {', '.join(sorted(known))})")
    for key, result in analyses.items():
        if not isinstance(result, xr.Dataset):
            raise ValueError(f"analyses[{key!r}]: expected an xarray.Dataset, got "
                             f"{type(result).__name__}")
        expected: dict[str, object] = {}
        if key.startswith("local_zms_"):
            expected = {"statistic": "zms", "by": key.removeprefix("local_zms_"),
                        "n_boot": local_boot, "seed": seed, "level": level,
                        "n_bins": resolve_n_bins(m, None, defaults.N_BINS_LOCAL)}
        elif key == "local_coverage":
            expected = {"by": by[0], "level": level,
                        "n_bins": resolve_n_bins(m, None, defaults.N_BINS)}
            if not dependence.iid:
                expected.update(n_boot=local_boot, seed=seed)
        if key != "pit_test":
            expected.update(resampled)
        for name, value in expected.items():
            found = result.attrs.get(name, "iid" if name == "resample" else None)
            if found != value:
                raise ValueError(f"analyses[{key!r}]: computed with {name} = "
                                 f"{found!r}, the summary uses {value!r}")
    return dict(analyses)


def _layout(features: Sequence[str], bins: dict, local_boot: int, **how) -> xr.Dataset:
    f8 = np.float64
    variables = {
        "verdict": (("question",), object, {"long_name": "verdict of the question"}),
        "evidence": (("question",), object, {"long_name": "the numbers behind the verdict"}),
        "advice": (("question",), object, {"long_name": "what the verdict means, in plain "
                                                         "words"}),
    }
    for key, text in _NUMBERS.items():
        variables[key] = ((), f8, {"long_name": text})
        variables[f"{key}_low"] = ((), f8, {"long_name": f"lower bound of {key}'s interval"})
        variables[f"{key}_high"] = ((), f8, {"long_name": f"upper bound of {key}'s interval"})
        variables[f"{key}_verdict"] = ((), object, {"long_name": f"verdict of {key}"})
    for key, text in (("fv_lzms_uE", "fraction of valid bins of <Z^2> binned on uE (LZMS)"),
                      ("fv_lcp_uE", "fraction of valid bins of the coverage at 0.95 binned "
                                    "on uE (LCP)")):
        variables[key] = ((), f8, {"long_name": text})
        variables[f"{key}_low"] = ((), f8, {"long_name": f"Wilson-cc lower bound of {key}"})
        variables[f"{key}_high"] = ((), f8, {"long_name": f"Wilson-cc upper bound of {key}"})
    if features:
        variables["fv_feature"] = (("feature",), f8, {
            "long_name": "fraction of valid bins of <Z^2> binned on the feature"})
        variables["fv_feature_low"] = (("feature",), f8, {"long_name": "Wilson-cc lower bound"})
        variables["fv_feature_high"] = (("feature",), f8, {"long_name": "Wilson-cc upper "
                                                                          "bound"})
    for key, text in (("pit_pvalue", "chi-square p-value of the uniformity of the Gaussian "
                                     "PIT"),
                      ("pit_ks_pvalue", "Kolmogorov-Smirnov p-value of the uniformity of the "
                                        "Gaussian PIT"),
                      ("beta_gm_z2", "robust skewness beta_GM of Z^2 (about 0.64 for normal "
                                     "z-scores)"),
                      ("mae", "mean absolute error"), ("rmse", "root mean squared error"),
                      ("rmv", "root mean variance"),
                      ("crps", "mean CRPS of N(0, uE^2)")):
        variables[key] = ((), f8, {"long_name": text})
    sizes = {"question": len(QUESTIONS), "feature": len(features)}
    coords = {"question": ("question", list(QUESTIONS))}
    if features:
        coords["feature"] = ("feature", list(features))
    generators = how.pop("generators")
    generators = [generators] if isinstance(generators, str) else list(generators)
    attrs = provenance({
        "analysis": "summary: a verdict per question with its evidence",
        **{k: (str(v) if isinstance(v, str) else v) for k, v in how.items()},
        "generators": ", ".join(generators),
        "n_bins_local": bins["local"],
        "n_bins_coverage": bins["coverage"],
        "n_boot_local": local_boot,
        "fraction_valid_rule": f"pass when the Wilson-cc interval of f_v reaches "
                               f"{TARGET_FRACTION}",
        "pit_rule": f"uniform when the chi-square p-value is at least {PIT_ALPHA}",
        "verdict_rule": "consistency and adaptivity fail when any of their evidence fails, "
                        "pass when none fails and one passes, else inconclusive",
    })
    return template(variables, sizes, coords, attrs=attrs)


def _fv_outcome(low: float, high: float) -> str | None:
    """pass when the Wilson-cc interval of f_v reaches the target 0.95, fail below it."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return None
    return PASS if high >= TARGET_FRACTION else FAIL


def _combine(outcomes: Iterable[str | None]) -> str:
    outcomes = list(outcomes)
    if FAIL in outcomes:
        return FAIL
    return PASS if PASS in outcomes else INCONCLUSIVE


def _interval(value: float, low: float, high: float, digits: int = 3) -> str:
    if not math.isfinite(value):
        return "undefined"
    if not (math.isfinite(low) and math.isfinite(high)):
        return f"{value:.{digits}g}"
    return f"{value:.{digits}g} [{low:.{digits}g}, {high:.{digits}g}]"


def _summary_body(parts, *, features: Sequence[str]) -> xr.Dataset:
    """The summary from the computed results of the analyses (one task of the graph)."""
    valid, beta, lzms, lcp, adapt, pit, E, uE = parts
    E, uE = np.asarray(E, dtype=np.float64), np.asarray(uE, dtype=np.float64)
    out: dict[str, object] = {}
    row = {}
    for key in _NUMBERS:
        one = next(p for p in valid if key in p.statistic.values).sel(statistic=key)
        out[key] = float(one.estimate)
        out[f"{key}_low"], out[f"{key}_high"] = float(one.ci_low), float(one.ci_high)
        verdict = str(one.verdict.values)
        outcome = verdict_outcome(verdict)
        if (outcome is not None and bool(one.estimate_outside_interval)
                and not str(one.verdict_scheme.values).startswith("Sim2")):
            # a zeta on an interval that misses its own estimate is unreliable: no evidence
            verdict, outcome = (f"{verdict}, unreliable: the estimate lies outside its "
                                "interval"), None
        out[f"{key}_verdict"] = verdict
        row[key] = (verdict, outcome)
    for key, loc in (("fv_lzms_uE", lzms), ("fv_lcp_uE", lcp)):
        out[key] = float(loc.fraction_valid)
        out[f"{key}_low"] = float(loc.fraction_valid_low)
        out[f"{key}_high"] = float(loc.fraction_valid_high)
    out["pit_pvalue"], out["pit_ks_pvalue"] = float(pit.chi2_pvalue), float(pit.ks_pvalue)
    out["beta_gm_z2"] = float(beta)
    out["mae"] = float(np.mean(np.abs(E)))
    out["rmse"] = float(np.sqrt(np.mean(E * E)))
    out["rmv"] = float(np.sqrt(np.mean(uE * uE)))
    # the mean CRPS of N(0, uE²) as proper_scores defines it (without its Student-t fit)
    out["crps"] = float(np.mean(crps_normal(E, uE)))

    verdicts, evidence, advice = [], [], []
    # average calibration: ZMS, or PICP(0.95) when heavy tails make ZMS not testable
    zms_verdict, zms_outcome = row["zms"]
    heavy = zms_verdict.startswith(NOT_TESTABLE_PREFIX)
    zm_text = f"ZM {_interval(out['zm'], out['zm_low'], out['zm_high'])} ({row['zm'][0]})"
    picp_text = (f"PICP(0.95) {_interval(out['picp95'], out['picp95_low'], out['picp95_high'])}"
                 f" ({row['picp95'][0]})")
    zms_text = f"ZMS {_interval(out['zms'], out['zms_low'], out['zms_high'])} ({zms_verdict})"
    if heavy:
        calibration = row["picp95"][1] or INCONCLUSIVE
        evidence.append(f"{zms_text}; decided by {picp_text}; {zm_text}")
    else:
        calibration = zms_outcome or INCONCLUSIVE
        evidence.append(f"{zms_text}; {picp_text}; {zm_text}")
    verdicts.append(calibration)
    advice.append(_calibration_advice(calibration, heavy, out, row))
    # consistency: LZMS and LCP by uE, and the verdicts of cc, ence and zmse
    lzms_outcome = _fv_outcome(out["fv_lzms_uE_low"], out["fv_lzms_uE_high"])
    lcp_outcome = _fv_outcome(out["fv_lcp_uE_low"], out["fv_lcp_uE_high"])
    consistency = _combine([lzms_outcome, lcp_outcome, row["cc"][1], row["ence"][1],
                            row["zmse"][1]])
    verdicts.append(consistency)
    fractions = [f"f_v {name}|uE {_interval(*(out[f'{key}{x}'] for x in ('', '_low', '_high')))}"
                 for name, key in (("LZMS", "fv_lzms_uE"), ("LCP", "fv_lcp_uE"))]
    evidence.append("; ".join([*fractions, *(f"{k.upper()} {out[k]:.3g} ({row[k][0]})"
                                             for k in ("cc", "ence", "zmse"))]))
    advice.append(_consistency_advice(consistency, lzms_outcome, lcp_outcome, row,
                                      calibration))
    # adaptivity: LZMS by each feature
    def fraction(name: str) -> np.ndarray:
        return np.array([math.nan if isinstance(a, str) else float(a[name]) for a in adapt])

    fv_feature, fv_low, fv_high = (fraction(n) for n in ("fraction_valid",
                                                         "fraction_valid_low",
                                                         "fraction_valid_high"))
    if features:
        outcomes = [_fv_outcome(lo, hi) for lo, hi in zip(fv_low, fv_high, strict=True)]
        adaptivity = _combine(outcomes)
        evidence.append("; ".join(
            f"f_v LZMS|{f} " + (f"not computed ({a})" if isinstance(a, str) else
                                _interval(v, lo, hi))
            for f, a, v, lo, hi in zip(features, adapt, fv_feature, fv_low, fv_high,
                                       strict=True)))
        failing = [f for f, o in zip(features, outcomes, strict=True) if o == FAIL]
        advice.append(
            f"The uncertainties are not reliable across {', '.join(failing)}: some regions of "
            "the input space have errors larger or smaller than predicted." if failing else
            "The uncertainties hold across the features tested." if adaptivity == PASS else
            "The binned analyses of the features decide nothing.")
    else:
        adaptivity = NOT_TESTED
        evidence.append("no features given")
        advice.append("Give input features (features=, CLI --features) to test whether the "
                      "uncertainties hold across the input space.")
    verdicts.append(adaptivity)
    # distribution shape: PIT uniformity and beta_GM(Z^2)
    uniform = out["pit_pvalue"] >= PIT_ALPHA if math.isfinite(out["pit_pvalue"]) else None
    shape = INCONCLUSIVE if uniform is None else PASS if uniform else FAIL
    verdicts.append(shape)
    evidence.append(f"PIT chi-square p = {out['pit_pvalue']:.2g}, KS p = "
                    f"{out['pit_ks_pvalue']:.2g}; β_GM(Z²) = {out['beta_gm_z2']:.3f} "
                    f"(normal: {NORMAL_TAILS})")
    advice.append(shape_sentence(zms_outcome, out["beta_gm_z2"], row["picp95"][1], uniform))

    result = xr.Dataset({
        "verdict": ("question", np.array(verdicts, dtype=object)),
        "evidence": ("question", np.array(evidence, dtype=object)),
        "advice": ("question", np.array(advice, dtype=object)),
        **{k: ((), np.array(v, dtype=object if k.endswith("_verdict") else np.float64))
           for k, v in out.items()},
    }, coords={"question": list(QUESTIONS)})
    if features:
        result["fv_feature"] = ("feature", fv_feature)
        result["fv_feature_low"] = ("feature", fv_low)
        result["fv_feature_high"] = ("feature", fv_high)
        result = result.assign_coords(feature=list(features))
    return result


def _calibration_advice(verdict: str, heavy: bool, out: dict, row: dict) -> str:
    biased = row["zm"][1] == FAIL
    bias = (f" The errors are biased (mean z-score {out['zm']:.2g}): correct the bias "
            "before judging the uncertainties." if biased else "")
    if heavy:
        head = ("The z-scores are heavy-tailed, so the mean squared z-score is not a reliable "
                "test; the coverage of the 95 % intervals decides instead. ")
    else:
        head = ""
    if verdict == PASS:
        return head + "On average the uncertainties have the right size." + bias
    if verdict == FAIL:
        key = "picp95" if heavy else "zms"
        low = (out[key] > 0.95) if heavy else (out[key] > 1.0)
        direction = ("too small: the errors are larger than the uncertainties say" if low
                     else "too large: the errors are smaller than the uncertainties say")
        if heavy:
            direction = ("too large: the intervals cover more than 95 %" if low else
                         "too small: the intervals cover less than 95 %")
        return (head + f"On average the uncertainties are {direction}; a global scaling "
                "factor (xuqcal recalibrate) would correct this." + bias)
    return head + "The average calibration cannot be decided from these data." + bias


def _consistency_advice(verdict: str, lzms: str | None, lcp: str | None, row: dict,
                        calibration: str) -> str:
    if verdict == PASS:
        return ("The uncertainties are reliable across their range: small and large "
                "uncertainties match the errors they predict.")
    if verdict == FAIL:
        failing = [name for name, outcome in (("the binned mean squared z-scores", lzms),
                                              ("the binned coverage", lcp),
                                              ("the rank correlation (CC)", row["cc"][1]),
                                              ("ENCE", row["ence"][1]),
                                              ("ZMSE", row["zmse"][1])) if outcome == FAIL]
        listed = ", ".join(failing)
        if calibration == FAIL:
            return (f"The uncertainties do not match the errors across their range ({listed} "
                    "fail), but the average calibration fails too and shows in every bin: "
                    "rescale the uncertainties globally first, then check again.")
        return (f"The uncertainties do not match the errors across their range ({listed} "
                "fail): some uncertainties are too small and others too large; a bin-wise "
                "recalibration on uE (xuqcal recalibrate --method bvs) can help.")
    return ("Consistency cannot be decided: the binned analyses pass no test and fail none "
            "(the references of CC, ENCE and ZMSE depend on the unknown error distribution).")


def shape_sentence(variance: str | None, beta: float, coverage: str | None,
                   uniform: bool | None) -> str:
    """One sentence on the shape of the errors' distribution: the variance (ZMS), the tails
    (β_GM(Z²) against its normal value), the 95 % coverage (PICP) and the PIT.

    Examples
    --------
    >>> shape_sentence("pass", 0.80, "pass", False)
    'Variance right, tails heavier than normal: interval coverage at 95 % holds, the PIT is \
not uniform (the predictive distributions are not normal).'
    """
    parts = {"pass": "Variance right", "fail": "Variance wrong"}.get(
        variance or "", "Variance not decided")
    if not math.isfinite(beta):
        tails = "tails unknown"
    elif beta > NORMAL_TAILS + 0.05:
        tails = "tails heavier than normal"
    elif beta < NORMAL_TAILS - 0.05:
        tails = "tails lighter than normal"
    else:
        tails = "tails close to normal"
    cover = {"pass": "interval coverage at 95 % holds",
             "fail": "interval coverage at 95 % fails"}.get(coverage or "",
                                                           "interval coverage at 95 % undecided")
    pit = ("the PIT is uniform (normal predictive distributions fit)" if uniform else
           "the PIT is not uniform (the predictive distributions are not normal)"
           if uniform is not None else "the PIT is undefined")
    return f"{parts}, {tails}: {cover}, {pit}."


# --------------------------------------------------------------------------- text output


def summary_text(result: xr.Dataset) -> str:
    """The summary of one data set as plain text: a line per question (verdict and
    evidence), its advice, and the accuracy and sharpness.

    Examples
    --------
    >>> import xuqcal
    >>> s = summary(xuqcal.synthetic.nig(2000, nu=6, seed=1), n_boot=500, n_mc=500)
    >>> print(summary_text(s).splitlines()[0])
    Summary
    """
    width = max(len(q) for q in QUESTIONS)
    lines = ["Summary"]
    for question in QUESTIONS:
        one = result.sel(question=question)
        lines.append(f"  {question.ljust(width)}  {str(one.verdict.values).upper()}: "
                     f"{one.evidence.values}")
        lines.append(f"  {''.ljust(width)}  {one.advice.values}")
    lines.append(f"  {'accuracy'.ljust(width)}  MAE {float(result.mae):.4g}, RMSE "
                 f"{float(result.rmse):.4g}; sharpness: RMV {float(result.rmv):.4g}; mean "
                 f"CRPS {float(result.crps):.4g}")
    return "\n".join(lines)


def summary_grid(result: xr.Dataset) -> str:
    """The verdicts of several data sets as a grid: one row per data set (per slice of the
    extra dimensions), one column per question.

    Examples
    --------
    >>> import xuqcal
    >>> both = xuqcal.stack_datasets({"a": xuqcal.synthetic.nig(1000, nu=6, seed=1),
    ...                               "b": xuqcal.synthetic.nig(1000, nu=6, seed=2)})
    >>> print(summary_grid(summary(both, n_boot=300, n_mc=300)).splitlines()[0].split("  ")[0])
    data set
    """
    extra = [d for d in result["verdict"].dims if d != "question"]
    verdicts = result["verdict"]
    if extra:
        stacked = verdicts.stack(_set=extra).transpose("_set", "question")
        labels = [" / ".join(str(v) for v in (key if isinstance(key, tuple) else (key,)))
                  for key in stacked["_set"].values]
        values = stacked.values
    else:
        labels, values = ["data set"], verdicts.values[np.newaxis]
    header = ["data set", *QUESTIONS]
    rows = [[label, *map(str, v)] for label, v in zip(labels, values, strict=True)]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
                     for r in [header, *rows])
