"""``xuqcal recalibrate --method conformal`` (issue 15, item 7): the command fits the conformal
recalibrator of the Python API on TRAIN, writes TEST with its intervals, and evaluates the
coverage (PICP, local coverage) of both with :func:`xuqcal.recalibration.conformal_coverage`.

Finite-sample acceptance (``test_marginal_coverage_at_the_finite_sample_rate``). For ``n``
calibration points with continuous, exchangeable scores, the coverage of the conformal interval
*given* the calibration set is ``π = F(q_p)``, ``F`` the CDF of the scores and ``q_p`` the
``k``-th smallest of the ``n`` scores, ``k = ⌈(n + 1) p⌉``: ``π ~ Beta(k, n + 1 - k)`` exactly,
whose mean ``k / (n + 1)`` lies in ``[p, p + 1/(n + 1))``. The PICP of ``m`` test points is
``Binomial(m, π) / m`` given ``π``, hence beta-binomial ``BetaBinomial(m, k, n + 1 - k) / m``
marginally. The checks accept the central ``1 - 1e-4`` of these exact distributions and
nothing wider; the data are calibrated Gaussian (``E / uE ~ N(0, 1)``, so ``F(s) =
erf(s / √2)`` is known and ``π`` is computed exactly from the written quantile).
"""

from __future__ import annotations

import math
import os
import re
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from scipy import special, stats

import xuqcal
from xuqcal.cli import main
from xuqcal.cli import recalibrate as cli_recalibrate
from xuqcal.core.defaults import COVERAGE_LEVELS, COVERAGE_TOLERANCE
from xuqcal.recalibration import apply, conformal_coverage, fit

COLUMNS = ["--E", "err", "--uE", "u"]
ALPHA = 1e-4  # two-sided risk of each finite-sample check


def _write(path, m: int, seed: int, *, scale: float = 1.0, nu: float = 6.0,
           generator: str = "normal", effect: float = 0.3):
    """A CSV of ``m`` NIG points (errors ``err``, uncertainties ``u``) and a feature ``x`` that
    scales the errors by ``exp(effect (x - 1))`` (conditional mis-calibration, for the
    Mondrian runs; ``effect=0``: calibrated data, ``err / u ~ N(0, 1)`` for ``generator``
    normal and ``scale`` 1)."""
    ds = xuqcal.synthetic.nig(m, nu=nu, generator=generator, seed=seed, uE_scale=scale)
    x = np.random.default_rng(seed).uniform(0.0, 2.0, m)
    pd.DataFrame({"err": ds.E.values * np.exp(effect * (x - 1.0)), "u": ds.uE.values,
                  "x": x}).to_csv(path, index=False)
    return path


def _read(path, **kwargs):
    return xuqcal.read_csv(path, E="err", uE="u", **kwargs)


def _run(capsys, train, test, *extra):
    """Run the command; returns (status, stdout, stderr)."""
    status = main(["recalibrate", str(train), str(test), *COLUMNS, "--method", "conformal",
                   *extra])
    out, err = capsys.readouterr()
    return status, out, err


def _printed_rows(out: str) -> list[list[str]]:
    """The rows of the printed coverage table (after its header), split on spaces; the data
    set name is carried down to the rows of its further levels."""
    lines = out.splitlines()
    head = next(i for i, line in enumerate(lines) if line.split()[:3] == ["dataset", "p",
                                                                          "PICP"])
    rows, name = [], None
    for line in lines[head + 1:]:
        if line.startswith("written:"):
            break
        fields = line.split()
        if not re.fullmatch(r"[0-9.]+", fields[0]):  # a new data set: its name comes first
            name = " ".join(fields[:-8])
            fields = fields[-8:]
        rows.append([name, *fields])
    return rows


@pytest.fixture
def heavy(tmp_path):
    """Heavy-tailed, mis-calibrated train and test CSVs (uE 30 % too small, Student-t(3))."""
    return (_write(tmp_path / "train.csv", 1200, 1, scale=0.7, nu=3, generator="t3"),
            _write(tmp_path / "test.csv", 3000, 2, scale=0.7, nu=3, generator="t3"))


# --------------------------------------------------------------------------------------------
# the run: files, and the numbers of the Python API
# --------------------------------------------------------------------------------------------


