"""The HTML report: every figure linked and valid, results readable, nothing overwritten."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import warnings
import xml.etree.ElementTree as ET
from html import unescape
from html.parser import HTMLParser

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from PIL import Image

import xuqcal
from xuqcal.analysis.diagnostics import DESCRIPTIONS
from xuqcal.analysis.tables import slices_summary
from xuqcal.analysis.validation import verdict_outcome
from xuqcal.cli import main
from xuqcal.core import defaults
from xuqcal.core.binning import FewPointsPerBinWarning

#: Executables of a headless Chromium or Chrome (Debian: chromium, chromium-headless-shell).
BROWSERS = ("chromium", "chromium-browser", "chromium-headless-shell", "google-chrome",
            "google-chrome-stable", "chrome-headless-shell", "chrome")


class _Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.images, self.links, self.text, self.sizes, self.ids = [], [], [], {}, []
        self.h1, self._in_h1 = "", False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if "id" in attrs:
            self.ids.append(attrs["id"])
        if tag == "img":
            self.images.append(attrs["src"])
            self.sizes[attrs["src"]] = (int(attrs["width"]), int(attrs["height"]))
        if tag == "a":
            self.links.append(attrs["href"])
        if tag in ("link", "script"):
            raise AssertionError(f"external resource <{tag}> in a self-contained page")
        self._in_h1 = self._in_h1 or tag == "h1"

    def handle_endtag(self, tag):
        if tag == "h1":
            self._in_h1 = False

    def handle_data(self, data):
        self.text.append(data)
        if self._in_h1:
            self.h1 += data


def _check_page(page, figure_format="png", dpi=defaults.REPORT_DPI):
    """Every figure is a valid file of ``figure_format``, shown once at its natural size (width
    and height attributes = inches x 96 CSS px; PNG pixels = inches x dpi); every link opens: a
    result file, or an element of the page (``#id``, ids unique)."""
    parser = _Links()
    parser.feed(page.read_text(encoding="utf-8"))
    assert parser.images, "the report has no figure"
    assert len(set(parser.images)) == len(parser.images), "a figure is shown twice"
    assert len(set(parser.ids)) == len(parser.ids), "two elements have the same id"
    for src in parser.images:
        path = page.parent / src
        assert path.is_file(), src
        assert path.suffix == f".{figure_format}", src
        width, height = parser.sizes[src]
        if figure_format == "png":
            with Image.open(path) as image:
                image.verify()
                assert image.format == "PNG"
                pixels = image.size
            assert pixels[0] == pytest.approx(width * dpi / 96, abs=1.0), src
            assert pixels[1] == pytest.approx(height * dpi / 96, abs=1.0), src
        else:
            root = ET.parse(path).getroot()
            assert root.tag == "{http://www.w3.org/2000/svg}svg", src
            points = [float(root.attrib[k].removesuffix("pt")) for k in ("width", "height")]
            assert points[0] * 96 / 72 == pytest.approx(width, abs=1.0), src
            assert points[1] * 96 / 72 == pytest.approx(height, abs=1.0), src
    for href in parser.links:
        if href.startswith("#"):
            assert href[1:] in parser.ids, href
            continue
        with xr.open_dataset(page.parent / href) as result:
            assert result.attrs or result.data_vars
    return parser


@pytest.fixture(scope="module")
def data():
    ds = xuqcal.synthetic.nig(2000, nu=6, seed=3)
    return ds.assign(X=("sample", np.random.default_rng(0).normal(size=2000)))


@pytest.fixture(scope="module")
def full_report(data, tmp_path_factory):
    """The report of ``data`` (n_boot = n_mc = 300, 20 local bins), written once for the tests
    that only read it."""
    return xuqcal.report.report(data, tmp_path_factory.mktemp("full") / "r", n_boot=300,
                                n_mc=300, n_bins_local=20)


def test_report_contents(data, full_report):
    page = full_report
    parser = _check_page(page)
    text = " ".join(parser.text)
    for expected in ("Validation of the statistics", "zms", "ζ SimN", "verdict",
                     "Consistency and adaptivity", "zms | X", "f_v", "xuqcal version",
                     xuqcal.__version__, "bootstrap replicates"):
        assert expected in text, expected
    names = {src.split("/")[-1] for src in parser.images}
    assert {"zeta.png", "error_distribution.png", "zscores_uE.png", "zscores_X.png",
            "local_zms_uE.png", "local_zm_X.png", "reliability.png", "confidence_curve.png",
            "rank_correlation.png"} <= names
    validation = xr.open_dataset(page.parent / "results" / "validation.nc")
    assert validation.attrs["n_boot"] == 300
    validation.close()


def test_report_has_the_interval_based_section(data, full_report):
    """PICP with Wilson intervals, local coverage, PIT and proper scores (issue 15), their
    numbers those of the library's functions on the same data."""
    page = full_report
    parser = _check_page(page)
    text = " ".join(parser.text)
    for expected in ("Interval-based validation and proper scores", "picp68.3", "picp95",
                     "crps_normal", "nll_student", "Wilson intervals with continuity "
                     "correction"):
        assert expected in text, expected
    names = {src.split("/")[-1] for src in parser.images}
    assert {"local_coverage.png", "pit.png"} <= names
    results = page.parent / "results"
    with xr.open_dataset(results / "coverage.nc") as coverage:
        direct = xuqcal.validate(data, ["picp"], n_boot=300, n_mc=300)
        np.testing.assert_array_equal(coverage.estimate.values, direct.estimate.values)
        np.testing.assert_array_equal(coverage.ci_low.values, direct.ci_low.values)
    with xr.open_dataset(results / "proper_scores.nc") as scores:
        assert float(scores.crps_normal) == float(
            xuqcal.proper_scores(data).crps_normal)
    with xr.open_dataset(results / "pit_test.nc") as test:
        assert float(test.ks_pvalue) == float(xuqcal.pit_test(data).ks_pvalue)


def test_report_refuses_to_overwrite(data, tmp_path):
    folder = tmp_path / "r"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="overwrite"):
        data.uqcal.report(folder, n_boot=200, n_mc=200)
    data.uqcal.report(folder, n_boot=200, n_mc=200, n_bins_local=10, overwrite=True)
    assert (folder / "notes.txt").read_text() == "mine"  # only the report's own files replaced
    assert (folder / "index.html").exists()


