"""A complete, readable validation report: one HTML page with its figures and NetCDF results.

:func:`report` runs every analysis that applies to a data set — validation of the statistics
(every scheme, ζ and verdict), distribution diagnostics, z-scores with running statistics and
local analyses (LZM/LZMS with f_v) along uE and each feature, the reliability diagram and the
confidence curve with its reference — and writes::

    <folder>/index.html          the page (inline style, no external resource)
    <folder>/figures/*.png       one figure per analysis (*.svg with figure_format="svg")
    <folder>/results/*.nc        the numbers behind the page (NetCDF-4)
    <folder>/.xuqcal-manifest.json   the files above with their SHA-256: with ``overwrite``,
                                 only these are ever replaced or removed

Data with extra dimensions (sets stacked by :func:`xuqcal.stack_datasets` along ``dataset``,
models, tasks, ...; see :mod:`xuqcal.analysis.slices`) or a DataTree of data sets give one page:
a summary across the data sets (:func:`~xuqcal.analysis.tables.slices_summary` of one
broadcast :func:`~xuqcal.validate`, and their ζ-scores one panel per data set), then one
section per data set, headed by :func:`~xuqcal.analysis.tables.slice_title`
(``dataset = b (M = 3834)``), with the content of the report of that data set alone on its
present points. Its figures and results are named after its labels
(``figures/dataset-b_zeta.png``, ``results/dataset-b_validation.nc``); a table of contents
links to each section.

Figures are shown at their natural size: a figure of w × h inches is w × h × 96 CSS pixels
(the CSS inch), so its fonts and legends have the size matplotlib gave them; PNG figures are
rendered at ``dpi`` pixels per inch (default ``defaults.REPORT_DPI`` = 192, twice the CSS
resolution, sharp on HiDPI screens), SVG figures are vector graphics (their rasterized parts,
such as the z-score scatter, at ``dpi``).

**Comparison of models.** A page of several sets stacked along one dimension (the CLI's
several files along ``dataset``, a NetCDF's ``model``, ...) that *share samples* also compares
them, in a section "Comparison of models" at the end of the summary (before the section of
each set). The sets share samples when the input is one Dataset with exactly one extra
dimension holding at least 2 sets, and the points present in every set (``E`` and ``uE``
given, the rule of ``pairing="common"``) are at least :data:`COMPARISON_MIN_SHARED` (half)
of each set's present points, and at least 2. Sets stacked by position (the rows of CSV
files) or by the labels of ``sample`` share the points that line up. A DataTree, data with
several extra dimensions, or sets sharing fewer points give no comparison (a sentence in the
summary says why for the last). The comparison is :func:`xuqcal.compare` (a paired bootstrap
on the common points; the points of a set absent from another are left out and counted),
:func:`xuqcal.paired_scores` (mean CRPS, NLL and interval score, Diebold–Mariano p-values)
and :func:`xuqcal.sip_matrix` of the CRPS, with the report's seed, ``level =
defaults.LEVEL``, its ``n_bins`` and its ``n_boot`` (for ``"auto"``:
``defaults.N_BOOT_RELIABILITY`` replicates, the cap of the report's other bootstraps), on the
report's statistics that can be compared (``zms`` always; the defaults of
:func:`xuqcal.compare` when none are given). It shows a ranking table per statistic (models by
expected rank, estimate, distance, P(best), the models each is significantly better than),
the mean scores, the forest plot of the differences, the heat map of the rank probabilities
of ``zms`` and the SIP matrix; and writes ``results/comparison.nc`` (the result of
:func:`xuqcal.compare`), ``results/comparison_scores.nc`` and ``results/comparison_sip.nc``.

The local analyses use the one bin-count rule of :mod:`xuqcal.core.binning`
(:func:`~xuqcal.core.binning.recommended_n_bins`: at least
``defaults.MIN_POINTS_PER_BIN_LOCAL`` points per bin), and so does the reliability diagram;
the z-score plots use the default window of :func:`xuqcal.analysis.running.default_window`.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from xuqcal import io
from xuqcal.analysis.precision import AUTO, capped_count, is_auto
from xuqcal.analysis.slices import DATASET_DIM, extra_dims, slice_label
from xuqcal.analysis.tables import (
    SIZE_COORD,
    slice_dims,
    slice_size,
    slice_title,
    slices_summary,
)
from xuqcal.core import defaults
from xuqcal.core.binning import recommended_n_bins
from xuqcal.core.provenance import provenance as _provenance
from xuqcal.io import outputs as _outputs
from xuqcal.io.schema import present_points, slice_positions, standard_names
from xuqcal.io.stacking import SOURCE_COORD

#: CSS pixels per inch (the CSS reference pixel): a figure of w inches is shown w * 96 px wide.
CSS_PX_PER_INCH = 96
#: File formats of the report's figures.
FIGURE_FORMATS = ("png", "svg")
#: Range of ``dpi`` accepted by :func:`report` (pixels per inch).
DPI_RANGE = (20, 1200)
#: Layout limits of a page of several data sets: the longest key of a slice (its file-name
#: prefix and section id), the labels listed in the default title, and the panels of the
#: summary's ζ figure (beyond them, the ζ-scores are only in each data set's section).
_MAX_KEY_LENGTH = 60
_MAX_TITLE_LABELS = 6
_MAX_SUMMARY_PANELS = 6
#: The least fraction of each set's present points that must be present in every set for a
#: page of several sets to compare them ("Comparison of models", see the module's notes).
COMPARISON_MIN_SHARED = 0.5
#: The point-wise score of the comparison's SIP matrix.
COMPARISON_SIP_SCORE = "crps"
#: The files the comparison of models writes (relative to the report folder; figures without
#: their suffix).
_COMPARISON_FIGURES = ("comparison_forest", "comparison_rank_zms", "comparison_sip")
_COMPARISON_RESULTS = ("comparison", "comparison_scores", "comparison_sip")

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 84em; color: #222;
       padding: 0 1em; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
h2 { font-size: 1.25em; border-bottom: 1px solid #ccc; }
h3 { font-size: 1.05em; }
nav.contents { font-size: 0.95em; } nav.contents p { font-weight: bold; margin-bottom: 0; }
section { margin-bottom: 2em; }
p.source { font-size: 0.85em; color: #666; margin-top: 0; word-break: break-all; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.9em; }
th, td { border: 1px solid #ddd; padding: 0.25em 0.6em; text-align: right; }
th { background: #f3f3f3; } td.text { text-align: left; }
td.description { text-align: left; color: #444; max-width: 40em; }
td.pass { background: #e5f5e5; } td.fail { background: #fbe4e4; }
td.other { background: #f6f1dc; }
figure { display: inline-block; margin: 0.5em; vertical-align: top; max-width: 100%; }
figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { font-size: 0.9em; color: #555; }
dl { display: grid; grid-template-columns: max-content auto; gap: 0.2em 1em; }
dt { font-weight: bold; }
"""


