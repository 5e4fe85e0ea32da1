"""Shared helpers of the figures."""

from __future__ import annotations

import functools

import numpy as np

#: One colour and marker per scheme family; Sim2 schemes are drawn with open markers.
SCHEME_STYLE = {"BS": ("black", "o"), "Sim": ("tab:blue", "s"), "Sim2": ("tab:orange", "D")}
GENERATOR_COLOURS = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple")
#: Markers and line styles of series told apart by something other than their colour.
MARKERS = ("o", "s", "D", "^", "v", "P")
LINESTYLES = ("-", "--", ":", "-.")


def series_colour(i: int) -> str:
    """The ``i``-th colour of :data:`GENERATOR_COLOURS` (cycling)."""
    return GENERATOR_COLOURS[i % len(GENERATOR_COLOURS)]


def positive(*arrays) -> bool:
    """Whether the finite values of ``arrays`` are all positive (and there is one at least):
    what a logarithmic axis needs.

    Examples
    --------
    >>> positive([0.5, np.nan], [2.0]), positive([0.0, 1.0]), positive([np.nan])
    (True, False, False)
    """
    values = np.concatenate([np.ravel(np.asarray(a, dtype=np.float64)) for a in arrays])
    values = values[np.isfinite(values)]
    return values.size > 0 and bool(np.all(values > 0))


def axes(ax=None, *, figsize=(8, 4)):
    """``ax`` itself, or the Axes of a new figure (constrained layout)."""
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    _, ax = plt.subplots(figsize=figsize, layout="constrained")
    return ax


def require(result, variables, producer: str, name: str = "result") -> None:
    """Refuse, with a ValueError naming ``name``, anything but a Dataset holding ``variables``
    (the output of ``producer``): a wrong object used to end in AttributeError or KeyError
    deep inside matplotlib code.

    Examples
    --------
    >>> import xarray as xr
    >>> require(xr.Dataset(), ("zeta",), "xuqcal.validate")
    Traceback (most recent call last):
    ValueError: result: expected the output of xuqcal.validate (a Dataset with zeta), got a \
Dataset without zeta
    """
    import xarray as xr

    if not isinstance(result, xr.Dataset):
        raise ValueError(f"{name}: expected the output of {producer} (a Dataset with "
                         f"{', '.join(variables)}), got {type(result).__name__}")
    missing = [v for v in variables if v not in result.variables]
    if missing:
        raise ValueError(f"{name}: expected the output of {producer} (a Dataset with "
                         f"{', '.join(variables)}), got a Dataset without {', '.join(missing)}")


def error_bars(value, low, high) -> np.ndarray:
    """``yerr`` of :meth:`matplotlib.axes.Axes.errorbar` for intervals ``[low, high]`` around
    ``value``: the distances to the bounds, never negative. A bound equal to the value up to
    rounding (a degenerate interval of constant data), or an estimate outside its own interval
    (which the results flag), would otherwise make matplotlib refuse the whole figure. NaN
    bounds stay NaN (no bar).

    Examples
    --------
    >>> error_bars([0.36], [0.36 + 1e-16], [0.5]).round(2).tolist()
    [[0.0], [0.14]]
    """
    value, low, high = (np.asarray(v, dtype=np.float64) for v in (value, low, high))
    return np.stack([np.maximum(value - low, 0.0), np.maximum(high - value, 0.0)])


def fraction_valid_detail(one, symbol: str = "f_v") -> str:
    """``f_v = 0.90 [0.74, 0.97]``: the fraction of valid bins of one (slice of a) result with
    its interval (``fraction_valid``, ``fraction_valid_low``, ``fraction_valid_high``),
    named ``symbol``."""
    fv, lo, hi = (float(one[v]) for v in ("fraction_valid", "fraction_valid_low",
                                          "fraction_valid_high"))
    return f"{symbol} = {fv:.2f} [{lo:.2f}, {hi:.2f}]"


