"""A complete, readable validation report: one HTML page with its figures and NetCDF results.

:func:`report` runs every analysis that applies to a data set — validation of the statistics
(every scheme, ζ and verdict), distribution diagnostics, z-scores with running statistics and
local analyses (LZM/LZMS with f_v) along uE and each feature, the reliability diagram and the
confidence curve with its reference — and writes::

    <folder>/index.html          the page (inline style, no external resource)
    <folder>/figures/*.png       one figure per analysis
    <folder>/results/*.nc        the numbers behind the page (NetCDF-4)
    <folder>/.xuqcal-manifest.json   the files above with their SHA-256: with ``overwrite``,
                                 only these are ever replaced or removed
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
from xuqcal.core.provenance import provenance as _provenance
from xuqcal.io import outputs as _outputs

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 70em; color: #222; }
h1 { font-size: 1.6em; } h2 { font-size: 1.25em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.9em; }
th, td { border: 1px solid #ddd; padding: 0.25em 0.6em; text-align: right; }
th { background: #f3f3f3; } td.text { text-align: left; }
td.pass { background: #e5f5e5; } td.fail { background: #fbe4e4; }
td.other { background: #f6f1dc; }
figure { display: inline-block; margin: 0.5em; vertical-align: top; }
figure img { max-width: 34em; border: 1px solid #eee; }
figcaption { font-size: 0.85em; color: #555; max-width: 34em; }
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


def _verdict_class(verdict: str) -> str:
    return {"pass": "pass", "fail": "fail"}.get(verdict, "other")


class _Writer:
    """Collects figures and results in the report folder (each file written atomically and
    recorded in the folder's manifest, see :mod:`xuqcal.io.outputs`)."""

    def __init__(self, folder: Path, *, overwrite: bool = False,
                 inputs: Sequence[Path] = ()) -> None:
        self.folder = folder
        self.managed = _outputs.ManagedFolder(folder, overwrite=overwrite, inputs=inputs)
        self.figures: list[tuple[str, str, str]] = []  # (section, file, caption)
        self.results: list[str] = []

    def figure(self, section: str, name: str, ax, caption: str) -> None:
        import matplotlib.pyplot as plt

        file = f"figures/{name}.png"
        tmp = self.managed.temporary(file)
        try:
            ax.figure.savefig(tmp, dpi=90, format="png")
            self.managed.commit(file, tmp)
        finally:
            plt.close(ax.figure)
            tmp.unlink(missing_ok=True)
        self.figures.append((section, file, caption))

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
        return "".join(
            f'<figure><img src="{html.escape(file)}" alt="{html.escape(caption)}">'
            f"<figcaption>{html.escape(caption)}</figcaption></figure>"
            for sec, file, caption in self.figures if sec == section
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


def _planned_files(features: Sequence[str]) -> list[str]:
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
    return (["index.html"] + [f"figures/{name}.png" for name in figures]
            + [f"results/{name}.nc" for name in results])


def _source_files(ds: xr.Dataset) -> list[Path]:
    """The input file recorded in ``ds.attrs['source']``, when it is one."""
    source = ds.attrs.get("source")
    if isinstance(source, str) and source and Path(source).is_file():
        return [Path(source)]
    return []


def check_folder(ds: xr.Dataset, folder: str | Path, *, features: Sequence[str] | None = None,
                 overwrite: bool = False, inputs: Sequence[str | Path] = ()) -> None:
    """Check a report folder before any computation (nothing is written or removed).

    The folder's parent must exist and be writable; an existing non-empty folder is refused
    unless ``overwrite``; with ``overwrite``, a file the report would write must be one that
    xuqcal wrote there (listed, unchanged, in the folder's manifest ``.xuqcal-manifest.json``):
    the user's own files are never replaced or removed. No report file may be an input file
    (``inputs``, and the file named by ``ds.attrs["source"]``).

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
    planned = _planned_files(_report_features(ds, features))
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
        Bins of the binned statistics and of the reliability diagram.
    n_bins_local : int
        Bins of the local analyses (reduced so that every bin holds at least 20 points).
    seed : int
        Seed of every random draw.
    title : str, optional
        Title of the page (default: the data set's source).
    overwrite : bool
        Replace an existing report in ``folder``: only the files xuqcal wrote there (listed,
        unchanged, in ``.xuqcal-manifest.json``) are replaced or removed; any other file is
        left alone, and one that the report would write is refused before computing.
    validation_result : xarray.Dataset, optional
        A result of :func:`xuqcal.validate` for ``ds`` to use instead of validating again.
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
    >>> page = report(ds, pathlib.Path(tempfile.mkdtemp()) / "r", n_boot=200, n_mc=200)
    >>> page.name
    'index.html'
    """
    from xuqcal import plot
    from xuqcal.analysis import curves, diagnostics, local, validation
    from xuqcal.analysis import features as feature_analysis

    E, uE = io.roles(ds, E, uE)
    ds = io.validate_dataset(ds, E=E, uE=uE)
    if (E, uE) != (defaults.E, defaults.UE):  # the analyses below use the default names
        ds = _standard_names(ds, E, uE)
    folder = Path(folder)
    features = _report_features(ds, features)
    check_folder(ds, folder, features=features, overwrite=overwrite)
    writer = _Writer(folder, overwrite=overwrite, inputs=_source_files(ds))
    with writer:
        m = ds.sizes["sample"]
        n_bins_local = max(1, min(n_bins_local, m // 20))
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
        describe_table = _table(
            described[rows].sel(variable=["E", "Z"]).to_dataframe()[rows].T
            .rename_axis(columns=None).reset_index(names=""), "distributions")
        scalars = ["uE2_shape", "uE2_scale", "beta_gm_uE"]
        uncertainty_table = _table(
            pd.DataFrame({"uncertainties": scalars,
                          "value": [described[n].item() for n in scalars]}), "uncertainties")

        # conditional calibration
        fv_rows, fv_classes = [], []
        for by in conditioning:
            writer.figure("conditional", f"zscores_{by}", plot.zscores(ds, by=by),
                          f"z-scores against {by}, with running mean and root mean square")
            for statistic in ("zm", "zms"):
                try:
                    loc = local.local(ds, statistic, by=by, n_bins=n_bins_local,
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
        rel = local.reliability(ds, n_bins=n_bins,
                                n_boot=min(n_boot, defaults.N_BOOT_RELIABILITY), seed=seed)
        writer.result("reliability", rel)
        writer.figure("conditional", "reliability", plot.reliability(rel),
                      "reliability diagram: RMSE against RMV per bin of uE")
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
        provenance = {
            "xuqcal version": stamp["xuqcal_version"],
            "created": stamp["created"],
            "source": ds.attrs.get("source", "arrays"),
            "E": ds.attrs.get("E_expression", "E"),
            "uE": ds.attrs.get("uE_expression", "uE"),
            "where": ds.attrs.get("where", "") or "–",
            "points (M)": str(m),
            "seed": str(seed),
            "bootstrap replicates": str(n_boot),
            "synthetic sets per generator": str(n_mc),
            "bins (binned statistics)": str(n_bins),
            "bins (local analyses)": str(n_bins_local),
            "features": ", ".join(features) or "–",
        }
        title = title or f"Validation report: {provenance['source']}"
        results_list = "".join(f'<li><a href="{html.escape(f)}">{html.escape(f)}</a></li>'
                               for f in writer.results)
        page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>{_STYLE}</style></head><body>
<h1>{html.escape(title)}</h1>
<h2>Validation of the statistics</h2>
<p>Estimates with bootstrap BCa intervals; ζ-scores against predefined references (BS) and
simulated references (Sim, Sim2); the verdict follows the recommended workflow.</p>
{validation_table}
{writer.figures_html("validation")}
<h2>Distributions</h2>
{describe_table}{uncertainty_table}
{writer.figures_html("diagnostics")}
<h2>Consistency and adaptivity</h2>
<p>Fraction of valid bins of the local analyses (target 0.95).</p>
{fv_table}
{writer.figures_html("conditional")}
<h2>Results and provenance</h2>
<ul>{results_list}</ul>
<dl>{"".join(f"<dt>{html.escape(k)}</dt><dd>{html.escape(v)}</dd>"
             for k, v in provenance.items())}</dl>
</body></html>
"""
        return writer.page(page)