def _fmt(value, digits: int = 4) -> str:
    """A cell's text (escaped when the table is written): numbers to ``digits`` significant
    digits, NaN as a dash."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        return str(value)
    if math.isnan(v):
        return "–"
    return f"{v:.{digits}g}"


#: Above this ν_eff a Student-t fit is indistinguishable from a normal distribution: the
#: maximum-likelihood ν runs away (to 1e8 and more) on normal data, so larger values are shown
#: as "> 1000 (normal tails)" instead of a meaningless number.
NU_EFF_CAP = 1000


def _fmt_nu_eff(value, digits: int = 4) -> str:
    """A ν_eff cell: as :func:`_fmt`, but ``> 1000 (normal tails)`` above :data:`NU_EFF_CAP`.

    Examples
    --------
    >>> _fmt_nu_eff(5.83219), _fmt_nu_eff(3.104e8), _fmt_nu_eff(float("nan"))
    ('5.832', '> 1000 (normal tails)', '–')
    """
    try:
        v = float(value)
    except (TypeError, ValueError):
        return str(value)
    if v > NU_EFF_CAP:  # also +inf
        return f"> {NU_EFF_CAP} (normal tails)"
    return _fmt(v, digits)


def _table(df: pd.DataFrame, name: str, classes: pd.DataFrame | None = None,
           digits: int = 4) -> str:
    """``df`` as an HTML table (pandas' :class:`~pandas.io.formats.style.Styler`): the cells
    of numeric columns formatted with :func:`_fmt`, those of other columns shown as they are
    (a label ``123456`` stays one), all escaped, the index hidden, the first column
    left-aligned (CSS class ``text``), ``classes`` (same shape) added to the cells (e.g.
    ``pass``)."""
    if classes is None:
        classes = pd.DataFrame("", index=df.index, columns=df.columns)
        classes.iloc[:, 0] = "text"
    formats = {column: (lambda v: _fmt(v, digits))
               if pd.api.types.is_numeric_dtype(df[column]) else str for column in df.columns}
    return (df.style.format(formats, escape="html")
            .hide(axis="index").set_td_classes(classes).set_uuid(name).to_html())


def _text_classes(df: pd.DataFrame) -> pd.DataFrame:
    """Cell classes of a table whose first column is a name and whose ``description``
    column is text."""
    classes = pd.DataFrame("", index=df.index, columns=df.columns)
    classes.iloc[:, 0] = "text"
    classes["description"] = "description"
    return classes


def _description(variable: xr.DataArray) -> str:
    """What a diagnostic is: its ``description`` attribute (set by
    :func:`xuqcal.analysis.diagnostics.describe`), else its ``long_name``."""
    return str(variable.attrs.get("description") or variable.attrs.get("long_name", ""))


def _data_name(ds: xr.Dataset) -> str:
    """The data set's name for the page title: its ``name`` attribute, else the stem of the
    file it was read from, else what it was made from.

    Examples
    --------
    >>> _data_name(xr.Dataset(attrs={"source": "/data/sets/qm9_test.csv"}))
    'qm9_test'
    >>> _data_name(xr.Dataset(attrs={"source": "synthetic"}))
    'synthetic data'
    """
    name = ds.attrs.get("name")
    if isinstance(name, str) and name.strip():
        return name
    source = ds.attrs.get("source")
    if not isinstance(source, str) or not source.strip():
        return "data set"
    if source in ("arrays", "dataframe", "synthetic", "<stream>"):
        return {"arrays": "data from arrays", "dataframe": "data from a DataFrame",
                "synthetic": "synthetic data", "<stream>": "data from a stream"}[source]
    return Path(source).stem or source


def _bins_text(used: int, asked: int, m: int) -> str:
    """``used`` bins (:func:`~xuqcal.core.binning.recommended_n_bins`), and why when fewer than
    ``asked``."""
    if used == asked:
        return str(used)
    least = defaults.MIN_POINTS_PER_BIN_LOCAL
    return (f"{used} ({asked} asked; at most {recommended_n_bins(m, asked)} for M = {m} so that "
            f"every bin holds at least {least} points)")


def _verdict_class(verdict: str) -> str:
    from xuqcal.analysis.validation import verdict_outcome

    return verdict_outcome(verdict) or "other"


def _summary_html(overview: xr.Dataset, name: str) -> str:
    """The summary of one data set (:func:`xuqcal.summary`) as a table: question, verdict,
    evidence and advice, then the accuracy and sharpness."""
    frame = pd.DataFrame({
        "question": [str(q) for q in overview.question.values],
        "verdict": [str(v) for v in overview.verdict.values],
        "evidence": [str(v) for v in overview.evidence.values],
        "what it means": [str(v) for v in overview.advice.values]})
    classes = pd.DataFrame("text", index=frame.index, columns=frame.columns)
    classes["verdict"] = [_verdict_class(v) for v in frame["verdict"]]
    context = (f"<p>Accuracy: MAE {_fmt(float(overview.mae))}, RMSE "
               f"{_fmt(float(overview.rmse))}; sharpness: RMV {_fmt(float(overview.rmv))}; "
               f"mean CRPS of N(0, uE²) {_fmt(float(overview.crps))}.</p>")
    return _table(frame, name, classes) + "\n" + context


def _summary_analyses(local_zms: dict[str, xr.Dataset], lcp: xr.Dataset, pit_test: xr.Dataset,
                      options: _Options) -> dict[str, xr.Dataset]:
    """The report's results that :func:`xuqcal.summary` reads instead of computing them again
    (its local analyses and PIT test): those computed with the summary's settings (the
    default bins and the validation's per-bin count,
    :func:`~xuqcal.analysis.summary.local_replicates`)."""
    reused: dict[str, xr.Dataset] = {"pit_test": pit_test}
    if options.n_bins_local == defaults.N_BINS_LOCAL:
        reused.update(local_zms)
    if options.n_bins is None:
        reused["local_coverage"] = lcp
    return reused


def _summary_grid_html(summaries: Sequence[tuple[str, xr.Dataset]]) -> str:
    """The verdicts of several data sets: one row per data set, one column per question."""
    from xuqcal.analysis.summary import QUESTIONS

    frame = pd.DataFrame([[label, *(str(v) for v in one.verdict.values)]
                          for label, one in summaries], columns=["data set", *QUESTIONS])
    classes = pd.DataFrame("", index=frame.index, columns=frame.columns)
    classes["data set"] = "text"
    for question in QUESTIONS:
        classes[question] = [_verdict_class(v) for v in frame[question]]
    return _table(frame, "summary_grid", classes)


def _css_size(path: Path, figure_format: str, dpi: float) -> tuple[int, int]:
    """The natural size of a saved figure in CSS pixels, read from the file (whatever
    ``savefig.bbox`` made of it): PNG pixels scaled by ``96 / dpi``, SVG points by
    ``96 / 72``."""
    if figure_format == "png":
        with open(path, "rb") as handle:
            header = handle.read(24)  # signature, IHDR length and type, width, height
        pixels = np.frombuffer(header[16:24], dtype=">u4")
        return tuple(round(int(v) * CSS_PX_PER_INCH / dpi) for v in pixels)
    import xml.etree.ElementTree as ET

    root = ET.parse(path).getroot()
    return tuple(round(float(root.attrib[k].removesuffix("pt")) * CSS_PX_PER_INCH / 72)
                 for k in ("width", "height"))


def _check_figure_format(figure_format: object) -> str:
    if not isinstance(figure_format, str) or figure_format.lower() not in FIGURE_FORMATS:
        raise ValueError(f"figure_format: expected one of {', '.join(FIGURE_FORMATS)}, got "
                         f"{figure_format!r}")
    return figure_format.lower()


def _check_dpi(dpi: object) -> float:
    low, high = DPI_RANGE
    if isinstance(dpi, bool) or not isinstance(dpi, int | float | np.integer | np.floating) \
            or not low <= dpi <= high:
        raise ValueError(f"dpi: expected a resolution in pixels per inch from {low} to {high} "
                         f"(the page shows figures at 96 px per inch; {defaults.REPORT_DPI} "
                         f"is sharp on HiDPI screens), got {dpi!r}")
    return float(dpi)


def _check_count_argument(value: object, name: str) -> int | str:
    """``n_boot`` or ``n_mc`` of :func:`report`: a positive integer or ``"auto"`` (the
    validation checks the rest, e.g. enough replicates for its level)."""
    if isinstance(value, str):
        if not is_auto(value):
            raise ValueError(f"{name}: expected a number of replicates or {AUTO!r} (as many as "
                             f"mc_precision needs), got {value!r}")
        return AUTO
    return _check_bins_argument(value, name)


def _check_bins_argument(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise ValueError(f"{name}: expected a positive integer, got {value!r}")
    return int(value)


class _Writer:
    """Collects figures and results in the report folder (each file written atomically and
    recorded in the folder's manifest, see :mod:`xuqcal.io.outputs`)."""

    def __init__(self, folder: Path, *, overwrite: bool = False, inputs: Sequence[Path] = (),
                 figure_format: str = defaults.REPORT_FIGURE_FORMAT,
                 dpi: float = defaults.REPORT_DPI) -> None:
        self.folder = folder
        self.figure_format = figure_format
        self.dpi = dpi
        self.managed = _outputs.ManagedFolder(folder, overwrite=overwrite, inputs=inputs)
        # (section, file, caption, CSS width, CSS height)
        self.figures: list[tuple[str, str, str, int, int]] = []
        # (group: the key of the data set, "" for the page's own, file)
        self.results: list[tuple[str, str]] = []
        # (heading of the data set, its summary: xuqcal.summary), for the grid of several
        self.summaries: list[tuple[str, xr.Dataset]] = []

    def figure(self, section: str, name: str, ax, caption: str) -> None:
        """Save ``ax``'s figure as ``figures/<name>.<format>`` (``dpi`` pixels per inch for
        PNG and the rasterized parts of SVG) and close it; shown at ``CSS_PX_PER_INCH``."""
        import matplotlib.pyplot as plt

        file = f"figures/{name}.{self.figure_format}"
        figure = ax.figure
        tmp = self.managed.temporary(file)
        try:
            # no creation date in the file: the same figure gives the same bytes
            metadata = {"Date": None} if self.figure_format == "svg" else None
            try:
                figure.savefig(tmp, dpi=self.dpi, format=self.figure_format,
                               metadata=metadata)
            except OSError as error:  # e.g. a full disk: name the figure and the errno
                raise self.managed.write_error(error, file) from error
            width, height = _css_size(tmp, self.figure_format, self.dpi)
            self.managed.commit(file, tmp)
        finally:
            plt.close(figure)
            tmp.unlink(missing_ok=True)
        self.figures.append((section, file, caption, width, height))

    def result(self, name: str, ds: xr.Dataset, group: str = "") -> None:
        """Write ``ds`` as ``results/<name>.nc``, listed under ``group`` (a data set's key)."""
        file = f"results/{name}.nc"
        try:
            io.to_netcdf(ds, self.managed.target(file), overwrite=True)
        except OSError as error:  # named by its place in the report, not the staging folder
            if error.errno not in _outputs.WRITE_ERRNOS:
                raise
            raise self.managed.write_error(error, file) from error
        self.managed.commit(file)
        self.results.append((group, file))

    def page(self, text: str) -> Path:
        path = self.managed.write_text("index.html", text)
        self.managed.close()
        return path

    def __enter__(self) -> _Writer:
        return self

    def __exit__(self, kind, value, tb) -> None:
        if kind is not None:  # an error or Ctrl-C: nothing of this run is left in the folder
            self.managed.abort()

    def figures_html(self, section: str) -> str:
        """The ``<figure>`` elements of a section: each image at its natural CSS size (width
        and height attributes; narrower only when the window is)."""
        return "".join(
            f'<figure style="width: {width}px"><img src="{html.escape(file)}" '
            f'width="{width}" height="{height}" alt="{html.escape(caption)}">'
            f"<figcaption>{html.escape(caption)}</figcaption></figure>"
            for sec, file, caption, width, height in self.figures if sec == section
        )


def _report_features(ds: xr.Dataset, features: Sequence[str] | None, E: str | None = None,
                     uE: str | None = None, labels: dict[str, Any] | None = None) -> list[str]:
    """The conditioning variables of the report of ``ds``: ``features``, else every numeric
    data variable but ``E`` and ``uE`` (``labels`` name the slice in errors)."""
    if features is None:
        E, uE = io.roles(ds, E, uE)
        features = [str(v) for v in ds.data_vars if v not in (E, uE)
                    and np.issubdtype(ds[v].dtype, np.number)]
    features = list(features)
    where = f" ({slice_label(labels)})" if labels else ""
    for name in features:
        if name not in ds:
            raise ValueError(f"features: {name!r} is not a variable of the data set{where}")
    return features


def _planned_files(features: Sequence[str],
                   figure_format: str = defaults.REPORT_FIGURE_FORMAT,
                   prefix: str = "") -> list[str]:
    """Every file a report of one data set with these features may write (relative to its
    folder); ``prefix`` starts the name of each figure and result (a slice's key and ``_``)."""
    figures = ["zeta", "error_distribution", "reliability", "confidence_curve"]
    results = ["validation", "summary", "diagnostics", "reliability", "confidence_curve"]
    for by in ["uE", *features]:
        figures.append(f"zscores_{by}")
        for statistic in ("zm", "zms"):
            figures.append(f"local_{statistic}_{by}")
            results.append(f"local_{statistic}_{by}")
    if features:
        figures.append("rank_correlation")
        results.append("rank_correlation")
    return (["index.html"] + [f"figures/{prefix}{name}.{figure_format}" for name in figures]
            + [f"results/{prefix}{name}.nc" for name in results])


# --------------------------------------------------------------------------------------------
# The data sets of a page: one, or the slices of data with extra dimensions
# --------------------------------------------------------------------------------------------


@dataclass
class _Part:
    """One data set of the page: the whole input, or one slice of an input with extra
    dimensions (or of a DataTree node).

    ``labels`` are the slice's labels (``{}`` for a one-set input; a DataTree node's path
    under ``dataset``), ``key`` prefixes its files and is the id of its section (``""`` for a
    one-set input), ``data`` is the Dataset holding it (the input or the node) and
    ``positions`` the positions of the slice along the extra dimensions of ``data``.
    """

    labels: dict[str, Any]
    key: str
    data: xr.Dataset
    positions: dict[str, int] = field(default_factory=dict)


def _keys(all_labels: Sequence[dict[str, Any]]) -> list[str]:
    """A key per slice, unique even on a case-insensitive file system: ``dim-label`` for each
    dimension (letters and digits, other characters as ``-``), joined by ``_``.

    Examples
    --------
    >>> _keys([{"dataset": "a"}, {"dataset": "A"}, {"dataset": "/b c"}])
    ['dataset-a', 'dataset-A-2', 'dataset-b-c']
    """
    used = {"summary", "provenance"}  # the ids of the page's own sections
    keys = []
    for labels in all_labels:
        base = "_".join(re.sub(r"[^A-Za-z0-9]+", "-", f"{dim}-{value}").strip("-")
                        for dim, value in labels.items())[:_MAX_KEY_LENGTH] or "slice"
        key, k = base, 1
        while key.lower() in used:
            k += 1
            key = f"{base}-{k}"
        used.add(key.lower())
        keys.append(key)
    return keys


def _parts(ds: xr.Dataset | xr.DataTree, E: str | None = None, uE: str | None = None
           ) -> list[_Part]:
    """The data sets of the page (no data are read): one part for a one-set Dataset, one per
    slice of the extra dimensions of ``E`` and ``uE`` (see :mod:`xuqcal.analysis.slices`),
    one per node holding data (and per slice of its extra dimensions) of a DataTree."""
    if isinstance(ds, xr.DataTree):
        nodes = [(node.path, node.to_dataset()) for node in ds.subtree if node.has_data]
        if not nodes:
            raise ValueError("ds: the DataTree has no node holding data")
        units = []
        for path, node in nodes:
            units += [({DATASET_DIM: path, **labels}, node, positions) for labels, positions
                      in slice_positions(node, extra_dims(node, E, uE))[1]]
    elif isinstance(ds, xr.Dataset):
        dims = extra_dims(ds, E, uE)
        if not dims:
            return [_Part({}, "", ds)]
        units = [(labels, ds, positions) for labels, positions in slice_positions(ds, dims)[1]]
    else:
        raise TypeError(f"ds: expected an xarray.Dataset or xarray.DataTree, got "
                        f"{type(ds).__name__}")
    keys = _keys([labels for labels, _, _ in units])
    return [_Part(labels, key, data, positions)
            for (labels, data, positions), key in zip(units, keys, strict=True)]


def _several(parts: Sequence[_Part]) -> bool:
    """Whether the page shows several data sets (a summary and a section per slice)."""
    return len(parts) > 1 or bool(parts[0].labels)


def _slice_data(part: _Part, E: str = defaults.E, uE: str = defaults.UE) -> xr.Dataset:
    """The data of a slice: its labels selected, its absent points (``E`` and ``uE`` both
    NaN) dropped, the coordinates that labelled it removed (its ``source`` kept as the
    attribute ``source``)."""
    if not part.labels:
        return part.data
    sub = part.data.isel(part.positions) if part.positions else part.data
    # the page reads every value: a Dask-backed slice is loaded here, once
    sub = present_points(sub.compute(), part.labels, E, uE)
    source = sub.coords.get(SOURCE_COORD)
    attrs = dict(sub.attrs)
    if source is not None and source.ndim == 0:
        attrs["source"] = str(source.values)
    sub = sub.drop_vars([name for name, coord in sub.coords.items() if coord.ndim == 0])
    sub.attrs = attrs
    return sub


def _source_texts(ds: xr.Dataset | xr.DataTree) -> list[str]:
    """The sources of the input, in order and once each: the attribute ``source`` of the data
    set (or of each DataTree node) and the coordinate ``source`` of a stacked set (one input
    file per set, see :func:`xuqcal.stack_datasets`)."""
    datasets = ([node.to_dataset() for node in ds.subtree if node.has_data]
                if isinstance(ds, xr.DataTree) else [ds])
    found: list[str] = []
    for one in datasets:
        coord = one.coords.get(SOURCE_COORD)
        values = [*np.ravel(coord.values)] if coord is not None else []
        values.append(one.attrs.get("source"))
        found += [str(v) for v in values if isinstance(v, str) and v.strip()]
    return list(dict.fromkeys(found))


def _source_files(ds: xr.Dataset | xr.DataTree) -> list[Path]:
    """The input files recorded in the data: ``ds.attrs['source']``, the coordinate
    ``source`` of a stacked set (each set's file), each DataTree node's; those that are
    files."""
    return [Path(s) for s in _source_texts(ds) if Path(s).is_file()]


def _planned(parts: Sequence[_Part], features: Sequence[str] | None, figure_format: str,
             E: str | None = None, uE: str | None = None) -> list[str]:
    """Every file the report of these parts may write (relative to its folder)."""
    if not _several(parts):
        return _planned_files(_report_features(parts[0].data, features, E, uE), figure_format)
    files = ["index.html", f"figures/zeta.{figure_format}", "results/validation.nc"]
    if _comparison_dim(parts) is not None:  # written when the sets share samples
        files += [f"figures/{name}.{figure_format}" for name in _COMPARISON_FIGURES]
        files += [f"results/{name}.nc" for name in _COMPARISON_RESULTS]
    for part in parts:
        names = _planned_files(_report_features(part.data, features, E, uE, part.labels),
                               figure_format, prefix=f"{part.key}_")
        files += names[1:]
    if len(set(files)) != len(files):  # the keys and the fixed names make this impossible
        raise RuntimeError("two files of the report would have the same name")
    return files


def check_folder(ds: xr.Dataset | xr.DataTree, folder: str | Path, *,
                 features: Sequence[str] | None = None, overwrite: bool = False,
                 inputs: Sequence[str | Path] = (),
                 figure_format: str = defaults.REPORT_FIGURE_FORMAT,
                 E: str | None = None, uE: str | None = None) -> None:
    """Check a report folder before any computation (nothing is written or removed).

    The folder's parent must exist and be writable; an existing non-empty folder is refused
    unless ``overwrite``; with ``overwrite``, a file the report would write must be one that
    xuqcal wrote there (listed, unchanged, in the folder's manifest ``.xuqcal-manifest.json``):
    the user's own files are never replaced or removed. No report file may be an input file
    (``inputs``, the file named by ``ds.attrs["source"]`` and, for sets stacked by
    :func:`xuqcal.stack_datasets`, the file of each set, its coordinate ``source``).
    ``figure_format`` (``"png"`` or ``"svg"``) is the format of the figures the report will
    write; for data with extra dimensions (or a DataTree), the files of every slice are
    checked. ``E`` and ``uE`` name the error and uncertainty variables (default: by role).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> import xuqcal
    >>> ds = xuqcal.synthetic.nig(100, nu=6, seed=0)
    >>> check_folder(ds, pathlib.Path(tempfile.mkdtemp()) / "missing" / "r")
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    FileNotFoundError: output: the folder .../missing does not exist; create it first
    """
    figure_format = _check_figure_format(figure_format)
    planned = _planned(_parts(ds, E, uE), features, figure_format, E, uE)
    _outputs.check_folder(Path(folder), planned, overwrite=overwrite,
                          inputs=[*inputs, *_source_files(ds)], refuse_nonempty=True)


def check_options(*, title: object = None, dpi: object = defaults.REPORT_DPI,
                  figure_format: object = defaults.REPORT_FIGURE_FORMAT) -> None:
    """Check the page options of :func:`report` (``title``, ``dpi``, ``figure_format``), as
    :func:`report` does first: the command line checks them before validating.

    Examples
    --------
    >>> check_options(figure_format="pdf")
    Traceback (most recent call last):
    ValueError: figure_format: expected one of png, svg, got 'pdf'
    """
    _checked_options(title, dpi, figure_format)


def _checked_options(title: object, dpi: object, figure_format: object) -> tuple[float, str]:
    """The checks of :func:`check_options`; ``dpi`` and ``figure_format`` as used."""
    figure_format = _check_figure_format(figure_format)
    dpi = _check_dpi(dpi)
    if title is not None and (not isinstance(title, str) or not title.strip()):
        raise ValueError(f"title: expected a non-empty string, got {title!r}")
    return dpi, figure_format


def _checked_dependence(parts: Sequence[_Part], resample: object, groups: object,
                        block: object, block_length: object) -> dict[str, Any]:
    """The keywords of a dependent bootstrap for the analyses of a report (``{}`` for iid),
    checked on the data of every slice (:func:`xuqcal.analysis.dependent.check_dependence`)
    before any computation."""
    from xuqcal.analysis.dependent import check_dependence

    for part in parts:
        data = part.data.isel(part.positions) if part.positions else part.data
        checked = check_dependence(data, resample, groups, block, block_length)
    if checked.iid:
        return {}
    keywords: dict[str, Any] = {"resample": checked.resample}
    if checked.resample == "cluster":
        keywords["groups"] = checked.variable
    else:
        keywords.update(block=checked.variable, block_length=checked.block_length)
    return keywords


def _check_validation_result(result: object) -> None:
    if result is not None and not isinstance(result, xr.Dataset | xr.DataTree):
        raise TypeError(f"validation_result: expected an xarray.Dataset (a result of "
                        f"xuqcal.validate), got {type(result).__name__}")


def _checked_input(ds: xr.Dataset | xr.DataTree, E: str | None, uE: str | None
                   ) -> xr.Dataset | xr.DataTree:
    """``ds`` checked (:func:`xuqcal.io.validate_dataset`, slice by slice for extra
    dimensions) with its error and uncertainty variables named ``E`` and ``uE``; a DataTree
    node by node, each message naming the node."""
    if isinstance(ds, xr.DataTree):
        nodes = {}
        for node in ds.subtree:
            if not node.has_data:
                continue
            try:
                data = node.to_dataset()
                node_E, node_uE = io.roles(data, E, uE)
                data = io.validate_dataset(data, E=node_E, uE=node_uE)
                if (node_E, node_uE) != (defaults.E, defaults.UE):
                    data = standard_names(data, node_E, node_uE)
            except ValueError as error:
                raise ValueError(f"dataset={node.path!r}: {error}") from None
            nodes[node.path] = data
        if not nodes:
            raise ValueError("ds: the DataTree has no node holding data")
        return xr.DataTree.from_dict(nodes)
    if not isinstance(ds, xr.Dataset):
        raise TypeError(f"ds: expected an xarray.Dataset or xarray.DataTree, got "
                        f"{type(ds).__name__}")
    E, uE = io.roles(ds, E, uE)
    ds = io.validate_dataset(ds, E=E, uE=uE)
    if (E, uE) != (defaults.E, defaults.UE):  # the analyses below use the default names
        ds = standard_names(ds, E, uE)
    return ds


# --------------------------------------------------------------------------------------------
# The sections of one data set
# --------------------------------------------------------------------------------------------


@dataclass
class _Options:
    """The analysis options of a report (the same for every data set of the page)."""

    features: Sequence[str] | None
    statistics: Sequence[str] | None
    n_boot: int | str
    n_mc: int | str
    n_bins: int | None
    n_bins_local: int
    seed: int
    mc_precision: float = defaults.MC_PRECISION
    #: ``resample``, ``groups``, ``block``, ``block_length`` of a dependent bootstrap (empty:
    #: iid, the default of every analysis)
    dependence: dict[str, Any] = field(default_factory=dict)

    @property
    def groups(self) -> str | None:
        return self.dependence.get("groups")

    @property
    def block(self) -> str | None:
        return self.dependence.get("block")


def _set_sections(writer: _Writer, ds: xr.Dataset, options: _Options, *, key: str = "",
                  level: int = 2, validation_result: xr.Dataset | None = None,
                  labels: dict[str, Any] | None = None) -> tuple[str, dict[str, str]]:
    """Run the analyses of one data set (1-D over ``sample``, variables ``E`` and ``uE``;
    loaded into memory when Dask-backed) and write its figures and results (named
    ``<key>_<name>`` for a slice of several).

    Returns the HTML of its sections (validation, distributions, consistency and adaptivity;
    headings ``<h{level}>``) and its provenance entries (points, bins, window, features).
    """
    from xuqcal import plot
    from xuqcal.analysis import curves, diagnostics, local, probabilistic, running, validation
    from xuqcal.analysis import features as feature_analysis
    from xuqcal.analysis import summary as summary_analysis

    def name(text: str) -> str:
        return f"{key}_{text}" if key else text

    def section(text: str) -> str:
        return f"{key}:{text}"

    # the page reads every value (tables, figures): Dask-backed data are loaded here, once
    ds = ds.compute()
    if validation_result is not None:
        validation_result = validation_result.compute()
    features = _report_features(ds, options.features, labels=labels)
    n_boot, n_mc, n_bins, seed = options.n_boot, options.n_mc, options.n_bins, options.seed
    m = ds.sizes["sample"]
    n_local = recommended_n_bins(m, options.n_bins_local)  # the one rule (core.binning)
    n_reliability = recommended_n_bins(m, defaults.N_BINS if n_bins is None else n_bins)
    # the per-bin bootstraps and the curve's band: the validation's counts, at most their caps
    n_boot_bins = summary_analysis.local_replicates(n_boot)
    window = running.default_window(m)
    conditioning = ["uE", *features]
    h = f"h{level}"

    # validation
    result = validation_result if validation_result is not None else validation.validate(
        ds, options.statistics, n_boot=n_boot, n_mc=n_mc, seed=seed, n_bins=n_bins,
        mc_precision=options.mc_precision, **options.dependence)
    writer.result(name("validation"), result, group=key)
    writer.figure(section("validation"), name("zeta"), plot.zeta(result),
                  "ζ-scores of every statistic and scheme; the grey band is |ζ| ≤ 1, circled "
                  "points decide the verdict")
    notes = validation.verdict_notes(result)
    table = result[["estimate", "ci_low", "ci_high"]].to_dataframe()[
        ["estimate", "ci_low", "ci_high"]]
    zetas = result.zeta.transpose("statistic", "scheme").to_pandas()
    zetas.columns = [f"ζ {scheme}" for scheme in zetas.columns]
    verdicts = result[["verdict", "verdict_scheme"]].to_dataframe()
    table = table.join(zetas.map(lambda v: _fmt(v, 3)))
    table["verdict"] = [
        f"{row.verdict} ({row.verdict_scheme})" if row.verdict_scheme else str(row.verdict)
        for row in verdicts.itertuples()]
    table["verdict"] += [" *" if k in notes else "" for k in table.index]
    table = table.reset_index()[["statistic", *table.columns]]
    classes = pd.DataFrame("", index=table.index, columns=table.columns)
    classes["statistic"] = "text"
    classes["verdict"] = [_verdict_class(str(v)) for v in verdicts["verdict"]]
    validation_table = _table(table, name("validation"), classes)
    rules = validation.rule_lines(result)
    if rules:
        validation_table += "".join(f'<p class="notes">{html.escape(line)}</p>'
                                    for line in rules)
    if notes:
        validation_table += ('<p class="notes">Notes (* in the verdict column):</p><ul>'
                             + "".join(f"<li><b>{html.escape(k)}</b>: {html.escape(n)}</li>"
                                       for k, n in notes.items()) + "</ul>")

    # distribution diagnostics
    described = (diagnostics.describe(ds, groups=options.groups, block=options.block)
                 if options.dependence else diagnostics.describe(ds))
    writer.result(name("diagnostics"), described, group=key)
    writer.figure(section("diagnostics"), name("error_distribution"),
                  plot.error_distribution(ds), "histogram of E against errors re-simulated "
                  "from uE with normal and t6 generators")
    rows = ["mean", "sd", "relative_bias", "beta_gm", "kappa_cs", "nu_eff"]
    frame = (described[rows].sel(variable=["E", "Z"]).to_dataframe()[rows].T
             .rename_axis(columns=None).reset_index(names="diagnostic"))
    frame["description"] = [_description(described[n]) for n in rows]
    for column in ("E", "Z"):  # ν_eff of near-normal data runs away (3.104e+08): capped
        frame[column] = [_fmt_nu_eff(v) if row == "nu_eff" else _fmt(v)
                         for row, v in zip(frame["diagnostic"], frame[column], strict=True)]
    describe_table = _table(frame, name("distributions"), _text_classes(frame))
    scalars = ["uE2_shape", "uE2_scale", "beta_gm_uE"]
    frame = pd.DataFrame({"uncertainties": scalars,
                          "value": [described[n].item() for n in scalars],
                          "description": [_description(described[n]) for n in scalars]})
    uncertainty_table = _table(frame, name("uncertainties"), _text_classes(frame))
    dependence_html = (_dependence_html(ds, described, result, options, name("dependence"), h)
                       if options.dependence else "")

    # conditional calibration
    fv_rows, fv_classes = [], []
    local_zms: dict[str, xr.Dataset] = {}  # read again by the summary
    for by in conditioning:
        writer.figure(section("conditional"), name(f"zscores_{by}"), plot.zscores(ds, by=by),
                      f"z-scores against {by}, with their running mean and root mean "
                      f"square over windows of {window} points")
        for statistic in ("zm", "zms"):
            try:
                loc = local.local(ds, statistic, by=by, n_bins=n_local, n_boot=n_boot_bins,
                                  seed=seed, **options.dependence)
            except ValueError as error:  # e.g. a feature too stratified for the bins
                fv_rows.append([f"{statistic} | {by}", np.nan, "–", str(error)])
                fv_classes.append("other")
                continue
            writer.result(name(f"local_{statistic}_{by}"), loc, group=key)
            if statistic == "zms":
                local_zms[f"local_zms_{by}"] = loc
            writer.figure(section("conditional"), name(f"local_{statistic}_{by}"),
                          plot.local(loc), f"per-bin {statistic} along {by} "
                          f"({loc.sizes['bin']} bins); red bins do not contain the target")
            fv = loc.fraction_valid.item()
            low, high = loc.fraction_valid_low.item(), loc.fraction_valid_high.item()
            ok = low <= 0.95 <= high
            fv_rows.append([f"{statistic} | {by}", fv, f"[{_fmt(low, 3)}, {_fmt(high, 3)}]",
                            "compatible with 0.95" if ok else "not compatible with 0.95"])
            fv_classes.append("pass" if ok else "fail")
    fv_frame = pd.DataFrame(fv_rows, columns=["analysis", "f_v", "Wilson-cc 95 %", "verdict"])
    classes = pd.DataFrame("", index=fv_frame.index, columns=fv_frame.columns)
    classes["analysis"] = "text"
    classes["verdict"] = fv_classes
    fv_table = _table(fv_frame, name("fraction_valid"), classes, digits=3)
    rel = local.reliability(ds, n_bins=n_reliability, n_boot=n_boot_bins, seed=seed,
                            **options.dependence)
    writer.result(name("reliability"), rel, group=key)
    writer.figure(section("conditional"), name("reliability"), plot.reliability(rel),
                  f"reliability diagram: RMSE against RMV per bin of uE ({n_reliability} "
                  "bins)")
    curve = curves.confidence_curve(ds, generator=defaults.GENERATORS[0],
                                    n_mc=capped_count(n_mc, defaults.N_MC_CURVE), seed=seed)
    writer.result(name("confidence_curve"), curve, group=key)
    writer.figure(section("conditional"), name("confidence_curve"),
                  plot.confidence_curve(curve),
                  "confidence curve with the 95 % band of errors simulated from uE (normal)")
    if features:
        matrix = feature_analysis.rank_correlation(ds, features)
        writer.result(name("rank_correlation"), matrix.to_dataset(name="rank_correlation"),
                      group=key)
        writer.figure(section("conditional"), name("rank_correlation"),
                      plot.rank_correlation(matrix),
                      "Spearman rank correlations of the features, |E| and uE")

    # interval-based validation (METHODS §9): PICP with Wilson intervals, local coverage, the
    # PIT and the proper scores (no bootstrap: binomial intervals and tests)
    coverage = validation.validate(ds, ["picp"], n_boot=n_boot, n_mc=n_mc, seed=seed,
                                   mc_precision=options.mc_precision, **options.dependence)
    writer.result(name("coverage"), coverage, group=key)
    coverage_frame = pd.DataFrame({
        "statistic": [str(k) for k in coverage.statistic.values],
        "estimate": coverage.estimate.values, "ci_low": coverage.ci_low.values,
        "ci_high": coverage.ci_high.values, "k": coverage.coverage_factor.values,
        "ζ": coverage.zeta.sel(scheme="BS").values,
        "verdict": [str(v) for v in coverage.verdict.values]})
    classes = pd.DataFrame("", index=coverage_frame.index, columns=coverage_frame.columns)
    classes["statistic"] = "text"
    classes["verdict"] = [_verdict_class(str(v)) for v in coverage.verdict.values]
    coverage_table = _table(coverage_frame, name("coverage"), classes) + "".join(
        f'<p class="notes">{html.escape(line)}</p>' for line in validation.rule_lines(coverage))
    # under a dependent resample the per-bin intervals are its bootstrap (the local
    # analyses' replicates and seed, as the summary computes it)
    coverage_boot = ({"n_boot": n_boot_bins, "seed": seed, **options.dependence}
                     if options.dependence else {})
    coverage_interval = ("the dependent bootstrap of the coverage indicator, the points "
                         "resampled as for every interval" if options.dependence else
                         "Wilson intervals with continuity\ncorrection")
    lcp = curves.local_coverage(ds, by="uE", n_bins=n_reliability, **coverage_boot)
    writer.result(name("local_coverage"), lcp, group=key)
    writer.figure(section("intervals"), name("local_coverage"), plot.local_coverage(lcp),
                  f"local coverage of the 0.95-interval ±1.96 uE per bin of uE "
                  f"({n_reliability} bins); f_v = {_fmt(lcp.fraction_valid.item(), 3)}; grey: "
                  f"heavy-tailed bins (β_GM(Z²) > {defaults.HEAVY_TAIL_THRESHOLD:g})")
    # the PIT and its test once: the histogram is drawn from the test's counts, band and
    # p-values, and the summary reads the same test (_summary_analyses)
    pit_test = probabilistic.pit_test(ds)
    writer.result(name("pit_test"), pit_test, group=key)
    writer.figure(section("intervals"), name("pit"), plot.pit(pit_test),
                  f"PIT histogram of N(0, uE²) with its {defaults.LEVEL:.0%} band "
                  f"under uniformity; χ² p = {_fmt(pit_test.chi2_pvalue.item(), 3)}, KS p = "
                  f"{_fmt(pit_test.ks_pvalue.item(), 3)}")
    scores = probabilistic.proper_scores(ds, **options.dependence)
    writer.result(name("proper_scores"), scores, group=key)
    score_names = [*probabilistic.SCORES, "nu"]
    scores_frame = pd.DataFrame({"score": score_names,
                                 "value": [scores[n].item() for n in score_names],
                                 "description": [scores[n].attrs.get("long_name", "")
                                                 for n in score_names]})
    scores_table = _table(scores_frame, name("proper_scores"), _text_classes(scores_frame))

    # the answers, shown first: a verdict per question, read from this validation and from
    # the local analyses, PIT and scores above when the summary's settings are the report's
    overview = summary_analysis.summary(
        ds, validation_result=result, features=features or None, n_boot=n_boot, n_mc=n_mc,
        seed=seed, mc_precision=options.mc_precision,
        analyses=_summary_analyses(local_zms, lcp, pit_test, options), **options.dependence)
    writer.result(name("summary"), overview, group=key)
    writer.summaries.append((slice_title(labels) if labels else "", overview))
    summary_html = _summary_html(overview, name("summary"))

    body = f"""<{h}>Summary</{h}>
<p>A verdict for each question, the evidence behind it and what it means (the details follow
below).</p>
{summary_html}
<{h}>Validation of the statistics</{h}>
<p>Estimates with bootstrap BCa intervals; ζ-scores against predefined references (BS) and
simulated references (Sim, Sim2); the verdict follows the recommended workflow.</p>
{validation_table}
{writer.figures_html(section("validation"))}
<{h}>Distributions</{h}>
<p>Diagnostics of the errors E, the z-scores Z = E / uE and the uncertainties uE, which help
choose the generative distribution of the simulated references (the names are those of the
variables of <code>results/{name("diagnostics")}.nc</code>).</p>
{describe_table}{uncertainty_table}
{writer.figures_html(section("diagnostics"))}
{dependence_html}<{h}>Consistency and adaptivity</{h}>
<p>Fraction of valid bins f_v of the local analyses (target 0.95), over {n_local}
equal-count bins: at most {options.n_bins_local}, with at least
{defaults.MIN_POINTS_PER_BIN_LOCAL} points per bin
(<code>xuqcal.core.binning.recommended_n_bins</code>).</p>
{fv_table}
{writer.figures_html(section("conditional"))}
<{h}>Interval-based validation and proper scores</{h}>
<p>Prediction-interval coverage probabilities |Z| ≤ k ({coverage_interval}; valid when \
they overlap [p − {defaults.COVERAGE_TOLERANCE:g},
p + {defaults.COVERAGE_TOLERANCE:g}]; P. Pernot, arXiv 2408.13089), the local coverage, the
probability integral transform of the normal predictive distribution N(0, uE²) and the mean
proper scores (lower is better; they compare models rather than validate one).</p>
{coverage_table}{scores_table}
{writer.figures_html(section("intervals"))}
"""
    provenance = {
        "E": str(ds.attrs.get("E_expression", "E")),
        "uE": str(ds.attrs.get("uE_expression", "uE")),
        "where": str(ds.attrs.get("where", "") or "–"),
        "points (M)": str(m),
        "bootstrap replicates": _count_used(result, "n_boot", options.n_boot, options),
        "synthetic sets per generator": _count_used(result, "n_mc", options.n_mc, options),
        "bins (binned statistics)": _bins_used(result, n_bins, m),
        "bins (local analyses)": _bins_text(n_local, options.n_bins_local, m),
        "bins (reliability diagram)": _bins_text(
            n_reliability, defaults.N_BINS if n_bins is None else n_bins, m),
        "running-statistics window": f"{window} points",
        "features": ", ".join(features) or "–",
    }
    if options.dependence:  # only then: the page of independent points is unchanged
        provenance["resample (intervals)"] = _resample_text(result) or "iid (single points)"
    return body, provenance


def _resample_text(result: xr.Dataset) -> str:
    """How the validation ``result`` resampled the points (its attributes ``resample``,
    ``groups``/``block``, ``block_length``, ``block_length_rule``); ``""`` for iid."""
    resample = result.attrs.get("resample", "iid")
    if resample == "iid":
        return ""
    if resample == "cluster":
        return f"cluster bootstrap: whole groups of {result.attrs.get('groups')} drawn with " \
               "replacement"

    def value(key: str) -> Any:  # an attribute, or per slice a scalar coordinate
        found = result.attrs.get(key)
        if found is None and key in result.coords and result[key].ndim == 0:
            found = result[key].item()
        return found

    length, rule = value("block_length"), value("block_length_rule")
    size = "an automatic length" if length in (None, "auto") else f"{length} points"
    text = (f"{resample} block bootstrap along {result.attrs.get('block')}, blocks of "
            f"{size}")
    return text + (f" (automatic length: {rule})" if rule and rule != "given" else "")


#: What a report with ``groups`` or ``block`` still computes as if the points were
#: independent: the per-bin intervals of the local analyses, the reliability diagram and the
#: local coverage, the PICP and the summary resample the groups or blocks too.
_STILL_IID = ("The per-bin intervals of the local analyses, of the reliability diagram and of "
              "the local coverage resample the same groups or blocks; the PIT test still "
              "treats the points as independent (and the mean proper scores are shown without "
              "intervals).")

#: The rows of the dependence table of a report: with ``groups``, with ``block``.
_GROUP_ROWS = ("icc_z", "icc_z2", "design_effect_z2", "n_effective_groups")
_BLOCK_ROWS = ("acf1_z", "acf1_z2", "n_effective_block")


def _dependence_html(ds: xr.Dataset, described: xr.Dataset, result: xr.Dataset,
                     options: _Options, name: str, h: str) -> str:
    """The section on the dependence of the points (with ``groups`` or ``block``): the
    effective sample size and the diagnostics of :func:`xuqcal.describe`, and how the
    intervals resampled the points."""
    m = ds.sizes["sample"]
    rows: list[tuple[str, Any, str]] = [("points (M)", m, "the number of points")]
    if options.groups is not None:
        n_groups = int(pd.Series(np.asarray(ds[options.groups].values)).nunique())
        rows.append(("groups", n_groups, f"distinct values of {options.groups}: the units a "
                                         "cluster bootstrap resamples"))
        keys, effective = _GROUP_ROWS, "n_effective_groups"
        what = (f"The points come in groups ({options.groups}): the points of one group "
                "may share part of their errors, so that the data hold fewer independent "
                "points than M")
    else:
        keys, effective = _BLOCK_ROWS, "n_effective_block"
        what = (f"The points are ordered by {options.block}, along which neighbours may be "
                "correlated, so that the data hold fewer independent points than M")
    rows += [(key, described[key].item(), _description(described[key]))
             for key in keys if key in described]
    frame = pd.DataFrame(rows, columns=["diagnostic", "value", "description"])
    frame["value"] = [_fmt(v) if isinstance(v, float) else str(v) for v in frame["value"]]
    table = _table(frame, name, _text_classes(frame))
    size = described[effective].item() if effective in described else math.nan
    ratio = f" ({_fmt(100 * size / m, 3)} % of M)" if math.isfinite(size) and m else ""
    used = _resample_text(result)
    intervals = (f"The intervals of the validation come from a {used}." if used else
                 "The intervals of the validation resample single points (iid bootstrap): "
                 "with dependent points they are too narrow.")
    return f"""<{h}>Dependence of the points and effective sample size</{h}>
<p>{html.escape(what)}. The effective sample size is the number of
independent points the mean of Z² is worth: <b>{html.escape(_fmt(size))}</b> of
{m} points{html.escape(ratio)}. {html.escape(intervals)} {html.escape(_STILL_IID)}</p>
{table}
"""


def _common_provenance(options: _Options, figure_format: str, dpi: float) -> dict[str, str]:
    stamp = _provenance()
    return {
        "xuqcal version": stamp["xuqcal_version"],
        "created": stamp["created"],
        "seed": str(options.seed),
        "bootstrap replicates": _count_text(options.n_boot, defaults.N_BOOT, options),
        "synthetic sets per generator": _count_text(options.n_mc, defaults.N_MC, options),
        "bins (binned statistics)": (str(options.n_bins) if options.n_bins is not None else
                                     f"at most {defaults.N_BINS}, with at least "
                                     f"{defaults.MIN_POINTS_PER_BIN_LOCAL} points per bin "
                                     "(recommended_n_bins, per data set)"),
        "figures": f"{figure_format.upper()}, {dpi:g} dpi",
    }


def _count_text(count: int | str, ceiling: int, options: _Options) -> str:
    """A replicate count as asked: a number, or ``"auto"`` with its precision and ceiling."""
    if isinstance(count, str):
        return (f"auto: as many as a Monte Carlo precision of {options.mc_precision:g} needs, "
                f"at most {ceiling}")
    return str(count)


def _count_used(result: xr.Dataset, name: str, asked: int | str, options: _Options) -> str:
    """The replicate count ``name`` a validation used (its attribute; per statistic or slice
    when it varies), with ``(auto)`` when it was driven by the precision."""
    used = result.attrs.get(name)
    if used is None and name in result.coords and result[name].ndim == 0:
        used = result[name].item()  # differing between slices: a coordinate
    if used is None:
        return _count_text(asked, defaults.N_BOOT if name == "n_boot" else defaults.N_MC,
                           options)
    return f"{used} (auto)" if isinstance(asked, str) else str(used)


def _bins_used(result: xr.Dataset, asked: int | None, m: int) -> str:
    """The bins of the binned statistics of a validation (its ``n_bins`` attribute), and why
    when the recommended number is fewer than ``defaults.N_BINS``."""
    used = result.attrs.get("n_bins")
    if used is None and "n_bins" in result.coords and result["n_bins"].ndim == 0:
        used = result["n_bins"].item()  # differing between slices: a coordinate
    if used is None or int(used) == 0:
        return "–" if used is not None else str(asked if asked is not None else "–")
    if asked is None and int(used) < defaults.N_BINS:
        return _bins_text(int(used), defaults.N_BINS, m)
    return str(int(used))


#: The order of the provenance entries of a one-set page.
_PROVENANCE_ORDER = (
    "xuqcal version", "created", "E", "uE", "where", "points (M)", "seed",
    "resample (intervals)", "bootstrap replicates", "synthetic sets per generator",
    "bins (binned statistics)", "bins (local analyses)", "bins (reliability diagram)",
    "running-statistics window", "features", "figures")


def _definitions(entries: dict[str, str]) -> str:
    return "<dl>" + "".join(f"<dt>{html.escape(k)}</dt><dd>{html.escape(v)}</dd>"
                            for k, v in entries.items()) + "</dl>"


def _links(files: Sequence[str]) -> str:
    return "<ul>" + "".join(f'<li><a href="{html.escape(f)}">{html.escape(f)}</a></li>'
                            for f in files) + "</ul>"


def _page(title: str, source_line: str, body: str) -> str:
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(title)} – xuqcal validation report</title>
<style>{_STYLE}</style></head><body>
<h1>{html.escape(title)}</h1>
<p class="source">{html.escape(source_line)}</p>
{body}</body></html>
"""


# --------------------------------------------------------------------------------------------
# Several data sets on one page
# --------------------------------------------------------------------------------------------


def _several_title(parts: Sequence[_Part]) -> str:
    """The default title of a page of several data sets, e.g. ``3 data sets: a, b, c``.

    Examples
    --------
    >>> ds = xr.Dataset()
    >>> _several_title([_Part({"dataset": n}, n, ds) for n in "abc"])
    '3 data sets: a, b, c'
    >>> _several_title([_Part({"model": "gp", "task": 0}, "k", ds)] * 2)
    '2 slices along model × task'
    """
    dims = list(dict.fromkeys(dim for part in parts for dim in part.labels))
    if len(dims) != 1:
        return f"{len(parts)} slices along {' × '.join(dims)}"
    labels = [str(part.labels[dims[0]]) for part in parts]
    if len(labels) > _MAX_TITLE_LABELS:
        labels = [*labels[:_MAX_TITLE_LABELS], "…"]
    noun = "data sets" if dims[0] == "dataset" else f"slices along {dims[0]}"
    return f"{len(parts)} {noun}: {', '.join(labels)}"


def _summary_frame(summary: xr.Dataset | xr.DataTree) -> pd.DataFrame:
    """:func:`~xuqcal.analysis.tables.slices_summary` of the broadcast validation (of each
    node, with its path under ``dataset``, when the nodes of a DataTree gave different
    layouts)."""
    if isinstance(summary, xr.Dataset):
        return slices_summary(summary)
    frames = []
    for node in summary.subtree:
        if node.has_data:
            frame = slices_summary(node.to_dataset())
            frame.insert(0, DATASET_DIM, node.path)
            frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def _summary_table(frame: pd.DataFrame) -> str:
    """The summary across data sets: one row per slice and statistic, with its estimate,
    interval, verdict and the scheme that decided it."""
    dims = list(frame.columns[:list(frame.columns).index("n_samples")])
    shown = frame.copy()
    for dim in dims:
        shown[dim] = shown[dim].astype(str)
    shown["n_samples"] = ["–" if pd.isna(m) else str(int(m)) for m in shown["n_samples"]]
    shown = shown.rename(columns={"n_samples": "M", "verdict_scheme": "deciding scheme"})
    classes = pd.DataFrame("", index=shown.index, columns=shown.columns)
    for column in (*dims, "statistic", "deciding scheme"):
        classes[column] = "text"
    classes["verdict"] = [f"text {_verdict_class(str(v))}" for v in shown["verdict"]]
    return _table(shown, "summary", classes)


def _block(summary: xr.Dataset | xr.DataTree, part: _Part, m: int) -> xr.Dataset:
    """The validation of one slice from the broadcast validation (or the ``validation_result``
    given), checked against the slice: its labels exist, no extra dimension is left, and its
    number of points ``n_samples`` (when recorded) is the slice's."""
    labels = dict(part.labels)
    block = summary
    try:
        if isinstance(block, xr.DataTree):
            path = labels.pop(DATASET_DIM)
            block = next(node for node in block.subtree if node.path == path).to_dataset()
        for dim, label in labels.items():
            block = (block.sel({dim: label}) if dim in block.indexes
                     else block.isel({dim: label}))
    except (KeyError, IndexError, ValueError, StopIteration):
        raise ValueError(f"validation_result: has no slice {slice_label(part.labels)} of the "
                         "data set; pass the result of xuqcal.validate for this data set (or "
                         "none)") from None
    left = slice_dims(block)
    if left:
        raise ValueError(f"validation_result: has the dimension(s) {', '.join(left)}, which "
                         f"the data set has not ({slice_label(part.labels) or 'one data set'}); "
                         "pass the result of xuqcal.validate for this data set (or none)")
    recorded = slice_size(block)
    if recorded is not None and recorded != m:
        where = (f"the slice {slice_label(part.labels)} has M = {recorded}, but the data set "
                 f"has {m} points there" if part.labels else
                 f"has M = {recorded}, but the data set has {m} points")
        raise ValueError(f"validation_result: {where}; pass the result of xuqcal.validate for "
                         "this data set (or none)")
    if recorded is None and part.labels:  # for its title, "dataset = b (M = 3834)"
        block = block.assign_coords({SIZE_COORD: m})
    return block


