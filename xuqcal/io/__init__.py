"""Building, checking, reading and writing input datasets.

An input dataset is an :class:`xarray.Dataset` over the dimension ``sample`` with an error
variable (role ``E``), a standard uncertainty variable (role ``uE``, ``> 0``), both float64,
plus any feature variables. The package is split by job:

- :mod:`xuqcal.io.expressions`: the safe evaluator of column expressions
  (:func:`evaluate_expression`);
- :mod:`xuqcal.io.schema`: the variable roles (:func:`roles`), the checks of a dataset
  (:func:`validate_dataset`, lazy for Dask-backed data) and :func:`from_arrays`;
- :mod:`xuqcal.io.tabular`: :func:`read_csv`, :func:`read_table` and :func:`from_dataframe`;
- :mod:`xuqcal.io.netcdf`: :func:`to_netcdf` and :func:`open_dataset`;
- :mod:`xuqcal.io.stacking`: :func:`stack_datasets` (several sets along ``dataset``);
- :mod:`xuqcal.io.ensembles` and :mod:`xuqcal.io.quantiles`: predicted distributions beyond
  ``uE``: :func:`from_ensemble` (member predictions: ``E``, ``uE`` and the member errors),
  :func:`from_quantiles` (predicted quantiles of the error); a predicted interval of the error
  is given to :func:`from_arrays` or :func:`read_csv` with ``lower=``, ``upper=`` and
  ``coverage_level=`` (roles :data:`PROBABILISTIC_ROLES`);
- :mod:`xuqcal.io.outputs` (output folders and their manifest) and :mod:`xuqcal.io.synthetic`
  (synthetic data sets).

The constructors record the roles of the two variables in their attribute ``xuqcal_role``, so
a dataset built by xuqcal still works after ``ds.rename(E="err")``.

Examples
--------
>>> import xuqcal
>>> ds = xuqcal.io.from_arrays([0.1, -0.2], [0.3, 0.2]).rename(E="err")
>>> xuqcal.io.roles(ds)
('err', 'uE')
"""

from xuqcal.io.ensembles import from_ensemble
from xuqcal.io.expressions import evaluate_expression
from xuqcal.io.netcdf import open_dataset, to_netcdf
from xuqcal.io.quantiles import from_quantiles, variable_with_role
from xuqcal.io.schema import (
    PROBABILISTIC_ROLES,
    ROLE_ATTR,
    SAMPLE_DIM,
    by_role,
    from_arrays,
    roles,
    validate_dataset,
)
from xuqcal.io.stacking import stack_datasets
from xuqcal.io.tabular import from_dataframe, read_csv, read_table

__all__ = [
    "PROBABILISTIC_ROLES",
    "ROLE_ATTR",
    "SAMPLE_DIM",
    "by_role",
    "evaluate_expression",
    "from_arrays",
    "from_dataframe",
    "from_ensemble",
    "from_quantiles",
    "open_dataset",
    "read_csv",
    "read_table",
    "roles",
    "stack_datasets",
    "to_netcdf",
    "validate_dataset",
    "variable_with_role",
]
