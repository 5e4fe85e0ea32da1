"""Validation of statistics against reference values, with ζ-scores (METHODS §4–5).

The result of :func:`validate` is a Dataset over ``statistic × scheme``:

* ``BS`` — predefined reference value, bootstrap BCa interval of the data.
* ``SimN``/``SimT``, ``Sim2N``/``Sim2T`` — simulated references (added by the simulated-reference
  workflow; NaN where a scheme does not apply).

A statistic is ``valid`` under a scheme when ``|ζ| ≤ 1``; its ``verdict`` follows the recommended
workflow (a predefined reference decides by ``BS``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import xarray as xr

from xuqcal.intervals import zeta
from xuqcal.resampling import bootstrap
from xuqcal.statistics import DEFAULT_N_BINS, get_statistics

#: Schemes reported by :func:`validate`, in this order.
SCHEMES = ("BS",)
DEFAULT_STATISTICS = ("zms", "rce", "zm", "zv", "nll")

PASS = "pass"
FAIL = "fail"
NO_REFERENCE = "no predefined reference"


def validate(
    ds: xr.Dataset,
    statistics: str | Iterable[str] = DEFAULT_STATISTICS,
    *,
    n_boot: int = 10_000,
    level: float = 0.95,
    seed: int = 0,
    n_bins: int = DEFAULT_N_BINS,
    by: str = "uE",
    chunks: int | Sequence[int] | None = None,
    E: str = "E",
    uE: str = "uE",
) -> xr.Dataset:
    """Validate statistics of a data set: estimates, BCa intervals, references, ζ, verdicts.

    Parameters
    ----------
    ds : xarray.Dataset
        Input over ``sample`` with ``E`` and ``uE``.
    statistics : str or sequence of str
        Statistic keys; those without a predefined reference get NaN ζ under ``BS`` and the
        verdict ``"no predefined reference"``.
    n_boot : int
        Bootstrap replicates for the BCa intervals.
    level : float
        Confidence level of the intervals.
    seed : int
        Seed of every random draw.
    n_bins, by : int, str
        Binning of the binned statistics.
    chunks : int or sequence of int, optional
        Replicates per Dask task.
    E, uE : str
        Names of the error and uncertainty variables.

    Returns
    -------
    xarray.Dataset
        Computed (not lazy): ``estimate``, ``bias``, ``se``, ``ci_low``, ``ci_high`` over
        ``statistic``; ``reference``, ``u_ref``, ``zeta``, ``valid`` over ``statistic × scheme``;
        ``verdict`` and ``verdict_scheme`` over ``statistic``.

    Examples
    --------
    >>> import xuqcal
    >>> ds = xuqcal.synthetic.nig(2000, nu=6, seed=3)
    >>> v = validate(ds, ["zms", "rce"], n_boot=1000)
    >>> v.zeta.dims
    ('statistic', 'scheme')
    >>> sorted(set(v.verdict.values) - {"pass", "fail"})
    []
    """
    stats = get_statistics(statistics)
    result = bootstrap(ds, [s.key for s in stats], n=n_boot, method="bca", level=level,
                       seed=seed, chunks=chunks, n_bins=n_bins, by=by, E=E, uE=uE).compute()
    uE_values = np.asarray(ds[uE].values)
    references = np.array([[s.reference_value(uE_values) if s.has_reference else np.nan
                            for _ in SCHEMES] for s in stats])
    scheme_coord = {"scheme": ("scheme", list(SCHEMES))}
    reference = xr.DataArray(references, dims=("statistic", "scheme"), coords=scheme_coord)
    u_ref = xr.zeros_like(reference)
    z = zeta(result.estimate, reference, result.ci_low, result.ci_high, u_ref)
    valid = np.abs(z) <= 1.0
    result["reference"] = reference.assign_attrs(long_name="reference value of the statistic")
    result["u_ref"] = u_ref.assign_attrs(long_name="standard uncertainty of the reference")
    result["zeta"] = z.assign_attrs(long_name="zeta-score of the estimate vs the reference")
    result["valid"] = valid.assign_attrs(long_name="|zeta| <= 1")
    verdicts, used = [], []
    for i, s in enumerate(stats):
        if s.has_reference:
            used.append("BS")
            verdicts.append(PASS if bool(valid.isel(statistic=i).sel(scheme="BS")) else FAIL)
        else:
            used.append("")
            verdicts.append(NO_REFERENCE)
    result["verdict"] = xr.DataArray(np.array(verdicts, dtype=object), dims="statistic",
                                     attrs={"long_name": "verdict of the recommended workflow"})
    result["verdict_scheme"] = xr.DataArray(
        np.array(used, dtype=object), dims="statistic",
        attrs={"long_name": "scheme that decides the verdict"},
    )
    result.attrs.update(
        schemes=", ".join(SCHEMES),
        scheme_BS="predefined reference value; bootstrap BCa interval of the data",
        validation_rule="valid when |zeta| <= 1",
    )
    return result


def summary_table(result: xr.Dataset, *, digits: int = 4) -> str:
    """A plain-text table of a :func:`validate` result (one row per statistic).

    Examples
    --------
    >>> import xuqcal
    >>> v = validate(xuqcal.synthetic.nig(500, nu=6, seed=3), ["zms"], n_boot=500)
    >>> print(summary_table(v).splitlines()[0].split())
    ['statistic', 'estimate', 'ci_low', 'ci_high', 'reference', 'zeta', 'verdict']
    """
    header = ["statistic", "estimate", "ci_low", "ci_high", "reference", "zeta", "verdict"]
    rows = [header]
    for key in result.statistic.values:
        r = result.sel(statistic=key)
        scheme = str(r.verdict_scheme.values) or "BS"
        rows.append([
            str(key),
            _fmt(r.estimate, digits), _fmt(r.ci_low, digits), _fmt(r.ci_high, digits),
            _fmt(r.reference.sel(scheme=scheme), digits), _fmt(r.zeta.sel(scheme=scheme), 2),
            str(r.verdict.values),
        ])
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    return "\n".join("  ".join(cell.rjust(w) if i else cell.ljust(w)
                               for i, (cell, w) in enumerate(zip(row, widths, strict=True)))
                     for row in rows)


def _fmt(value, digits: int) -> str:
    v = float(value)
    return "nan" if np.isnan(v) else f"{v:.{digits}g}" if digits > 2 else f"{v:.{digits}f}"