def _summary_figure(writer: _Writer, summary: xr.Dataset | xr.DataTree) -> str:
    """The ζ-scores of every slice, one panel per slice (one or two extra dimensions, at most
    ``_MAX_SUMMARY_PANELS`` panels); otherwise none, and a sentence saying where they are."""
    from xuqcal import plot

    dims = slice_dims(summary) if isinstance(summary, xr.Dataset) else []
    panels = int(np.prod([summary.sizes[d] for d in dims])) if dims else 0
    if not 1 <= len(dims) <= 2 or panels > _MAX_SUMMARY_PANELS:
        return "<p>The ζ-scores of each data set are drawn in its section.</p>"
    grid = plot.zeta(summary, col=dims[-1], row=dims[0] if len(dims) == 2 else None)
    writer.figure("summary", "zeta", grid, "ζ-scores of every statistic and scheme, one panel "
                  "per data set; the grey band is |ζ| ≤ 1, circled points decide the verdict")
    return writer.figures_html("summary")


def _comparison_dim(parts: Sequence[_Part]) -> str | None:
    """The dimension along which the sets of a page could be compared (no data are read):
    the one extra dimension of one Dataset holding at least 2 sets; else ``None`` (one set, a
    DataTree, several extra dimensions)."""
    if len(parts) < 2 or any(part.data is not parts[0].data for part in parts):
        return None
    dims = list(parts[0].labels)
    return dims[0] if len(dims) == 1 else None