def test_global_run_writes_the_api_results(heavy, tmp_path, capsys):
    train_csv, test_csv = heavy
    out = tmp_path / "out.nc"
    status, printed, err = _run(capsys, train_csv, test_csv, "--coverage-levels", "0.683,0.95",
                                "--tol", "0.01", "--n-bins", "8", "-o", str(out))
    assert status == 0, err
    paths = cli_recalibrate.output_paths(out)
    assert all(path.is_file() for path in paths.values())
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["train.csv", "test.csv", "out.nc", "out_evaluation.nc", "out_recalibrator.nc"])

    train, test = _read(train_csv), _read(test_csv)
    rec = fit(train, "conformal", coverage_levels=(0.683, 0.95))
    with xr.open_dataset(paths["recalibrator"]) as written:
        assert written.attrs["method"] == "conformal" and written.attrs["by"] == ""
        for name in ("score_quantile", "score_rank", "expected_coverage", "scale"):
            np.testing.assert_array_equal(written[name].values, rec[name].values)
    expected = apply(rec, test)
    with xr.open_dataset(paths["test"]) as written:  # the test set as apply gives it
        assert sorted(written.data_vars) == sorted(expected.data_vars)
        assert written.conformal_half_width.dims == ("sample", "coverage_level")
        for name in expected.variables:
            np.testing.assert_array_equal(written[name].values, expected[name].values)
        assert written.attrs["recalibration_history"] == expected.attrs["recalibration_history"]

    coverage = {name: conformal_coverage(apply(rec, ds), by="uE_uncalibrated", n_bins=8,
                                         tol=0.01)
                for name, ds in (("train conformal", train), ("test conformal", test))}
    with xr.open_dataset(paths["evaluation"]) as table:
        table = table.load()
    assert table.dataset.values.tolist() == list(coverage)
    assert table.coverage_level.values.tolist() == [0.683, 0.95] and table.sizes["bin"] == 8
    assert table.attrs["tol"] == 0.01 and table.attrs["by"] == "uE"
    assert table.attrs["train_source"] == str(train_csv) and "n_samples" not in table.attrs
    for name, cov in coverage.items():
        one = table.sel(dataset=name)
        for var in ("picp", "picp_low", "picp_high", "n_covered", "mean_half_width",
                    "fraction_valid", "fraction_valid_low", "fraction_valid_high", "bin_picp",
                    "bin_valid", "bin_count", "count"):
            np.testing.assert_array_equal(one[var].values, cov[var].values, err_msg=var)
        p = cov.coverage_level.values
        np.testing.assert_array_equal(
            one.picp_valid.values, (cov.picp_low.values <= p + 0.01)
            & (p - 0.01 <= cov.picp_high.values))

    rows = _printed_rows(printed)
    assert len(rows) == 4
    for name, level, picp, low, high, valid, fv, fv_low, fv_high in rows:
        cov = coverage[name].sel(coverage_level=float(level))
        assert picp == f"{float(cov.picp):.4f}"
        assert (low, high) == (f"{float(cov.picp_low):.4f}", f"{float(cov.picp_high):.4f}")
        assert fv == f"{float(cov.fraction_valid):.4f}"
        assert (fv_low, fv_high) == (f"{float(cov.fraction_valid_low):.4f}",
                                     f"{float(cov.fraction_valid_high):.4f}")
        p = float(level)
        assert valid == ("yes" if cov.picp_low <= p + 0.01 and p - 0.01 <= cov.picp_high
                         else "no")
    assert "valid when it overlaps [p - 0.01, p + 0.01]" in printed
    assert "among 8 equal-count bins of uE" in printed


@pytest.mark.parametrize(("test_scale", "side"), [(0.5, "under"), (1.0, "over")])
def test_verdicts_on_a_shifted_test_set(test_scale, side, tmp_path, capsys):
    """TEST less (more) calibrated than TRAIN: its PICP falls below (above) p, and the
    verdict says so; TRAIN stays valid."""
    train_csv = _write(tmp_path / "train.csv", 2000, 8, scale=0.7)
    test_csv = _write(tmp_path / "test.csv", 4000, 9, scale=test_scale)
    out = tmp_path / "out.nc"
    status, printed, err = _run(capsys, train_csv, test_csv, "-o", str(out))
    assert status == 0, err
    with xr.open_dataset(cli_recalibrate.output_paths(out)["evaluation"]) as table:
        test = table.sel(dataset="test conformal")
        p = test.coverage_level
        beyond = test.picp_high < p - 0.005 if side == "under" else test.picp_low > p + 0.005
        assert beyond.all() and not test.picp_valid.any()
        assert table.picp_valid.sel(dataset="train conformal").all()
    assert [row[5] for row in _printed_rows(printed)] == ["yes", "yes", "no", "no"]