def bins_by_validity(ax, p, x, value, yerr, valid, detail: str = "", **style) -> None:
    """Per-bin values with error bars ``yerr`` (shape ``(2, n)``) split by ``valid``: for one
    set, valid bins in blue and invalid ones in crimson; for a slice overlaid with others
    (:class:`~xuqcal.plot.facets.Panel` ``p``), all in the slice's colour, invalid bins as
    open markers, the slice's legend entry (with ``detail``) on its valid bins if any.
    ``style``: the other arguments of :meth:`matplotlib.axes.Axes.errorbar`."""
    yerr = np.asarray(yerr)
    if p.overlaid:
        labelled = bool(valid.any())
        for mask, filled in ((valid, True), (~valid, False)):
            if mask.any():
                ax.errorbar(x[mask], value[mask], yerr=yerr[:, mask], color=p.colour,
                            mfc=p.colour if filled else "none",
                            label=p.data_label(None, detail) if filled == labelled else None,
                            **style)
        return
    for mask, colour, label in ((valid, "tab:blue", "valid bin"),
                                (~valid, "crimson", "invalid bin")):
        if mask.any():
            ax.errorbar(x[mask], value[mask], yerr=yerr[:, mask], color=colour, label=label,
                        **style)


def _log_tick_candidates(vmin: float, vmax: float):
    """Tick sets of a log axis over ``[vmin, vmax]``, from the plainest (decades) to the
    densest (every 1-9 × 10^k)."""
    lo, hi = int(np.floor(np.log10(vmin))) - 1, int(np.ceil(np.log10(vmax))) + 1
    decades = 10.0 ** np.arange(lo, hi + 1)

    def inside(ticks):
        ticks = np.asarray(ticks, dtype=np.float64)
        return ticks[(ticks >= vmin * (1 - 1e-9)) & (ticks <= vmax * (1 + 1e-9))]

    yield inside(decades)
    for subs in ((1.0, 2.0, 5.0), (1.0, 3.0), (1.0, 2.0, 3.0, 5.0), tuple(range(1, 10))):
        yield inside(np.outer(decades, subs).ravel())


@functools.lru_cache(maxsize=4096)
def _text_width(text: str, size: float) -> float:
    """Width in points of ``text`` (mathtext when it starts with ``$``) at font ``size``."""
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import text_to_path

    width, _, _ = text_to_path.get_text_width_height_descent(
        text, FontProperties(size=size), ismath=text.startswith("$"))
    return float(width)


def _label_extent(value: float, along_x: bool, size: float) -> float:
    """Extent in points of the label of tick ``value`` along its axis, with a gap of half a
    font size."""
    if not along_x:
        return 1.4 * size
    return _text_width(_log_formatter()(value), size) + 0.5 * size


def _fits(ticks: np.ndarray, vmin: float, vmax: float, length: float, along_x: bool,
          size: float) -> bool:
    """Whether the labels of ``ticks`` leave room between each other on an axis of ``length``
    points over ``[vmin, vmax]`` (log scale)."""
    if ticks.size < 2:
        return True
    span = np.log10(vmax / vmin)
    position = np.log10(ticks / vmin) / span * length
    extent = np.array([_label_extent(t, along_x, size) for t in ticks])
    return bool(np.all(np.diff(position) >= (extent[1:] + extent[:-1]) / 2))


def log_ticks(vmin: float, vmax: float, length: float = 300.0, *, along_x: bool = True,
              size: float = 10.0) -> np.ndarray:
    """Major tick positions of a log axis over ``[vmin, vmax]`` whose labels do not overlap
    on an axis ``length`` points long (labels of ``size`` points, side by side along x,
    stacked along y): decades when at least 3 fit (every k-th decade when they do not), else
    1-2-5, 1-3, 1-2-3-5 or 1-9 × 10^k, else plain linear steps (a range narrower than 10 %).

    Examples
    --------
    >>> log_ticks(0.13, 1.75).tolist()
    [0.2, 0.5, 1.0]
    >>> log_ticks(1e-6, 1e6, 150).tolist()
    [1e-06, 0.001, 1.0, 1000.0, 1000000.0]
    """
    from matplotlib.ticker import MaxNLocator

    def fits(ticks):
        return _fits(ticks, vmin, vmax, length, along_x, size)

    candidates = list(_log_tick_candidates(vmin, vmax))
    decades = candidates[0]
    if decades.size > 2 and not fits(decades):
        exponents = np.round(np.log10(decades)).astype(int)
        for stride in range(2, decades.size):
            thinned = decades[exponents % stride == 0]
            if fits(thinned):
                return thinned
        return decades[[0, -1]]
    for ticks in candidates:
        if ticks.size >= 3 and fits(ticks):
            return ticks
    fitting = [t for t in candidates if t.size >= 2 and fits(t)]
    if fitting:
        return max(fitting, key=lambda t: t.size)
    for n_bins in range(6, 0, -1):
        linear = MaxNLocator(nbins=n_bins, steps=[1, 2, 2.5, 5, 10]).tick_values(vmin, vmax)
        linear = linear[(linear > 0) & (linear >= vmin * (1 - 1e-9))
                        & (linear <= vmax * (1 + 1e-9))]
        if fits(linear):
            return linear
    return linear[:1]