def test_report_command_with_features_and_formulas(tmp_path, capsys, monkeypatch):
    reads = []
    read_csv = pd.read_csv
    monkeypatch.setattr(pd, "read_csv", lambda *a, **k: reads.append(a) or read_csv(*a, **k))
    ds = xuqcal.synthetic.nig(600, nu=6, seed=2)
    rng = np.random.default_rng(1)
    formulas = [f"C{c}H{h}" + (f"O{o}" if o else "")
                for c, h, o in zip(rng.integers(1, 9, 600), rng.integers(2, 15, 600),
                                   rng.integers(0, 3, 600), strict=True)]
    frame = pd.DataFrame({"err": ds.E.values, "u": ds.uE.values, "size": rng.normal(size=600),
                          "formula": formulas})
    path = tmp_path / "data.csv"
    frame.to_csv(path, index=False)
    out = tmp_path / "report"
    assert main(["report", str(path), "--E", "err", "--uE", "u", "--features", "size,S2=size*2",
                 "--formula", "formula", "--n-boot", "200", "--n-mc", "200", "--no-progress",
                 "--known-generator", "uniform", "--simulated-scheme", "Sim", "--level", "0.9",
                 "-o", str(out)]) == 0
    assert f"report: {(out / 'index.html').resolve()}" in capsys.readouterr().out
    assert len(reads) == 1  # the CSV file is read once, for the data and the formulas
    parser = _check_page(out / "index.html")
    names = {src.split("/")[-1] for src in parser.images}
    assert {"zscores_size.png", "zscores_S2.png", "zscores_X1.png", "zscores_X2.png"} <= names
    # the validation options reach the report's validation table
    with xr.open_dataset(out / "results" / "validation.nc") as result:
        assert result.attrs["known_generator"] == "uniform"
        assert result.attrs["simulated_scheme"] == "Sim"  # not the default (Sim2 when known)
        assert "Sim[uniform]" in result.verdict_scheme.values.tolist()
        assert result.attrs["level"] == 0.9
    assert main(["report", str(path), "--E", "err", "--uE", "u", "-o", str(out)]) == 2
    assert "--overwrite" in capsys.readouterr().err


def test_demo_writes_reports_and_never_overwrites(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    args = ["demo", "--n-boot", "300", "--n-mc", "300", "--size", "1500", "--no-progress"]
    assert main(args) == 0
    assert main(args) == 0  # a second run goes to a new folder
    printed = capsys.readouterr().out
    pages = [line.split("report: ")[1] for line in printed.splitlines()
             if line.startswith("report: ")]
    assert len(pages) == 4 and len(set(pages)) == 4
    assert (tmp_path / "xuqcal-demo" / "report_calibrated" / "index.html").exists()
    assert (tmp_path / "xuqcal-demo-2" / "report_miscalibrated" / "index.html").exists()
    for page in pages[:2]:
        _check_page(tmp_path / page.split(str(tmp_path) + "/")[1])


def _browser():
    """A headless Chromium or Chrome; under CI (``CI`` set) its absence fails the test (.ci/run
    installs the Debian package), elsewhere it skips."""
    for name in BROWSERS:
        found = shutil.which(name)
        if found:
            return found
    message = (f"no headless Chromium or Chrome on this machine (looked for {', '.join(BROWSERS)});"
               " install one, e.g. apt-get install chromium-headless-shell (.ci/run does)")
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def _screenshot(browser, page, shot, profile):
    subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu",
                    "--disable-background-networking", "--disable-component-update",
                    "--no-first-run", "--hide-scrollbars", f"--user-data-dir={profile}",
                    f"--screenshot={shot}", "--window-size=1400,3000", page.as_uri()],
                   check=True, capture_output=True, timeout=120)
    with Image.open(shot) as image:
        return np.asarray(image.convert("RGB")).astype(int)


