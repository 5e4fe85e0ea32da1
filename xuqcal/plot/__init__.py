"""Matplotlib figures of the analyses.

Every function draws on ``ax`` (a new figure when it is ``None``) and returns the Axes; nothing
needs a display (any backend works, e.g. Agg). The accessor exposes them as
``ds.uqcal.plot.<name>``.

Results with extra dimensions (``model``, ``task``, ``seed``, ``dataset``, ...) are drawn the way
xarray plotting does (:mod:`xuqcal.plot.facets`): ``col=`` / ``row=`` lay extra dimensions out as
a grid of panels and return a :class:`~xuqcal.plot.facets.FacetGrid` (``.axes``, ``.fig``); the
line figures draw one remaining extra dimension as one line per slice on one Axes; the others
put it along the columns. The panels of a grid share their axes unless their sets differ in size
or range (``sharex=`` / ``sharey=``, :func:`~xuqcal.plot.facets.share_axis`).
"""

from xuqcal.plot.compare import difference_forest, rank_heatmap, sip_heatmap
from xuqcal.plot.confidence import confidence_validation
from xuqcal.plot.corp import corp_reliability_diagram
from xuqcal.plot.coverage import quantile_calibration
from xuqcal.plot.curves import ablation, calibration_curve, confidence_curve, local_coverage
from xuqcal.plot.errors import errors_vs_uncertainty, uncertainty_ecdf, zscore_pp, zscore_qq
from xuqcal.plot.facets import FacetGrid
from xuqcal.plot.local import (
    acf,
    adversarial,
    fraction_valid,
    local,
    order_sensitivity,
    reliability,
)
from xuqcal.plot.pit_histogram import pit
from xuqcal.plot.recalibration import bin_zms, isotonic_map, scales
from xuqcal.plot.recalibration import scan as recalibration_scan
from xuqcal.plot.score_bars import calibration_scores
from xuqcal.plot.strata_counts import strata
from xuqcal.plot.studies import (
    generator_sensitivity_study,
    size_bins_study,
    validation_probability,
    zero_bins_extrapolation,
)
from xuqcal.plot.validation import error_distribution, zeta
from xuqcal.plot.worst_group_curve import worst_group
from xuqcal.plot.zscores import rank_correlation, running_statistics, zscores

__all__ = [
    "FacetGrid",
    "ablation",
    "acf",
    "adversarial",
    "bin_zms",
    "calibration_curve",
    "calibration_scores",
    "confidence_curve",
    "confidence_validation",
    "corp_reliability_diagram",
    "difference_forest",
    "error_distribution",
    "errors_vs_uncertainty",
    "fraction_valid",
    "generator_sensitivity_study",
    "isotonic_map",
    "local",
    "local_coverage",
    "order_sensitivity",
    "pit",
    "quantile_calibration",
    "rank_correlation",
    "rank_heatmap",
    "recalibration_scan",
    "reliability",
    "running_statistics",
    "scales",
    "sip_heatmap",
    "size_bins_study",
    "strata",
    "uncertainty_ecdf",
    "validation_probability",
    "worst_group",
    "zero_bins_extrapolation",
    "zeta",
    "zscore_pp",
    "zscore_qq",
    "zscores",
]