def _log_locator():
    from matplotlib.ticker import LogLocator

    class ReadableLogLocator(LogLocator):
        """Major ticks of a log axis (:func:`log_ticks`) whose labels leave room between each
        other for the axis length and the tick label font size."""

        def tick_values(self, vmin, vmax):
            vmin, vmax = sorted((float(vmin), float(vmax)))
            if not (np.isfinite(vmin) and np.isfinite(vmax)) or vmax <= 0:
                return super().tick_values(vmin, vmax)
            vmin = vmin if vmin > 0 else vmax * 1e-3
            if vmax <= vmin:
                return np.array([vmin])
            axis = self.axis
            if axis is None or axis.axes is None:
                return log_ticks(vmin, vmax)
            import matplotlib as mpl
            from matplotlib.font_manager import FontProperties

            name = axis.axis_name
            size = FontProperties(size=mpl.rcParams[f"{name}tick.labelsize"]).get_size_in_points()
            box = axis.axes.bbox
            length = (box.width if name == "x" else box.height) * 72.0 / axis.figure.dpi
            return log_ticks(vmin, vmax, length, along_x=name == "x", size=size)

    return ReadableLogLocator()


def _log_formatter():
    from matplotlib.ticker import Formatter

    class ReadableLogFormatter(Formatter):
        """Plain numbers from 0.001 to 9999 (``0.5``, ``20``), ``m×10^k`` beyond."""

        def __call__(self, x, pos=None):
            if not np.isfinite(x) or x <= 0:
                return ""
            exponent = int(np.floor(np.log10(x) + 1e-9))
            if -3 <= exponent <= 3:
                return f"{x:.6g}"
            mantissa = float(f"{x / 10.0 ** exponent:.6g}")
            if mantissa == 1.0:
                return rf"$\mathdefault{{10^{{{exponent}}}}}$"
            return rf"$\mathdefault{{{mantissa:g}\times10^{{{exponent}}}}}$"

    return ReadableLogFormatter()


def log_axis(ax, which: str = "x") -> None:
    """Logarithmic ``which`` axis (``"x"``, ``"y"`` or ``"xy"``) whose tick labels never
    overlap: labelled major ticks spaced for the axis length (:func:`log_ticks`), unlabelled
    minor ticks. matplotlib's default labels minor ticks on ranges of one or two decades
    (``2×10⁻¹ 3×10⁻¹ 4×10⁻¹ ...``), which run into each other on a small figure.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> ax = plt.figure().add_subplot()
    >>> _ = ax.plot([0.13, 1.75], [1, 2])
    >>> log_axis(ax, "x")
    >>> ax.get_xscale(), ax.get_xticks().tolist()
    ('log', [0.2, 0.5, 1.0])
    """
    from matplotlib.ticker import LogLocator, NullFormatter

    for name in which:
        if name not in "xy":
            raise ValueError(f"which: expected 'x', 'y' or 'xy', got {which!r}")
        (ax.set_xscale if name == "x" else ax.set_yscale)("log")
        axis = ax.xaxis if name == "x" else ax.yaxis
        axis.set_major_locator(_log_locator())
        axis.set_major_formatter(_log_formatter())
        axis.set_minor_locator(LogLocator(base=10.0, subs=np.arange(2, 10), numticks=12))
        axis.set_minor_formatter(NullFormatter())
