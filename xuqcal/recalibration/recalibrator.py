"""Fit (dispatched to the method's module), apply, and the :class:`Recalibrator` wrapper (see
:mod:`xuqcal.recalibration`)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import xarray as xr

from xuqcal.analysis.binning import apply_bins, check_n_bins
from xuqcal.analysis.slices import broadcast
from xuqcal.core import defaults
from xuqcal.core.checks import check_seed
from xuqcal.core.provenance import attach, provenance
from xuqcal.core.statistics import STATISTICS, point_columns
from xuqcal.io import by_role, to_netcdf
from xuqcal.recalibration.common import (
    BINNINGS,
    BINS_PREFIX,
    LOSSES,
    METHODS,
    RECALIBRATOR,
    _checked,
    _choice,
    _names,
    _positive_int,
    _resolve_features,
    _training_provenance,
)
from xuqcal.recalibration.conformal import (
    LEVEL,
    conformal_intervals,
    fit_conformal,
    with_current_names,
)
from xuqcal.recalibration.conformal import METHOD as CONFORMAL
from xuqcal.recalibration.isotonic import fit_isotonic
from xuqcal.recalibration.scaling import fit_scaling

#: Every method of :func:`fit`: :data:`~xuqcal.recalibration.METHODS` and ``conformal``.
ALL_METHODS = (*METHODS, CONFORMAL)


@broadcast
@by_role
def fit(ds: xr.Dataset, method: str = "bvs", *, by: str | Sequence[str] | None = None,
        n_bins: int | Sequence[int] | None = None, binning: str | None = None,
        loss: str = "nll", features: Sequence[str] | None = None,
        n_bins_scores: int = defaults.N_BINS_SCORES, seed: int = defaults.SEED,
        maxfun: int | None = None, coverage_levels: float | Sequence[float] | None = None,
        E: str = defaults.E, uE: str = defaults.UE) -> xr.Dataset:
    """Fit a recalibrator on training data.

    Parameters
    ----------
    ds : xarray.Dataset
        Training data over ``sample`` with ``E``, ``uE`` and the variables used.
    method : {"temperature", "bvs", "isotonic", "conformal"}
        Uniform scaling, bin-wise variance scaling, the isotonic variance map, or split
        conformal intervals (:mod:`xuqcal.recalibration.conformal`).
    by : str or pair of str, optional
        BVS binning variable (default: ``uE``) (``uE``, a feature, a categorical variable with
        ``binning="groups"``), or two variables for a 2-D grid. Conformal: unset for global
        quantiles, one variable for Mondrian quantiles per bin. Must be ``"uE"`` for the
        other methods.
    n_bins : int or pair of int, optional
        Number of BVS bins requested (default
        :data:`~xuqcal.core.defaults.N_BINS_RECALIBRATION`; a pair or an int for a grid, whose cells
        are ``n_x × n_y``). Not used with ``binning="groups"`` nor by the other methods.
    binning : {"equal", "grid", "groups"}, optional
        Default: ``"grid"`` when ``by`` is a pair, else ``"equal"`` (equal-count bins kept as
        value limits, see the module documentation). Conformal: ``"equal"`` or ``"groups"``.
    loss : {"nll", "s_tot", "s_con", "s_ada"}
        ``nll``: the analytic factors ``sqrt(<Z²>_b)``. Otherwise the factors minimize that
        score of the recalibrated training data (temperature and BVS only).
    features : sequence of str, optional
        Feature variables of ``s_tot`` and ``s_ada``. Default: X1 and X2 when ``ds`` has them
        (:data:`~xuqcal.recalibration.DEFAULT_FEATURES`, the features of
        :func:`xuqcal.add_formula_features`), else none; ``s_ada`` then needs them named.
    n_bins_scores : int
        Equal-count bins per score variable inside the losses (default 100).
    seed : int
        Recorded for provenance; the fit itself is deterministic (DIRECT and L-BFGS-B have no
        random step).
    maxfun : int, optional
        Evaluation budget of the DIRECT search (default ``max(500, 25 × (n_factors + 1))``);
        L-BFGS-B then runs at most 200 iterations.
    coverage_levels : float or sequence of float, optional
        Coverage levels of ``method="conformal"`` (default ``(0.683, 0.95)``), distinct, in
        (0, 1); the first one sets the recalibrated ``uE``. Only for that method.
    E, uE : str
        Names of the error and uncertainty variables.

    Returns
    -------
    xarray.Dataset
        The fitted recalibrator (see the module documentation), ready for :func:`apply` and
        :func:`xuqcal.to_netcdf`.

    Examples
    --------
    >>> import xuqcal
    >>> train = xuqcal.synthetic.nig(2000, nu=6, seed=0, uE_scale=0.5)
    >>> rec = fit(train, "temperature")
    >>> round(float(rec.scale), 2), rec.attrs["method"]
    (1.95, 'temperature')
    >>> rec = fit(train, "bvs", n_bins=8)
    >>> new = apply(rec, train)
    >>> z2 = (new.E / new.uE) ** 2
    >>> z2.groupby(new.recalibration_bin).mean().round(12).values.tolist()  # <Z²>_b = 1
    [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]
    """
    method = _choice(method, ALL_METHODS, "method")
    loss = _choice(loss, LOSSES, "loss")
    defaulted = features is None
    features = _resolve_features(features, ds, E=E, uE=uE)
    if defaulted and not features and loss == "s_ada" and method != CONFORMAL:
        raise ValueError("features: loss='s_ada' scores the calibration over features, and "
                         "the data have no default feature (X1, X2); name the features, e.g. "
                         "features=('x',), or use loss='s_con' (uE only)")
    if method == CONFORMAL:
        return fit_conformal(ds, coverage_levels=coverage_levels, by=by, n_bins=n_bins,
                             binning=binning,
                             loss=loss, seed=seed, E=E, uE=uE)
    if coverage_levels is not None:
        raise ValueError(f"coverage_levels: method={method!r} has no coverage levels "
                         "(coverage_levels is for 'conformal')")
    names = _names(uE if by is None else by, "by")
    if not 1 <= len(names) <= 2:
        raise ValueError(f"by: expected one variable or a pair (2-D grid), got {list(names)}")
    if E in names:
        raise ValueError(f"by: the errors {E!r} cannot be a binning variable of a recalibration "
                         "(the factors would be fitted on the quantity they must predict and "
                         f"be unknown for new data); bin on {uE!r} or an input feature")
    n_bins_scores = _positive_int(n_bins_scores, "n_bins_scores")
    check_seed(seed)
    if maxfun is not None:
        maxfun = _positive_int(maxfun, "maxfun")
    if method != "bvs":
        if names != (uE,):
            raise ValueError(f"by: method={method!r} does not bin; by must be {uE!r}, got "
                             f"{by!r}")
        if n_bins is not None:
            raise ValueError(f"n_bins: method={method!r} does not bin (n_bins is for 'bvs')")
        if binning is not None:
            raise ValueError(f"binning: method={method!r} does not bin (binning is for 'bvs')")
        if method == "isotonic" and loss != "nll":
            raise ValueError(f"loss: method='isotonic' is fitted by isotonic regression (the "
                             f"NLL-optimal monotone variance map); loss={loss!r} is not "
                             "available, use loss='nll'")
    else:
        binning = ("grid" if len(names) == 2 else "equal") if binning is None else binning
        binning = _choice(binning, BINNINGS, "binning")
        if (binning == "grid") != (len(names) == 2):
            raise ValueError(f"by: binning={binning!r} needs "
                             f"{'two variables' if binning == 'grid' else 'one variable'}, "
                             f"got {list(names)}")
        if binning == "groups":
            if n_bins is not None:
                raise ValueError("n_bins: group binning has one bin per label (leave n_bins "
                                 "unset)")
        elif binning == "grid":
            n_bins = defaults.N_BINS_RECALIBRATION if n_bins is None else n_bins
            pair = (n_bins, n_bins) if isinstance(n_bins, int | np.integer) else tuple(n_bins)
            if len(pair) != 2:
                raise ValueError(f"n_bins: a grid takes an int or a pair, got {n_bins!r}")
            n_bins = tuple(_positive_int(v, "n_bins") for v in pair)
        else:
            n_bins = _positive_int(defaults.N_BINS_RECALIBRATION if n_bins is None else n_bins,
                                   "n_bins")
    loss_features = features if loss in ("s_tot", "s_ada") else ()
    numeric = [n for n in names if binning != "groups"] + list(loss_features)
    ds = _checked(ds, numeric, [n for n in names if binning == "groups"],
                  what="by" if not loss_features else "by/features", E=E, uE=uE)
    m = ds.sizes["sample"]
    if loss != "nll":
        check_n_bins(m, n_bins_scores, variable="the training set (n_bins_scores)")
    e = np.asarray(ds[E].values, dtype=np.float64)
    u = np.asarray(ds[uE].values, dtype=np.float64)
    z2 = point_columns(e, u, ["z2"])["z2"]
    attrs = provenance({
        "xuqcal_object": RECALIBRATOR, "method": method, "loss": loss,
        "by": ",".join(names) if method == "bvs" else "", "binning": binning or "",
        "features": ",".join(loss_features), "n_bins_scores": n_bins_scores, "seed": int(seed),
        **_training_provenance(ds),
        "training_zms": float(STATISTICS["zms"].from_sums({"count": m, "z2": np.sum(z2)})),
        "E": E, "uE": uE,
    })
    if method == "isotonic":
        return fit_isotonic(e, u, attrs)
    return fit_scaling(ds, e, u, method=method, names=names, binning=binning, n_bins=n_bins,
                       loss=loss, loss_features=loss_features, n_bins_scores=n_bins_scores,
                       maxfun=maxfun, attrs=attrs, uE_name=uE)


def learned_bins(recalibrator: xr.Dataset) -> xr.Dataset:
    """The bins Dataset (:mod:`xuqcal.analysis.binning` layout) stored in a BVS recalibrator.

    Examples
    --------
    >>> import xuqcal
    >>> rec = fit(xuqcal.synthetic.nig(1000, nu=6, seed=0), "bvs", n_bins=5)
    >>> learned_bins(rec).attrs["scheme"], learned_bins(rec).sizes["bin"]
    ('equal', 5)
    """
    _check_recalibrator(recalibrator)
    if BINS_PREFIX + "scheme" not in recalibrator.attrs:
        raise ValueError(f"recalibrator: method {recalibrator.attrs['method']!r} has no bins")
    names = [v for v in recalibrator.variables if str(v).startswith(BINS_PREFIX)]
    bins = recalibrator[names].rename({v: str(v)[len(BINS_PREFIX):] for v in names})
    keep = {"bin", "bin_x", "bin_y"}
    bins = bins.drop_vars([v for v in bins.coords if v not in keep and v != "label"])
    bins.attrs = {k[len(BINS_PREFIX):]: v for k, v in recalibrator.attrs.items()
                  if k.startswith(BINS_PREFIX)}
    return bins


def _check_recalibrator(recalibrator: Any) -> None:
    if isinstance(recalibrator, Recalibrator):
        raise TypeError("recalibrator: pass recalibrator.dataset (or use recalibrator.apply)")
    if not isinstance(recalibrator, xr.Dataset) or \
            recalibrator.attrs.get("xuqcal_object") != RECALIBRATOR:
        raise ValueError("recalibrator: expected a Dataset made by xuqcal.recalibration.fit "
                         "(attribute xuqcal_object = 'recalibrator')")
    if recalibrator.attrs.get("method") not in ALL_METHODS:
        raise ValueError(f"recalibrator: unknown method {recalibrator.attrs.get('method')!r}")


@broadcast
@by_role
def apply(recalibrator: xr.Dataset, ds: xr.Dataset, *, E: str = defaults.E,
          uE: str = defaults.UE) -> xr.Dataset:
    """Recalibrate the uncertainties of a data set with a fitted recalibrator.

    Parameters
    ----------
    recalibrator : xarray.Dataset
        From :func:`fit` (possibly reopened from NetCDF).
    ds : xarray.Dataset
        Data over ``sample`` with ``E``, ``uE`` and the binning variables.
    E, uE : str
        Names of the error and uncertainty variables of ``ds``.

    Returns
    -------
    xarray.Dataset
        A copy of ``ds`` with the recalibrated ``uE``; the input ``uE`` is kept as
        ``uE_uncalibrated`` (``<uE>_uncalibrated`` for another name; when ``ds`` already has
        it, e.g. applying twice, the existing one, the original, is kept); for BVS (and
        Mondrian conformal) ``recalibration_bin`` holds the bin of every point. Conformal also
        gives the interval half-widths ``conformal_half_width`` over
        ``(sample, coverage_level)``
        (:mod:`xuqcal.recalibration.conformal`).
        Attributes ``recalibration_*`` record the method, loss, bins and training source.

    Examples
    --------
    >>> import xuqcal
    >>> train = xuqcal.synthetic.nig(2000, nu=6, seed=0, uE_scale=0.5)
    >>> test = xuqcal.synthetic.nig(2000, nu=6, seed=1, uE_scale=0.5)
    >>> new = apply(fit(train, "isotonic"), test)
    >>> sorted(v for v in new.data_vars), new.attrs["recalibration_method"]
    (['E', 'uE', 'uE_uncalibrated'], 'isotonic')
    """
    _check_recalibrator(recalibrator)
    recalibrator = with_current_names(recalibrator)
    method = recalibrator.attrs["method"]
    # bins: BVS, and conformal with by= (Mondrian)
    bins = learned_bins(recalibrator) if BINS_PREFIX + "scheme" in recalibrator.attrs else None
    if bins is not None:
        names = str(bins.attrs["by"]).split(",")
        numeric = names if bins.attrs["scheme"] != "groups" else []
        ds = _checked(ds, numeric, names if not numeric else [], what="by", E=E, uE=uE)
    else:
        ds = _checked(ds, E=E, uE=uE)
    uE_name, uE = uE, np.asarray(ds[uE].values, dtype=np.float64)
    out = ds.copy()
    index = apply_bins(bins, *[ds[n].values for n in names]) if bins is not None else None
    n_bins = int(recalibrator.scale.size) if bins is not None else 0
    described, extra = method, {}
    if method == "temperature":
        new = uE * float(recalibrator.scale.values)
    elif method == "isotonic":
        variance = np.interp(uE * uE, recalibrator.knot_variance_in.values,
                             recalibrator.knot_variance_out.values)
        new = np.sqrt(variance)
    elif method == CONFORMAL:
        out, new = conformal_intervals(recalibrator, out, uE, index)
        uE_level = float(recalibrator.attrs["uE_level"])
        described = f"conformal, q_p / z_p at p = {uE_level:g}"
        extra = {"recalibration_uE_level": uE_level}
    else:
        new = uE * recalibrator.scale.values[index]
    if index is not None:
        out["recalibration_bin"] = ("sample", index.astype(np.int64), {
            "long_name": "recalibration bin of the point (learned limits)"})
    before = f"{uE_name}_uncalibrated"
    if before not in out:
        out[before] = ds[uE_name].copy()
        out[before].attrs = {**ds[uE_name].attrs,
                             "long_name": "prediction uncertainty before recalibration"}
    out[uE_name] = ("sample", new, {**ds[uE_name].attrs, "long_name": "recalibrated "
                                    f"prediction uncertainty ({described})"})
    history = str(ds.attrs.get("recalibration_history", ""))
    if method == CONFORMAL:
        levels = ", ".join(f"{p:g}" for p in recalibrator[LEVEL].values.tolist())
        step = f"conformal (coverage levels {levels}" + (
            f"; by {recalibrator.attrs.get('by')}, {n_bins} bins)" if bins is not None else ")")
    else:
        step = f"{method} (loss {recalibrator.attrs.get('loss')}" + (
            f", by {recalibrator.attrs.get('by')}, {n_bins} bins)" if bins is not None else ")")
    return attach(out, {
        "recalibration_method": method,
        "recalibration_loss": str(recalibrator.attrs.get("loss")),
        "recalibration_by": str(recalibrator.attrs.get("by", "")),
        "recalibration_n_bins": n_bins,
        **extra,
        "recalibration_training": str(recalibrator.attrs.get("training_source", "")),
        "recalibration_history": f"{history}; {step}" if history else step,
    })


def _number(value: float, digits: int = 4) -> str:
    return f"{float(value):.{digits}g}"


def _elided(items: list[str], max_items: int) -> list[str]:
    """``items``, or their first and last ones around ``…`` when there are more than
    ``max_items``."""
    if len(items) <= max_items:
        return items
    head = max_items // 2
    return [*items[:head], "…", *items[len(items) - (max_items - head - 1):]]


def _bin_ranges(limits: np.ndarray, by: str) -> list[str]:
    """The value range of each learned bin: the first and last bins are open-ended."""
    texts = []
    for b, high in enumerate(limits):
        if b == 0:
            texts.append(f"{by} ≤ {_number(high)}")
        elif b == limits.size - 1:
            texts.append(f"{by} > {_number(limits[b - 1])}")
        else:
            texts.append(f"{_number(limits[b - 1])} < {by} ≤ {_number(high)}")
    return texts


def _one_slice_factors(rec: xr.Dataset, max_bins: int) -> str:
    """The fitted factors of one slice of a recalibrator, on one line."""
    a = rec.attrs
    method = a["method"]
    if method == "isotonic":
        ratio = np.sqrt(rec.knot_variance_out.values / rec.knot_variance_in.values)
        ratio = ratio[np.isfinite(ratio)]  # per slice: padded with NaN knots
        return (f"variance map with {ratio.size} knots: uE × {_number(np.min(ratio))} to "
                f"{_number(np.max(ratio))}")
    scale = np.atleast_1d(np.asarray(rec.scale.values, dtype=np.float64))
    present = np.isfinite(scale)
    if method == CONFORMAL:
        levels = rec[LEVEL].values.tolist()
        quantiles = np.asarray(rec.score_quantile.values, dtype=np.float64)
        if quantiles.ndim == 1:
            q = ", ".join(f"q_{p:g} = {_number(v)}" for p, v in zip(levels, quantiles,
                                                                     strict=True))
            return f"score quantiles {q}; uE factor q/z at p = {levels[0]:g}: " \
                   f"{_number(scale[0])}"
        prefix, suffix = "uE factor", f" q/z at p = {levels[0]:g}"
    else:
        prefix, suffix = "factor", ""
    if "bin" not in rec.dims:
        return f"{prefix}{suffix} {_number(scale[0])}"
    if "bins_label" in rec.variables:
        where = [f"{a.get('by')} = {label}" for label in rec["bins_label"].values.tolist()]
    elif "bins_upper_limit" in rec.variables:
        where = _bin_ranges(rec["bins_upper_limit"].values[present], str(a.get("by")))
    else:  # a 2-D grid: the range of the factors
        nx, ny = a.get("bins_n_bins_x"), a.get("bins_n_bins_y")
        grid = str(a.get("by")).replace(",", " × ")
        return (f"{prefix}s{suffix} over a {nx} × {ny} grid of {grid}: "
                f"{_number(np.min(scale[present]))} to {_number(np.max(scale[present]))} "
                f"(median {_number(np.median(scale[present]))})")
    cells = [f"{w}: {_number(v)}" for w, v in zip(where, scale[present], strict=True)]
    text = f"{prefix}s{suffix} by bin: {', '.join(_elided(cells, max_bins))}"
    if len(cells) > max_bins:
        text += (f" ({len(cells)} bins, {_number(np.min(scale[present]))} to "
                 f"{_number(np.max(scale[present]))})")
    fallback = int(np.sum(rec["fallback"].values[present])) if "fallback" in rec else 0
    if fallback:
        text += f"; {fallback} bin{'s' if fallback > 1 else ''} without training data use " \
                f"the global factor"
    return text


def factor_lines(recalibrator: xr.Dataset, *, max_bins: int = 6) -> list[str]:
    """The fitted factors of a recalibrator, one line per slice: the global factor
    (temperature), the factors per bin with the bins' limits (BVS; the first and last
    ``max_bins // 2`` bins and the range when there are more than ``max_bins``), their range
    over a 2-D grid, the range of the variance map's factors (isotonic), the score quantiles
    (conformal).

    Parameters
    ----------
    recalibrator : xarray.Dataset
        From :func:`fit` (possibly per slice of ``model``, ``task``, ...).
    max_bins : int
        Most bins listed one by one (default 6).

    Returns
    -------
    list of str
        One line, or one per slice prefixed with its labels (``model = a: factor 2.008``).

    Examples
    --------
    >>> import xuqcal
    >>> train = xuqcal.synthetic.nig(2000, nu=6, seed=0, uE_scale=0.5)
    >>> factor_lines(fit(train, "temperature"))
    ['factor 1.95']
    >>> factor_lines(fit(train, "bvs", n_bins=3))  # doctest: +NORMALIZE_WHITESPACE
    ['factors by bin: uE ≤ 0.4625: 1.921, 0.4625 < uE ≤ 0.6039: 2, uE > 0.6039: 1.927']
    """
    _check_recalibrator(recalibrator)
    recalibrator = with_current_names(recalibrator)
    max_bins = _positive_int(max_bins, "max_bins")
    dims = [d.strip() for d in str(recalibrator.attrs.get("slice_dims", "")).split(",")
            if d.strip() and d.strip() in recalibrator.dims]
    if not dims:
        return [_one_slice_factors(recalibrator, max_bins)]
    lines = []
    for position in np.ndindex(*(recalibrator.sizes[d] for d in dims)):
        where = dict(zip(dims, position, strict=True))
        one = recalibrator.isel(where)
        labels = ", ".join(f"{d} = {one[d].item()}" for d in dims)
        lines.append(f"{labels}: {_one_slice_factors(one, max_bins)}")
    return lines


class Recalibrator:
    """A fitted recalibrator: a thin wrapper of the recalibrator Dataset.

    Attributes
    ----------
    dataset : xarray.Dataset
        The fitted recalibrator (what :func:`fit` returns).

    Examples
    --------
    >>> import xuqcal
    >>> train = xuqcal.synthetic.nig(2000, nu=6, seed=0, uE_scale=0.5)
    >>> rec = Recalibrator.fit(train, "bvs", n_bins=5)
    >>> rec.method, rec.apply(train).uE_uncalibrated.size
    ('bvs', 2000)
    """

    def __init__(self, dataset: xr.Dataset) -> None:
        _check_recalibrator(dataset)
        self.dataset = with_current_names(dataset)

    @classmethod
    def fit(cls, ds: xr.Dataset, method: str = "bvs", **kwargs: Any) -> Recalibrator:
        """Fit with :func:`fit` and wrap the result."""
        return cls(fit(ds, method, **kwargs))

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> Recalibrator:
        """Read a recalibrator written by :meth:`to_netcdf` (loaded into memory); damaged data
        (a checksum that does not match) are a one-line
        :class:`~xuqcal.io.netcdf.DamagedInputError` naming the file and the variable."""
        from xuqcal.io.netcdf import _load_checked

        with xr.open_dataset(path) as stored:
            return cls(_load_checked(stored, os.fspath(path)))

    @property
    def method(self) -> str:
        """The method (``temperature``, ``bvs``, ``isotonic`` or ``conformal``)."""
        return str(self.dataset.attrs["method"])

    def apply(self, ds: xr.Dataset, **kwargs: Any) -> xr.Dataset:
        """Recalibrate ``ds``; see :func:`apply`."""
        return apply(self.dataset, ds, **kwargs)

    def to_netcdf(self, path: str | os.PathLike[str], *, overwrite: bool = False):
        """Write atomically with :func:`xuqcal.to_netcdf`."""
        return to_netcdf(self.dataset, path, overwrite=overwrite)

    def __repr__(self) -> str:
        a = self.dataset.attrs
        detail = f", by={a.get('by')!r}, n_bins={self.dataset.sizes.get('bin', 0)}" \
            if self.method == "bvs" or (self.method == CONFORMAL and a.get("by")) else ""
        if self.method == CONFORMAL:
            levels = ", ".join(f"{p:g}" for p in self.dataset[LEVEL].values.tolist())
            detail = f", coverage_levels=({levels}){detail}"
        dims = [d.strip() for d in str(a.get("slice_dims", "")).split(",") if d.strip()]
        per_slice = (", per slice of " + " × ".join(f"{d} ({self.dataset.sizes[d]})"
                                                    for d in dims if d in self.dataset.sizes)
                     if dims else "")
        head = f"<Recalibrator {self.method}{detail}, loss={a.get('loss')!r}{per_slice}>"
        return "\n".join([head, *(f"  {line}" for line in factor_lines(self.dataset))])


