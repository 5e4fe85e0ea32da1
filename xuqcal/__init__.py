"""xuqcal: validation of prediction uncertainties in ML regression, on xarray and Dask.

Importing the package registers the ``.uqcal`` accessor on :class:`xarray.Dataset`.

Examples
--------
>>> import xuqcal
>>> ds = xuqcal.synthetic.nig(2000, nu=6, seed=0)
>>> result = ds.uqcal.validate(["zms", "rce"], n_boot=1000)
>>> result.zeta.dims
('statistic', 'scheme')
"""

from xuqcal import (
    curves,
    features,
    generators,
    plot,
    recalibration,
    report,
    studies,
    synthetic,
)
from xuqcal._version import __version__
from xuqcal.accessor import UQCalAccessor
from xuqcal.diagnostics import describe
from xuqcal.features import add_formula_features, from_formula, rank_correlation
from xuqcal.generators import get_generator
from xuqcal.intervals import (
    DegenerateIntervalWarning,
    bca_interval,
    percentile_interval,
    student_interval,
    wilson_interval,
    zeta,
)
from xuqcal.io import (
    from_arrays,
    from_dataframe,
    open_dataset,
    read_csv,
    to_netcdf,
    validate_dataset,
)
from xuqcal.recalibration import Recalibrator
from xuqcal.reference import reference
from xuqcal.resampling import bootstrap
from xuqcal.running import running_statistics
from xuqcal.statistics import (
    STATISTICS,
    UndefinedStatisticWarning,
    beta_gm,
    kappa_cs,
    stats,
)
from xuqcal.validation import validate

__all__ = [
    "STATISTICS",
    "DegenerateIntervalWarning",
    "Recalibrator",
    "UQCalAccessor",
    "UndefinedStatisticWarning",
    "__version__",
    "add_formula_features",
    "bca_interval",
    "beta_gm",
    "bootstrap",
    "curves",
    "describe",
    "features",
    "from_arrays",
    "from_dataframe",
    "from_formula",
    "generators",
    "get_generator",
    "kappa_cs",
    "open_dataset",
    "percentile_interval",
    "plot",
    "rank_correlation",
    "read_csv",
    "recalibration",
    "reference",
    "report",
    "running_statistics",
    "stats",
    "student_interval",
    "studies",
    "synthetic",
    "to_netcdf",
    "validate",
    "validate_dataset",
    "wilson_interval",
    "zeta",
]