@pytest.mark.parametrize("figure_format", ["png", "svg"])
def test_report_renders_in_headless_chromium(data, tmp_path, figure_format):
    browser = _browser()
    page = data.uqcal.report(tmp_path / "r", n_boot=200, n_mc=200, n_bins_local=10,
                             figure_format=figure_format)
    pixels = _screenshot(browser, page, tmp_path / "shot.png", tmp_path / "profile")
    assert pixels.std() > 10  # the page rendered
    # the figures rendered (a missing or broken image shows its alt text, in black and grey):
    # matplotlib's blue (31, 119, 180) of the zeta and z-score plots is on the screen
    blue = np.abs(pixels - np.array([31, 119, 180])).max(axis=-1) <= 12
    assert blue.sum() > 200, blue.sum()
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "index.html").write_text(page.read_text(encoding="utf-8"), encoding="utf-8")
    no_figures = _screenshot(browser, empty / "index.html", tmp_path / "none.png",
                             tmp_path / "profile2")
    assert (np.abs(no_figures - np.array([31, 119, 180])).max(axis=-1) <= 12).sum() < 20


def test_report_finds_renamed_variables_by_role_and_writes_pandas_tables(data, tmp_path,
                                                                        monkeypatch):
    def no_accessor(self):
        raise AssertionError("the report must call the analysis functions, not the accessor")

    monkeypatch.setattr(xr.Dataset, "uqcal", property(no_accessor))
    renamed = data.rename(E="err", uE="sigma")
    page = xuqcal.report.report(renamed, tmp_path / "r", n_boot=200, n_mc=200, n_bins_local=20)
    text = page.read_text(encoding="utf-8")
    for table in ("validation", "distributions", "uncertainties", "fraction_valid"):
        assert f'<table id="T_{table}"' in text
    assert "rank_correlation" in text and "zscores_X.png" in text
    with xr.open_dataset(page.parent / "results" / "validation.nc") as stored:
        verdicts = stored.verdict.values.tolist()
    table = text.split('<table id="T_validation"', 1)[1].split("</table>", 1)[0]
    cells = re.findall(r'class="data row\d+ col\d+ (pass|fail|other)" >([^<]*)<', table)
    assert [cell[1].split(" ")[0] for cell in cells] == [v.split(" ")[0] for v in verdicts]
    # "pass/fail under every generator (...)" (issue 22) are coloured as pass and fail
    assert all(kind == (verdict_outcome(v) or "other")
               for (kind, _), v in zip(cells, verdicts, strict=True))


@pytest.fixture(scope="module")
def small_file(tmp_path_factory):
    """M = 265 points in a CSV file, read back by xuqcal (the case of the issue: 100 local bins
    would hold 2-3 points each)."""
    folder = tmp_path_factory.mktemp("sets")
    ds = xuqcal.synthetic.nig(265, nu=6, seed=5)
    path = folder / "small_set.csv"
    pd.DataFrame({"err": ds.E.values, "u": ds.uE.values}).to_csv(path, index=False)
    return path


def test_report_of_a_small_set_uses_the_bin_rule_and_its_name(small_file, tmp_path):
    ds = xuqcal.read_csv(small_file, E="err", uE="u")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        page = xuqcal.report.report(ds, tmp_path / "r", n_boot=200, n_mc=200)
    assert not [w for w in caught if issubclass(w.category, FewPointsPerBinWarning)]
    assert xuqcal.core.binning.recommended_n_bins(265) == 13  # min(100, 265 // 20)
    for name in ("local_zm_uE", "local_zms_uE", "reliability"):
        with xr.open_dataset(page.parent / "results" / f"{name}.nc") as result:
            assert result.sizes["bin"] == 13, name
            assert int(result["count"].min()) >= defaults.MIN_POINTS_PER_BIN_LOCAL
    parser = _check_page(page)
    text = " ".join(" ".join(parser.text).split())
    assert "13 (100 asked" in text and "13 (20 asked" in text  # local, reliability
    assert "over 13 equal-count bins" in text
    assert "windows of 20 points" in text  # the running-statistics window: 20, not 265 // 100
    # the title is the data set's name; the absolute path appears once, in the source line
    assert parser.h1 == "small_set"
    html_text = page.read_text(encoding="utf-8")
    assert html_text.count(str(small_file)) == 1
    assert re.search(r'<p class="source">[^<]*source: ' + re.escape(str(small_file)),
                     html_text)
    assert "<title>small_set – xuqcal validation report</title>" in html_text
    # every diagnostic is explained by the description its result variable carries
    for name in ("mean", "sd", "relative_bias", "beta_gm", "kappa_cs", "nu_eff", "uE2_shape",
                 "uE2_scale", "beta_gm_uE"):
        assert DESCRIPTIONS[name] in text, name
    with xr.open_dataset(page.parent / "results" / "diagnostics.nc") as described:
        assert described.kappa_cs.attrs["description"] == DESCRIPTIONS["kappa_cs"]
    table = html_text.split('<table id="T_distributions"', 1)[1].split("</table>", 1)[0]
    assert ">description</th>" in table and ">beta_gm<" in table


def test_report_title_argument_and_data_without_a_file(tmp_path):
    ds = xuqcal.synthetic.nig(300, nu=6, seed=1)
    page = xuqcal.report.report(ds, tmp_path / "a", n_boot=200, n_mc=200, title="My model")
    assert _check_page(page).h1 == "My model"
    page = xuqcal.report.report(ds, tmp_path / "b", n_boot=200, n_mc=200)
    parser = _check_page(page)
    assert parser.h1 == "synthetic data"
    assert "source: synthetic" in " ".join(parser.text)


