"""Faceting of the figures over the extra dimensions of a result.

Every analysis broadcasts over the dimensions of ``E`` and ``uE`` besides ``sample``
(``model``, ``task``, ``seed``, ``dataset``, ...): its result is the one-set result with those
*extra dimensions* added. Each figure function of :mod:`xuqcal.plot` draws such a result the way
xarray plotting does, through :func:`facet`, the one place where the layout is decided:

- no extra dimension: one Axes, exactly the one-set figure;
- ``col=`` / ``row=`` (names of extra dimensions): a grid of panels, one per label, titled
  ``dim = label``, one legend for the figure and the plot's title above; the panels share
  their x and y axes unless the sets differ (:func:`share_axis`, ``sharex=`` / ``sharey=``);
- figures made of lines or points per bin (per-bin values, reliability, curves, running
  statistics, ablation, zero-bins extrapolation) draw one remaining extra dimension as one
  line per slice in one Axes, with a legend of the slice labels (also inside each panel of a
  grid);
- the other figures (ζ-scores, heatmaps, histograms, ...) lay one remaining extra dimension
  out along the columns (or the rows when ``col`` is taken);
- dimensions that cannot be placed raise a ``ValueError`` naming them, suggesting ``col=`` /
  ``row=``, or ``.sel(...)`` when there are more than a figure can show.

A grid is returned as a :class:`FacetGrid` (``.axes``, ``.fig``); one Axes is returned as such.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from xuqcal.plot._common import axes as new_axes

#: Default sharing (``sharex=None`` / ``sharey=None``): panels whose sets hold numbers of
#: points differing by more than this factor get their own scales ...
SHARE_SIZE_RATIO = 2.0
#: ... and so do panels one of which spans less than this fraction of the range of all panels
#: together (on the axis' scale: in decades for a logarithmic axis), or whose ranges have no
#: value in common.
SHARE_RANGE_FRACTION = 0.2

__all__ = [
    "FacetGrid",
    "Panel",
    "check_placed",
    "facet",
    "share_axis",
    "slice_value",
    "undrawn_dims",
    "without_absent_points",
]


@dataclass
class FacetGrid:
    """A grid of panels, one per label of ``row`` × ``col`` (like :class:`xarray.plot.FacetGrid`).

    Attributes
    ----------
    fig : matplotlib.figure.Figure
        The figure (also as :attr:`figure`, so that ``result.figure.savefig(...)`` works as
        for one Axes).
    axes : numpy.ndarray
        The Axes, shape ``(n_rows, n_cols)`` (``(1, n)`` for ``col`` only, ``(n, 1)`` for
        ``row`` only).
    row, col : str or None
        The dimensions along the rows and the columns.
    hue : str or None
        The dimension drawn as one line per label inside each panel.
    name_dicts : numpy.ndarray
        For each panel, the labels ``{dim: label}`` of its slice (same shape as ``axes``).

    Examples
    --------
    >>> import pandas as pd
    >>> import xarray as xr
    >>> import xuqcal
    >>> sets = [xuqcal.synthetic.nig(500, nu=6, seed=s) for s in (0, 1)]
    >>> rel = xr.concat([xuqcal.reliability(d, n_bins=5, n_boot=100) for d in sets],
    ...                 dim=pd.Index(["a", "b"], name="model"))
    >>> grid = xuqcal.plot.reliability(rel, col="model")
    >>> grid.axes.shape, grid.axes[0, 1].get_title()
    ((1, 2), 'model = b')
    """

    fig: Any
    axes: np.ndarray
    row: str | None = None
    col: str | None = None
    hue: str | None = None
    name_dicts: np.ndarray = field(default_factory=lambda: np.empty((0, 0), dtype=object))

    @property
    def figure(self):
        """The figure (same as :attr:`fig`)."""
        return self.fig


@dataclass
class Panel:
    """How one slice of a result is drawn on an Axes (handed by :func:`facet` to a figure's
    drawing function).

    Three situations: the one-set figure (``label`` and ``facet`` both ``None``: draw exactly as
    always); one of several slices overlaid on one Axes (``label`` set: draw the data in
    ``colour`` with the legend label :meth:`data_label`, and what all slices share — targets,
    diagonals, legend keys — only when :attr:`first`); one panel of a grid (``facet`` set: legend
    labels that are the same in every panel, the slice's own numbers in the title).

    Examples
    --------
    >>> Panel().data_label("data"), Panel(label="a", colour="C0").data_label("data", "f_v = 1")
    ('data', 'a (f_v = 1)')
    """

    label: str | None = None
    colour: str | None = None
    index: int = 0
    count: int = 1
    facet: str | None = None
    general: str = ""
    labels: tuple[str, ...] = ()

    @property
    def overlaid(self) -> bool:
        """Whether several slices share the Axes (one line each)."""
        return self.label is not None

    @property
    def plain(self) -> bool:
        """Whether this is the one-set figure (no extra dimension drawn)."""
        return self.label is None and self.facet is None

    @property
    def first(self) -> bool:
        """Whether this slice is the first one drawn on its Axes."""
        return self.index == 0

    def colour_or(self, default: str) -> str:
        """The slice's colour when overlaid, else ``default``."""
        return self.colour if self.overlaid else default

    def data_label(self, default: str | None, detail: str = "") -> str | None:
        """Legend label of the data: ``default`` for one set; the slice label (with ``detail``
        outside grids, whose legend is shared by the panels) when overlaid."""
        if not self.overlaid:
            return default
        return f"{self.label} ({detail})" if detail and self.facet is None else self.label

    def once(self, label: str | None) -> str | None:
        """Legend label of a decoration drawn by every slice: only the first one keeps it."""
        return label if self.first else None

    def legend(self, ax, **kwargs) -> None:
        """``ax.legend(**kwargs)``; when overlaid, once all slices are drawn, with the slices'
        entries first."""
        if self.overlaid and self.index != self.count - 1:
            return
        handles, labels = ax.get_legend_handles_labels()
        if not handles:
            return
        if self.overlaid:
            def is_slice(text: str) -> bool:
                return any(text == lab or text.startswith((f"{lab} (", f"{lab}: "))
                           for lab in self.labels)

            order = sorted(range(len(labels)), key=lambda k: not is_slice(labels[k]))
            handles, labels = [handles[k] for k in order], [labels[k] for k in order]
        ax.legend(handles, labels, **kwargs)

    def title(self, ax, full: str, general: str, detail: str = "") -> None:
        """Title ``full`` for one set, ``general`` over overlaid slices, ``dim = label`` (and
        ``detail`` on a second line) on a panel; ``general`` becomes the figure's title."""
        self.general = general
        if self.facet is not None:
            text = self.facet + (f"\n{detail}" if detail and not self.overlaid else "")
            ax.set_title(text, fontsize="medium")
        elif self.overlaid:
            ax.set_title(general)
        else:
            ax.set_title(full)


def undrawn_dims(obj, core: Collection[Hashable]) -> list[str]:
    """The dimensions of ``obj`` (a Dataset or DataArray) beyond the ``core`` ones a figure
    draws, in their order.

    Examples
    --------
    >>> import xarray as xr
    >>> undrawn_dims(xr.Dataset({"v": (("model", "bin"), [[1.0]])}), ("bin",))
    ['model']
    """
    dims = list(obj.sizes) if hasattr(obj, "sizes") else list(obj.dims)
    return [str(d) for d in dims if d not in core]


def _quoted(names: Sequence[str]) -> str:
    return ", ".join(repr(n) for n in names)


def check_placed(extra: Sequence[str], name: str = "result", **placed) -> None:
    """Refuse ``placed`` dimensions (``col=``, ``row=``) that are not ``extra`` dimensions of
    ``name``, with a ValueError naming the argument and the extra dimensions.

    Examples
    --------
    >>> check_placed(["model"], row="task")
    Traceback (most recent call last):
    ValueError: row: 'task' is not an extra dimension of result (its extra dimensions are \
'model')
    """
    for argument, dim in placed.items():
        if dim is None:
            continue
        if not isinstance(dim, str) or dim not in extra:
            has = (f"its extra dimensions are {_quoted(extra)}" if extra
                   else "it has none beyond the ones the figure draws")
            raise ValueError(f"{argument}: {dim!r} is not an extra dimension of {name} ({has})")


def _assign(extra: list[str], col, row, lines: bool, name: str):
    """Place the extra dimensions: (col, row, hue), or a ValueError naming what cannot be."""
    check_placed(extra, name, col=col, row=row)
    if col is not None and col == row:
        raise ValueError(f"col, row: the same dimension {col!r} given twice")
    free = [d for d in extra if d not in (col, row)]
    hue = None
    if lines and len(free) == 1:
        hue = free.pop()
    elif not lines and len(free) == 1 and (col is None or row is None):
        if col is None:
            col = free.pop()
        else:
            row = free.pop()
    if free:
        slots = [a for a, d in (("col", col), ("row", row)) if d is None]
        capacity = len(slots) + (1 if lines else 0)
        how = "one line per label, " if lines else ""
        if len(free) <= capacity:
            needed = len(free) - (1 if lines else 0)
            ask = (" and " if needed == len(slots) else " or ").join(f"{a}=" for a in slots)
            example = ", ".join(f"{a}={d!r}" for a, d in zip(slots[:needed], free, strict=False))
            rest = (f"; {free[-1]!r} is then drawn as one line per label" if lines else "")
            raise ValueError(
                f"{name}: the extra dimensions {_quoted(free)} cannot all be drawn on one "
                f"Axes: pass {ask} to lay them out on a grid of panels (e.g. {example}{rest}), "
                f"or select one slice with .sel(...)")
        raise ValueError(
            f"{name}: too many extra dimensions for one figure: {_quoted(free)} left over (a "
            f"figure shows {how}col= and row=); select slices with .sel({free[-1]}=...) or "
            f"reduce these dimensions first")
    return col, row, hue


def _labels(obj, dim: str) -> list[str]:
    return [str(v) for v in np.asarray(obj[dim].values).tolist()]


def _overlay(ax, draw, obj, hue: str, base: dict, facet_title: str | None) -> str:
    """One slice per label of ``hue`` on ``ax``; returns the figure's general title."""
    labels = _labels(obj, hue)
    general = ""
    for i, label in enumerate(labels):
        panel = Panel(label=label, colour=f"C{i % 10}", index=i, count=len(labels),
                      facet=facet_title, labels=tuple(labels))
        draw(ax, {**base, hue: i}, panel)
        general = panel.general or general
    legend = ax.get_legend()
    if legend is not None:
        legend.set_title(hue, prop={"size": "small"})
    return general


def _panel_size(figsize) -> tuple[float, float]:
    width, height = figsize
    return min(width, 5.0), max(min(height, 4.5), 3.2)


def facet(obj, draw: Callable[[Any, dict, Panel], Any], *, core: Collection[Hashable],
          name: str = "result", ax=None, col: str | None = None, row: str | None = None,
          variables: Sequence[str] = (), lines: bool = False,
          figsize: tuple[float, float] = (8, 4), sharex: bool | None = None,
          sharey: bool | None = None, colorbar: bool = False):
    """Draw ``obj`` (a result, possibly with extra dimensions) on one Axes or a grid.

    Parameters
    ----------
    obj : xarray.Dataset or xarray.DataArray
        The result; its dimensions beyond ``core`` are the extra ones.
    draw : callable
        ``draw(ax, indexers, panel)`` draws the slice ``obj.isel(indexers)`` on ``ax`` as
        :class:`Panel` ``panel`` says; it may return a mappable (an image), given one colour bar
        for the grid when ``colorbar``.
    core : collection of str
        The dimensions the figure itself draws.
    name : str
        The argument named in errors.
    variables : sequence of str, optional
        The variables of a Dataset the figure reads: the extra dimensions are theirs (a
        study's per-trial variables, say, are not drawn and add none). Default: all.
    ax : matplotlib Axes, optional
        Where to draw one Axes; refused for a grid (which makes its own figure).
    col, row : str, optional
        Extra dimensions laid out along the columns and rows of a grid.
    lines : bool
        Whether the figure can overlay slices (one line per label of one extra dimension);
        otherwise one extra dimension goes to the columns (rows when ``col`` is taken).
    figsize : tuple of float
        Size of a one-Axes figure; a panel of a grid is at most 5 × 4.5 inches.
    sharex, sharey : bool or None
        Shared axes of the panels of a grid: ``True`` or ``False``, or ``None`` to decide from
        the panels once drawn (:func:`share_axis`, with the numbers of points of the slices:
        the coordinate ``n_samples``, or the values present along ``sample``).
    colorbar : bool
        One colour bar for the whole grid, from the mappable returned by ``draw``.

    Returns
    -------
    matplotlib Axes or FacetGrid
        One Axes without ``col`` / ``row`` (and no extra dimension left for a grid), else the
        grid.

    Raises
    ------
    ValueError
        For ``col`` / ``row`` that are not extra dimensions, for extra dimensions that cannot
        be placed, and for ``ax`` with a grid.

    Examples
    --------
    >>> import xarray as xr
    >>> data = xr.DataArray([[1.0, 2.0], [2.0, 3.0]], dims=("model", "k"),
    ...                     coords={"model": ["a", "b"]})
    >>> def draw(ax, indexers, panel):
    ...     ax.plot(data.isel(indexers).values, label=panel.data_label("data"))
    ...     ax.legend()
    >>> ax = facet(data, draw, core=("k",), lines=True)
    >>> [t.get_text() for t in ax.get_legend().get_texts()]
    ['a', 'b']
    >>> facet(data, draw, core=("k",), col="model").axes.shape
    (1, 2)
    """
    import matplotlib.pyplot as plt

    sharex, sharey = (_check_share(v, n) for v, n in ((sharex, "sharex"), (sharey, "sharey")))
    extra = undrawn_dims(obj[list(variables)] if variables else obj, core)
    col, row, hue = _assign(extra, col, row, lines, name)
    if col is None and row is None:
        ax = new_axes(ax, figsize=figsize)
        if hue is None:
            draw(ax, {}, Panel())
        else:
            _overlay(ax, draw, obj, hue, {}, None)
        return ax
    if ax is not None:
        placed = ", ".join(f"{a}={d!r}" for a, d in (("col", col), ("row", row)) if d)
        raise ValueError(f"ax: a grid of panels ({placed}) makes its own figure: pass ax=None, "
                         "or select one slice with .sel(...) to draw on ax")
    col_labels = _labels(obj, col) if col else [None]
    row_labels = _labels(obj, row) if row else [None]
    width, height = _panel_size(figsize)
    fig, grid = plt.subplots(len(row_labels), len(col_labels), squeeze=False,
                             figsize=(width * len(col_labels), height * len(row_labels) + 0.4),
                             sharex=bool(sharex), sharey=bool(sharey), layout="constrained")
    names = np.empty(grid.shape, dtype=object)
    general, mappable = "", None
    for i, r in enumerate(row_labels):
        for j, c in enumerate(col_labels):
            base = {d: k for d, k in ((row, i), (col, j)) if d}
            names[i, j] = {d: lab for d, lab in ((row, r), (col, c)) if d}
            title = ", ".join(f"{d} = {lab}" for d, lab in names[i, j].items())
            if hue is None:
                panel = Panel(facet=title)
                found = draw(grid[i, j], base, panel)
                mappable = found if found is not None else mappable
                general = panel.general or general
            else:
                general = _overlay(grid[i, j], draw, obj, hue, base, title) or general
    _figure_legend(fig, grid, hue)
    if sharex is None or sharey is None:
        counts = _panel_counts(obj, variables, grid.shape, row, col)
        if sharex is None:
            sharex = share_axis(grid.ravel(), "x", counts) and _join(grid, "x")
        if sharey is None:
            sharey = share_axis(grid.ravel(), "y", counts) and _join(grid, "y")
    for a in grid.ravel():
        _label_outer(a, ("x" if sharex else "") + ("y" if sharey else ""))
    if colorbar and mappable is not None:
        fig.colorbar(mappable, ax=grid.ravel().tolist(), label=mappable.get_label(),
                     shrink=0.9)
    if general:
        fig.suptitle(general)
    return FacetGrid(fig=fig, axes=grid, row=row, col=col, hue=hue, name_dicts=names)


def _check_share(value, name: str) -> bool | None:
    if value is None or isinstance(value, (bool, np.bool_)):
        return None if value is None else bool(value)
    raise ValueError(f"{name}: expected True, False or None (decide from the panels), got "
                     f"{value!r}")


def _sample_counts(obj, variables: Sequence[str]):
    """The number of points of each slice of ``obj``: its coordinate ``n_samples``, else the
    values present along ``sample`` (of its first variable read); ``None`` when unknown."""
    if "n_samples" in obj.coords:
        return obj.coords["n_samples"]
    data = obj
    if hasattr(obj, "data_vars"):
        names = list(variables) or list(obj.data_vars)
        if not names:
            return None
        data = obj[names[0]]
    if "sample" not in data.dims:
        return None
    return data.notnull().sum("sample")


def _panel_counts(obj, variables: Sequence[str], shape: tuple[int, int], row: str | None,
                  col: str | None) -> list[float] | None:
    """The number of points of each panel (the largest of its overlaid slices), in the order
    of ``grid.ravel()``; ``None`` when unknown for one of them."""
    counts = _sample_counts(obj, variables)
    if counts is None:
        return None
    out = []
    for i in range(shape[0]):
        for j in range(shape[1]):
            base = {d: k for d, k in ((row, i), (col, j)) if d and d in counts.dims}
            values = np.asarray(counts.isel(base).values, dtype=np.float64)
            values = values[np.isfinite(values)]
            if values.size == 0:
                return None
            out.append(float(values.max()))
    return out


def share_axis(axes: Sequence[Any], which: str, counts: Sequence[float] | None = None) -> bool:
    """Whether the panels ``axes`` (drawn each on its own scale) should share their ``which``
    axis (``"x"`` or ``"y"``): the default of ``sharex`` / ``sharey`` (``None``).

    They share it when their limits agree anyway. Otherwise each keeps its own scale when
    their scales differ (log and linear), when their numbers of points ``counts`` (one per
    panel, when known) differ by more than a factor :data:`SHARE_SIZE_RATIO` (2), when the
    ranges of two panels have no value in common, or when the range of one panel covers less
    than :data:`SHARE_RANGE_FRACTION` (a fifth) of the range of all panels together, measured
    on the axis' scale (in decades on a logarithmic axis): the counts of a set of 265 points
    next to those of a set of 5000, or uncertainties of 0.1–0.2 next to 1–2, would be squeezed
    into a corner of a shared axis.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> _, (a, b) = plt.subplots(1, 2)
    >>> _ = a.plot([0, 1], [0, 1]), b.plot([0, 1], [0, 0.9])
    >>> share_axis([a, b], "y"), share_axis([a, b], "y", counts=[5000, 265])
    (True, False)
    >>> _ = b.plot([0, 1], [0, 50])
    >>> share_axis([a, b], "y"), share_axis([a, b], "x")
    (False, True)
    """
    if which not in ("x", "y"):
        raise ValueError(f"which: expected 'x' or 'y', got {which!r}")
    axes = list(axes)
    if len(axes) < 2:
        return True
    limits = np.array([sorted(a.get_xlim() if which == "x" else a.get_ylim()) for a in axes],
                      dtype=np.float64)
    if np.allclose(limits, limits[0], rtol=1e-9, atol=0.0):
        return True
    scales = {a.get_xscale() if which == "x" else a.get_yscale() for a in axes}
    if len(scales) > 1:
        return False
    if counts is not None:
        counts = np.asarray(counts, dtype=np.float64)
        if counts.min() <= 0 or counts.max() > SHARE_SIZE_RATIO * counts.min():
            return False
    axis = axes[0].xaxis if which == "x" else axes[0].yaxis
    with np.errstate(all="ignore"):
        scaled = axis.get_transform().transform(limits.reshape(-1, 1)).reshape(limits.shape)
    if not np.all(np.isfinite(scaled)):
        return False
    if scaled[:, 0].max() > scaled[:, 1].min():  # two ranges without a common value
        return False
    spans = scaled[:, 1] - scaled[:, 0]
    union = scaled[:, 1].max() - scaled[:, 0].min()
    return bool(spans.min() >= SHARE_RANGE_FRACTION * union)


def _join(grid: np.ndarray, which: str) -> bool:
    """Share the ``which`` axis of the panels drawn on their own, as ``plt.subplots(sharex=
    True)`` would have: autoscaled over all panels when every panel autoscales it, else the
    union of their limits. Returns True."""
    panels = list(grid.ravel())
    leader = panels[0]
    autoscaled = all(a.get_autoscalex_on() if which == "x" else a.get_autoscaley_on()
                     for a in panels)
    limits = np.array([sorted(a.get_xlim() if which == "x" else a.get_ylim()) for a in panels])
    for a in panels[1:]:
        (a.sharex if which == "x" else a.sharey)(leader)
    if autoscaled:
        leader.autoscale_view(scalex=which == "x", scaley=which == "y")
    else:
        bounds = (limits[:, 0].min(), limits[:, 1].max())
        (leader.set_xlim if which == "x" else leader.set_ylim)(*bounds)
    return True


def _label_outer(ax, which: str) -> None:
    """Tick labels and axis label of the shared ``which`` axes (``"x"``, ``"y"``, ``"xy"``)
    only on the outer panels (bottom row, first column), the ticks kept."""
    spec = ax.get_subplotspec()
    if spec is None:
        return
    if "x" in which and not spec.is_last_row():
        ax.set_xlabel("")
        ax.xaxis.set_tick_params(which="both", labelbottom=False)
        ax.xaxis.offsetText.set_visible(False)
    if "y" in which and not spec.is_first_col():
        ax.set_ylabel("")
        ax.yaxis.set_tick_params(which="both", labelleft=False)
        ax.yaxis.offsetText.set_visible(False)


def _figure_legend(fig, grid: np.ndarray, hue: str | None) -> None:
    """One legend for the figure (the union of the panels' entries) instead of one per panel."""
    handles, labels = [], []
    for a in grid.ravel():
        legend = a.get_legend()
        if legend is None:
            continue
        artists = dict(zip(*reversed(a.get_legend_handles_labels()), strict=True))
        for proxy, text in zip(legend.legend_handles, legend.get_texts(), strict=True):
            if text.get_text() not in labels:  # the drawn artist keeps its markers and bars
                handles.append(artists.get(text.get_text(), proxy))
                labels.append(text.get_text())
        legend.remove()
    if handles:
        fig.legend(handles, labels, loc="outside right upper", fontsize="small", title=hue,
                   markerscale=1.5)


def without_absent_points(ds, E: str, uE: str, like=None):
    """``ds`` without the points where both ``E`` and ``uE`` (of ``like``, by default ``ds``
    itself: another Dataset over the same points) are NaN: the padding of sets of different
    lengths put together along an extra dimension (``xr.concat``).

    Examples
    --------
    >>> import xarray as xr
    >>> ds = xr.Dataset({"E": ("sample", [1.0, np.nan]), "uE": ("sample", [1.0, np.nan])})
    >>> without_absent_points(ds, "E", "uE").sizes["sample"]
    1
    """
    like = ds if like is None else like
    absent = np.asarray(np.isnan(like[E].values) & np.isnan(like[uE].values))
    if absent.ndim != 1 or not absent.any():
        return ds
    return ds.isel(sample=np.flatnonzero(~absent))


def slice_value(one, name: str) -> float:
    """``name`` of one slice of a result: its variable when the result holds one value per
    slice, else its attribute (the same for all slices).

    Examples
    --------
    >>> import xarray as xr
    >>> slice_value(xr.Dataset(attrs={"target": 1}), "target")
    1.0
    """
    return float(one[name].item() if name in one.variables else one.attrs[name])