def _shared_points(ds: xr.Dataset, dim: str) -> tuple[np.ndarray, int]:
    """The present points of each set along ``dim`` (``E`` and ``uE`` given, the rule of
    ``pairing="common"``) and the number present in every set."""
    e = ds[defaults.E]
    u = ds[defaults.UE].broadcast_like(e)
    present = (np.isfinite(np.asarray(e.transpose(dim, "sample").values, dtype=float))
               & np.isfinite(np.asarray(u.transpose(dim, "sample").values, dtype=float)))
    return present.sum(axis=1), int(present.all(axis=0).sum())


def _shares_samples(counts: np.ndarray, common: int) -> bool:
    """The rule of the comparison of models: at least 2 points in every set, and at least
    :data:`COMPARISON_MIN_SHARED` of each set's present points.

    Examples
    --------
    >>> _shares_samples(np.array([300, 250]), 250), _shares_samples(np.array([300, 100]), 100)
    (True, False)
    """
    return common >= 2 and bool(np.all(common >= COMPARISON_MIN_SHARED * counts))


def _comparison_statistics(statistics: Sequence[str] | None) -> list[str]:
    """The report's statistics that :func:`xuqcal.compare` can compare, ``zms`` always (its
    rank heat map); the defaults of :func:`xuqcal.compare` when none are given.

    Examples
    --------
    >>> _comparison_statistics(["rce", "picp", "zms"]), _comparison_statistics(["picp"])
    (['rce', 'zms'], ['zms'])
    """
    from xuqcal.analysis.compare import COMPARED_STATISTICS, DEFAULT_STATISTICS

    if statistics is None:
        return list(DEFAULT_STATISTICS)
    keys = [s for s in dict.fromkeys(statistics) if s in COMPARED_STATISTICS]
    return keys if "zms" in keys else ["zms", *keys]