def test_report_dpi_svg_and_overwrite_between_formats(data, tmp_path):
    folder = tmp_path / "r"
    page = xuqcal.report.report(data, folder, n_boot=200, n_mc=200, n_bins_local=10, dpi=96)
    _check_page(page, dpi=96)  # one image pixel per CSS pixel
    zeta = page.parent / "figures" / "zeta.png"
    with Image.open(zeta) as image:
        low = image.size
    (folder / "notes.txt").write_text("mine")
    page = xuqcal.report.report(data, folder, n_boot=200, n_mc=200, n_bins_local=10,
                                overwrite=True)
    _check_page(page)  # the default: 192 dpi, twice the CSS resolution
    with Image.open(zeta) as image:
        assert image.size == (2 * low[0], 2 * low[1])
    # SVG over a PNG report: the PNG figures xuqcal wrote go, the user's file stays
    page = xuqcal.report.report(data, folder, n_boot=200, n_mc=200, n_bins_local=10,
                                overwrite=True, figure_format="svg")
    parser = _check_page(page, "svg")
    assert {src.split("/")[-1] for src in parser.images} >= {"zeta.svg", "zscores_X.svg",
                                                             "local_zms_uE.svg"}
    assert not list((folder / "figures").glob("*.png"))
    assert (folder / "notes.txt").read_text() == "mine"
    manifest = json.loads((folder / ".xuqcal-manifest.json").read_text())["files"]
    assert "figures/zeta.svg" in manifest and not [f for f in manifest if f.endswith(".png")]
    assert "notes.txt" not in manifest
    # an SVG file is refused by check_folder when it is the user's own
    (folder / "figures" / "zeta.svg").write_text("<svg/>")
    with pytest.raises(FileExistsError, match=r"zeta\.svg was not written by xuqcal"):
        xuqcal.report.check_folder(data, folder, overwrite=True, figure_format="svg")
    xuqcal.report.check_folder(data, folder, overwrite=True)  # PNG figures: no clash


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"dpi": 0}, "dpi: expected a resolution in pixels per inch from 20 to 1200"),
    ({"dpi": "high"}, "dpi: expected a resolution"),
    ({"dpi": True}, "dpi: expected a resolution"),
    ({"figure_format": "jpg"}, "figure_format: expected one of png, svg, got 'jpg'"),
    ({"figure_format": None}, "figure_format: expected one of png, svg"),
    ({"title": ""}, "title: expected a non-empty string"),
    ({"n_bins_local": 0}, "n_bins_local: expected a positive integer, got 0"),
    ({"n_bins": 2.5}, "n_bins: expected a positive integer, got 2.5"),
])
def test_report_refuses_bad_options_before_computing(kwargs, message, tmp_path, monkeypatch):
    def no_validation(*args, **kw):
        raise AssertionError("computed before the options were checked")

    monkeypatch.setattr(xuqcal.analysis.validation, "validate", no_validation)
    ds = xuqcal.synthetic.nig(300, nu=6, seed=1)
    with pytest.raises(ValueError, match=re.escape(message)):
        xuqcal.report.report(ds, tmp_path / "r", **kwargs)
    assert not (tmp_path / "r").exists()
    with pytest.raises(ValueError, match="figure_format: expected one of png, svg"):
        xuqcal.report.check_folder(ds, tmp_path / "r", figure_format="pdf")


def test_report_figure_sizes_come_from_the_files(tmp_path):
    """With ``savefig.bbox = "tight"`` set by the user the saved figures are cropped: the page
    still shows them at their natural size, in their own aspect ratio."""
    import matplotlib

    ds = xuqcal.synthetic.nig(300, nu=6, seed=2)
    for figure_format in ("png", "svg"):
        with matplotlib.rc_context({"savefig.bbox": "tight"}):
            page = xuqcal.report.report(ds, tmp_path / figure_format, n_boot=200, n_mc=200,
                                        figure_format=figure_format)
        _check_page(page, figure_format)


# --------------------------------------------------------------------------------------------
# Several data sets on one page
# --------------------------------------------------------------------------------------------


SMALL = dict(n_boot=200, n_mc=60, statistics=["zms", "rce"])


def _table_cells(text, name):
    """The cells (header row first) of the table with the id ``T_<name>`` of a page."""
    table = text.split(f'<table id="T_{name}"', 1)[1].split("</table>", 1)[0]
    return [[unescape(cell) for cell in re.findall(r"<t[dh][^>]*>([^<]*)</t[dh]>", row)]
            for row in re.findall(r"<tr>(.*?)</tr>", table, flags=re.S)]


def _sections(text):
    """(id, heading) of each section of a page."""
    return re.findall(r'<section id="([^"]+)">\s*<h2>([^<]*)</h2>', text)


@pytest.fixture(scope="module")
def two_sets():
    """Sets of 300 and 250 points with a feature X, and their stack along ``dataset`` (b is
    padded with absent points)."""
    rng = np.random.default_rng(7)
    sets = {name: xuqcal.synthetic.nig(m, nu=6, seed=seed).assign(
        X=("sample", rng.normal(size=m))) for name, m, seed in (("a", 300, 1), ("b", 250, 2))}
    return sets, xuqcal.stack_datasets(sets)


