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

Figures are shown at their natural size: a figure of w × h inches is w × h × 96 CSS pixels
(the CSS inch), so its fonts and legends have the size matplotlib gave them; PNG figures are
rendered at ``dpi`` pixels per inch (default ``defaults.REPORT_DPI`` = 192, twice the CSS
resolution, sharp on HiDPI screens), SVG figures are vector graphics (their rasterized parts,
such as the z-score scatter, at ``dpi``).

The local analyses use the one bin-count rule of :mod:`xuqcal.core.binning`
(:func:`~xuqcal.core.binning.recommended_n_bins`: at least
``defaults.MIN_POINTS_PER_BIN_LOCAL`` points per bin), and so does the reliability diagram;
the z-score plots use the default window of :func:`xuqcal.analysis.running.default_window`.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr

from xuqcal import io
from xuqcal.core import defaults
from xuqcal.core.binning import recommended_n_bins
from xuqcal.core.provenance import provenance as _provenance
from xuqcal.io import outputs as _outputs

#: CSS pixels per inch (the CSS reference pixel): a figure of w inches is shown w * 96 px wide.
CSS_PX_PER_INCH = 96
#: File formats of the report's figures.
FIGURE_FORMATS = ("png", "svg")
#: Range of ``dpi`` accepted by :func:`report` (pixels per inch).
DPI_RANGE = (20, 1200)

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 84em; color: #222;
       padding: 0 1em; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