def _comparison_n_boot(n_boot: int | str) -> int:
    """The replicates of the comparison: the report's ``n_boot``; for ``"auto"``,
    ``defaults.N_BOOT_RELIABILITY`` (the cap of the report's other bootstraps)."""
    return defaults.N_BOOT_RELIABILITY if isinstance(n_boot, str) else int(n_boot)


def _as_models(result: xr.Dataset, dim: str) -> xr.Dataset:
    """A comparison result with its models along ``model`` (the dimension the plots read)."""
    return result if dim == "model" else result.rename({dim: "model"})


def _ranking_html(result: xr.Dataset, dim: str, key: str) -> str:
    """The ranking table of one statistic (:func:`xuqcal.analysis.compare.ranking_table`):
    the models by expected rank, with their estimate, distance, expected rank, P(best) and
    the models each is significantly better than."""
    from xuqcal.analysis.compare import ranking_table

    table = ranking_table(result, key, dim)
    frame = pd.DataFrame({
        "model": table.model,
        "estimate": table.estimate.astype(float),
        "distance": table.distance.astype(float),
        "expected rank": table["expected rank"].astype(float),
        "P(best)": table["P(best)"].astype(float),
        "significantly better than": [", ".join(better) or "–"
                                      for better in table["better than"]]})
    classes = pd.DataFrame("", index=frame.index, columns=frame.columns)
    classes["model"] = "text"
    classes["significantly better than"] = "text"
    return _table(frame, f"comparison_{key}", classes)


