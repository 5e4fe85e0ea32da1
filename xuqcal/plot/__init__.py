"""Matplotlib figures of the analyses.

Every function draws on ``ax`` (a new figure when it is ``None``) and returns the Axes; nothing
needs a display (any backend works, e.g. Agg). The accessor exposes them as
``ds.uqcal.plot.<name>``.
"""

from xuqcal.plot.curves import ablation, calibration_curve, confidence_curve, local_coverage
from xuqcal.plot.local import (
    acf,
    adversarial,
    fraction_valid,
    local,
    order_sensitivity,
    reliability,
)
from xuqcal.plot.recalibration import bin_zms, isotonic_map, scales
from xuqcal.plot.recalibration import scan as recalibration_scan
from xuqcal.plot.studies import (
    generator_sensitivity_study,
    size_bins_study,
    validation_probability,
    zero_bins_extrapolation,
)
from xuqcal.plot.validation import error_distribution, zeta
from xuqcal.plot.zscores import rank_correlation, zscores

__all__ = [
    "ablation",
    "acf",
    "adversarial",
    "bin_zms",
    "calibration_curve",
    "confidence_curve",
    "error_distribution",
    "fraction_valid",
    "generator_sensitivity_study",
    "isotonic_map",
    "local",
    "local_coverage",
    "order_sensitivity",
    "rank_correlation",
    "recalibration_scan",
    "reliability",
    "scales",
    "size_bins_study",
    "validation_probability",
    "zero_bins_extrapolation",
    "zeta",
    "zscores",
]