def test_report_of_several_sets_is_one_page_with_a_summary_and_a_section_per_set(two_sets,
                                                                                   tmp_path):
    sets, stacked = two_sets
    assert np.isnan(stacked["E"].sel(dataset="b").values[250:]).all()
    page = xuqcal.report.report(stacked, tmp_path / "r", **SMALL)
    parser = _check_page(page)
    text = page.read_text(encoding="utf-8")
    assert parser.h1 == "2 data sets: a, b"
    assert "<title>2 data sets: a, b – xuqcal validation report</title>" in text
    assert _sections(text) == [("summary", "Summary across data sets"),
                               ("dataset-a", "dataset = a (M = 300)"),
                               ("dataset-b", "dataset = b (M = 250)"),
                               ("provenance", "Results and provenance")]
    assert [link for link in parser.links if link.startswith("#")] == [
        "#summary", "#dataset-a", "#dataset-b", "#provenance"]  # the table of contents

    # the summary: one row per slice and statistic, from one broadcast validation
    expected = slices_summary(xuqcal.validate(stacked, SMALL["statistics"], n_boot=200,
                                              n_mc=60))
    cells = _table_cells(text, "summary")
    assert cells[0] == ["dataset", "M", "statistic", "estimate", "ci_low", "ci_high",
                        "verdict", "deciding scheme"]
    assert len(cells) - 1 == len(expected) == 2 * 2
    for row, want in zip(cells[1:], expected.itertuples(), strict=True):
        assert row == [want.dataset, str(want.n_samples), want.statistic,
                       *(f"{v:.4g}" for v in (want.estimate, want.ci_low, want.ci_high)),
                       want.verdict, want.verdict_scheme]
    with xr.open_dataset(page.parent / "results" / "validation.nc") as summary:
        assert summary["zeta"].dims == ("dataset", "statistic", "scheme")
        assert summary["n_samples"].values.tolist() == [300, 250]
    assert "figures/zeta.png" in parser.images  # the faceted ζ figure of the summary

    # each section is the report of that set alone: same tables, results and figures
    figures = page.parent / "figures"
    for name, ds in sets.items():
        key = f"dataset-{name}"
        alone = xuqcal.report.report(ds, tmp_path / name, **SMALL)
        alone_text = alone.read_text(encoding="utf-8")
        for table in ("validation", "distributions", "uncertainties", "fraction_valid"):
            assert _table_cells(text, f"{key}_{table}") == _table_cells(alone_text, table)
        results = sorted((alone.parent / "results").iterdir())
        # validation, its summary (issue 22), diagnostics, 4 local, reliability, curve, ranks;
        # and the interval-based section's coverage, local coverage, PIT test and proper scores
        assert len(results) == 14
        for file in results:
            with xr.open_dataset(file) as one, \
                    xr.open_dataset(page.parent / "results" / f"{key}_{file.name}") as part:
                assert sorted(part.data_vars) == sorted(one.data_vars), file.name
                for variable in one.data_vars:
                    np.testing.assert_array_equal(part[variable].values, one[variable].values,
                                                  err_msg=f"{file.name}: {variable}")
        assert sorted(f.name.removeprefix(f"{key}_") for f in figures.glob(f"{key}_*")) == \
            sorted(f.name for f in (alone.parent / "figures").iterdir())
        section = " ".join(text.split(f'<section id="{key}">', 1)[1]
                           .split("</section>", 1)[0].split())
        assert f"<dt>points (M)</dt><dd>{ds.sizes['sample']}</dd>" in section
        assert f"over {xuqcal.core.binning.recommended_n_bins(ds.sizes['sample'])} " \
               "equal-count bins" in section

    # the manifest lists every file, each figure under a name of its own
    manifest = json.loads((page.parent / ".xuqcal-manifest.json").read_text())["files"]
    assert sorted(f for f in manifest if f.startswith("figures/")) == sorted(parser.images)
    assert sorted(f for f in manifest if f.startswith("results/")) == sorted(
        f"results/{f.name}" for f in (page.parent / "results").iterdir())
    assert {"figures/dataset-a_zeta.png", "figures/dataset-b_zeta.png",
            "figures/dataset-b_zscores_X.png", "results/dataset-b_local_zms_X.nc"} <= set(manifest)