def _scores_html(scores: xr.Dataset, dim: str) -> str:
    """The mean scores of each model (lower is better) and the Diebold–Mariano p-values of
    each pair."""
    labels = [str(x) for x in np.asarray(scores[dim].values).tolist()]
    names = [str(x) for x in scores.score.values.tolist()]
    mean = scores.mean_score.transpose(dim, "score").values
    frame = pd.DataFrame({"model": labels, **{name: mean[:, j] for j, name in
                                              enumerate(names)}})
    p_values = scores.dm_p_value.transpose(dim, "other", "score").values
    pairs = pd.DataFrame(
        [[f"{labels[a]} − {labels[b]}", *p_values[a, b]] for a in range(len(labels))
         for b in range(a + 1, len(labels))], columns=["pair", *(f"p ({n})" for n in names)])
    return (_table(frame, "comparison_scores") + "\n"
            + _table(pairs, "comparison_dm", digits=3))


def _comparison_resample(result: xr.Dataset) -> str:
    """The sentence of a comparison on how it resampled the points (``""`` for iid: the
    page of independent points is unchanged)."""
    used = _resample_text(result)
    return f" Points resampled by a {html.escape(used)}." if used else ""


def _comparison_section(writer: _Writer, ds: xr.Dataset, parts: Sequence[_Part],
                        options: _Options) -> str:
    """The comparison of the sets of a page when they share samples (see the module's
    notes): its HTML, its figures and results written; a sentence when they do not share
    enough points; nothing for a page whose sets cannot be compared (a DataTree, several
    extra dimensions)."""
    from xuqcal import plot
    from xuqcal.analysis.compare import COMPARED_STATISTICS, compare
    from xuqcal.analysis.paired_scores import paired_scores, sip_matrix

    dim = _comparison_dim(parts)
    if dim is None or not isinstance(ds, xr.Dataset):
        return ""
    data = ds[[defaults.E, defaults.UE]].compute()
    counts, common = _shared_points(data, dim)
    if not _shares_samples(counts, common):
        return (f"<p>No comparison of models: the {len(parts)} data sets share "
                f"{common} point(s) (present in every set), fewer than "
                f"{COMPARISON_MIN_SHARED:.0%} of a set's {int(counts.max())} points.</p>")
    n_boot = _comparison_n_boot(options.n_boot)
    level, seed = defaults.LEVEL, options.seed
    statistics = _comparison_statistics(options.statistics)
    try:
        result = compare(data, statistics, dim=dim, n_boot=n_boot, level=level, seed=seed,
                         n_bins=options.n_bins, **options.dependence)
        scores = paired_scores(data, dim=dim, **options.dependence)  # coverage_level 0.95
        sip = sip_matrix(data, COMPARISON_SIP_SCORE, dim=dim, n_boot=n_boot, level=level,
                         seed=seed, **options.dependence)
    except ValueError as error:  # e.g. too few replicates for the level
        return f"<p>No comparison of models: {html.escape(str(error))}</p>"
    writer.result("comparison", result)
    writer.result("comparison_scores", scores)
    writer.result("comparison_sip", sip)
    models, models_sip = _as_models(result, dim), _as_models(sip, dim)
    writer.figure("comparison", "comparison_forest", plot.difference_forest(models),
                  "paired differences of the distances to calibration (A − B, negative: A "
                  f"nearer to calibration) with their {level:.0%} BCa intervals")
    writer.figure("comparison", "comparison_rank_zms", plot.rank_heatmap(models, "zms"),
                  "probability of each rank of zms (1: nearest to 1), models by expected rank")
    writer.figure("comparison", "comparison_sip", plot.sip_heatmap(models_sip),
                  f"SIP of the {COMPARISON_SIP_SCORE.upper()}: fraction of the common points "
                  "where the row's model scores better than the column's")
    labels = [str(x) for x in np.asarray(result[dim].values).tolist()]
    dropped = [f"{label}: {int(n)}" for label, n in zip(labels, result.n_dropped.values,
                                                         strict=True) if int(n)]
    dropped_text = (f" Points left out (absent from another set): {', '.join(dropped)}."
                    if dropped else " No point was left out.")
    count = (f"{n_boot} ({options.n_boot} asked: defaults.N_BOOT_RELIABILITY replicates)"
             if isinstance(options.n_boot, str) else str(n_boot))
    tables = "".join(
        f"<h4>{html.escape(key)} (distance {html.escape(COMPARED_STATISTICS[key])})</h4>\n"
        f"{_ranking_html(result, dim, key)}\n" for key in result.statistic.values.tolist())
    return f"""<section id="comparison">
<h3>Comparison of models</h3>
<p>The {len(labels)} data sets along {html.escape(dim)} ({html.escape(", ".join(labels))})
share their samples: they are compared on the {common} points present in every one of them,
paired (each bootstrap replicate draws the same points for every set; xuqcal.compare).
{html.escape(dropped_text.strip())} Replicates: {html.escape(count)}; level {level:g};
seed {seed}; intervals: {html.escape(str(result.attrs.get("interval", "")))}.\
{_comparison_resample(result)}
Each statistic is compared by its distance to calibration (lower is better); the models are
listed by expected rank, with the probability of being the nearest to calibration and the
models each is significantly better than.</p>
{tables}<p>Mean proper scores of N(0, uE²) on the common points (lower is better) and the
Diebold–Mariano p-values of the paired differences.</p>
{_scores_html(scores, dim)}
{writer.figures_html("comparison")}
</section>
"""