def test_defaults_are_the_library_defaults(heavy, tmp_path, capsys):
    train_csv, test_csv = heavy
    out = tmp_path / "out.nc"
    status, _, err = _run(capsys, train_csv, test_csv, "-o", str(out))
    assert status == 0, err
    with xr.open_dataset(cli_recalibrate.output_paths(out)["evaluation"]) as table:
        assert table.coverage_level.values.tolist() == list(COVERAGE_LEVELS)
        assert table.attrs["tol"] == COVERAGE_TOLERANCE
        assert table.sizes["bin"] == xuqcal.core.defaults.N_BINS
    with xr.open_dataset(cli_recalibrate.output_paths(out)["recalibrator"]) as rec:
        assert "bin" not in rec.dims  # global quantiles without --by


# --------------------------------------------------------------------------------------------
# finite-sample coverage
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("n", "seed"), [(50, 3), (200, 4), (1000, 5)])
def test_marginal_coverage_at_the_finite_sample_rate(n, seed, tmp_path, capsys):
    m = 20000
    train_csv = _write(tmp_path / "train.csv", n, seed, effect=0.0)  # calibrated: Z ~ N(0, 1)
    test_csv = _write(tmp_path / "test.csv", m, seed + 100, effect=0.0)
    out = tmp_path / "out.nc"
    status, _, err = _run(capsys, train_csv, test_csv, "--coverage-levels", "0.683,0.9,0.95",
                          "-o", str(out))
    assert status == 0, err
    paths = cli_recalibrate.output_paths(out)
    frame = pd.read_csv(train_csv)
    scores = np.sort(np.abs(frame.err.values) / frame.u.values)
    with xr.open_dataset(paths["recalibrator"]) as rec, \
            xr.open_dataset(paths["evaluation"]) as table, \
            xr.open_dataset(paths["test"]) as written:
        assert rec.coverage_level.values.tolist() == [0.683, 0.9, 0.95]
        for j, p in enumerate(rec.coverage_level.values.tolist()):
            k = math.ceil((n + 1) * Fraction(str(p)))  # the finite-sample rank
            assert int(rec.score_rank[j]) == k <= n
            q = float(rec.score_quantile[j])
            assert q == scores[k - 1]
            assert p <= k / (n + 1) < p + 1 / (n + 1)
            picp = float(table.picp.sel(dataset="test conformal", coverage_level=p))
            covered = np.abs(written.E.values) <= written.conformal_half_width.values[:, j]
            assert picp == covered.mean()
            # on TRAIN (untied scores) exactly k of the n points are covered
            assert float(table.picp.sel(dataset="train conformal", coverage_level=p)) == k / n >= p
            # marginally (calibration and test draws): BetaBinomial(m, k, n + 1 - k) / m, of
            # mean k / (n + 1) >= p
            marginal = stats.betabinom(m, k, n + 1 - k)
            assert marginal.mean() / m >= p
            assert marginal.ppf(ALPHA / 2) / m <= picp <= marginal.ppf(1 - ALPHA / 2) / m
            # given the calibration set: pi = F(q) = erf(q / sqrt 2) ~ Beta(k, n + 1 - k), and
            # the test count of covered points is Binomial(m, pi)
            pi = float(special.erf(q / math.sqrt(2.0)))
            beta = stats.beta(k, n + 1 - k)
            assert beta.ppf(ALPHA / 2) <= pi <= beta.ppf(1 - ALPHA / 2)
            binomial = stats.binom(m, pi)
            n_covered = int(table.n_covered.sel(dataset="test conformal", coverage_level=p))
            assert binomial.ppf(ALPHA / 2) <= n_covered <= binomial.ppf(1 - ALPHA / 2)


