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
    "calibration_curve",
    "confidence_curve",
    "error_distribution",
    "fraction_valid",
    "generator_sensitivity_study",
    "local",
    "local_coverage",
    "order_sensitivity",
    "rank_correlation",
    "reliability",
    "size_bins_study",
    "validation_probability",
    "zero_bins_extrapolation",
    "zeta",
    "zscores",
]
