"""The ``.uqcal`` accessor: a thin facade over the analysis functions.

Importing :mod:`xuqcal` registers it on :class:`xarray.Dataset`. Each method is generated from
the function it delegates to (:func:`delegate`): it has that function's signature without the
data set, its docstring and its defaults, so a default lives in one place
(:mod:`xuqcal.core.defaults`). The functions themselves take ``E`` and ``uE`` not given from the
roles recorded by the constructors (:func:`xuqcal.io.by_role`), with or without the accessor.
Nothing is computed here: on Dask-backed data a method returns what its function returns,
lazy except where the function computes: ``validate`` with its default precision-driven counts
(``n_boot="auto"``, ``n_mc="auto"``, :data:`xuqcal.core.defaults.N_BOOT_VALIDATION`; explicit
counts keep it lazy), ``summary`` and ``report``.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import xarray as xr

from xuqcal import plot as _plot
from xuqcal import recalibration as _recalibration
from xuqcal.analysis import adversarial as _adversarial
from xuqcal.analysis import binning as _binning
from xuqcal.analysis import calibration_scores as _calibration_scores
from xuqcal.analysis import compare as _compare
from xuqcal.analysis import confidence as _confidence
from xuqcal.analysis import coverage as _coverage
from xuqcal.analysis import curves as _curves
from xuqcal.analysis import decomposition as _decomposition
from xuqcal.analysis import diagnostics as _diagnostics
from xuqcal.analysis import features as _features
from xuqcal.analysis import local as _local
from xuqcal.analysis import outofcore as _outofcore
from xuqcal.analysis import paired_scores as _paired
from xuqcal.analysis import probabilistic as _probabilistic
from xuqcal.analysis import resampling as _resampling
from xuqcal.analysis import running as _running
from xuqcal.analysis import simulation as _simulation
from xuqcal.analysis import stats as _stats
from xuqcal.analysis import strata as _strata
from xuqcal.analysis import summary as _summary
from xuqcal.analysis import validation as _validation
from xuqcal.analysis import variance as _variance
from xuqcal.core import defaults
from xuqcal.studies import simulation as _studies


def delegate(function: Callable, summary: str) -> Callable:
    """An accessor method calling ``function(ds, ...)`` with the signature and docstring of
    ``function`` (without its first parameter, the data set).

    Examples
    --------
    >>> import xuqcal
    >>> "n_boot" in inspect.signature(xuqcal.UQCalAccessor.bootstrap).parameters
    True
    """
    signature = inspect.signature(function)
    parameters = list(signature.parameters.values())
    self_parameter = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)

    @functools.wraps(function)
    def method(self: UQCalAccessor, *args: Any, **kwargs: Any) -> Any:
        return function(self._ds, *args, **kwargs)

    method.__signature__ = signature.replace(parameters=[self_parameter, *parameters[1:]])
    target = f"{function.__module__}.{function.__qualname__}"
    method.__doc__ = (f"{summary} (delegates to :func:`{target}`).\n\n"
                      f"{inspect.cleandoc(function.__doc__ or '')}")
    del method.__wrapped__  # inspect.signature must see __signature__, not the function's
    return method


def _fit_recalibrator(ds: xr.Dataset, method: str = "bvs", **kwargs: Any):
    """A :class:`~xuqcal.recalibration.Recalibrator` fitted on ``ds`` (the training data);
    ``.apply(test)`` recalibrates other data. Parameters: those of
    :func:`xuqcal.recalibration.fit`."""
    return _recalibration.Recalibrator.fit(ds, method, **kwargs)


_fit_recalibrator.__signature__ = inspect.signature(_recalibration.fit).replace(
    return_annotation="Recalibrator")


@xr.register_dataset_accessor("uqcal")
class UQCalAccessor:
    """Calibration statistics, bootstrap intervals, simulated references and validation.

    Examples
    --------
    >>> import xuqcal
    >>> ds = xuqcal.synthetic.nig(1000, nu=6, seed=0)
    >>> ds.uqcal.stats(["zms"]).statistic.values.tolist()
    ['zms']
    >>> renamed = ds.rename(E="err", uE="sigma")
    >>> by_role = renamed.uqcal.stats(["zms"], E="err", uE="sigma")
    >>> bool((by_role == ds.uqcal.stats(["zms"])).all())
    True
    """

    def __init__(self, ds: xr.Dataset) -> None:
        self._ds = ds

    @property
    def plot(self) -> PlotAccessor:
        """Figures of the analyses (``ds.uqcal.plot.zeta()``, ...)."""
        return PlotAccessor(self)

    stats = delegate(_stats.stats, "Point estimates over ``statistic``")
    reduce_statistics = delegate(_outofcore.reduce_statistics,
                                 "Exact out-of-core statistics with analytic intervals")
    bootstrap = delegate(_resampling.bootstrap, "Lazy bootstrap intervals")
    simulate = delegate(_simulation.simulate, "Lazy simulated references")
    validate = delegate(_validation.validate, "ζ-scores per scheme and verdicts")
    summary = delegate(_summary.summary, "A verdict per question with its evidence")
    compare = delegate(_compare.compare, "Paired differences and rank probabilities of the "
                                         "models along a dimension")
    paired_scores = delegate(_paired.paired_scores, "Paired mean-score differences and "
                                                    "Diebold-Mariano tests of the models")
    sip_matrix = delegate(_paired.sip_matrix, "Systematic improvement probabilities of the "
                                              "models")
    score_decomposition = delegate(_decomposition.score_decomposition,
                                   "CORP decomposition of a score of uE²: MCB, DSC, UNC")
    corp_reliability = delegate(_decomposition.corp_reliability,
                                "CORP reliability diagram data with its consistency band")
    nll_split = delegate(_decomposition.nll_split,
                         "The NLL split into a calibration and a sharpness term")
    describe = delegate(_diagnostics.describe, "Distribution diagnostics")
    bins = delegate(_binning.make_bins, "Bins of a variable (or a 2-D grid)")
    local = delegate(_local.local, "Local z-score analysis (LZM, LZMS, ...)")
    order_sensitivity = delegate(_local.order_sensitivity, "f_v over random tie orders")
    adversarial_groups = delegate(_local.adversarial_groups, "Adversarial group validation")
    reliability = delegate(_local.reliability, "Reliability diagram data")
    rank_correlation = delegate(_features.rank_correlation,
                                "Spearman matrix of features, ``|E|`` and uE")
    running_statistics = delegate(_running.running_statistics,
                                  "Running mean and mean square of Z along ``by``")
    confidence_curve = delegate(_curves.confidence_curve,
                                "Confidence curve with its probabilistic reference")
    ablation = delegate(_curves.ablation, "Statistics with the largest uncertainties removed")
    calibration_curve = delegate(_curves.calibration_curve,
                                 "Observed against expected coverage")
    local_coverage = delegate(_curves.local_coverage,
                              "Coverage of the interval at coverage_level per bin of ``by``")
    interval_coverage = delegate(_coverage.interval_coverage,
                                 "PICP of a predicted interval, its Wilson interval, width and "
                                 "interval score")
    quantile_coverage = delegate(_coverage.quantile_coverage,
                                 "Observed fraction below each predicted quantile")
    proper_scores = delegate(_probabilistic.proper_scores,
                             "Mean CRPS and NLL of normal and Student-t predictives (and "
                             "fair ensemble CRPS)")
    pit = delegate(_probabilistic.pit, "Probability integral transform values")
    pit_test = delegate(_probabilistic.pit_test, "PIT histogram and uniformity tests")
    zero_bins_extrapolation = delegate(_studies.zero_bins_extrapolation,
                                       "ENCE/ZMSE extrapolated to zero bins")
    recalibrate = delegate(_fit_recalibrator, "Fit a post-hoc recalibrator on this data set")
    recalibration_scores = delegate(_recalibration.scores,
                                    "NLL, S_cal, S_x, S_tot, ENCE and f_v of this data set")
    calibration_scores = delegate(_calibration_scores.calibration_scores,
                                  "Pernot's calibration scores (ErrViewLib's calibScores)")
    var_z_interval = delegate(_variance.var_z_interval,
                              "Var(Z) or 1/SD(Z) with Cho's interval (ErrViewLib's varZCI)")
    local_variance = delegate(_variance.local_variance,
                              "LZV or LZISD per bin with Cho's intervals (ErrViewLib)")
    merge_strata = delegate(_strata.merge_strata,
                            "Merge the small strata of a variable (ErrViewLib's stratAgg)")
    worst_group_calibration = delegate(_adversarial.worst_group_calibration,
                                       "Worst random group's calibration error per size "
                                       "(ErrViewLib's plotAGV)")
    confidence_curve_validation = delegate(_confidence.confidence_curve_validation,
                                           "Confidence curve with its bootstrap band against "
                                           "the reference (ErrViewLib's plotCCVal)")

    def report(self, folder, **kwargs: Any):
        """Write the HTML validation report into ``folder``; keyword arguments as
        :func:`xuqcal.report.report`."""
        from xuqcal.report.html import report

        return report(self._ds, folder, **kwargs)


class PlotAccessor:
    """``ds.uqcal.plot``: each method runs the analysis it needs and returns the matplotlib
    Axes; keyword arguments other than ``ax``, ``col``, ``row``, ``sharex`` and ``sharey`` (and
    the figure's own options) go to the analysis.

    Data with extra dimensions (``model``, ``task``, ...) give results with those dimensions:
    ``col=`` / ``row=`` lay them out as a grid of panels (a
    :class:`~xuqcal.plot.facets.FacetGrid` is returned), see :mod:`xuqcal.plot.facets`."""

    def __init__(self, parent: UQCalAccessor) -> None:
        self._parent = parent

    def zeta(self, result: xr.Dataset | None = None, *, ax=None, col: str | None = None,
             row: str | None = None, sharex: bool | None = None, sharey: bool | None = None,
             clip: float | None = _plot.validation.ZETA_CLIP, **validate_kwargs):
        """ζ-scores per statistic and scheme (runs :meth:`UQCalAccessor.validate` when no
        ``result`` is given); see :func:`xuqcal.plot.zeta`."""
        if result is None:
            result = self._parent.validate(**validate_kwargs)
        return _plot.zeta(result, ax=ax, col=col, row=row, sharex=sharex, sharey=sharey, clip=clip)

    def error_distribution(self, generators: Iterable[str] = defaults.GENERATORS, **kwargs):
        """Histogram of E against re-simulated errors; see
        :func:`xuqcal.plot.error_distribution`."""
        return _plot.error_distribution(self._parent._ds, generators, **kwargs)

    def local(self, statistic: str = "zms", *, ax=None, log_x: bool | None = None,
              log: bool | None = None, col: str | None = None, row: str | None = None,
              sharex: bool | None = None, sharey: bool | None = None, **kwargs):
        """Per-bin values with intervals (runs :meth:`UQCalAccessor.local`); see
        :func:`xuqcal.plot.local`."""
        return _plot.local(self._parent.local(statistic, **kwargs), ax=ax, log_x=log_x,
                           log=log, col=col, row=row, sharex=sharex, sharey=sharey)

    def fraction_valid(self, statistic: str = "zms", *, by: Sequence[str] = ("uE",), ax=None,
                       col: str | None = None, row: str | None = None,
                       sharex: bool | None = None, sharey: bool | None = None, **kwargs):
        """f_v with Wilson intervals for each conditioning variable of ``by``; see
        :func:`xuqcal.plot.fraction_valid`."""
        results = {name: self._parent.local(statistic, by=name, **kwargs) for name in by}
        return _plot.fraction_valid(results, ax=ax, col=col, row=row, sharex=sharex, sharey=sharey)

    def acf(self, statistic: str = "zms", *, ax=None, col: str | None = None,
            row: str | None = None,
            sharex: bool | None = None, sharey: bool | None = None, **kwargs):
        """ACF of the per-bin values; see :func:`xuqcal.plot.acf`."""
        return _plot.acf(self._parent.local(statistic, **kwargs), ax=ax, col=col, row=row,
                         sharex=sharex, sharey=sharey)

    def reliability(self, *, ax=None, log: bool | None = None, col: str | None = None,
                    row: str | None = None,
                    sharex: bool | None = None, sharey: bool | None = None, **kwargs):
        """Reliability diagram; see :func:`xuqcal.plot.reliability`."""
        return _plot.reliability(self._parent.reliability(**kwargs), ax=ax, log=log, col=col,
                                 row=row, sharex=sharex, sharey=sharey)

    def zscores(self, by: str = defaults.BY, *, window: int | None = None, ax=None,
                log_x: bool | None = None, col: str | None = None, row: str | None = None,
                sharex: bool | None = None, sharey: bool | None = None):
        """Z against ``by`` with running statistics; see :func:`xuqcal.plot.zscores`."""
        return _plot.zscores(self._parent._ds, by=by, window=window, ax=ax, log_x=log_x,
                             col=col, row=row, sharex=sharex, sharey=sharey)

    def rank_correlation(self, variables: Sequence[str] | None = None, *, ax=None,
                         col: str | None = None, row: str | None = None,
                         sharex: bool | None = None, sharey: bool | None = None, **kwargs):
        """Heatmap of the rank-correlation matrix; see :func:`xuqcal.plot.rank_correlation`."""
        return _plot.rank_correlation(self._parent.rank_correlation(variables, **kwargs), ax=ax,
                                      col=col, row=row, sharex=sharex, sharey=sharey)

    def confidence_curve(self, *, ax=None, col: str | None = None, row: str | None = None,
                         sharex: bool | None = None, sharey: bool | None = None, **kwargs):
        """Confidence curve with its reference band; see :func:`xuqcal.plot.confidence_curve`."""
        return _plot.confidence_curve(self._parent.confidence_curve(**kwargs), ax=ax, col=col,
                                      row=row, sharex=sharex, sharey=sharey)

    def ablation(self, *, ax=None, col: str | None = None, row: str | None = None,
                 sharex: bool | None = None, sharey: bool | None = None, **kwargs):
        """ΔZMS(k), ΔRCE(k) with the full-set intervals; see :func:`xuqcal.plot.ablation`."""
        return _plot.ablation(self._parent.ablation(**kwargs), ax=ax, col=col, row=row,
                              sharex=sharex, sharey=sharey)

    def calibration_curve(self, *, ax=None, col: str | None = None, row: str | None = None,
                          sharex: bool | None = None, sharey: bool | None = None, **kwargs):
        """Calibration curve; see :func:`xuqcal.plot.calibration_curve`."""
        return _plot.calibration_curve(self._parent.calibration_curve(**kwargs), ax=ax,
                                       col=col, row=row, sharex=sharex, sharey=sharey)

    def pit(self, *, n_bins: int = defaults.N_BINS_PIT, level: float = defaults.LEVEL,
            ax=None, col: str | None = None, row: str | None = None,
            sharex: bool | None = None, sharey: bool | None = None, **kwargs):
        """PIT histogram with its per-bin band and the uniformity tests (runs
        :meth:`UQCalAccessor.pit`); see :func:`xuqcal.plot.pit`."""
        return _plot.pit(self._parent.pit(**kwargs), n_bins=n_bins, level=level, ax=ax,
                         col=col, row=row, sharex=sharex, sharey=sharey)

    def quantile_calibration(self, *, ax=None, col: str | None = None, row: str | None = None,
                             sharex: bool | None = None, sharey: bool | None = None, **kwargs):
        """Quantile calibration curve (runs :meth:`UQCalAccessor.quantile_coverage`); see
        :func:`xuqcal.plot.quantile_calibration`."""
        return _plot.quantile_calibration(self._parent.quantile_coverage(**kwargs), ax=ax,
                                          col=col, row=row, sharex=sharex, sharey=sharey)

    def local_coverage(self, *, ax=None, col: str | None = None, row: str | None = None,
                       sharex: bool | None = None, sharey: bool | None = None, **kwargs):
        """Local coverage probability; see :func:`xuqcal.plot.local_coverage`."""
        return _plot.local_coverage(self._parent.local_coverage(**kwargs), ax=ax, col=col,
                                    row=row, sharex=sharex, sharey=sharey)

    def zero_bins_extrapolation(self, statistic: str = "ence", *, ax=None,
                                col: str | None = None, row: str | None = None,
                                sharex: bool | None = None, sharey: bool | None = None, **kwargs):
        """Values against sqrt(N/M) with the extrapolated line; see
        :func:`xuqcal.plot.zero_bins_extrapolation`."""
        return _plot.zero_bins_extrapolation(self._parent.zero_bins_extrapolation(**kwargs),
                                             statistic=statistic, ax=ax, col=col, row=row,
                                             sharex=sharex, sharey=sharey)

    def calibration_scores(self, features=None, *, ax=None, col: str | None = None,
                           row: str | None = None, sharex: bool | None = None,
                           sharey: bool | None = None, **kwargs):
        """Bar chart of Pernot's calibration scores; see :func:`xuqcal.plot.calibration_scores`."""
        return _plot.calibration_scores(self._parent.calibration_scores(features, **kwargs),
                                        ax=ax, col=col, row=row, sharex=sharex, sharey=sharey)

    def worst_group(self, *, ax=None, col: str | None = None, row: str | None = None,
                    sharex: bool | None = None, sharey: bool | None = None, **kwargs):
        """Worst-group calibration error per group size with its control; see
        :func:`xuqcal.plot.worst_group`."""
        return _plot.worst_group(self._parent.worst_group_calibration(**kwargs), ax=ax, col=col,
                                 row=row, sharex=sharex, sharey=sharey)

    def confidence_validation(self, *, ax=None, col: str | None = None, row: str | None = None,
                              sharex: bool | None = None, sharey: bool | None = None, **kwargs):
        """Confidence curve with its bootstrap band and reference; see
        :func:`xuqcal.plot.confidence_validation`."""
        return _plot.confidence_validation(self._parent.confidence_curve_validation(**kwargs),
                                           ax=ax, col=col, row=row, sharex=sharex,
                                           sharey=sharey)

    def errors_vs_uncertainty(self, by: str | None = None, **kwargs):
        """E against uE (or Z against ``by``) with guide lines; see
        :func:`xuqcal.plot.errors_vs_uncertainty`."""
        return _plot.errors_vs_uncertainty(self._parent._ds, by, **kwargs)

    def uncertainty_ecdf(self, variable: str = "uE", **kwargs):
        """ECDF of uE (or ``|E|``) with its band; see :func:`xuqcal.plot.uncertainty_ecdf`."""
        return _plot.uncertainty_ecdf(self._parent._ds, variable, **kwargs)

    def zscore_qq(self, distribution: str = "normal", **kwargs):
        """QQ plot of the z-scores; see :func:`xuqcal.plot.zscore_qq`."""
        return _plot.zscore_qq(self._parent._ds, distribution, **kwargs)

    def zscore_pp(self, distribution: str = "normal", **kwargs):
        """PP plot of the z-scores; see :func:`xuqcal.plot.zscore_pp`."""
        return _plot.zscore_pp(self._parent._ds, distribution, **kwargs)
