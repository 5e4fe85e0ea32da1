"""xuqcal: validation of prediction uncertainties in ML regression, on xarray and Dask.

Importing the package registers the ``.uqcal`` accessor on :class:`xarray.Dataset`.

Examples
--------
>>> import xuqcal
>>> ds = xuqcal.synthetic.nig(2000, nu=6, seed=0)
>>> result = ds.uqcal.validate(["zms", "rce"], n_boot=1000)
>>> result.zeta.dims
('statistic', 'scheme')

The subpackages :mod:`xuqcal.plot`, :mod:`xuqcal.report`, :mod:`xuqcal.studies` and
:mod:`xuqcal.recalibration` (and :class:`Recalibrator`) are imported on first access
(``xuqcal.plot``, ``from xuqcal import plot``), to keep ``import xuqcal`` short.
"""

import importlib as _importlib

# first: sets NUMBA_CACHE_DIR, where needed, before Numba is imported
from xuqcal import _numba_cache  # noqa: F401
from xuqcal._version import __version__
from xuqcal.accessor import UQCalAccessor
from xuqcal.analysis import curves, features
from xuqcal.analysis.adversarial import worst_group_calibration
from xuqcal.analysis.binning import make_bins
from xuqcal.analysis.calibration_scores import calibration_scores
from xuqcal.analysis.compare import compare
from xuqcal.analysis.confidence import confidence_curve_validation
from xuqcal.analysis.coverage import interval_coverage, quantile_coverage
from xuqcal.analysis.decomposition import corp_reliability, nll_split, score_decomposition
from xuqcal.analysis.dependence_scan import DependenceWarning, scan_dependence, warn_if_dependent
from xuqcal.analysis.diagnostics import describe
from xuqcal.analysis.features import add_formula_features, from_formula, rank_correlation
from xuqcal.analysis.labelled import zeta
from xuqcal.analysis.local import adversarial_groups, local, order_sensitivity, reliability
from xuqcal.analysis.outofcore import reduce_statistics
from xuqcal.analysis.paired_scores import paired_scores, sip_matrix
from xuqcal.analysis.probabilistic import pit, pit_test, proper_scores
from xuqcal.analysis.resampling import bootstrap
from xuqcal.analysis.running import running_statistics
from xuqcal.analysis.simulation import simulate
from xuqcal.analysis.stats import stats
from xuqcal.analysis.strata import merge_strata
from xuqcal.analysis.summary import summary
from xuqcal.analysis.validation import validate
from xuqcal.analysis.variance import local_variance, var_z_interval
from xuqcal.core import generators
from xuqcal.core.binning import FewPointsPerBinWarning
from xuqcal.core.coverage import fraction_valid_test
from xuqcal.core.generators import get_generator
from xuqcal.core.intervals import (
    DegenerateIntervalWarning,
    bca_interval,
    percentile_interval,
    student_interval,
    wilson_interval,
)
from xuqcal.core.memory import DataTooLargeError
from xuqcal.core.quantiles import harrell_davis_quantiles
from xuqcal.core.statistics import (
    STATISTIC_KEYS,
    STATISTICS,
    UndefinedStatisticWarning,
    beta_gm,
    kappa_cs,
)
from xuqcal.io import (
    from_arrays,
    from_dataframe,
    from_ensemble,
    from_quantiles,
    open_dataset,
    read_csv,
    roles,
    stack_datasets,
    synthetic,
    to_netcdf,
    validate_dataset,
)
from xuqcal.options import get_options, set_options

__all__ = [
    "STATISTICS",
    "STATISTIC_KEYS",
    "DataTooLargeError",
    "DegenerateIntervalWarning",
    "DependenceWarning",
    "FewPointsPerBinWarning",
    "Recalibrator",
    "UQCalAccessor",
    "UndefinedStatisticWarning",
    "__version__",
    "add_formula_features",
    "adversarial_groups",
    "bca_interval",
    "beta_gm",
    "bootstrap",
    "calibration_scores",
    "compare",
    "confidence_curve_validation",
    "corp_reliability",
    "curves",
    "describe",
    "features",
    "fraction_valid_test",
    "from_arrays",
    "from_dataframe",
    "from_ensemble",
    "from_formula",
    "from_quantiles",
    "generators",
    "get_generator",
    "get_options",
    "harrell_davis_quantiles",
    "interval_coverage",
    "kappa_cs",
    "local",
    "local_variance",
    "make_bins",
    "merge_strata",
    "nll_split",
    "open_dataset",
    "order_sensitivity",
    "paired_scores",
    "percentile_interval",
    "pit",
    "pit_test",
    "plot",
    "proper_scores",
    "quantile_coverage",
    "rank_correlation",
    "read_csv",
    "recalibration",
    "reduce_statistics",
    "reliability",
    "report",
    "roles",
    "running_statistics",
    "scan_dependence",
    "score_decomposition",
    "set_options",
    "simulate",
    "sip_matrix",
    "stack_datasets",
    "stats",
    "student_interval",
    "studies",
    "summary",
    "synthetic",
    "to_netcdf",
    "validate",
    "validate_dataset",
    "var_z_interval",
    "warn_if_dependent",
    "wilson_interval",
    "worst_group_calibration",
    "zeta",
]

#: Attributes imported on first access: name -> (module, attribute of it or None for the module)
_LAZY = {
    "plot": ("xuqcal.plot", None),
    "recalibration": ("xuqcal.recalibration", None),
    "report": ("xuqcal.report", None),
    "studies": ("xuqcal.studies", None),
    "Recalibrator": ("xuqcal.recalibration", "Recalibrator"),
}


def __getattr__(name: str):
    """Import a lazily loaded subpackage (or :class:`Recalibrator`) on first access (PEP 562)."""
    try:
        module_name, attribute = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = _importlib.import_module(module_name)
    if attribute is not None:
        value = getattr(value, attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The names of the module, the lazily loaded ones included."""
    return sorted(set(globals()) | set(_LAZY))
