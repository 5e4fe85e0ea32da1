"""Paired comparisons of point-wise scores between models evaluated on the same points.

The labelled layer over :mod:`xuqcal.core.paired`. The data are a Dataset with ``E`` and ``uE``
over ``(dim, sample)`` (``dim`` by default ``"model"`` if the data have it, else ``"dataset"``,
as :func:`xuqcal.compare`): the slices along ``dim`` are the compared models, point
``sample = s`` of every model being the same point (the same molecule, the same test case).
Two results:

- :func:`paired_scores`: each model's mean score, the mean paired difference of every ordered
  pair of models and its Diebold–Mariano test (independent points, or dependent ones with a
  cluster-robust or HAC variance);
- :func:`sip_matrix`: the systematic improvement probability (SIP) of every ordered pair, the
  fraction of the points where one model's point-wise score beats the other's, with a paired
  bootstrap interval.

**Pairing.** ``pairing="common"`` (the only rule so far) keeps the points present in every
model: ``E`` and ``uE`` both finite (absent points are NaN in both, as
:func:`xuqcal.stack_datasets` pads shorter sets). The result says how many points each model
lost to that rule (coordinate ``n_dropped`` over ``dim``) and how many are compared
(``n_samples``). A point where only one of ``E`` and ``uE`` is NaN, an infinite value or
``uE <= 0`` is an error naming the variable, the model and the samples.

**Broadcasting.** Any other extra dimension (``task``, ``seed``, ...) broadcasts: each of its
slices is compared on its own common points, and with the same random streams, so that a
slice's result is the one of that slice alone.

**Dependent points.** ``resample=``, ``groups=``, ``block=`` and
``block_length=`` are those of :func:`xuqcal.compare` (:mod:`xuqcal.analysis.dependent`).
The Diebold–Mariano test then replaces the variance ``var(d) / n`` of the mean difference by
a cluster-robust one over the groups of ``groups`` (``resample="cluster"``) or by the
Newey–West HAC one in the order of ``block`` (any block scheme: the test draws nothing), with
``block_length`` lags, or ``floor(4 (n / 100)^(2/9))`` lags (Newey & West 1994) for
``block_length="auto"`` (:func:`xuqcal.core.paired.diebold_mariano`). The SIP bootstrap
resamples whole groups or blocks of the common points, once per replicate for every model,
from the streams ``(seed, "sip-<resample>", r)``; ``block_length="auto"`` there is the
automatic length of :func:`xuqcal.compare` (the largest over the models).

**Data.** Paired comparisons need every model's scores at once: for Dask-backed data the
result is lazy, one task that gathers the slice's ``E`` and ``uE`` (O(K × M) memory) when it
is computed, and the values are checked then; the results are identical, bit for bit, to
those of the same data in memory.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any

import dask
import numpy as np
import xarray as xr

from xuqcal.analysis.compare import MODEL_DIMS, model_dependence, model_layouts
from xuqcal.analysis.dependent import AUTO_LENGTH, Dependence
from xuqcal.analysis.lazy import is_lazy, lazy_result, template
from xuqcal.analysis.stats import check_data_variables
from xuqcal.core import defaults
from xuqcal.core import paired as P
from xuqcal.core.checks import check_coverage_level, check_level, check_replicates, check_seed
from xuqcal.core.provenance import attach
from xuqcal.core.robust import newey_west_lags

__all__ = ["paired_scores", "sip_matrix"]

#: The rules of ``pairing``.
PAIRINGS = ("common",)
#: The second dimension of the pairwise results (the same labels as ``dim``).
OTHER = "other"
#: Dimensions of the results: the data may not have them.
_RESULT_DIMS = (OTHER, "score")
#: The Diebold-Mariano variant (recorded in the attributes).
DM_VARIANT = ("Diebold-Mariano for independent points: d = s_model - s_other, DM = mean(d) / "
              "sqrt(var(d, ddof=1) / n), two-sided p-value 2 Phi(-|DM|) of the standard "
              "normal; no HAC correction (iid points); equals the HLN variant of the scores "
              "package at h = 1; NaN when every d is 0")


# ---------------------------------------------------------------------------------- checks


def _check_dim(ds: xr.Dataset, dim: object, E: str, uE: str) -> tuple[str, list[str]]:
    """``dim`` (``None``: the first of :data:`xuqcal.analysis.compare.MODEL_DIMS` that ``E``
    or ``uE`` has, else ``"model"``) and the other extra dimensions of ``E`` and ``uE``."""
    dims = list(dict.fromkeys((*ds[E].dims, *ds[uE].dims)))
    if dim is None:
        dim = next((d for d in MODEL_DIMS if d in dims), MODEL_DIMS[0])
    if not isinstance(dim, str):
        raise ValueError(f"dim: expected a dimension name (a string) or None, got {dim!r}")
    if dim not in dims:
        raise ValueError(f"dim: {dim!r} is not a dimension of ds (its dimensions: "
                         f"{', '.join(map(str, dims))})")
    if dim == "sample":
        raise ValueError("dim: the compared dimension cannot be 'sample' (the paired points)")
    if ds.sizes[dim] < 2:
        raise ValueError(f"dim: comparing needs at least 2 models, got {ds.sizes[dim]}")
    for d in dims:
        if d in _RESULT_DIMS:
            raise ValueError(f"ds: the dimension {d!r} is a dimension of the results; rename it "
                             f"(e.g. ds.rename({{{d!r}: '{d}_'}}))")
    labels = _labels(ds, dim)
    if len(set(labels)) != len(labels):
        raise ValueError(f"dim: the coordinate of {dim!r} holds a label twice ({labels})")
    extra = [d for d in dims if d not in (dim, "sample")]
    return dim, extra


def _check_pairing(pairing: object) -> str:
    if not isinstance(pairing, str) or pairing not in PAIRINGS:
        raise ValueError(f"pairing: expected 'common' (the points present in every model), "
                         f"got {pairing!r}")
    return pairing


def _check_scores(scores: object) -> tuple[str, ...]:
    names = [scores] if isinstance(scores, str) else scores
    if not isinstance(names, Sequence) or not names:
        raise ValueError(f"scores: expected a score name or a non-empty sequence of them "
                         f"({', '.join(P.SCORES)}), got {scores!r}")
    for name in names:
        P._check_score(name, "scores")
    if len(set(names)) != len(names):
        raise ValueError(f"scores: a score is named twice ({', '.join(names)})")
    return tuple(names)


def _labels(ds: xr.Dataset, dim: str) -> list[Any]:
    if dim in ds.coords:
        return np.asarray(ds[dim].values).tolist()
    return list(range(ds.sizes[dim]))


# ------------------------------------------------------------------------------------ data


def _load(ds: xr.Dataset, dim: str, extra: list[str], E: str, uE: str
          ) -> tuple[np.ndarray, np.ndarray]:
    """``E`` and ``uE`` as ``(*extra, K, M)`` float64 arrays (Dask-backed data computed)."""
    e, u = xr.broadcast(ds[E], ds[uE])
    order = (*extra, dim, "sample")
    e_data, u_data = dask.compute(e.transpose(*order).data, u.transpose(*order).data)
    return np.asarray(e_data, dtype=np.float64), np.asarray(u_data, dtype=np.float64)


def _where(labels: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in labels.items())


def _samples(ds: xr.Dataset, mask: np.ndarray, limit: int = 5) -> str:
    rows = np.flatnonzero(mask)
    names = (ds["sample"].values[rows[:limit]] if "sample" in ds.coords else rows[:limit])
    more = f", ... ({rows.size} in all)" if rows.size > limit else ""
    return ", ".join(map(str, np.asarray(names).tolist())) + more


def _check_values(ds: xr.Dataset, e: np.ndarray, u: np.ndarray, where: dict[str, Any],
                  E: str, uE: str) -> None:
    """One slice ``(K, M)``: refuse half-missing points, infinite values and ``uE <= 0``."""
    dim = next(reversed(where))
    for k, label in enumerate(where[dim]):
        labels = {**{n: v for n, v in where.items() if n != dim}, dim: label}
        ek, uk = e[k], u[k]
        for name, bad, what in (
                (E, np.isnan(ek) & ~np.isnan(uk), "NaN where uE is present"),
                (uE, np.isnan(uk) & ~np.isnan(ek), "NaN where E is present"),
                (E, np.isinf(ek), "infinite"),
                (uE, np.isinf(uk), "infinite"),
                (uE, ~np.isnan(uk) & (uk <= 0), "<= 0")):
            if bad.any():
                raise ValueError(f"{name}: {what} at {int(bad.sum())} point(s) ({_where(labels)}; "
                                 f"samples {_samples(ds, bad)})")


def _per_slice(ds: xr.Dataset, dim: str, extra: list[str], E: str, uE: str, pairing: str,
               compute: Callable[[np.ndarray, np.ndarray, np.ndarray],
                                 tuple[np.ndarray, ...]],
               shapes: Sequence[tuple[int, ...]]
               ) -> tuple[dict[Hashable, Any], np.ndarray, list[np.ndarray]]:
    """``compute(E_common, uE_common, common)`` (``(K, n)`` arrays and the mask ``(M,)`` of
    the common points; float64 arrays of ``shapes``) on each slice of the extra dimensions,
    after checking every slice's values and common points.

    Returns the coordinates of the result (``dim``, ``other``, the extra dimensions,
    ``n_samples`` and ``n_dropped``), ``n_samples`` and ``compute``'s arrays stacked as
    ``(*extra, *shape)``."""
    e_all, u_all = _load(ds, dim, extra, E, uE)
    shape = e_all.shape[:len(extra)]
    labels = _labels(ds, dim)
    extra_labels = [_labels(ds, d) for d in extra]
    n_samples = np.zeros(shape, dtype=np.int64)
    n_dropped = np.zeros((*shape, len(labels)), dtype=np.int64)
    common_of = {}
    for index in np.ndindex(*shape):
        where = {d: v[i] for d, v, i in zip(extra, extra_labels, index, strict=True)}
        e, u = e_all[index], u_all[index]
        _check_values(ds, e, u, {**where, dim: labels}, E, uE)
        common, n_dropped[index] = P.common_points(e, u)
        n_samples[index] = n = int(common.sum())
        if n < 2:
            at = f" ({_where(where)})" if where else ""
            raise ValueError(f"pairing: {pairing!r} leaves {n} point(s) present in every "
                             f"model{at} of {e.shape[1]}; a paired comparison needs at least 2")
        common_of[index] = common
    outputs = [np.empty((*shape, *piece), dtype=np.float64) for piece in shapes]
    for index, common in common_of.items():
        pieces = compute(e_all[index][:, common], u_all[index][:, common], common)
        for out, piece in zip(outputs, pieces, strict=True):
            out[index] = piece

    coords: dict[Hashable, Any] = {dim: labels, OTHER: (OTHER, labels)}
    coords.update(zip(extra, extra_labels, strict=True))
    coords["n_samples"] = (tuple(extra), n_samples,
                           {"long_name": "points present in every model (compared points)"})
    coords["n_dropped"] = ((*extra, dim), n_dropped,
                           {"long_name": f"points present in this {dim} but absent from "
                                         f"another one (dropped by the pairing)"})
    return coords, n_samples, outputs


def _result(analysis: str, variables: dict[Hashable, Any], coords: dict[Hashable, Any], *,
            dim: str, pairing: str, n_samples: np.ndarray, **attrs: Any) -> xr.Dataset:
    """The result Dataset with the attributes saying how it was computed (``n_samples``: the
    count when there is one slice, else None)."""
    n = int(n_samples) if n_samples.ndim == 0 else None
    return attach(xr.Dataset(variables, coords=coords),
                  {"analysis": analysis, "dim": dim, "pairing": pairing, "n_samples": n, **attrs})


# -------------------------------------------------------------------------------- analyses


def _lazily(function, ds: xr.Dataset, dependence: Dependence | None = None,
            attrs: dict[str, Any] | None = None, **kwargs: Any) -> xr.Dataset:
    """``function(ds, **kwargs)`` for Dask-backed data, lazily: one task computes it when the
    result is computed (the values are checked then). Its layout comes from the same function
    on a two-point stand-in of the data (the same dimensions, labels and coordinates), so that
    the lazy result and the computed one cannot disagree. A dependent resample
    ``dependence`` (its variable is carried along) does not change the layout: the stand-in is
    computed for independent points and the attributes ``attrs`` of the dependent result
    replace those of the stand-in."""
    E, uE = kwargs["E"], kwargs["uE"]
    data = ds[[E, uE]]
    carried = data if dependence is None else ds[[E, uE, dependence.variable]]
    stand_in = data.isel(sample=slice(0, 2)).copy(data={
        name: np.full(data[name].isel(sample=slice(0, 2)).shape, value)
        for name, value in ((E, 0.5), (uE, 1.0))})
    stand_in = stand_in.assign_coords({name: (c.dims, np.asarray(c.values)) for name, c in
                                       stand_in.coords.items() if c.chunks is not None})
    shell = function(stand_in, **{**kwargs, **(
        {} if dependence is None else
        {"resample": "iid", "groups": None, "block": None, "block_length": None})})
    counted = [c for c in ("n_samples", "n_dropped") if c in shell.coords]
    layout = template(
        {name: (v.dims, v.dtype, v.attrs) for name, v in
         [*shell.data_vars.items(), *((c, shell[c].variable) for c in counted)]},
        dict(shell.sizes),
        {name: shell[name].variable for name in shell.coords if name not in counted},
        lazy_coords=counted)
    result = lazy_result(lambda computed: function(computed, **kwargs), carried, layout)
    result.attrs = {k: v for k, v in shell.attrs.items() if k != "n_samples"}
    result.attrs.update(attrs or {})
    return result


def _dependence(ds: xr.Dataset, dim: str, resample: object, groups: object, block: object,
                block_length: object, *, E: str, uE: str, analysis: str
                ) -> tuple[xr.Dataset, Dependence | None]:
    """The checked dependent resample (None: iid) and the data (a dependence variable over
    ``dim`` made one over ``sample``, as :func:`xuqcal.compare`; with ``"iid"``, the
    :class:`~xuqcal.DependenceWarning` of ``analysis`` when the points are dependent)."""
    ds, dependence = model_dependence(ds, dim, resample, groups, block, block_length, E=E,
                                      uE=uE, analysis=analysis)
    return ds, None if dependence.iid else dependence


def _dm_lags(dependence: Dependence, n: int) -> int:
    """The lags of the HAC variance of a block scheme on ``n`` points: ``block_length``, or
    the Newey–West rule for ``"auto"``."""
    if dependence.block_length == AUTO_LENGTH:
        return newey_west_lags(n)
    lags = int(dependence.block_length)
    if lags >= n:
        raise ValueError(f"block_length: {lags} lags of the HAC variance need more than the "
                         f"{n} compared points")
    return lags


def _dm_attrs(dependence: Dependence) -> dict[str, Any]:
    """The attributes of a Diebold–Mariano test under the dependent resample."""
    attrs = {k: v for k, v in dependence.attrs().items() if k != "jackknife"}
    if dependence.resample == "cluster":
        attrs["dm_test"] = (
            "Diebold-Mariano with a cluster-robust variance: d = s_model - s_other, DM = "
            "mean(d) / sqrt(V), V = G/(G-1) sum_g (sum_{i in g} (d_i - mean(d)))^2 / n^2 over "
            f"the G groups of {dependence.variable!r} (CRV1, "
            "xuqcal.core.robust.cluster_robust_cov); two-sided p-value 2 Phi(-|DM|) of the "
            "standard normal; NaN when every d is 0")
        return attrs
    lags = ("floor(4 (n/100)^(2/9)) lags (Newey-West 1994 rule; block_length='auto')"
            if dependence.block_length == AUTO_LENGTH
            else f"{dependence.block_length} lags (block_length)")
    attrs["dm_test"] = (
        "Diebold-Mariano with a Newey-West HAC variance: d = s_model - s_other in the order of "
        f"{dependence.variable!r}, DM = mean(d) / sqrt(V), V = (G_0 + sum_{{l=1}}^{{L}} "
        "(1 - l/(L+1)) 2 G_l) / n^2, G_l = sum_t (d_t - mean(d)) (d_{t-l} - mean(d)), "
        f"L = {lags} (Bartlett kernel, xuqcal.core.robust.hac_cov; the block scheme draws "
        "nothing here); two-sided p-value 2 Phi(-|DM|) of the standard normal; NaN when every "
        "d is 0")
    if dependence.block_length == AUTO_LENGTH:
        attrs["block_length_rule"] = "Newey-West (1994) lags floor(4 (n/100)^(2/9))"
    return attrs


def _sip_attrs(dependence: Dependence) -> dict[str, Any]:
    """The attributes of a SIP bootstrap under the dependent resample."""
    attrs = {k: v for k, v in dependence.attrs().items() if k != "jackknife"}
    scheme = dependence.resample
    units = "groups" if scheme == "cluster" else "blocks of consecutive points"
    attrs["interval_method"] = f"percentile (paired {scheme} bootstrap over {units})"
    attrs["rng"] = (f"counter-based SplitMix64 streams (seed, '{P.SIP_PURPOSE}-{scheme}', "
                    "replicate)")
    if dependence.block_length == AUTO_LENGTH:
        attrs["block_length_rule"] = (
            "Politis-White (2004; Patton-Politis-White 2009) length of Z^2 in the order of "
            f"{dependence.variable} on each slice's common points, rounded up: the largest "
            "over the models")
    return attrs


def paired_scores(ds: xr.Dataset, scores: str | Sequence[str] = ("crps", "nll", "interval"),
                  *, dim: str | None = None, pairing: str = "common",
                  coverage_level: float = defaults.LEVEL, resample: str = "iid",
                  groups: str | None = None, block: str | None = None,
                  block_length: int | str | None = None, E: str = defaults.E,
                  uE: str = defaults.UE) -> xr.Dataset:
    """Mean point-wise scores of models on the same points, their paired differences and
    Diebold–Mariano tests.

    Parameters
    ----------
    ds : xarray.Dataset
        ``E`` and ``uE`` over ``(dim, sample)`` and possibly other dimensions (broadcast).
    scores : str or sequence of str
        Point-wise scores among ``"crps"`` (Gaussian CRPS), ``"nll"`` (Gaussian negative
        log-likelihood ``½ (ln 2π + ln uE² + Z²)``) and ``"interval"`` (interval score of the
        central prediction interval at ``coverage_level``); definitions in
        :data:`xuqcal.core.paired.SCORES`. Lower is better.
    dim : str, optional
        The compared dimension (at least 2 labels); default: ``model``, else ``dataset`` (as
        :func:`xuqcal.compare`: the dimension of :func:`xuqcal.stack_datasets` and of the
        CLI's several files).
    pairing : {"common"}
        The points compared: those present in every model.
    coverage_level : float
        Coverage level ``p`` (nominal coverage) of the central prediction interval
        ``∓ Φ⁻¹((1 + p)/2) uE`` of the interval score.
    resample : {"iid", "cluster", "moving", "circular", "stationary"}
        The dependence of the points (as :func:`xuqcal.compare`): ``"iid"`` (default) for the
        variance ``var(d) / n`` of the mean difference; ``"cluster"`` for the cluster-robust
        variance over the groups of ``groups``; a block scheme for the Newey–West HAC
        variance in the order of ``block`` (the three schemes give the same test).
    groups : str, optional
        With ``resample="cluster"``: the variable holding each point's group (over
        ``sample``, or over ``(dim, sample)`` when the same for every model).
    block : str, optional
        With a block scheme: the variable that orders the points.
    block_length : int or "auto", optional
        With a block scheme: the lags ``L`` of the HAC variance (``L < n``); ``"auto"``:
        ``floor(4 (n / 100)^(2/9))`` (Newey & West 1994).
    E, uE : str
        Names of the error and uncertainty variables.

    Returns
    -------
    xarray.Dataset
        Over ``(*extra, dim, other, score)`` (``other`` holds the labels of ``dim`` again):

        - ``mean_score`` ``(*extra, dim, score)``: each model's mean score;
        - ``score_difference`` ``(*extra, dim, other, score)``: ``mean(s_dim - s_other)``
          over the common points (0 on the diagonal; negative: ``dim`` is better);
        - ``dm_statistic``, ``dm_p_value``: the Diebold–Mariano statistic of that difference
          and its two-sided p-value (:func:`xuqcal.core.paired.diebold_mariano`; NaN on the
          diagonal and wherever the scores of the two models are equal at every point);
        - coordinates ``n_samples`` (common points per slice) and ``n_dropped`` (points of each
          model dropped by the pairing); attributes saying how it was computed.

    Raises
    ------
    ValueError
        For a bad argument (one line naming the parameter), before any work; for half-missing
        points, infinite values or ``uE <= 0``; when the pairing leaves fewer than 2 points.

    Examples
    --------
    >>> import xuqcal
    >>> a = xuqcal.synthetic.nig(500, nu=6, seed=1)
    >>> ds = xr.concat([a, a.assign(uE=a.uE * 0.8)], dim="model")
    >>> ds = ds.assign_coords(model=["calibrated", "overconfident"])
    >>> result = paired_scores(ds, ("nll", "crps"))
    >>> float(result.score_difference.sel(model="calibrated", other="overconfident",
    ...                                   score="nll")) < 0
    True
    >>> int(result.n_samples), result.n_dropped.values.tolist()
    (500, [0, 0])
    """
    E, uE = check_data_variables(ds, E, uE, extra_dims=True)
    dim, extra = _check_dim(ds, dim, E, uE)
    names = _check_scores(scores)
    pairing = _check_pairing(pairing)
    coverage_level = check_coverage_level(coverage_level)
    ds, dependence = _dependence(ds, dim, resample, groups, block, block_length, E=E, uE=uE,
                                 analysis="paired_scores")
    attrs = {} if dependence is None else _dm_attrs(dependence)
    if is_lazy(ds, (E, uE)):
        return _lazily(paired_scores, ds, dependence, attrs, scores=names, dim=dim,
                       pairing=pairing, coverage_level=coverage_level, resample=resample,
                       groups=groups, block=block, block_length=block_length, E=E, uE=uE)

    k = ds.sizes[dim]
    a, b = np.nonzero(~np.eye(k, dtype=bool))  # the ordered pairs a != b
    variable = None if dependence is None else np.asarray(ds[dependence.variable].values)

    def compute(e: np.ndarray, u: np.ndarray, common: np.ndarray) -> tuple[np.ndarray, ...]:
        mean = np.empty((k, len(names)))
        diff = np.empty((k, k, len(names)))
        dm = np.full((k, k, len(names)), np.nan)
        p_value = np.full((k, k, len(names)), np.nan)
        robust, order = {}, slice(None)
        if dependence is not None and dependence.resample == "cluster":
            robust = {"groups": _groups(variable[common], dependence)}
        elif dependence is not None:
            order = np.argsort(variable[common], kind="stable")
            robust = {"lags": _dm_lags(dependence, e.shape[1])}
        for j, name in enumerate(names):
            s = P.point_scores(e, u, name, coverage_level)
            mean[:, j] = s.mean(axis=1)
            diff[:, :, j] = P.mean_differences(s)
            if robust:
                ordered = s[:, order]
                dm[a, b, j], p_value[a, b, j] = P.diebold_mariano(ordered[a], ordered[b],
                                                                  **robust)
            else:
                dm[a, b, j], p_value[a, b, j] = P.diebold_mariano(s[a], s[b])
        return mean, diff, dm, p_value

    coords, n_samples, (mean, diff, dm, p_value) = _per_slice(
        ds, dim, extra, E, uE, pairing, compute,
        [(k, len(names)), (k, k, len(names)), (k, k, len(names)), (k, k, len(names))])
    coords["score"] = list(names)
    pair = (*extra, dim, OTHER, "score")
    return _result(
        "paired_scores",
        {"mean_score": ((*extra, dim, "score"), mean,
                        {"long_name": "mean point-wise score over the common points "
                                      "(lower is better)"}),
         "score_difference": (pair, diff,
                              {"long_name": f"mean paired difference s_{dim} - s_{OTHER} "
                                            f"(negative: {dim} better)"}),
         "dm_statistic": (pair, dm, {"long_name": "Diebold-Mariano statistic of s_" + dim
                                                  + " - s_" + OTHER}),
         "dm_p_value": (pair, p_value, {"long_name": "two-sided p-value of the "
                                                     "Diebold-Mariano test (standard normal)"})},
        coords, dim=dim, pairing=pairing, n_samples=n_samples, coverage_level=coverage_level,
        scores=", ".join(names), **{f"score_{name}": P.SCORES[name] for name in names},
        **{"dm_test": DM_VARIANT, **attrs})


def _groups(values: np.ndarray, dependence: Dependence) -> np.ndarray:
    """The group codes of the common points (at least 2 groups, none missing: the checks of
    :func:`xuqcal.analysis.dependent.row_layout`)."""
    from xuqcal.analysis.dependent import row_layout

    return row_layout(values, dependence).unit_of_row


def sip_matrix(ds: xr.Dataset, score: str = "crps", *, dim: str | None = None,
               pairing: str = "common", n_boot: int = defaults.N_BOOT,
               level: float = defaults.LEVEL, seed: int = defaults.SEED,
               coverage_level: float = defaults.LEVEL, resample: str = "iid",
               groups: str | None = None, block: str | None = None,
               block_length: int | str | None = None, E: str = defaults.E,
               uE: str = defaults.UE) -> xr.Dataset:
    """The systematic improvement probability (SIP) matrix of models on the same points.

    ``SIP(A, B)`` is the fraction of the common points where A's point-wise score is strictly
    lower (better) than B's (Pernot & Savin 2020; ErrViewLib's ``sip``, ``plotSIPMat``).
    **Tie rule:** a point where the two scores are equal counts for neither model, so
    ``SIP(A, B) + SIP(B, A) <= 1`` (the rest is the fraction of ties) and ``SIP(A, A) = 0``.
    Its interval is a paired percentile bootstrap: replicate ``r`` resamples the point indices
    once, from the counter-based stream ``(seed, "sip", r)``, and applies them to every model
    (:func:`xuqcal.core.paired.sip_replicates`), so it is reproducible for a seed and the same
    however the data are chunked or backed.

    Parameters
    ----------
    ds : xarray.Dataset
        ``E`` and ``uE`` over ``(dim, sample)`` and possibly other dimensions (broadcast).
    score : {"crps", "nll", "interval"}
        The point-wise score (:data:`xuqcal.core.paired.SCORES`).
    dim : str, optional
        The compared dimension (at least 2 labels); default: ``model``, else ``dataset`` (as
        :func:`xuqcal.compare`: the dimension of :func:`xuqcal.stack_datasets` and of the
        CLI's several files).
    pairing : {"common"}
        The points compared: those present in every model.
    n_boot : int
        Bootstrap replicates of the interval (at least ``ceil(2 / (1 - level))``).
    level : float
        Confidence level of the interval.
    seed : int
        Seed of the random streams.
    coverage_level : float
        Coverage level (nominal coverage) of the prediction interval of ``score="interval"``.
    resample : {"iid", "cluster", "moving", "circular", "stationary"}
        How the bootstrap resamples the common points (as :func:`xuqcal.compare`): the same
        whole groups of ``groups`` or blocks of ``block_length`` consecutive points in the
        order of ``block`` for every model, from the streams ``(seed, "sip-<resample>",
        r)``; ``"iid"`` (default): the points.
    groups, block : str, optional
        The variable of the groups (``"cluster"``) or of the order (a block scheme), over
        ``sample`` (or over ``(dim, sample)`` when the same for every model).
    block_length : int or "auto", optional
        With a block scheme: points per block; ``"auto"``: the automatic length of
        :func:`xuqcal.compare` (Politis & White, the largest over the models).
    E, uE : str
        Names of the error and uncertainty variables.

    Returns
    -------
    xarray.Dataset
        ``sip``, ``sip_low``, ``sip_high`` over ``(*extra, dim, other)`` (``other``: the labels
        of ``dim`` again; ``[a, b]`` = SIP(a, b); 0 on the diagonal), coordinates
        ``n_samples`` and ``n_dropped``, and attributes saying how it was computed.

    Raises
    ------
    ValueError
        For a bad argument (one line naming the parameter), before any work; for half-missing
        points, infinite values or ``uE <= 0``; when the pairing leaves fewer than 2 points.

    Examples
    --------
    >>> import xuqcal
    >>> a = xuqcal.synthetic.nig(400, nu=6, seed=1)
    >>> ds = xr.concat([a, a.assign(uE=a.uE * 0.8)], dim="model")
    >>> ds = ds.assign_coords(model=["calibrated", "overconfident"])
    >>> sips = sip_matrix(ds, "crps", n_boot=200)
    >>> s = sips.sip.values
    >>> bool(s[0, 1] + s[1, 0] <= 1), float(s[0, 0])
    (True, 0.0)
    """
    E, uE = check_data_variables(ds, E, uE, extra_dims=True)
    dim, extra = _check_dim(ds, dim, E, uE)
    score = P._check_score(score, "score")
    pairing = _check_pairing(pairing)
    level = check_level(level)
    n_boot = check_replicates(n_boot, level)
    seed = check_seed(seed)
    coverage_level = check_coverage_level(coverage_level)
    ds, dependence = _dependence(ds, dim, resample, groups, block, block_length, E=E, uE=uE,
                                 analysis="sip_matrix")
    attrs = {} if dependence is None else _sip_attrs(dependence)
    if is_lazy(ds, (E, uE)):
        return _lazily(sip_matrix, ds, dependence, attrs, score=score, dim=dim,
                       pairing=pairing, n_boot=n_boot, level=level, seed=seed,
                       coverage_level=coverage_level, resample=resample, groups=groups,
                       block=block, block_length=block_length, E=E, uE=uE)
    variable = None if dependence is None else np.asarray(ds[dependence.variable].values)
    labels = _labels(ds, dim)

    def compute(e: np.ndarray, u: np.ndarray, common: np.ndarray) -> tuple[np.ndarray, ...]:
        s = P.point_scores(e, u, score, coverage_level)
        if dependence is None:
            return P.sip_bootstrap(s, n_boot, level, seed)
        rows = [np.arange(e.shape[1])] * e.shape[0]
        layout = model_layouts(e, u, variable[common], rows, "common", dependence, labels)[0]
        return P.sip_bootstrap(s, n_boot, level, seed, layout=layout,
                               purpose=f"{P.SIP_PURPOSE}-{dependence.resample}")

    k = ds.sizes[dim]
    coords, n_samples, (value, low, high) = _per_slice(ds, dim, extra, E, uE, pairing, compute,
                                                       [(k, k)] * 3)
    pair = (*extra, dim, OTHER)
    return _result(
        "sip_matrix",
        {"sip": (pair, value, {"long_name": f"systematic improvement probability: fraction of "
                                            f"the points where {dim} scores strictly lower "
                                            f"than {OTHER}"}),
         "sip_low": (pair, low, {"long_name": "lower bound of the paired percentile bootstrap "
                                              "interval of sip"}),
         "sip_high": (pair, high, {"long_name": "upper bound of the paired percentile "
                                                "bootstrap interval of sip"})},
        coords, dim=dim, pairing=pairing, n_samples=n_samples, score=score,
        score_definition=P.SCORES[score],
        coverage_level=coverage_level if score == "interval" else None,
        level=level, n_boot=n_boot, seed=seed,
        **{"interval_method": "percentile (paired bootstrap over points)",
           "rng": f"counter-based SplitMix64 streams (seed, {P.SIP_PURPOSE!r}, replicate)",
           **attrs},
        tie_rule=P.TIE_RULE)
