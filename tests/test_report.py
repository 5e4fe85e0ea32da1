"""The HTML report: every figure linked and valid, results readable, nothing overwritten."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import warnings
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from PIL import Image

import xuqcal
from xuqcal.analysis.diagnostics import DESCRIPTIONS
from xuqcal.cli import main
from xuqcal.core import defaults
from xuqcal.core.binning import FewPointsPerBinWarning

#: Executables of a headless Chromium or Chrome (Debian: chromium, chromium-headless-shell).
BROWSERS = ("chromium", "chromium-browser", "chromium-headless-shell", "google-chrome",
            "google-chrome-stable", "chrome-headless-shell", "chrome")


class _Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.images, self.links, self.text, self.sizes = [], [], [], {}
        self.h1, self._in_h1 = "", False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
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
    """Every figure is a valid file of ``figure_format``, shown at its natural size (width and
    height attributes = inches x 96 CSS px; PNG pixels = inches x dpi); every link opens."""
    parser = _Links()
    parser.feed(page.read_text(encoding="utf-8"))
    assert parser.images, "the report has no figure"
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
        with xr.open_dataset(page.parent / href) as result:
            assert result.attrs or result.data_vars
    return parser


@pytest.fixture(scope="module")
def data():
    ds = xuqcal.synthetic.nig(2000, nu=6, seed=3)
    return ds.assign(X=("sample", np.random.default_rng(0).normal(size=2000)))


def test_report_contents(data, tmp_path):
    page = xuqcal.report.report(data, tmp_path / "r", n_boot=300, n_mc=300, n_bins_local=20)
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
    validation = xr.open_dataset(tmp_path / "r" / "results" / "validation.nc")
    assert validation.attrs["n_boot"] == 300
    validation.close()


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
    assert all(kind == {"pass": "pass", "fail": "fail"}.get(v, "other")
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