def test_report_of_several_sets_with_overwrite_replaces_only_its_own_files(tmp_path,
                                                                          monkeypatch):
    sets = {name: xuqcal.synthetic.nig(300, nu=6, seed=seed, uE_scale=scale)
            for name, seed, scale in (("gp", 3, 1.0), ("rf", 4, 0.8))}
    models = xr.concat(list(sets.values()), dim=pd.Index(list(sets), name="model"))
    options = dict(n_boot=200, n_mc=60, statistics=["zms"])
    folder = tmp_path / "r"
    xuqcal.report.report(sets["gp"], folder, **options)  # a one-set report first
    (folder / "notes.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="overwrite"):
        xuqcal.report.report(models, folder, **options)
    page = xuqcal.report.report(models, folder, overwrite=True, figure_format="svg", **options)
    parser = _check_page(page, "svg")
    text = page.read_text(encoding="utf-8")
    assert parser.h1 == "2 slices along model: gp, rf"
    assert _sections(text)[1:3] == [("model-gp", "model = gp (M = 300)"),
                                    ("model-rf", "model = rf (M = 300)")]
    manifest = json.loads((folder / ".xuqcal-manifest.json").read_text())["files"]
    assert sorted(f for f in manifest if f.startswith("figures/")) == sorted(parser.images)
    assert {"figures/zeta.svg", "figures/model-gp_zeta.svg", "figures/model-rf_zeta.svg",
            "results/model-rf_validation.nc"} <= set(manifest)
    # the one-set report's files went, the user's file stayed
    assert not list((folder / "figures").glob("*.png"))
    assert not (folder / "results" / "diagnostics.nc").exists()
    assert (folder / "notes.txt").read_text() == "mine" and "notes.txt" not in manifest
    # a user's file where a slice's figure goes: refused before anything is computed
    (folder / "figures" / "model-rf_reliability.svg").write_text("<svg/>")

    def no_validation(*args, **kwargs):
        raise AssertionError("computed before the folder was checked")

    monkeypatch.setattr(xuqcal.analysis.validation, "validate", no_validation)
    with pytest.raises(FileExistsError,
                       match=r"model-rf_reliability\.svg was not written by xuqcal"):
        xuqcal.report.report(models, folder, overwrite=True, figure_format="svg", **options)
    xuqcal.report.check_folder(models, folder, overwrite=True)  # PNG figures: no clash


def test_report_never_writes_over_the_input_file_of_a_stacked_set(tmp_path):
    """A set stacked from files records each file (coordinate ``source`` over ``dataset``):
    none may be a file of the report, whatever ``overwrite``."""
    folder = tmp_path / "r"
    (folder / "figures").mkdir(parents=True)
    victim = folder / "figures" / "dataset-b_zeta.png"  # a file of the slice b
    victim.write_bytes(b"the input of b")
    sets = {"a": xuqcal.synthetic.nig(200, nu=6, seed=1),
            "b": xuqcal.synthetic.nig(150, nu=6, seed=2)}
    sets["a"].attrs["source"] = str(tmp_path / "a.csv")
    sets["b"].attrs["source"] = str(victim)
    stacked = xuqcal.stack_datasets(sets)
    assert stacked["source"].dims == ("dataset",) and "source" not in stacked.attrs
    with pytest.raises(ValueError, match=r"dataset-b_zeta\.png is also an input file"):
        xuqcal.report.check_folder(stacked, folder, overwrite=True)
    with pytest.raises(ValueError, match="is also an input file"):
        xuqcal.report.report(stacked, folder, overwrite=True, **SMALL)
    assert victim.read_bytes() == b"the input of b"


def test_report_of_a_datatree_of_sets_with_their_own_features(two_sets, tmp_path):
    sets, _ = two_sets
    tree = xr.DataTree.from_dict({"/a": sets["a"].drop_vars("X"), "/b": sets["b"]})
    page = xuqcal.report.report(tree, tmp_path / "r", **SMALL)
    parser = _check_page(page)
    text = page.read_text(encoding="utf-8")
    assert parser.h1 == "2 data sets: /a, /b"
    assert _sections(text)[1:3] == [("dataset-a", "dataset = /a (M = 300)"),
                                    ("dataset-b", "dataset = /b (M = 250)")]
    names = {src.split("/")[-1] for src in parser.images}
    assert {"zeta.png", "dataset-a_zscores_uE.png", "dataset-b_zscores_X.png"} <= names
    assert "dataset-a_zscores_X.png" not in names  # node a has no feature X
    cells = _table_cells(text, "summary")
    assert [row[:3] for row in cells[1:]] == [["/a", "300", "zms"], ["/a", "300", "rce"],
                                             ["/b", "250", "zms"], ["/b", "250", "rce"]]
    alone = xuqcal.validate(sets["b"], SMALL["statistics"], n_boot=200, n_mc=60)
    with xr.open_dataset(page.parent / "results" / "dataset-b_validation.nc") as part:
        for variable in ("estimate", "ci_low", "ci_high", "zeta"):
            np.testing.assert_array_equal(part[variable].values, alone[variable].values)


def test_report_and_demo_commands_page_options(tmp_path, capsys):
    files = []
    for name, m, seed in (("first", 300, 1), ("second", 250, 2)):
        ds = xuqcal.synthetic.nig(m, nu=6, seed=seed)
        files.append(tmp_path / f"{name}.csv")
        pd.DataFrame({"err": ds.E.values, "u": ds.uE.values}).to_csv(files[-1], index=False)
    compute = ["--n-boot", "200", "--n-mc", "60", "--statistics", "zms,rce", "--no-progress"]
    common = ["--E", "err", "--uE", "u", *compute]
    out = tmp_path / "r"
    for command, bad, message in (
            ("report", ["--dpi", "5"],
             "--dpi: expected a resolution in pixels per inch from 20 to 1200"),
            ("report", ["--title", " "], "--title: expected a non-empty string"),
            ("report", ["--figure-format", "jpg"], "--figure-format: invalid choice: 'jpg'"),
            ("demo", ["--dpi", "2000"], "--dpi: expected a resolution"),
            ("demo", ["--figure-format", "pdf"], "--figure-format: invalid choice: 'pdf'")):
        inputs = ([*map(str, files), *common] if command == "report"
                  else ["--size", "300", *compute])
        assert main([command, *inputs, *bad, "-o", str(out)]) == 2
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1, err
        assert not out.exists()
    # several files: SVG, 96 dpi, a title
    assert main(["report", *map(str, files), *common, "--dpi", "96", "--figure-format", "svg",
                 "--title", "Two sets", "-o", str(out)]) == 0
    capsys.readouterr()
    parser = _check_page(out / "index.html", "svg", dpi=96)
    text = (out / "index.html").read_text(encoding="utf-8")
    assert parser.h1 == "Two sets" and "<dd>SVG, 96 dpi</dd>" in text
    assert _sections(text)[1:3] == [("dataset-first", "dataset = first (M = 300)"),
                                    ("dataset-second", "dataset = second (M = 250)")]
    assert f"sources: {files[0]}, {files[1]}" in " ".join(parser.text)
    # one file: PNG at 96 dpi (one image pixel per CSS pixel), a title
    assert main(["report", str(files[1]), *common, "--dpi", "96", "--title", "One set", "-o",
                 str(tmp_path / "one")]) == 0
    parser = _check_page(tmp_path / "one" / "index.html", dpi=96)
    assert parser.h1 == "One set"
    # demo: both reports with the page options
    assert main(["demo", "--size", "300", *compute, "--dpi", "96", "--figure-format", "svg",
                 "-o", str(tmp_path / "demo")]) == 0
    for name in ("calibrated", "miscalibrated"):
        page = tmp_path / "demo" / f"report_{name}" / "index.html"
        assert "<dd>SVG, 96 dpi</dd>" in page.read_text(encoding="utf-8")
        _check_page(page, "svg", dpi=96)


def test_report_refuses_a_validation_result_of_other_data(two_sets, tmp_path):
    sets, stacked = two_sets
    result = xuqcal.validate(stacked, ["zms"], n_boot=100, n_mc=50)
    other = xuqcal.stack_datasets({"a": sets["a"], "c": sets["b"]})
    for data, given, message in (
            (other, result, "validation_result: has no slice dataset='c' of the data set"),
            (sets["a"], result, "validation_result: has the dimension(s) dataset, which the "
                                "data set has not"),
            (sets["b"], result.sel(dataset="a"), "validation_result: has M = 300, but the "
                                                 "data set has 250 points")):
        with pytest.raises(ValueError, match=re.escape(message)):
            xuqcal.report.report(data, tmp_path / "r", validation_result=given, **SMALL)
        assert not (tmp_path / "r").exists()  # nothing left of the run


# --------------------------------------------------------------------------------------------
# Comparison of models (issue 24, item 5)
# --------------------------------------------------------------------------------------------

import xuqcal.report.html as report_html  # noqa: E402

COMPARISON_FIGURES = ("comparison_forest", "comparison_rank_zms", "comparison_sip")
COMPARISON_RESULTS = ("comparison", "comparison_scores", "comparison_sip")


@pytest.fixture
def only_the_summary(monkeypatch):
    """The section of each set left out (its content is tested above): the pages of the
    comparison tests hold the summary across the sets and the comparison of models, fast."""
    monkeypatch.setattr(report_html, "_set_sections", lambda *args, **kwargs: ("", {}))


@pytest.fixture(scope="module")
def three_models():
    """Three models on the same 200 points (the same errors, uncertainties scaled), the third
    named with HTML special characters and missing its last 20 points."""
    a = xuqcal.synthetic.nig(200, nu=6, seed=11)
    sets = {"a": a, "b": a.assign(uE=a.uE * 0.7),
            "c<&>": a.isel(sample=slice(0, 180)).assign(uE=lambda d: d.uE * 1.4)}
    return xuqcal.stack_datasets(sets)


def _comparison_order(result, key):
    """The labels of a comparison result by expected rank of statistic ``key``."""
    one = result.sel(statistic=key)
    expected = (one.rank_probability * one["rank"]).sum("rank").values
    labels = [str(x) for x in result.dataset.values]
    return [labels[i] for i in np.argsort(expected, kind="stable")], expected


def test_report_of_sets_sharing_samples_has_a_comparison_of_models(three_models, tmp_path,
                                                                   only_the_summary):
    page = xuqcal.report.report(three_models, tmp_path / "r", **SMALL)
    parser = _check_page(page)
    text = page.read_text(encoding="utf-8")
    assert '<section id="comparison">\n<h3>Comparison of models</h3>' in text
    # after the summary across the sets, before the section of each set
    assert text.index('id="T_summary"') < text.index('<section id="comparison">') \
        < text.index('<section id="dataset-a">')
    section = text.split('<section id="comparison">', 1)[1].split("</section>", 1)[0]
    words = " ".join(section.split())
    assert "on the 180 points present in every one of them" in words
    assert "Points left out (absent from another set): a: 20, b: 20." in words
    assert "Replicates: 200; level 0.95; seed 0" in words
    assert "Summary across data sets and comparison of models" in text  # the contents

    expected = xuqcal.compare(three_models, SMALL["statistics"], dim="dataset",
                              n_boot=SMALL["n_boot"], seed=defaults.SEED)
    labels = [str(x) for x in expected.dataset.values]
    for key in SMALL["statistics"]:
        cells = _table_cells(text, f"comparison_{key}")
        assert cells[0] == ["model", "estimate", "distance", "expected rank", "P(best)",
                            "significantly better than"]
        order, ranks = _comparison_order(expected, key)
        assert [row[0] for row in cells[1:]] == order
        shown = [float(row[3]) for row in cells[1:]]
        assert shown == sorted(shown)
        one = expected.sel(statistic=key)
        for row in cells[1:]:
            i = labels.index(row[0])
            assert row[1:5] == [f"{float(one.estimate[i]):.4g}",
                                f"{float(one.distance[i]):.4g}", f"{ranks[i]:.4g}",
                                f"{float(one.p_best[i]):.4g}"]
            better = [m for m in order if m != row[0]
                      and str(one.verdict.sel(dataset=row[0], other=m).values) == "better"]
            assert row[5] == (", ".join(better) or "–")
    assert _table_cells(text, "comparison_scores")[0] == ["model", "crps", "nll", "interval"]

    # the figures, shown in the section and listed in the manifest with the results
    manifest = json.loads((page.parent / ".xuqcal-manifest.json").read_text())["files"]
    for name in COMPARISON_FIGURES:
        assert f"figures/{name}.png" in parser.images and f'src="figures/{name}.png"' in section
        assert f"figures/{name}.png" in manifest
    for name in COMPARISON_RESULTS:
        assert f"results/{name}.nc" in manifest and f'href="results/{name}.nc"' in text
    assert sorted(f for f in manifest if f.startswith("figures/")) == sorted(parser.images)

    # results/comparison.nc: xuqcal.compare of the same data with the same counts and seed
    with xr.open_dataset(page.parent / "results" / "comparison.nc") as saved:
        assert sorted(saved.data_vars) == sorted(expected.data_vars)
        assert saved.dataset.values.tolist() == labels
        for variable in expected.data_vars:
            np.testing.assert_array_equal(saved[variable].values, expected[variable].values,
                                          err_msg=variable)
        assert saved.attrs["n_boot"] == SMALL["n_boot"] and saved.attrs["seed"] == 0
    sip = xuqcal.sip_matrix(three_models, "crps", dim="dataset", n_boot=SMALL["n_boot"],
                            seed=defaults.SEED)
    with xr.open_dataset(page.parent / "results" / "comparison_sip.nc") as saved:
        np.testing.assert_array_equal(saved.sip.values, sip.sip.values)
    with xr.open_dataset(page.parent / "results" / "comparison_scores.nc") as saved:
        np.testing.assert_array_equal(
            saved.mean_score.values,
            xuqcal.paired_scores(three_models, dim="dataset").mean_score.values)

    # the label with HTML special characters is escaped wherever the section shows it
    assert "c<&>" not in section and "c&lt;&amp;&gt;" in section
    assert "c<&>" not in text


def test_report_of_sets_not_sharing_samples_has_no_comparison(tmp_path, only_the_summary):
    sets = {"a": xuqcal.synthetic.nig(200, nu=6, seed=1),
            "b": xuqcal.synthetic.nig(60, nu=6, seed=2)}  # 60 common points: under half of a
    page = xuqcal.report.report(xuqcal.stack_datasets(sets), tmp_path / "r", **SMALL)
    _check_page(page)
    text = page.read_text(encoding="utf-8")
    assert 'id="comparison"' not in text and "Comparison of models" not in text
    assert "No comparison of models: the 2 data sets share 60 point(s)" in text
    manifest = json.loads((page.parent / ".xuqcal-manifest.json").read_text())["files"]
    assert not [f for f in manifest if "comparison" in f]
    assert not list(page.parent.glob("*/comparison*"))
    # a DataTree of the same sets: no comparison either (nor a sentence)
    tree = xr.DataTree.from_dict({"/a": sets["a"], "/b": sets["a"]})
    text = xuqcal.report.report(tree, tmp_path / "t", **SMALL).read_text(encoding="utf-8")
    assert "comparison" not in text.lower()


def test_report_command_compares_files_sharing_their_rows(tmp_path, capsys, only_the_summary):
    ds = xuqcal.synthetic.nig(200, nu=6, seed=5)
    files = []
    for name, scale in (("gp", 1.0), ("rf", 0.7), ("a&b", 1.4)):
        files.append(tmp_path / f"{name}.csv")
        pd.DataFrame({"E": ds.E.values, "uE": ds.uE.values * scale}).to_csv(files[-1],
                                                                             index=False)
    out = tmp_path / "r"
    assert main(["report", *map(str, files), "--E", "E", "--uE", "uE", "--n-boot", "200",
                 "--n-mc", "60", "--statistics", "zms,rce", "--no-progress", "-o",
                 str(out)]) == 0
    capsys.readouterr()
    parser = _check_page(out / "index.html")
    text = (out / "index.html").read_text(encoding="utf-8")
    section = text.split('<section id="comparison">', 1)[1].split("</section>", 1)[0]
    assert "(gp, rf, a&amp;b)" in " ".join(section.split())
    assert "No point was left out." in section
    assert _table_cells(text, "comparison_zms")[1][0] == "gp"
    assert {f"figures/{name}.png" for name in COMPARISON_FIGURES} <= set(parser.images)
    with xr.open_dataset(out / "results" / "comparison.nc") as saved:
        assert saved.dataset.values.tolist() == ["gp", "rf", "a&b"]
        assert saved.n_dropped.values.tolist() == [0, 0, 0]


def test_comparison_counts_and_statistics_of_the_report():
    assert report_html._comparison_n_boot("auto") == defaults.N_BOOT_RELIABILITY
    assert report_html._comparison_n_boot(300) == 300
    assert report_html._comparison_statistics(None) == ["zms", "rce", "cc", "ence", "zmse"]
    assert report_html._comparison_statistics(["picp", "rce"]) == ["zms", "rce"]
    assert report_html._shares_samples(np.array([200, 180]), 180)
    assert not report_html._shares_samples(np.array([200, 60]), 60)