# --------------------------------------------------------------------------------------------
# Mondrian
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("extra", [["--by", "uE", "--n-bins", "4"],
                                   ["--features", "x", "--by", "x", "--n-bins", "4"]])
def test_mondrian_by_uE_or_a_feature(extra, heavy, tmp_path, capsys):
    train_csv, test_csv = heavy
    out = tmp_path / "out.nc"
    status, printed, err = _run(capsys, train_csv, test_csv, *extra, "-o", str(out))
    assert status == 0, err
    by = extra[extra.index("--by") + 1]
    features = {"x": "x"} if by == "x" else None
    train, test = _read(train_csv, features=features), _read(test_csv, features=features)
    rec = fit(train, "conformal", by=by, n_bins=4)
    paths = cli_recalibrate.output_paths(out)
    with xr.open_dataset(paths["recalibrator"]) as written:
        assert written.attrs["by"] == by and written.sizes["bin"] == 4
        for name in ("score_quantile", "score_rank", "train_count", "bins_upper_limit"):
            np.testing.assert_array_equal(written[name].values, rec[name].values)
    with xr.open_dataset(paths["test"]) as written:
        np.testing.assert_array_equal(written.recalibration_bin.values,
                                      apply(rec, test).recalibration_bin.values)
        np.testing.assert_array_equal(written.conformal_half_width.values,
                                      apply(rec, test).conformal_half_width.values)
    variable = "uE_uncalibrated" if by == "uE" else by
    with xr.open_dataset(paths["evaluation"]) as table:
        table = table.load()
    assert table.dataset.values.tolist() == ["train conformal 4", "test conformal 4"]
    assert table.attrs["mondrian_by"] == by and table.sizes["bin"] == 4
    for name, ds in (("train conformal 4", train), ("test conformal 4", test)):
        cov = conformal_coverage(apply(rec, ds), by=variable, n_bins=4)
        for var in ("picp", "picp_low", "picp_high", "bin_picp", "fraction_valid"):
            np.testing.assert_array_equal(table[var].sel(dataset=name).values,
                                          cov[var].values, err_msg=var)
    # on TRAIN the coverage bins are the learned bins: each holds its k_b >= p n_b covered
    train_cov = table.sel(dataset="train conformal 4")
    np.testing.assert_array_equal(train_cov.bin_count.values, rec.train_count.values)
    assert (train_cov.bin_picp >= train_cov.coverage_level).all()
    assert f"Mondrian quantiles in 4 bins of {by}" in printed
    assert [row[0] for row in _printed_rows(printed)] == ["train conformal 4"] * 2 + \
        ["test conformal 4"] * 2


# --------------------------------------------------------------------------------------------
# option errors
# --------------------------------------------------------------------------------------------


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.mark.parametrize(("method", "extra", "expected"), [
    ("conformal", ["--loss", "nll"], "--loss: --method conformal has no loss"),
    ("conformal", ["--loss", "s_tot"], "--loss: --method conformal has no loss"),
    ("conformal", ["--n-mc", "20"], "--n-mc: option of the variance-score evaluation"),
    ("conformal", ["--n-boot", "100", "--n-bins-scores", "10"],
     "--n-bins-scores, --n-boot: options of the variance-score evaluation"),
    ("conformal", ["--n-mc-fv", "0"], "--n-mc-fv: option of the variance-score evaluation"),
    ("conformal", ["--reference", "REF"], "--reference: option of the variance-score"),
    ("conformal", ["--features", "x", "--by", "uE,x"],
     "--by: Mondrian conformal intervals bin on one variable"),
    ("conformal", ["--by", "nope"], "--by: 'nope' is not a variable of the data"),
    ("bvs", ["--coverage-levels", "0.9"], "--coverage-levels: only for --method conformal"),
    ("temperature", ["--coverage-levels", "0.683,0.95"],
     "--coverage-levels: only for --method conformal"),
    ("isotonic", ["--tol", "0.01"], "--tol: only for --method conformal"),
])
def test_options_of_another_method_are_refused_first(method, extra, expected, heavy, tmp_path,
                                                     capsys, monkeypatch):
    def forbidden(*args, **kwargs):
        raise AssertionError("work started before the options were checked")

    monkeypatch.setattr(cli_recalibrate, "fit", forbidden)
    monkeypatch.setattr(cli_recalibrate, "_read", forbidden)
    train_csv, test_csv = heavy
    extra = [str(train_csv) if v == "REF" else v for v in extra]
    out = tmp_path / "o.nc"
    status = main(["recalibrate", str(train_csv), str(test_csv), *COLUMNS, "--method", method,
                   *extra, "-o", str(out)])
    line = _one_line(capsys.readouterr().err)
    assert status == 2
    assert line.startswith("xuqcal recalibrate: error: ") and expected in line, line
    assert not any(p.exists() for p in cli_recalibrate.output_paths(out).values())