h2 { font-size: 1.25em; border-bottom: 1px solid #ccc; }
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


def _table(df: pd.DataFrame, name: str, classes: pd.DataFrame | None = None,
           digits: int = 4) -> str:
    """``df`` as an HTML table (pandas' :class:`~pandas.io.formats.style.Styler`): cells
    formatted with :func:`_fmt` and escaped, the index hidden, the first column left-aligned
    (CSS class ``text``), ``classes`` (same shape) added to the cells (e.g. ``pass``)."""
    if classes is None:
        classes = pd.DataFrame("", index=df.index, columns=df.columns)
        classes.iloc[:, 0] = "text"
    return (df.style.format(lambda v: _fmt(v, digits), escape="html")
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
    """``used`` bins, and why when fewer than ``asked``."""
    if used == asked:
        return str(used)
    return (f"{used} ({asked} asked; at most M // {defaults.MIN_POINTS_PER_BIN_LOCAL} = "
            f"{m // defaults.MIN_POINTS_PER_BIN_LOCAL} so that every bin holds at least "
            f"{defaults.MIN_POINTS_PER_BIN_LOCAL} points)")


def _verdict_class(verdict: str) -> str:
    return {"pass": "pass", "fail": "fail"}.get(verdict, "other")


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
        self.results: list[str] = []

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
            figure.savefig(tmp, dpi=self.dpi, format=self.figure_format, metadata=metadata)
            width, height = _css_size(tmp, self.figure_format, self.dpi)
            self.managed.commit(file, tmp)
        finally:
            plt.close(figure)
            tmp.unlink(missing_ok=True)
        self.figures.append((section, file, caption, width, height))

    def result(self, name: str, ds: xr.Dataset) -> None:
        file = f"results/{name}.nc"
        io.to_netcdf(ds, self.managed.target(file), overwrite=True)
        self.managed.commit(file)
        self.results.append(file)

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


def _standard_names(ds: xr.Dataset, E: str, uE: str) -> xr.Dataset:
    """``ds`` with its error and uncertainty variables named ``E`` and ``uE``."""
    clash = [name for name in (defaults.E, defaults.UE) if name in ds.data_vars
             and name not in (E, uE)]
    if clash:
        raise ValueError(f"{clash[0]}: the data set has a variable {clash[0]!r} besides the "
                         f"error and uncertainty variables {E!r}, {uE!r}; rename it")
    return ds.rename({E: "__E", uE: "__uE"}).rename({"__E": defaults.E, "__uE": defaults.UE})


def _report_features(ds: xr.Dataset, features: Sequence[str] | None) -> list[str]:
    if features is None:
        E, uE = io.roles(ds)
        features = [str(v) for v in ds.data_vars if v not in (E, uE)
                    and np.issubdtype(ds[v].dtype, np.number)]
    features = list(features)
    for name in features:
        if name not in ds:
            raise ValueError(f"features: {name!r} is not a variable of the data set")
    return features


def _planned_files(features: Sequence[str],
                   figure_format: str = defaults.REPORT_FIGURE_FORMAT) -> list[str]:
    """Every file a report with these features may write (relative to its folder)."""
    figures = ["zeta", "error_distribution", "reliability", "confidence_curve"]
    results = ["validation", "diagnostics", "reliability", "confidence_curve"]
    for by in ["uE", *features]:
        figures.append(f"zscores_{by}")
        for statistic in ("zm", "zms"):
            figures.append(f"local_{statistic}_{by}")
            results.append(f"local_{statistic}_{by}")
    if features:
        figures.append("rank_correlation")
        results.append("rank_correlation")
    return (["index.html"] + [f"figures/{name}.{figure_format}" for name in figures]
            + [f"results/{name}.nc" for name in results])


def _source_files(ds: xr.Dataset) -> list[Path]:
    """The input file recorded in ``ds.attrs['source']``, when it is one."""
    source = ds.attrs.get("source")
    if isinstance(source, str) and source and Path(source).is_file():
        return [Path(source)]
    return []


def check_folder(ds: xr.Dataset, folder: str | Path, *, features: Sequence[str] | None = None,
                 overwrite: bool = False, inputs: Sequence[str | Path] = (),
                 figure_format: str = defaults.REPORT_FIGURE_FORMAT) -> None:
    """Check a report folder before any computation (nothing is written or removed).

    The folder's parent must exist and be writable; an existing non-empty folder is refused
    unless ``overwrite``; with ``overwrite``, a file the report would write must be one that
    xuqcal wrote there (listed, unchanged, in the folder's manifest ``.xuqcal-manifest.json``):
    the user's own files are never replaced or removed. No report file may be an input file
    (``inputs``, and the file named by ``ds.attrs["source"]``). ``figure_format`` (``"png"``
    or ``"svg"``) is the format of the figures the report will write.

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
    planned = _planned_files(_report_features(ds, features),
                             _check_figure_format(figure_format))
    _outputs.check_folder(Path(folder), planned, overwrite=overwrite,
                          inputs=[*inputs, *_source_files(ds)], refuse_nonempty=True)


def report(
    ds: xr.Dataset,
    folder: str | Path,
    *,
    features: Sequence[str] | None = None,
    statistics: Sequence[str] | None = None,
    n_boot: int = defaults.N_BOOT_REPORT,
    n_mc: int = defaults.N_MC_REPORT,
    n_bins: int = defaults.N_BINS,
    n_bins_local: int = defaults.N_BINS_LOCAL,
    seed: int = defaults.SEED,
    title: str | None = None,
    overwrite: bool = False,
    validation_result: xr.Dataset | None = None,
    dpi: float = defaults.REPORT_DPI,
    figure_format: str = defaults.REPORT_FIGURE_FORMAT,
    E: str | None = None,
    uE: str | None = None,
) -> Path:
    """Write the validation report of a data set into ``folder`` and return the page's path.

    Parameters
    ----------
    ds : xarray.Dataset
        Input over ``sample`` with ``E``, ``uE`` and optional features.
    folder : str or Path
        Output folder; its parent must exist. An existing non-empty folder is refused unless
        ``overwrite`` (checked, with :func:`check_folder`, before any computation).
    features : sequence of str, optional
        Conditioning variables for the adaptivity analyses (default: every data variable other
        than E and uE).
    statistics : sequence of str, optional
        Statistics of the validation table (default: those of :func:`xuqcal.validate`).
    n_boot, n_mc : int
        Bootstrap replicates and synthetic data sets of the validation.
    n_bins : int
        Bins of the binned statistics of the validation (ENCE, UCE, ZMSE) and, at most, of the
        reliability diagram.
    n_bins_local : int
        Bins of the local analyses, at most. Both the local analyses and the reliability
        diagram use :func:`xuqcal.core.binning.recommended_n_bins`, ``min(n_bins, M // 20)``:
        every bin holds at least ``defaults.MIN_POINTS_PER_BIN_LOCAL`` (20) points (13 bins at
        M = 265); the page and the results say how many bins were used.
    seed : int
        Seed of every random draw.
    title : str, optional
        Title of the page (default: the data set's name: its ``name`` attribute, else the
        stem of the file it was read from, e.g. ``qm9`` for ``/data/qm9.csv``); the source
        file is shown once, in a small line under the title.
    overwrite : bool
        Replace an existing report in ``folder``: only the files xuqcal wrote there (listed,
        unchanged, in ``.xuqcal-manifest.json``) are replaced or removed; any other file is
        left alone, and one that the report would write is refused before computing.
    validation_result : xarray.Dataset, optional
        A result of :func:`xuqcal.validate` for ``ds`` to use instead of validating again.
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

    Returns
    -------
    pathlib.Path
        The path of ``index.html``.

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
    from xuqcal import plot
    from xuqcal.analysis import curves, diagnostics, local, running, validation
    from xuqcal.analysis import features as feature_analysis

    figure_format = _check_figure_format(figure_format)
    dpi = _check_dpi(dpi)
    n_bins = _check_bins_argument(n_bins, "n_bins")
    n_bins_local = _check_bins_argument(n_bins_local, "n_bins_local")
    if title is not None and (not isinstance(title, str) or not title.strip()):
        raise ValueError(f"title: expected a non-empty string, got {title!r}")
    E, uE = io.roles(ds, E, uE)
    ds = io.validate_dataset(ds, E=E, uE=uE)
    if (E, uE) != (defaults.E, defaults.UE):  # the analyses below use the default names
        ds = _standard_names(ds, E, uE)
    folder = Path(folder)
    features = _report_features(ds, features)
    check_folder(ds, folder, features=features, overwrite=overwrite,
                 figure_format=figure_format)
    writer = _Writer(folder, overwrite=overwrite, inputs=_source_files(ds),
                     figure_format=figure_format, dpi=dpi)
    with writer:
        m = ds.sizes["sample"]
        n_local = recommended_n_bins(m, n_bins_local)  # the one rule (xuqcal.core.binning)
        n_reliability = recommended_n_bins(m, n_bins)
        window = running.default_window(m)
        conditioning = ["uE", *features]

        # validation
        result = validation_result if validation_result is not None else validation.validate(
            ds, statistics, n_boot=n_boot, n_mc=n_mc, seed=seed, n_bins=n_bins)
        writer.result("validation", result)
        writer.figure("validation", "zeta", plot.zeta(result), "ζ-scores of every statistic and "
                      "scheme; the grey band is |ζ| ≤ 1, circled points decide the verdict")
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
        table["verdict"] += [" *" if key in notes else "" for key in table.index]
        table = table.reset_index()[["statistic", *table.columns]]
        classes = pd.DataFrame("", index=table.index, columns=table.columns)
        classes["statistic"] = "text"
        classes["verdict"] = [_verdict_class(str(v)) for v in verdicts["verdict"]]
        validation_table = _table(table, "validation", classes)
        if notes:
            validation_table += ('<p class="notes">Notes (* in the verdict column):</p><ul>'
                                 + "".join(f"<li><b>{html.escape(k)}</b>: {html.escape(n)}</li>"
                                           for k, n in notes.items()) + "</ul>")

        # distribution diagnostics
        described = diagnostics.describe(ds)
        writer.result("diagnostics", described)
        writer.figure("diagnostics", "error_distribution", plot.error_distribution(ds),
                      "histogram of E against errors re-simulated from uE with normal and t6 "
                      "generators")
        rows = ["mean", "sd", "relative_bias", "beta_gm", "kappa_cs", "nu_eff"]
        frame = (described[rows].sel(variable=["E", "Z"]).to_dataframe()[rows].T
                 .rename_axis(columns=None).reset_index(names="diagnostic"))
        frame["description"] = [_description(described[n]) for n in rows]
        describe_table = _table(frame, "distributions", _text_classes(frame))
        scalars = ["uE2_shape", "uE2_scale", "beta_gm_uE"]
        frame = pd.DataFrame({"uncertainties": scalars,
                              "value": [described[n].item() for n in scalars],
                              "description": [_description(described[n]) for n in scalars]})
        uncertainty_table = _table(frame, "uncertainties", _text_classes(frame))

        # conditional calibration
        fv_rows, fv_classes = [], []
        for by in conditioning:
            writer.figure("conditional", f"zscores_{by}", plot.zscores(ds, by=by),
                          f"z-scores against {by}, with their running mean and root mean "
                          f"square over windows of {window} points")
            for statistic in ("zm", "zms"):
                try:
                    loc = local.local(ds, statistic, by=by, n_bins=n_local,
                                      n_boot=min(n_boot, defaults.N_BOOT_RELIABILITY),
                                      seed=seed)
                except ValueError as error:  # e.g. a feature too stratified for the bins
                    fv_rows.append([f"{statistic} | {by}", np.nan, "–", str(error)])
                    fv_classes.append("other")
                    continue
                writer.result(f"local_{statistic}_{by}", loc)
                writer.figure("conditional", f"local_{statistic}_{by}", plot.local(loc),
                              f"per-bin {statistic} along {by} ({loc.sizes['bin']} bins); red "
                              "bins do not contain the target")
                fv = loc.fraction_valid.item()
                low, high = loc.fraction_valid_low.item(), loc.fraction_valid_high.item()
                ok = low <= 0.95 <= high
                fv_rows.append([f"{statistic} | {by}", fv, f"[{_fmt(low, 3)}, {_fmt(high, 3)}]",
                                "compatible with 0.95" if ok else "not compatible with 0.95"])
                fv_classes.append("pass" if ok else "fail")
        fv_frame = pd.DataFrame(fv_rows, columns=["analysis", "f_v", "Wilson-cc 95 %",
                                                  "verdict"])
        classes = pd.DataFrame("", index=fv_frame.index, columns=fv_frame.columns)
        classes["analysis"] = "text"
        classes["verdict"] = fv_classes
        fv_table = _table(fv_frame, "fraction_valid", classes, digits=3)
        rel = local.reliability(ds, n_bins=n_reliability,
                                n_boot=min(n_boot, defaults.N_BOOT_RELIABILITY), seed=seed)
        writer.result("reliability", rel)
        writer.figure("conditional", "reliability", plot.reliability(rel),
                      f"reliability diagram: RMSE against RMV per bin of uE ({n_reliability} "
                      "bins)")
        curve = curves.confidence_curve(ds, generator=defaults.GENERATORS[0],
                                        n_mc=min(n_mc, 1000), seed=seed)
        writer.result("confidence_curve", curve)
        writer.figure("conditional", "confidence_curve", plot.confidence_curve(curve),
                      "confidence curve with the 95 % band of errors simulated from uE (normal)")
        if features:
            matrix = feature_analysis.rank_correlation(ds, features)
            writer.result("rank_correlation", matrix.to_dataset(name="rank_correlation"))
            writer.figure("conditional", "rank_correlation", plot.rank_correlation(matrix),
                          "Spearman rank correlations of the features, |E| and uE")

        # provenance and page
        stamp = _provenance()
        source = str(ds.attrs.get("source", "arrays"))
        provenance = {
            "xuqcal version": stamp["xuqcal_version"],
            "created": stamp["created"],
            "E": ds.attrs.get("E_expression", "E"),
            "uE": ds.attrs.get("uE_expression", "uE"),
            "where": ds.attrs.get("where", "") or "–",
            "points (M)": str(m),
            "seed": str(seed),
            "bootstrap replicates": str(n_boot),
            "synthetic sets per generator": str(n_mc),
            "bins (binned statistics)": str(n_bins),
            "bins (local analyses)": _bins_text(n_local, n_bins_local, m),
            "bins (reliability diagram)": _bins_text(n_reliability, n_bins, m),
            "running-statistics window": f"{window} points",
            "features": ", ".join(features) or "–",
            "figures": f"{figure_format.upper()}, {dpi:g} dpi",
        }
        title = title if title is not None else _data_name(ds)
        results_list = "".join(f'<li><a href="{html.escape(f)}">{html.escape(f)}</a></li>'
                               for f in writer.results)
        page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(title)} – xuqcal validation report</title>
<style>{_STYLE}</style></head><body>
<h1>{html.escape(title)}</h1>
<p class="source">xuqcal validation report · source: {html.escape(source)}</p>
<h2>Validation of the statistics</h2>
<p>Estimates with bootstrap BCa intervals; ζ-scores against predefined references (BS) and
simulated references (Sim, Sim2); the verdict follows the recommended workflow.</p>
{validation_table}
{writer.figures_html("validation")}
<h2>Distributions</h2>
<p>Diagnostics of the errors E, the z-scores Z = E / uE and the uncertainties uE, which help
choose the generative distribution of the simulated references (the names are those of the
variables of <code>results/diagnostics.nc</code>).</p>
{describe_table}{uncertainty_table}
{writer.figures_html("diagnostics")}
<h2>Consistency and adaptivity</h2>
<p>Fraction of valid bins f_v of the local analyses (target 0.95), over {n_local}
equal-count bins: at most {n_bins_local}, with at least {defaults.MIN_POINTS_PER_BIN_LOCAL}
points per bin (<code>xuqcal.core.binning.recommended_n_bins</code>).</p>
{fv_table}
{writer.figures_html("conditional")}
<h2>Results and provenance</h2>
<ul>{results_list}</ul>
<dl>{"".join(f"<dt>{html.escape(k)}</dt><dd>{html.escape(v)}</dd>"
             for k, v in provenance.items())}</dl>
</body></html>
"""
        return writer.page(page)