def _several_page(writer: _Writer, ds: xr.Dataset | xr.DataTree, parts: Sequence[_Part],
                  options: _Options, *, title: str | None,
                  validation_result: xr.Dataset | xr.DataTree | None, figure_format: str,
                  dpi: float) -> str:
    """The page of several data sets: a summary across them (one broadcast validation), then
    the sections of each, computed on its present points."""
    from xuqcal.analysis import validation

    if validation_result is not None:
        summary = validation_result
    else:
        summary = validation.validate(ds, options.statistics, n_boot=options.n_boot,
                                      n_mc=options.n_mc, seed=options.seed,
                                      n_bins=options.n_bins, mc_precision=options.mc_precision,
                                      **options.dependence)
    if isinstance(summary, xr.Dataset) and any(
            v.chunks is not None for v in summary.variables.values()):
        summary = summary.compute()  # lazy for Dask-backed data: once, here
    sets = [(part, _slice_data(part)) for part in parts]
    blocks = [_block(summary, part, data.sizes["sample"]) for part, data in sets]
    if isinstance(summary, xr.Dataset):
        writer.result("validation", summary, group="")
    table = _summary_table(_summary_frame(summary))
    figure = _summary_figure(writer, summary)
    comparison = _comparison_section(writer, ds, parts, options)

    sections, contents = [], []
    for (part, data), block in zip(sets, blocks, strict=True):
        body, provenance = _set_sections(writer, data, options, key=part.key, level=3,
                                         validation_result=block, labels=part.labels)
        heading = slice_title(part.labels, block)
        contents.append(f'<li><a href="#{part.key}">{html.escape(heading)}</a></li>')
        source = data.attrs.get("source")
        source_line = (f'<p class="source">source: {html.escape(str(source))}</p>'
                       if isinstance(source, str) and source.strip() else "")
        own = [f for group, f in writer.results if group == part.key]
        sections.append(f"""<section id="{part.key}">
<h2>{html.escape(heading)}</h2>
{source_line}
{body}<h3>Results and provenance</h3>
{_links(own)}
{_definitions(provenance)}
</section>
""")
    sources = _source_texts(ds)
    source_line = (f"xuqcal validation report · {len(parts)} data sets"
                   + (f" · sources: {', '.join(sources)}" if sources else ""))
    shared = [f for group, f in writer.results if group == ""]
    compared = " and comparison of models" if 'id="comparison"' in comparison else ""
    body = f"""<nav class="contents"><p>Contents</p><ol>
<li><a href="#summary">Summary across data sets{compared}</a></li>
{"".join(contents)}
<li><a href="#provenance">Results and provenance</a></li>
</ol></nav>
<section id="summary">
<h2>Summary across data sets</h2>
<p>The verdict of each question for each data set (the evidence is in each data set's
summary below).</p>
{_summary_grid_html(writer.summaries)}
<p>One row per data set and statistic: the estimate with its bootstrap BCa interval, the
verdict and the scheme that decided it. Each data set is analysed alone on its points (E and
uE not both missing), with the same seed, as in its own section below.</p>
{table}
{figure}
{comparison}</section>
{"".join(sections)}<section id="provenance">
<h2>Results and provenance</h2>
{_links(shared)}
{_definitions(_common_provenance(options, figure_format, dpi))}
</section>
"""
    return _page(title if title is not None else _several_title(parts), source_line, body)