@pytest.mark.parametrize(("extra", "expected"), [
    (["--coverage-levels", "0.9,1.5"],
     "--coverage-levels: expected coverage levels in (0, 1) such as 0.95, got 1.5"),
    (["--coverage-levels", "0.9,0.9"], "--coverage-levels: a level is listed twice"),
    (["--coverage-levels", "high"], "--coverage-levels: expected comma-separated coverage levels"),
    (["--tol", "1"], "--tol: expected a tolerance in [0, 1)"),
])
def test_invalid_levels_and_tol_are_argparse_errors(extra, expected, heavy, tmp_path, capsys):
    train_csv, test_csv = heavy
    status, _, err = _run(capsys, train_csv, test_csv, *extra, "-o", str(tmp_path / "o.nc"))
    assert status == 2
    assert _one_line(err).startswith(f"xuqcal recalibrate: error: {expected}"), err
    assert not (tmp_path / "o.nc").exists()


@pytest.mark.parametrize(("extra", "expected"), [
    (["--coverage-levels", "0.9999"], "--coverage-levels: the conformal quantile at level 0.9999"),
    (["--by", "uE", "--n-bins", "200"], "use fewer bins (--n-bins) or lower levels"),
])
def test_too_few_calibration_points_name_the_option(extra, expected, heavy, tmp_path, capsys):
    train_csv, test_csv = heavy
    status, _, err = _run(capsys, train_csv, test_csv, *extra, "-o", str(tmp_path / "o.nc"))
    assert status == 2
    line = _one_line(err)
    assert line.startswith("xuqcal recalibrate: error: --coverage-levels: "), line
    assert expected in line, line
    assert not (tmp_path / "o.nc").exists()


def test_help_documents_the_conformal_options(capsys):
    assert main(["recalibrate", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "{temperature,bvs,isotonic,conformal}" in text
    for option in ("--coverage-levels LIST", "--tol TOL", "conformal only"):
        assert option in text


# --------------------------------------------------------------------------------------------
# outputs: --overwrite never replaces an input
# --------------------------------------------------------------------------------------------


def test_overwrite_never_replaces_an_input(heavy, tmp_path, capsys):
    train_csv, test_csv = heavy
    before = {p: p.read_bytes() for p in (train_csv, test_csv)}
    # -o an input, an input behind a symbolic link, and an input as a derived output name
    renamed = tmp_path / "res_evaluation.csv"
    os.replace(test_csv, renamed)
    before[renamed] = before.pop(test_csv)
    link = tmp_path / "link.nc"
    link.symlink_to(train_csv)
    for output, test in ((train_csv, renamed), (link, renamed), (tmp_path / "res.csv", renamed)):
        status, _, err = _run(capsys, train_csv, test, "-o", str(output), "--overwrite")
        assert status == 2
        assert "is also an input file" in _one_line(err), err
        assert {p: p.read_bytes() for p in before} == before
    assert not (tmp_path / "res.csv").exists() and not (tmp_path / "res_recalibrator.csv"
                                                         ).exists()
    # an existing output: refused without --overwrite, replaced with it
    out = tmp_path / "out.nc"
    out.write_text("old")
    status, _, err = _run(capsys, train_csv, renamed, "-o", str(out))
    assert status == 2 and "already exists; pass --overwrite" in _one_line(err)
    assert out.read_text() == "old"
    status, _, err = _run(capsys, train_csv, renamed, "-o", str(out), "--overwrite")
    assert status == 0, err
    with xr.open_dataset(out) as written:
        assert "conformal_half_width" in written
    assert {p: p.read_bytes() for p in before} == before
