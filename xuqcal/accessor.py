"""The ``.uqcal`` accessor: a thin facade over the module functions.

Importing :mod:`xuqcal` registers it on :class:`xarray.Dataset`. Each method validates the data
set once (:func:`xuqcal.io.validate_dataset`), after the arguments were checked (the argument
checks never read the data), and delegates to a function that takes and returns
xarray objects, usable without the accessor.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import xarray as xr

from xuqcal import io
from xuqcal import plot as _plot
from xuqcal.analysis import binning as _binning
from xuqcal.analysis import curves as _curves
from xuqcal.analysis import diagnostics, features, resampling, running, validation
from xuqcal.analysis import local as _local
from xuqcal.analysis import simulation as _reference
from xuqcal.analysis import stats as _stats
from xuqcal.core import statistics as _statistics


@xr.register_dataset_accessor("uqcal")
class UQCalAccessor:
    """Calibration statistics, bootstrap intervals and validation of ``E`` and ``uE``.

    Examples
    --------
    >>> import xuqcal
    >>> ds = xuqcal.synthetic.nig(1000, nu=6, seed=0)
    >>> ds.uqcal.stats(["zms"]).statistic.values.tolist()
    ['zms']
    """

    def __init__(self, ds: xr.Dataset) -> None:
        self._ds = ds

    @property
    def plot(self) -> PlotAccessor:
        """Figures of the analyses (``ds.uqcal.plot.zeta()``, ...)."""
        return PlotAccessor(self)

    def describe(self) -> xr.Dataset:
        """Distribution diagnostics; see :func:`xuqcal.describe`."""
        return diagnostics.describe(self._checked())

    def _checked(self, E: str = "E", uE: str = "uE") -> xr.Dataset:
        return io.validate_dataset(self._ds, E=E, uE=uE)

    def stats(self, statistics: str | Iterable[str] | None = ("zms", "rce"), *,
              n_bins: int = _statistics.DEFAULT_N_BINS, by: str = "uE") -> xr.DataArray:
        """Point estimates over ``statistic``; see :func:`xuqcal.stats`."""
        _stats._stats_iv(self._ds, statistics, n_bins=n_bins, by=by, E="E", uE="uE")
        return _stats.stats(self._checked(), statistics, n_bins=n_bins, by=by)

    def bootstrap(self, statistics: str | Iterable[str] = ("zms", "rce"), *, n_boot: int = 10_000,
                  method: str = "bca", level: float = 0.95, seed: int = 0,
                  chunks: int | Sequence[int] | None = None,
                  n_bins: int = _statistics.DEFAULT_N_BINS, by: str = "uE",
                  keep_replicates: bool = False) -> xr.Dataset:
        """Lazy bootstrap intervals; see :func:`xuqcal.bootstrap`."""
        resampling._bootstrap_iv(self._ds, statistics, n_boot=n_boot, method=method, level=level,
                                 seed=seed, chunks=chunks, n_bins=n_bins, by=by,
                                 keep_replicates=keep_replicates, E="E", uE="uE")
        return resampling.bootstrap(self._checked(), statistics, n_boot=n_boot, method=method,
                                    level=level, seed=seed, chunks=chunks, n_bins=n_bins, by=by,
                                    keep_replicates=keep_replicates)

    def simulate(self, statistics: str | Iterable[str] = ("cc", "ence", "zmse"), *,
                  generators: str | Iterable[str] = _reference.DEFAULT_GENERATORS,
                  n_mc: int = 10_000, seed: int = 0, n_bins: int = _statistics.DEFAULT_N_BINS,
                  by: str = "uE", chunks: int | Sequence[int] | None = None,
                  keep_replicates: bool = False) -> xr.Dataset:
        """Lazy simulated references; see :func:`xuqcal.simulate`."""
        _reference._reference_iv(self._ds, statistics, generators=generators, n_mc=n_mc, seed=seed,
                                 n_bins=n_bins, by=by, chunks=chunks,
                                 keep_replicates=keep_replicates, E="E", uE="uE")
        return _reference.simulate(self._checked(), statistics, generators=generators, n_mc=n_mc,
                                   seed=seed, n_bins=n_bins, by=by, chunks=chunks,
                                   keep_replicates=keep_replicates)

    def validate(self, statistics: str | Iterable[str] | None = None, *, n_boot: int = 10_000,
                 n_mc: int = 10_000, seed: int = 0, n_bins: int = _statistics.DEFAULT_N_BINS,
                 generators: str | Iterable[str] = _reference.DEFAULT_GENERATORS,
                 known_generator: str | None = None, simulated_scheme: str | None = None,
                 level: float = 0.95, by: str = "uE",
                 chunks: int | Sequence[int] | None = None) -> xr.Dataset:
        """ζ-scores per scheme and verdicts; see :func:`xuqcal.validate`."""
        _reference.validate_arguments(
            self._ds, statistics if statistics is not None else validation.DEFAULT_STATISTICS,
            n_boot=n_boot, n_mc=n_mc, seed=seed, n_bins=n_bins, generators=generators,
            known_generator=known_generator, level=level, by=by, chunks=chunks, E="E", uE="uE")
        return validation.validate(self._checked(), statistics, n_boot=n_boot, n_mc=n_mc,
                                   seed=seed, n_bins=n_bins, generators=generators,
                                   known_generator=known_generator,
                                   simulated_scheme=simulated_scheme, level=level, by=by,
                                   chunks=chunks)

    def bins(self, by: str | Sequence[str] = "uE", *, n_bins: int | tuple[int, int] = 20,
             binning: str = "equal", min_count: int | None = None,
             tiebreak: str | None = None) -> xr.Dataset:
        """Bins of a variable (or a 2-D grid); see :func:`xuqcal.make_bins`."""
        return _binning.make_bins(self._ds, by, n_bins=n_bins, binning=binning,
                                 min_count=min_count, tiebreak=tiebreak)

    def local(self, statistic: str = "zms", *, by: str = "uE", n_bins: int = 100,
              binning: str = "equal", min_count: int | None = None, n_boot: int = 5000,
              level: float = 0.95, seed: int = 0) -> xr.Dataset:
        """Local z-score analysis (LZM, LZMS, ...); see :func:`xuqcal.local`."""
        _local._local_iv(self._ds, statistic, n_boot=n_boot, level=level, seed=seed, E="E", uE="uE")
        return _local.local(self._checked(), statistic, by=by, n_bins=n_bins, binning=binning,
                           min_count=min_count, n_boot=n_boot, level=level, seed=seed)

    def order_sensitivity(self, statistic: str = "zms", *, by: str, n_orders: int = 1000,
                          n_bins: int = 100, n_boot: int = 5000, level: float = 0.95, seed: int = 0,
                          binomial_noise: bool = False) -> xr.Dataset:
        """f_v over random tie orders; see :func:`xuqcal.order_sensitivity`."""
        _local._local_iv(self._ds, statistic, n_boot=n_boot, level=level, seed=seed, E="E", uE="uE")
        return _local.order_sensitivity(self._checked(), statistic, by=by, n_orders=n_orders,
                                       n_bins=n_bins, n_boot=n_boot, level=level, seed=seed,
                                       binomial_noise=binomial_noise)

    def adversarial_groups(self, *, statistic: str = "zms", min_count: int = 100,
                           n_groups: int = 200, n_boot: int = 1000, level: float = 0.95,
                           seed: int = 0) -> xr.Dataset:
        """Adversarial group validation; see :func:`xuqcal.adversarial_groups`."""
        _local._local_iv(self._ds, statistic, n_boot=n_boot, level=level, seed=seed, E="E", uE="uE")
        return _local.adversarial_groups(self._checked(), statistic=statistic,
                                        min_count=min_count, n_groups=n_groups, n_boot=n_boot,
                                        level=level, seed=seed)

    def reliability(self, *, n_bins: int = 20, by: str = "uE", n_boot: int = 2000,
                    level: float = 0.95, seed: int = 0) -> xr.Dataset:
        """Reliability diagram data; see :func:`xuqcal.reliability`."""
        _local._local_iv(self._ds, "rce", n_boot=n_boot, level=level, seed=seed, E="E", uE="uE")
        return _local.reliability(self._checked(), n_bins=n_bins, by=by, n_boot=n_boot, level=level,
                                 seed=seed)

    def rank_correlation(self, variables: Sequence[str] | None = None) -> xr.DataArray:
        """Spearman matrix of features, ``|E|`` and uE; see
        :func:`xuqcal.features.rank_correlation`."""
        return features.rank_correlation(self._checked(), variables)

    def running_statistics(self, by: str = "uE", window: int | None = None) -> xr.Dataset:
        """Running mean and mean square of Z along ``by``; see
        :func:`xuqcal.running_statistics`."""
        return running.running_statistics(self._checked(), by=by, window=window)

    def confidence_curve(self, *, statistic: str = "rmse", k=None, generator: str | None = "normal",
                         n_mc: int = 1000, seed: int = 0, level: float = 0.95) -> xr.Dataset:
        """Confidence curve with its probabilistic reference; see
        :func:`xuqcal.curves.confidence_curve`."""
        return _curves.confidence_curve(self._checked(), statistic=statistic, k=k,
                                        generator=generator, n_mc=n_mc, seed=seed, level=level)

    def ablation(self, *, statistics: Sequence[str] = ("zms", "rce"), k=None,
                 n_boot: int = 5000, seed: int = 0, level: float = 0.95) -> xr.Dataset:
        """Statistics with the largest uncertainties removed; see
        :func:`xuqcal.curves.ablation`."""
        return _curves.ablation(self._checked(), statistics=statistics, k=k, n_boot=n_boot,
                                seed=seed, level=level)

    def calibration_curve(self, *, generator: str = "normal", p=None,
                          level: float = 0.95) -> xr.Dataset:
        """Observed against expected coverage; see :func:`xuqcal.curves.calibration_curve`."""
        return _curves.calibration_curve(self._checked(), generator=generator, p=p,
                                         level=level)

    def local_coverage(self, *, by: str = "uE", p: float = 0.95, n_bins: int = 20,
                       generator: str = "normal", level: float = 0.95) -> xr.Dataset:
        """Coverage of the p-interval per bin of ``by``; see
        :func:`xuqcal.curves.local_coverage`."""
        return _curves.local_coverage(self._checked(), by=by, p=p, n_bins=n_bins,
                                      generator=generator, level=level)

    def report(self, folder, *, features: Sequence[str] | None = None, n_boot: int = 5000,
               n_mc: int = 5000, n_bins: int = 20, local_bins: int = 100, seed: int = 0,
               title: str | None = None, overwrite: bool = False):
        """Write the HTML validation report; see :func:`xuqcal.report.report`."""
        from xuqcal.report.html import report

        return report(self._checked(), folder, features=features, n_boot=n_boot, n_mc=n_mc,
                      n_bins=n_bins, local_bins=local_bins, seed=seed, title=title,
                      overwrite=overwrite)

    def zero_bins_extrapolation(self, *, statistics: Sequence[str] = ("ence", "zmse"),
                                n_bins=range(10, 151, 10), min_points: int = 20,
                                fit_above: int = 20, level: float = 0.95) -> xr.Dataset:
        """ENCE/ZMSE extrapolated to zero bins (a validation free of assumptions on D); see
        :func:`xuqcal.studies.zero_bins_extrapolation`."""
        from xuqcal.studies.simulation import zero_bins_extrapolation

        return zero_bins_extrapolation(self._checked(), statistics=statistics, n_bins=n_bins,
                                       min_points=min_points, fit_above=fit_above, level=level)

    def recalibrate(self, method: str = "bvs", **kwargs):
        """Fit a post-hoc recalibrator on this (training) data set; ``.apply(test)`` uses it.
        See :meth:`xuqcal.recalibration.Recalibrator.fit` (``fit`` validates exactly the
        variables it uses, so a categorical grouping variable is accepted)."""
        from xuqcal.recalibration import Recalibrator

        return Recalibrator.fit(self._ds, method, **kwargs)

    def recalibration_scores(self, **kwargs) -> xr.Dataset:
        """NLL, S_cal, S_x, S_tot, ENCE and f_v of this data set; see
        :func:`xuqcal.recalibration.scores`."""
        from xuqcal.recalibration import scores

        return scores(self._checked(), **kwargs)


class PlotAccessor:
    """``ds.uqcal.plot``: each method computes what it needs and returns the matplotlib Axes."""

    def __init__(self, parent: UQCalAccessor) -> None:
        self._parent = parent

    def zeta(self, result: xr.Dataset | None = None, *, ax=None, **validate_kwargs):
        """ζ-scores per statistic and scheme (runs :meth:`UQCalAccessor.validate` when no
        ``result`` is given); see :func:`xuqcal.plot.zeta`."""
        if result is None:
            result = self._parent.validate(**validate_kwargs)
        return _plot.zeta(result, ax=ax)

    def error_distribution(self, generators: Iterable[str] = ("normal", "t6"), **kwargs):
        """Histogram of E against re-simulated errors; see
        :func:`xuqcal.plot.error_distribution`."""
        return _plot.error_distribution(self._parent._checked(), generators, **kwargs)

    def local(self, statistic: str = "zms", *, ax=None, **kwargs):
        """Per-bin values with intervals (runs :meth:`UQCalAccessor.local`); see
        :func:`xuqcal.plot.local`."""
        return _plot.local(self._parent.local(statistic, **kwargs), ax=ax)

    def fraction_valid(self, statistic: str = "zms", *, by: Sequence[str] = ("uE",), ax=None,
                       **kwargs):
        """f_v with Wilson intervals for each conditioning variable of ``by``; see
        :func:`xuqcal.plot.fraction_valid`."""
        results = {name: self._parent.local(statistic, by=name, **kwargs) for name in by}
        return _plot.fraction_valid(results, ax=ax)

    def acf(self, statistic: str = "zms", *, ax=None, **kwargs):
        """ACF of the per-bin values; see :func:`xuqcal.plot.acf`."""
        return _plot.acf(self._parent.local(statistic, **kwargs), ax=ax)

    def reliability(self, *, ax=None, log: bool | None = None, **kwargs):
        """Reliability diagram; see :func:`xuqcal.plot.reliability`."""
        return _plot.reliability(self._parent.reliability(**kwargs), ax=ax, log=log)

    def zscores(self, by: str = "uE", *, window: int | None = None, ax=None,
                log_x: bool | None = None):
        """Z against ``by`` with running statistics; see :func:`xuqcal.plot.zscores`."""
        return _plot.zscores(self._parent._checked(), by=by, window=window, ax=ax, log_x=log_x)

    def rank_correlation(self, variables: Sequence[str] | None = None, *, ax=None):
        """Heatmap of the rank-correlation matrix; see :func:`xuqcal.plot.rank_correlation`."""
        return _plot.rank_correlation(self._parent.rank_correlation(variables), ax=ax)

    def confidence_curve(self, *, ax=None, **kwargs):
        """Confidence curve with its reference band; see :func:`xuqcal.plot.confidence_curve`."""
        return _plot.confidence_curve(self._parent.confidence_curve(**kwargs), ax=ax)

    def ablation(self, *, ax=None, **kwargs):
        """ΔZMS(k), ΔRCE(k) with the full-set intervals; see :func:`xuqcal.plot.ablation`."""
        return _plot.ablation(self._parent.ablation(**kwargs), ax=ax)

    def calibration_curve(self, *, ax=None, **kwargs):
        """Calibration curve; see :func:`xuqcal.plot.calibration_curve`."""
        return _plot.calibration_curve(self._parent.calibration_curve(**kwargs), ax=ax)

    def local_coverage(self, *, ax=None, **kwargs):
        """Local coverage probability; see :func:`xuqcal.plot.local_coverage`."""
        return _plot.local_coverage(self._parent.local_coverage(**kwargs), ax=ax)

    def zero_bins_extrapolation(self, statistic: str = "ence", *, ax=None, **kwargs):
        """Values against sqrt(N/M) with the extrapolated line; see
        :func:`xuqcal.plot.zero_bins_extrapolation`."""
        return _plot.zero_bins_extrapolation(self._parent.zero_bins_extrapolation(**kwargs),
                                             statistic=statistic, ax=ax)