def report(
    ds: xr.Dataset | xr.DataTree,
    folder: str | Path,
    *,
    features: Sequence[str] | None = None,
    statistics: Sequence[str] | None = None,
    n_boot: int | str = defaults.N_BOOT_VALIDATION,
    n_mc: int | str = defaults.N_MC_VALIDATION,
    mc_precision: float = defaults.MC_PRECISION,
    n_bins: int | None = None,
    n_bins_local: int = defaults.N_BINS_LOCAL,
    seed: int = defaults.SEED,
    title: str | None = None,
    overwrite: bool = False,
    validation_result: xr.Dataset | None = None,
    dpi: float = defaults.REPORT_DPI,
    figure_format: str = defaults.REPORT_FIGURE_FORMAT,
    E: str | None = None,
    uE: str | None = None,
    resample: str = "iid",
    groups: str | None = None,
    block: str | None = None,
    block_length: int | str | None = None,
) -> Path:
    """Write the validation report of a data set (or of several) into ``folder`` and return
    the page's path.

    Parameters
    ----------
    ds : xarray.Dataset or xarray.DataTree
        Input over ``sample`` with ``E``, ``uE`` and optional features. Data whose ``E`` and
        ``uE`` have dimensions besides ``sample`` (several data sets stacked by
        :func:`xuqcal.stack_datasets` along ``dataset``, models, tasks, ...), or a DataTree
        with one data set per node, give one page for all of them: a summary across the data
        sets (one row per data set and statistic), then one section per data set (per slice
        of the extra dimensions, see :mod:`xuqcal.analysis.slices`) with the content of its
        own report, computed on its present points (``E`` and ``uE`` not both NaN).
    folder : str or Path
        Output folder; its parent must exist. An existing non-empty folder is refused unless
        ``overwrite`` (checked, with :func:`check_folder`, before any computation).
    features : sequence of str, optional
        Conditioning variables for the adaptivity analyses (default: every data variable other
        than E and uE).
    statistics : sequence of str, optional
        Statistics of the validation table (default: those of :func:`xuqcal.validate`).
    n_boot, n_mc : int or "auto"
        Bootstrap replicates and synthetic data sets of the validation: by default
        ``defaults.N_BOOT_VALIDATION`` and ``defaults.N_MC_VALIDATION`` (``"auto"``: as many as
        ``mc_precision`` needs, at most ``defaults.N_BOOT`` and ``defaults.N_MC``), the counts
        of ``xuqcal validate``, ``xuqcal report`` and ``xuqcal demo``: the same data and seed
        give the same validation from each. The per-bin bootstraps of the local analyses and
        the reliability diagram use at most ``defaults.N_BOOT_RELIABILITY`` replicates, the band
        of the confidence curve at most ``defaults.N_MC_CURVE`` sets (these caps with
        ``"auto"``).
    mc_precision : float
        The precision of ``"auto"`` counts (:func:`xuqcal.validate`; default
        ``defaults.MC_PRECISION``).
    n_bins : int, optional
        Bins of the binned statistics of the validation (ENCE, UCE, ZMSE) and, at most, of the
        reliability diagram; default: the recommended number for each data set
        (:func:`~xuqcal.core.binning.recommended_n_bins` ``(M, defaults.N_BINS)``).
    n_bins_local : int
        Bins of the local analyses, at most. Both the local analyses and the reliability
        diagram use :func:`xuqcal.core.binning.recommended_n_bins`, ``min(n_bins, M // 20)``:
        every bin holds at least ``defaults.MIN_POINTS_PER_BIN_LOCAL`` (20) points (13 bins at
        M = 265); the page and the results say how many bins were used.
    seed : int
        Seed of every random draw.
    title : str, optional
        Title of the page (default: the data set's name: its ``name`` attribute, else the
        stem of the file it was read from, e.g. ``qm9`` for ``/data/qm9.csv``; for several
        data sets, e.g. ``3 data sets: a, b, c``); the source files are shown once, in a
        small line under the title.
    overwrite : bool
        Replace an existing report in ``folder``: only the files xuqcal wrote there (listed,
        unchanged, in ``.xuqcal-manifest.json``) are replaced or removed; any other file is
        left alone, and one that the report would write is refused before computing.
    validation_result : xarray.Dataset, optional
        A result of :func:`xuqcal.validate` for ``ds`` to use instead of validating again
        (for several data sets, the broadcast result, with their dimensions).
    dpi : float
        Resolution of PNG figures (and of the rasterized parts of SVG figures), in pixels per
        inch, from 20 to 1200. The page shows a figure of w inches w × 96 CSS pixels wide
        whatever ``dpi``: the default, ``defaults.REPORT_DPI`` = 192, is twice that (sharp on
        HiDPI screens); 96 gives one image pixel per CSS pixel.
    figure_format : {"png", "svg"}
        File format of the figures (``figures/*.png`` or ``figures/*.svg``; default
        ``defaults.REPORT_FIGURE_FORMAT``). SVG figures are vector graphics, sharp at any
        zoom.
    E, uE : str, optional
        Names of the error and uncertainty variables (default: the variables recorded with
        these roles, else ``"E"`` and ``"uE"``; see :func:`xuqcal.io.roles`).
    resample, groups, block, block_length
        How the bootstraps of the validation (and of the coverage statistics), of the
        per-bin intervals of the local analyses (:func:`xuqcal.local`), of the reliability
        diagram (:func:`xuqcal.reliability`) and of the local coverage
        (:func:`xuqcal.curves.local_coverage`), and of the summary (:func:`xuqcal.summary`) resample
        the points (the PIT test treats them as independent), as in
        :func:`xuqcal.validate`: ``"iid"`` (the default), ``"cluster"`` with
        ``groups`` (a variable over ``sample``), or a block scheme (``"moving"``,
        ``"circular"``, ``"stationary"``) with ``block`` and ``block_length`` (an integer or
        ``"auto"``); checked before any computation. With ``groups`` or ``block`` the page
        adds a section on the dependence of the points: the effective sample size and the
        diagnostics of :func:`xuqcal.describe` (intra-class correlations of Z and Z² and the
        design effect, or lag-1 autocorrelations), and says how the intervals resampled the
        points (the resample of ``validation_result`` when it is given).

    Returns
    -------
    pathlib.Path
        The path of ``index.html``.

    Notes
    -----
    The page of several data sets starts with a table of contents linking to each section;
    the figures and results of a data set are named after its labels (``dataset-b_zeta.png``,
    ``results/dataset-b_validation.nc``), and the summary's are ``figures/zeta.*`` (one panel
    per data set, for one or two extra dimensions and at most six panels) and
    ``results/validation.nc`` (the broadcast validation). Sets stacked along one dimension
    that share samples (the points present in every set are at least half of each set's) are
    also compared at the end of the summary ("Comparison of models": ranking tables, the
    forest plot, the rank heat map of zms and the SIP matrix; ``results/comparison.nc``,
    ``comparison_scores.nc`` and ``comparison_sip.nc``; see the module's notes).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> import xuqcal
    >>> ds = xuqcal.synthetic.nig(1000, nu=6, seed=0)
    >>> page = report(ds, pathlib.Path(tempfile.mkdtemp()) / "r", n_boot=200, n_mc=200,
    ...               figure_format="svg")
    >>> page.name, sorted(p.suffix for p in (page.parent / "figures").iterdir())[0]
    ('index.html', '.svg')
    """
    dpi, figure_format = _checked_options(title, dpi, figure_format)
    _check_validation_result(validation_result)
    n_boot, n_mc = _check_count_argument(n_boot, "n_boot"), _check_count_argument(n_mc, "n_mc")
    options = _Options(features=None if features is None else list(features),
                       statistics=statistics, n_boot=n_boot, n_mc=n_mc,
                       mc_precision=mc_precision,
                       n_bins=None if n_bins is None else _check_bins_argument(n_bins, "n_bins"),
                       n_bins_local=_check_bins_argument(n_bins_local, "n_bins_local"),
                       seed=seed)
    ds = _checked_input(ds, E, uE)
    folder = Path(folder)
    parts = _parts(ds)
    options.dependence = _checked_dependence(parts, resample, groups, block, block_length)
    check_folder(ds, folder, features=options.features, overwrite=overwrite,
                 figure_format=figure_format)
    writer = _Writer(folder, overwrite=overwrite, inputs=_source_files(ds),
                     figure_format=figure_format, dpi=dpi)
    with writer:
        if _several(parts):
            page = _several_page(writer, ds, parts, options, title=title,
                                 validation_result=validation_result,
                                 figure_format=figure_format, dpi=dpi)
            return writer.page(page)
        block = (None if validation_result is None
                 else _block(validation_result, parts[0], ds.sizes["sample"]))
        body, provenance = _set_sections(writer, ds, options, validation_result=block)
        merged = {**_common_provenance(options, figure_format, dpi), **provenance}
        page = _page(
            title if title is not None else _data_name(ds),
            f"xuqcal validation report · source: {ds.attrs.get('source', 'arrays')}",
            f"""{body}<h2>Results and provenance</h2>
{_links([f for _, f in writer.results])}
{_definitions({k: merged[k] for k in _PROVENANCE_ORDER if k in merged})}
""")
        return writer.page(page)
