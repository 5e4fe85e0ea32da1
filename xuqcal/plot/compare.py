"""Figures of a model comparison (:func:`xuqcal.compare`): the paired differences as a forest
plot, the rank probabilities and the SIP matrix as heat maps.

A comparison result holds, over ``model`` (K labels), ``other`` (the same K labels: the second
model of a pair), ``rank`` (1..K) and ``statistic``:

- ``difference``, ``ci_low``, ``ci_high``, ``verdict`` over ``(model, other, statistic)``:
  ``distance[model] − distance[other]`` (negative: ``model`` is better), its BCa interval at
  ``attrs["level"]`` and the verdict ("better", "worse", "no significant difference"; ``""``
  on the diagonal);
- ``rank_probability`` over ``(model, rank, statistic)``: the probability of each rank
  (1 = best);
- optionally ``sip``, ``sip_low``, ``sip_high`` over ``(model, other)``: the systematic
  improvement probability of Pernot & Savin (``attrs["score"]``: the point-wise score).

The figures follow the conventions of :mod:`xuqcal.plot.facets`: one Axes (on ``ax`` when
given) for one panel, a :class:`~xuqcal.plot.facets.FacetGrid` for several (one per statistic
of the forest plot, one per label of any extra dimension such as ``task``; ``col=`` /
``row=`` place them).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import xarray as xr

from xuqcal.plot._common import error_bars, require
from xuqcal.plot.facets import FacetGrid, Panel, facet
from xuqcal.plot.studies import _label as statistic_label

__all__ = ["VERDICT_STYLE", "difference_forest", "rank_heatmap", "sip_heatmap"]

PRODUCER = "xuqcal.compare"
#: Legend label, colour and marker of each verdict of a pair (model, other) in the forest plot.
VERDICT_STYLE = {
    "better": ("first model better", "tab:green", "o"),
    "worse": ("second model better", "crimson", "s"),
    "no significant difference": ("no significant difference", "0.45", "D"),
}
#: Style of a pair without one of the three verdicts (an undefined difference, say).
NO_VERDICT_STYLE = ("no verdict", "black", "x")
X_LABEL = "difference of distance to reference (negative: first model better)"
MINUS = " \N{MINUS SIGN} "


def _labels(obj, dim: str) -> list[str]:
    return [str(v) for v in np.asarray(obj[dim].values).tolist()]


def _listed(labels: Sequence[str]) -> str:
    return ", ".join(labels)


def _check_result(result, variables: Sequence[str], producer: str = PRODUCER) -> list[str]:
    """Refuse anything but a comparison result holding ``variables``; its model labels."""
    require(result, variables, producer)
    dims = result[variables[0]].dims
    if "model" not in dims:
        raise ValueError(f"result: {variables[0]} has no dimension 'model' (its dimensions: "
                         f"{_listed([str(d) for d in dims])}): expected the output of "
                         f"{producer}")
    models = _labels(result, "model")
    if "other" in dims and _labels(result, "other") != models:
        raise ValueError(f"result: the labels of 'other' ({_listed(_labels(result, 'other'))})"
                         f" are not those of 'model' ({_listed(models)})")
    return models


def _check_statistic(result: xr.Dataset, statistic, name: str = "statistic") -> str:
    keys = _labels(result, "statistic") if "statistic" in result.coords else []
    if not isinstance(statistic, str) or statistic not in keys:
        raise ValueError(f"{name}: {statistic!r} is not in the result (its statistics: "
                         f"{_listed(keys)})")
    return statistic


def _chosen_statistics(result: xr.Dataset, statistic) -> list[str]:
    if statistic is None:
        return _labels(result, "statistic")
    if isinstance(statistic, str):
        return [_check_statistic(result, statistic)]
    if not isinstance(statistic, Iterable):
        _check_statistic(result, statistic)
    chosen = [_check_statistic(result, key) for key in statistic]
    if not chosen:
        raise ValueError("statistic: expected a statistic of the result or several, got none")
    return list(dict.fromkeys(chosen))


def _scalar_statistic(one) -> str | None:
    """The statistic of one slice, when it holds one only (a scalar coordinate)."""
    if "statistic" in one.coords and one["statistic"].ndim == 0:
        return str(one["statistic"].values)
    return None


def _title_numbers(result: xr.Dataset) -> str:
    level = result.attrs.get("level")
    n_boot = result.attrs.get("n_boot", "?")
    interval = f"{100 * float(level):g} % BCa intervals, " if level is not None else ""
    return f"{interval}n_boot = {n_boot}"


def _tick_labels(ax, which: str, positions, labels: Sequence[str]) -> None:
    """Tick labels of the ``which`` axis; long x labels (or many of them) rotated by 45°."""
    labels = list(labels)
    if which == "y":
        ax.set_yticks(positions, labels)
        return
    ax.set_xticks(positions, labels)
    longest = max((len(t) for t in labels), default=0)
    if longest > 10 or longest * len(labels) > 30:
        for text in ax.get_xticklabels():
            text.set_rotation(45)
            text.set_horizontalalignment("right")
            text.set_rotation_mode("anchor")


def _cell_fontsize(k: int, two_lines: bool = False) -> str:
    """Font size of the numbers in the cells of a K × K heat map on its own figure."""
    if k <= (5 if two_lines else 10):
        return "small"
    return "x-small" if k <= 12 else "xx-small"


def _pairs(models: list[str], baseline: str | None) -> list[tuple[int, int]]:
    """Indices (model, other) of the rows of the forest plot."""
    if baseline is None:
        return [(i, j) for i in range(len(models)) for j in range(i + 1, len(models))]
    r = models.index(baseline)
    return [(i, r) for i in range(len(models)) if i != r]


def _style(verdict: str) -> tuple[str, str, str]:
    return VERDICT_STYLE.get(verdict, NO_VERDICT_STYLE)


def difference_forest(result: xr.Dataset, statistic: str | Iterable[str] | None = None, *,
                      baseline: str | None = None, ax=None, col: str | None = None,
                      row: str | None = None, sharex: bool | None = None):
    """Forest plot of the paired differences of a model comparison with their intervals.

    One row per pair ``A − B``: the difference ``distance[A] − distance[B]`` of their
    distances to the reference (a point; negative: A is better) and its BCa interval (a
    horizontal bar), coloured and marked by verdict (A better, B better, no significant
    difference; legend), with a vertical line at 0. The rows are each unordered pair once
    (``A`` before ``B`` in the order of the labels along ``model``), or, with ``baseline``,
    every other model against that one. The first pair is at the top.

    Parameters
    ----------
    result : xarray.Dataset
        Output of :func:`xuqcal.compare` (``difference``, ``ci_low``, ``ci_high``, ``verdict``
        over ``model``, ``other`` and ``statistic``).
    statistic : str or iterable of str, optional
        The statistics to draw (default: all): one statistic gives one Axes, several give one
        panel per statistic (along the columns; ``row="statistic"`` puts them along the rows).
    baseline : str, optional
        A model of the result: each other model against it (rows ``model − baseline``).
    ax : matplotlib Axes, optional
        Where to draw one panel (one statistic, no other extra dimension).
    col, row : str, optional
        Dimensions laid out as a grid of panels: ``"statistic"`` or an extra dimension of the
        result (``task``, ...), as in :mod:`xuqcal.plot.facets`.
    sharex : bool or None
        Whether the panels share their x axis; ``None`` (the default): shared unless their
        ranges differ (:func:`~xuqcal.plot.facets.share_axis`). The rows (the pairs) are
        always shared.

    Returns
    -------
    matplotlib Axes, or :class:`~xuqcal.plot.facets.FacetGrid` for several panels

    Raises
    ------
    ValueError
        For a result that is not a comparison (naming the missing variables), fewer than two
        models, a statistic or a baseline not in the result, and as
        :func:`~xuqcal.plot.facets.facet` (dimensions that cannot be placed, ``ax`` with a
        grid).

    Examples
    --------
    >>> result = _synthetic_result(["GCN", "RF", "LR"], ["zms", "rce"])
    >>> ax = difference_forest(result, "zms")
    >>> [t.get_text() for t in ax.get_yticklabels()]
    ['GCN − RF', 'GCN − LR', 'RF − LR']
    >>> ax = difference_forest(result, "zms", baseline="RF")
    >>> [t.get_text() for t in ax.get_yticklabels()]
    ['GCN − RF', 'LR − RF']
    >>> difference_forest(result).axes.shape
    (1, 2)
    """
    variables = ("difference", "ci_low", "ci_high", "verdict")
    models = _check_result(result, variables)
    if "other" not in result["difference"].dims:
        raise ValueError("result: difference has no dimension 'other': expected the output of "
                         f"{PRODUCER}")
    if len(models) < 2:
        raise ValueError(f"result: {len(models)} model ({_listed(models)}): a forest plot of "
                         "differences needs two models at least")
    if baseline is not None and (not isinstance(baseline, str) or baseline not in models):
        raise ValueError(f"baseline: {baseline!r} is not a model of the result (its models: "
                         f"{_listed(models)})")
    data = result[list(variables)]
    if "statistic" in data.dims:
        keys = _chosen_statistics(result, statistic)
        if len(keys) == 1:
            data = data.sel(statistic=keys[0])
        else:
            data = data.sel(statistic=keys)
            if "statistic" not in (col, row):
                if col is None:
                    col = "statistic"
                elif row is None:
                    row = "statistic"
    elif statistic is not None:
        _check_statistic(result, statistic)
    pairs = _pairs(models, baseline)
    labels = [f"{models[i]}{MINUS}{models[j]}" for i, j in pairs]
    n = len(pairs)
    numbers = _title_numbers(result)
    against = f" against {baseline}" if baseline is not None else ""

    def draw(ax, indexers: dict, p: Panel) -> None:
        one = data.isel(indexers)
        arrays = {v: one[v].transpose("model", "other").values for v in variables}
        rows, cols = (np.array([k[0] for k in pairs]), np.array([k[1] for k in pairs]))
        value, low, high = (np.asarray(arrays[v][rows, cols], dtype=np.float64)
                            for v in ("difference", "ci_low", "ci_high"))
        verdict = np.array([str(v) for v in arrays["verdict"][rows, cols]])
        y = np.arange(n)
        ax.axvline(0.0, color="0.3", lw=0.9, ls="--", zorder=1)
        order = [*VERDICT_STYLE, *sorted(set(verdict) - set(VERDICT_STYLE))]
        for key in order:
            mask = verdict == key
            if not mask.any():
                continue
            text, colour, marker = _style(key)
            ax.errorbar(value[mask], y[mask], xerr=error_bars(value, low, high)[:, mask],
                        ls="none", marker=marker, color=colour, ms=6, capsize=3, elinewidth=1.5,
                        label=text, zorder=3)
        _tick_labels(ax, "y", y, labels)
        if n > 15:
            ax.tick_params(axis="y", labelsize="small")
        ax.set_ylim(n - 0.5, -0.5)
        # a grid's panels are narrow: the label on two lines
        ax.set_xlabel(X_LABEL if p.facet is None else X_LABEL.replace(" (", "\n("))
        ax.set_ylabel("pair")
        key = _scalar_statistic(one)
        name = f" of {statistic_label(key)}" if key is not None else ""
        p.title(ax, f"Paired differences{name}{against} ({numbers})",
                f"Paired differences{against} ({numbers})")
        p.legend(ax, fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))

    height = 1.9 + 0.28 * n
    drawn = facet(data, draw, core=("model", "other"), variables=("difference",), ax=ax,
                  col=col, row=row, sharex=sharex, sharey=True, figsize=(8.0, height))
    if isinstance(drawn, FacetGrid):
        n_rows, n_cols = drawn.axes.shape
        drawn.fig.set_size_inches(4.2 * n_cols + 2.4, height * n_rows + 0.5)
    return drawn


def rank_heatmap(result: xr.Dataset, statistic: str, *, ax=None, col: str | None = None,
                 row: str | None = None):
    """Heat map of the rank probabilities of a model comparison for one statistic.

    Rows: the models, sorted by expected rank (best first); columns: the ranks 1..K (1 = best);
    each cell holds the probability that the model takes that rank over the bootstrap
    replicates, written with two decimals.

    Parameters
    ----------
    result : xarray.Dataset
        Output of :func:`xuqcal.compare` (``rank_probability`` over ``model``, ``rank`` and
        ``statistic``).
    statistic : str
        The statistic whose ranking is drawn.
    ax : matplotlib Axes, optional
        Where to draw a result without extra dimensions.
    col, row : str, optional
        Extra dimensions of the result (``task``, ...) laid out as a grid of panels, one
        colour bar for all (:mod:`xuqcal.plot.facets`).

    Returns
    -------
    matplotlib Axes, or :class:`~xuqcal.plot.facets.FacetGrid` for extra dimensions

    Raises
    ------
    ValueError
        For a result without ``rank_probability`` (the output of :func:`xuqcal.compare`), a
        statistic not in the result, and as :func:`~xuqcal.plot.facets.facet`.

    Examples
    --------
    >>> result = _synthetic_result(["GCN", "RF", "LR"], ["zms", "rce"])
    >>> ax = rank_heatmap(result, "zms")
    >>> [t.get_text() for t in ax.get_yticklabels()], ax.get_xlabel()
    (['GCN', 'RF', 'LR'], 'rank (1 = best)')
    >>> ax.texts[0].get_text()
    '0.80'
    """
    _check_result(result, ("rank_probability",))
    if "rank" not in result["rank_probability"].dims:
        raise ValueError("result: rank_probability has no dimension 'rank': expected the "
                         f"output of {PRODUCER}")
    data = result["rank_probability"]
    if "statistic" in data.dims:
        data = data.sel(statistic=_check_statistic(result, statistic))
    k = data.sizes["model"]
    numbers = f"n_boot = {result.attrs.get('n_boot', '?')}"

    def draw(ax, indexers: dict, p: Panel):
        one = data.isel(indexers).transpose("model", "rank")
        values = np.asarray(one.values, dtype=np.float64)
        ranks = np.asarray(one["rank"].values)
        with np.errstate(invalid="ignore", divide="ignore"):
            expected = (values * ranks).sum(axis=1) / values.sum(axis=1)
        order = np.argsort(np.where(np.isfinite(expected), expected, np.inf), kind="stable")
        values = values[order]
        models = [_labels(one, "model")[i] for i in order]
        image = ax.imshow(np.ma.masked_invalid(values), cmap="Blues", vmin=0.0, vmax=1.0,
                          label="probability")
        size = _cell_fontsize(k)
        for i in range(values.shape[0]):
            for j in range(values.shape[1]):
                v = values[i, j]
                ax.text(j, i, "–" if np.isnan(v) else f"{v:.2f}", ha="center", va="center",
                        fontsize=size, color="white" if v > 0.55 else "black")
        _tick_labels(ax, "x", np.arange(ranks.size), [str(r) for r in ranks.tolist()])
        _tick_labels(ax, "y", np.arange(len(models)), models)
        ax.set_xlabel("rank (1 = best)")
        ax.set_ylabel("model (by expected rank)")
        if p.plain:
            ax.figure.colorbar(image, ax=ax, label="probability", shrink=0.9)
        title = f"Rank probabilities of {statistic_label(statistic)} ({numbers})"
        p.title(ax, title, title)
        return image

    return facet(data, draw, core=("model", "rank"), ax=ax, col=col, row=row, sharex=False,
                 sharey=False, figsize=(2.2 + 0.75 * k, 1.3 + 0.6 * k), colorbar=True)


def sip_heatmap(result: xr.Dataset, *, ax=None, col: str | None = None,
                row: str | None = None):
    """Heat map of the SIP matrix of a model comparison (Pernot & Savin).

    Cell (A, B): the systematic improvement probability, the fraction of the points where
    A's point-wise score (``attrs["score"]``) beats B's, written with its interval
    (``0.62`` over ``[0.58, 0.66]``) when the result holds ``sip_low`` and ``sip_high``. The
    diagonal is blank.

    Parameters
    ----------
    result : xarray.Dataset
        Output of :func:`xuqcal.compare` with the SIP matrix (``sip`` over ``model`` and
        ``other``; ``sip_low``, ``sip_high`` optional).
    ax : matplotlib Axes, optional
        Where to draw a matrix without extra dimensions.
    col, row : str, optional
        Extra dimensions of ``sip`` (``statistic``, ``task``, ...) laid out as a grid of
        panels, one colour bar for all (:mod:`xuqcal.plot.facets`).

    Returns
    -------
    matplotlib Axes, or :class:`~xuqcal.plot.facets.FacetGrid` for extra dimensions

    Raises
    ------
    ValueError
        For a result without ``sip`` (or whose ``sip`` lacks ``model`` / ``other``), and as
        :func:`~xuqcal.plot.facets.facet`.

    Examples
    --------
    >>> result = _synthetic_result(["GCN", "RF", "LR"], ["zms"])
    >>> ax = sip_heatmap(result)
    >>> ax.get_ylabel(), ax.texts[0].get_text()
    ('A (better than B in the fraction shown)', '0.62\\n[0.58, 0.66]')
    """
    models = _check_result(result, ("sip",), f"{PRODUCER} with the SIP matrix")
    if "other" not in result["sip"].dims:
        raise ValueError("result: sip has no dimension 'other': expected the SIP matrix of "
                         f"{PRODUCER} over model and other")
    intervals = "sip_low" in result.variables and "sip_high" in result.variables
    names = ["sip", "sip_low", "sip_high"] if intervals else ["sip"]
    data = result[names]
    score = result["sip"].attrs.get("score", result.attrs.get("score"))
    k = len(models)

    def draw(ax, indexers: dict, p: Panel):
        one = data.isel(indexers)
        values, low, high = (
            np.asarray(one[v].transpose("model", "other").values, dtype=np.float64)
            if v in one.variables else np.full((k, k), np.nan)
            for v in ("sip", "sip_low", "sip_high"))
        diagonal = np.eye(k, dtype=bool)
        shown = np.ma.masked_where(diagonal | np.isnan(values), values)
        image = ax.imshow(shown, cmap="RdBu", vmin=0.0, vmax=1.0, label="SIP")
        size = _cell_fontsize(k, two_lines=intervals)
        for i in range(k):
            for j in range(k):
                if i == j:
                    continue
                v = values[i, j]
                text = "–" if np.isnan(v) else f"{v:.2f}"
                if np.isfinite(low[i, j]) and np.isfinite(high[i, j]):
                    text += f"\n[{low[i, j]:.2f}, {high[i, j]:.2f}]"
                ax.text(j, i, text, ha="center", va="center", fontsize=size,
                        color="white" if abs(v - 0.5) > 0.3 else "black")
        _tick_labels(ax, "x", np.arange(k), models)
        _tick_labels(ax, "y", np.arange(k), models)
        ax.set_xlabel("B")
        ax.set_ylabel("A (better than B in the fraction shown)")
        if p.plain:
            ax.figure.colorbar(image, ax=ax, label="SIP", shrink=0.9)
        n = result.attrs.get("n_samples")
        title = (f"SIP{f' ({score})' if score else ''}: fraction of points where A beats B"
                 + (f" (n = {n})" if n else ""))
        p.title(ax, title, title)
        return image

    return facet(data, draw, core=("model", "other"), variables=("sip",), ax=ax, col=col,
                 row=row, sharex=False, sharey=False,
                 figsize=(2.4 + 1.0 * k, 1.4 + 0.8 * k), colorbar=True)


def _synthetic_result(models: Sequence[str], statistics: Sequence[str],
                      seed: int = 0) -> xr.Dataset:
    """A small comparison result of the schema of :func:`xuqcal.compare`, for the examples:
    the models are better the earlier they come (distances 0.05, 0.10, ...), the first
    model's rank 1 has probability 0.80, and SIP(first, second) = 0.62 [0.58, 0.66].

    Examples
    --------
    >>> r = _synthetic_result(["a", "b"], ["zms"])
    >>> r["verdict"].sel(statistic="zms").values.tolist()
    [['', 'better'], ['worse', '']]
    """
    models, statistics = list(models), list(statistics)
    k, s = len(models), len(statistics)
    rng = np.random.default_rng(seed)
    distance = 0.05 * (np.arange(k)[:, None] + 1) + 0.002 * rng.random((k, s))
    difference = distance[:, None, :] - distance[None, :, :]
    half = np.full((k, k, s), 0.03)
    low, high = difference - half, difference + half
    verdict = np.where(high < 0, "better", np.where(low > 0, "worse",
                                                    "no significant difference")).astype(object)
    zeta = difference / half
    for array in (difference, low, high, zeta):
        array[np.arange(k), np.arange(k)] = 0.0
    verdict[np.arange(k), np.arange(k)] = ""
    probability = np.full((k, k), 0.2 / max(k - 1, 1))
    np.fill_diagonal(probability, 0.8)
    if k == 1:
        probability[:] = 1.0
    rank_probability = np.repeat(probability[:, :, None], s, axis=2)
    sip = np.full((k, k), 0.5)
    sip[np.triu_indices(k, 1)] = 0.62
    sip[np.tril_indices(k, -1)] = 0.38
    np.fill_diagonal(sip, np.nan)
    pair, triple = ("model", "other"), ("model", "other", "statistic")
    return xr.Dataset(
        {"estimate": (("model", "statistic"), distance + 1.0),
         "distance": (("model", "statistic"), distance),
         "difference": (triple, difference), "ci_low": (triple, low),
         "ci_high": (triple, high), "zeta": (triple, zeta),
         "verdict": (triple, verdict.astype(str)),
         "rank_probability": (("model", "rank", "statistic"), rank_probability),
         "p_best": (("model", "statistic"), rank_probability[:, 0, :]),
         "sip": (pair, sip, {"score": "crps"}), "sip_low": (pair, sip - 0.04),
         "sip_high": (pair, sip + 0.04)},
        coords={"model": models, "other": models, "rank": np.arange(1, k + 1),
                "statistic": statistics},
        attrs={"level": 0.95, "n_boot": 2000, "seed": 0, "pairing": "common",
               "n_samples": 5000})
