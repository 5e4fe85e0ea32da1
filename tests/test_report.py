"""The HTML report: every figure linked and valid, results readable, nothing overwritten."""

from __future__ import annotations

import re
import shutil
import subprocess
from html.parser import HTMLParser

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from PIL import Image

import xuqcal
from xuqcal.cli import main


class _Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.images, self.links, self.text = [], [], []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "img":
            self.images.append(attrs["src"])
        if tag == "a":
            self.links.append(attrs["href"])
        if tag in ("link", "script"):
            raise AssertionError(f"external resource <{tag}> in a self-contained page")

    def handle_data(self, data):
        self.text.append(data)


def _check_page(page):
    parser = _Links()
    parser.feed(page.read_text(encoding="utf-8"))
    assert parser.images, "the report has no figure"
    for src in parser.images:
        path = page.parent / src
        assert path.is_file(), src
        with Image.open(path) as image:
            image.verify()
            assert image.format == "PNG"
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


def test_report_renders_in_headless_chromium(data, tmp_path):
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("no Chromium on this machine: the link and PNG checks above stand in")
    page = data.uqcal.report(tmp_path / "r", n_boot=200, n_mc=200, n_bins_local=10)
    shot = tmp_path / "shot.png"
    subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu",
                    "--disable-background-networking", "--disable-component-update",
                    "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}",
                    f"--screenshot={shot}", "--window-size=1200,3000", page.as_uri()],
                   check=True, capture_output=True, timeout=120)
    with Image.open(shot) as image:
        pixels = np.asarray(image.convert("L"))
    assert pixels.std() > 10  # the page rendered with its figures


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
