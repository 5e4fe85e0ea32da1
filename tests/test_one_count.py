"""One count everywhere (issue 22, item 4).

The whole-validation entry points (``xuqcal validate``, ``xuqcal report``, ``xuqcal demo``,
:func:`xuqcal.report.report` and the accessor's ``report``; :func:`xuqcal.validate` too since
issue 26) take their replicate counts from one
place (``defaults.N_BOOT_VALIDATION``, ``defaults.N_MC_VALIDATION``, ``"auto"``) and give the
same numbers for the same data, counts and seed. Every binned analysis defaults to the
recommended number of bins of its data set (per slice), and warns when a number given leaves
fewer than ``defaults.MIN_POINTS_PER_BIN_LOCAL`` points per bin.
"""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import xuqcal
from xuqcal.analysis import curves, local, outofcore
from xuqcal.cli import main
from xuqcal.cli.commands import build_parser
from xuqcal.core import defaults
from xuqcal.core.binning import FewPointsPerBinWarning, recommended_n_bins, resolve_n_bins

SEED = 3
M_SMALL = 265  # 13 bins of 20 or 21 points: 20 bins would hold 13 or 14


# --------------------------------------------------------------------------- one count


def test_the_whole_validation_counts_come_from_one_place():
    assert defaults.N_BOOT_VALIDATION == "auto" and defaults.N_MC_VALIDATION == "auto"
    for removed in ("N_BOOT_REPORT", "N_MC_REPORT"):
        assert not hasattr(defaults, removed)
    parser = build_parser()
    commands = {
        "validate": ["validate", "d.csv", "--E", "E", "--uE", "uE"],
        "report": ["report", "d.csv", "--E", "E", "--uE", "uE", "-o", "r"],
        "demo": ["demo"],
    }
    for name, argv in commands.items():
        args = parser.parse_args(argv)
        assert (args.n_boot, args.n_mc) == (defaults.N_BOOT_VALIDATION,
                                            defaults.N_MC_VALIDATION), name
        assert args.mc_precision == defaults.MC_PRECISION, name
        assert args.n_bins is None, name  # the recommended number per data set
        explicit = parser.parse_args([*argv, "--n-boot", "auto", "--n-mc", "700",
                                      "--mc-precision", "0.05"])
        assert (explicit.n_boot, explicit.n_mc, explicit.mc_precision) == ("auto", 700, 0.05)
    parameters = inspect.signature(xuqcal.report.report).parameters
    assert parameters["n_boot"].default == defaults.N_BOOT_VALIDATION
    assert parameters["n_mc"].default == defaults.N_MC_VALIDATION
    assert parameters["mc_precision"].default == defaults.MC_PRECISION
    assert parameters["n_bins"].default is None
    # the accessor delegates to xuqcal.report.report without restating its defaults
    accessor = inspect.signature(xuqcal.UQCalAccessor.report).parameters
    assert not {"n_boot", "n_mc", "mc_precision"} & set(accessor)
    # xuqcal.validate defaults to the same counts (issue 26: one default)
    parameters = inspect.signature(xuqcal.validate).parameters
    assert (parameters["n_boot"].default, parameters["n_mc"].default) == (
        defaults.N_BOOT_VALIDATION, defaults.N_MC_VALIDATION)
    assert "N_BOOT_VALIDATION" in xuqcal.validate.__doc__


def test_cli_help_shows_the_one_default():
    parser = build_parser()
    for command in ("validate", "report", "demo"):
        action = {a.dest: a for a in parser._subparsers._group_actions[0]
                  .choices[command]._actions}
        assert "auto: as many as --mc-precision needs" in action["n_boot"].help, command
        assert "recommended per data set" in action["n_bins"].help, command


def _zms(result: xr.Dataset) -> tuple[float, float, float]:
    row = result.sel(statistic="zms")
    return row.estimate.item(), row.ci_low.item(), row.ci_high.item()


@pytest.fixture
def small_csv(tmp_path):
    ds = xuqcal.synthetic.nig(300, nu=6, seed=11)
    path = tmp_path / "data.csv"
    pd.DataFrame({"err": ds.E.values, "sd": ds.uE.values}).to_csv(path, index=False)
    return path


COLUMNS = ["--E", "err", "--uE", "sd"]


def test_validate_report_and_python_report_give_the_same_zms(small_csv, tmp_path):
    """The same file, explicit counts and seed: the ZMS estimate and interval of ``xuqcal
    validate``, of ``xuqcal report`` (its saved validation) and of the Python report are
    identical."""
    counts = ["--n-boot", "200", "--n-mc", "100", "--seed", str(SEED), "--statistics",
              "zms,rce,ence", "--no-progress"]
    assert main(["validate", str(small_csv), *COLUMNS, *counts,
                 "-o", str(tmp_path / "v.nc")]) == 0
    assert main(["report", str(small_csv), *COLUMNS, *counts, "--figure-format", "svg",
                 "-o", str(tmp_path / "cli")]) == 0
    ds = xuqcal.read_csv(small_csv, E="err", uE="sd")
    xuqcal.report.report(ds, tmp_path / "py", n_boot=200, n_mc=100, seed=SEED,
                         statistics=["zms", "rce", "ence"], figure_format="svg")
    with xr.open_dataset(tmp_path / "v.nc") as validated, \
            xr.open_dataset(tmp_path / "cli" / "results" / "validation.nc") as cli_report, \
            xr.open_dataset(tmp_path / "py" / "results" / "validation.nc") as py_report:
        assert _zms(validated) == _zms(cli_report) == _zms(py_report)
        for result in (validated, cli_report, py_report):
            assert result.attrs["n_boot"] == 200 and result.attrs["n_bins"] == 15  # 300 // 20
        for name in ("estimate", "ci_low", "ci_high"):
            np.testing.assert_array_equal(validated[name].values, py_report[name].values)


def test_the_default_counts_are_auto_and_the_same_everywhere(small_csv, tmp_path):
    """Without counts, ``xuqcal validate``, ``xuqcal report`` and the Python report (and the
    accessor's) all run the precision-driven ("auto") validation: the same ZMS interval."""
    options = ["--seed", str(SEED), "--statistics", "zms,rce", "--no-progress"]
    assert main(["validate", str(small_csv), *COLUMNS, *options,
                 "-o", str(tmp_path / "v.nc")]) == 0
    assert main(["report", str(small_csv), *COLUMNS, *options, "--figure-format", "svg",
                 "-o", str(tmp_path / "cli")]) == 0
    ds = xuqcal.read_csv(small_csv, E="err", uE="sd")
    ds.uqcal.report(tmp_path / "py", seed=SEED, statistics=["zms", "rce"],
                    figure_format="svg")
    direct = xuqcal.validate(ds, ["zms", "rce"], n_boot="auto", n_mc="auto", seed=SEED)
    with xr.open_dataset(tmp_path / "v.nc") as validated, \
            xr.open_dataset(tmp_path / "cli" / "results" / "validation.nc") as cli_report, \
            xr.open_dataset(tmp_path / "py" / "results" / "validation.nc") as py_report:
        assert _zms(validated) == _zms(cli_report) == _zms(py_report) == _zms(direct)
        for result in (validated, cli_report, py_report):
            assert result.attrs["n_boot_requested"] == "auto"
            assert result.attrs["n_boot"] == direct.attrs["n_boot"]
    page = (tmp_path / "py" / "index.html").read_text(encoding="utf-8")
    assert f"{direct.attrs['n_boot']} (auto)" in page


def test_demo_equals_validate_of_its_data(tmp_path):
    """The demo's calibrated data set (``synthetic.nig(size, nu=6, seed)``), validated by
    ``xuqcal validate`` with the demo's counts and seed, gives the demo's ZMS interval (its
    NetCDF result and its report's saved validation)."""
    counts = ["--n-boot", "200", "--n-mc", "100", "--seed", str(SEED), "--statistics",
              "zms,rce", "--no-progress"]
    assert main(["demo", "--size", "300", *counts, "--figure-format", "svg",
                 "-o", str(tmp_path / "demo")]) == 0
    data = tmp_path / "calibrated.nc"
    xuqcal.to_netcdf(xuqcal.synthetic.nig(300, nu=6, seed=SEED), data)
    assert main(["validate", str(data), *counts, "-o", str(tmp_path / "v.nc")]) == 0
    report = tmp_path / "demo" / "report_calibrated" / "results" / "validation.nc"
    with xr.open_dataset(tmp_path / "v.nc") as validated, \
            xr.open_dataset(tmp_path / "demo" / "demo_calibrated.nc") as demo, \
            xr.open_dataset(report) as demo_report:
        assert _zms(validated) == _zms(demo) == _zms(demo_report)


def test_report_counts_are_checked_before_computing(tmp_path):
    ds = xuqcal.synthetic.nig(300, nu=6, seed=0)
    with pytest.raises(ValueError, match=r"^n_boot: expected a number of replicates or 'auto'"):
        xuqcal.report.report(ds, tmp_path / "r", n_boot="fast")
    with pytest.raises(ValueError, match=r"^n_mc: expected a positive integer"):
        xuqcal.report.report(ds, tmp_path / "r", n_mc=0)
    assert not (tmp_path / "r").exists()


# --------------------------------------------------------------------------- one bin rule


@pytest.fixture(scope="module")
def small():
    return xuqcal.synthetic.nig(M_SMALL, nu=6, seed=8)


def _binned_analyses(n_bins=None):
    """Every binned analysis with a fixed default before issue 22, called with ``n_bins``
    (``None``: its default), cheap counts; each returns a result with the attribute n_bins."""
    kwargs = {} if n_bins is None else {"n_bins": n_bins}
    return {
        "stats": lambda d: xuqcal.stats(d, ["zms", "ence"], **kwargs),
        "bootstrap": lambda d: xuqcal.bootstrap(d, ["zms", "ence"], n_boot=100, **kwargs),
        "simulate": lambda d: xuqcal.simulate(d, ["ence", "zmse"], generators="normal",
                                              n_mc=50, **kwargs),
        "validate": lambda d: xuqcal.validate(d, ["zms", "ence"], n_boot=100, n_mc=50,
                                              generators="normal", **kwargs),
        "validate_auto": lambda d: xuqcal.validate(d, ["zms", "ence"], n_boot="auto",
                                                   n_mc="auto", generators="normal",
                                                   mc_precision=0.1, **kwargs),
        "ablation": lambda d: curves.ablation(d, statistics=["zms", "ence"], n_boot=100,
                                              **kwargs),
        "reliability": lambda d: local.reliability(d, n_boot=100, **kwargs),
        "local_coverage": lambda d: curves.local_coverage(d, **kwargs),
        "reduce_statistics": lambda d: outofcore.reduce_statistics(d, ["zms", "ence"],
                                                                   **kwargs),
    }


def _local_analyses(n_bins=None):
    kwargs = {} if n_bins is None else {"n_bins": n_bins}
    return {
        "local": lambda d: local.local(d, "zms", n_boot=100, **kwargs),
        "order_sensitivity": lambda d: local.order_sensitivity(
            d, by="uE", n_orders=2, n_boot=100, **kwargs),
    }


def _n_bins(result) -> int:
    return int(result.attrs["n_bins"])


def test_resolve_n_bins_is_the_one_rule():
    assert resolve_n_bins(265, None) == 13 == recommended_n_bins(265, defaults.N_BINS)
    assert resolve_n_bins(399, None) == 19 and resolve_n_bins(400, None) == 20
    assert resolve_n_bins(10**7, None) == defaults.N_BINS
    assert resolve_n_bins(1999, None, defaults.N_BINS_LOCAL) == 99
    assert resolve_n_bins(2000, None, defaults.N_BINS_LOCAL) == defaults.N_BINS_LOCAL
    assert resolve_n_bins(7, None) == 1 and resolve_n_bins(None, None) == defaults.N_BINS
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert resolve_n_bins(265, 13) == 13
        assert resolve_n_bins(265, 20, binned=False) == 20  # bins not used: no warning
        assert resolve_n_bins(265, 200) == 200  # refused by the analysis, not warned about
        assert resolve_n_bins(265, 0) == 0 and resolve_n_bins(265, "20") == "20"
    with pytest.warns(FewPointsPerBinWarning, match=r"^n_bins: n_bins=20 bins of M=265 points "
                                                    r"hold 13 to 14 points per bin"):
        assert resolve_n_bins(265, 20) == 20


def test_every_binned_analysis_defaults_to_the_recommended_bins(small):
    """At M = 265: 13 bins (not 20 of 13 points, nor 100 local bins of 2 or 3), without a
    warning, bit-identical to asking for 13."""
    analyses = {**_binned_analyses(), **_local_analyses()}
    asked = {**_binned_analyses(13), **_local_analyses(13)}
    with warnings.catch_warnings():
        warnings.simplefilter("error", FewPointsPerBinWarning)
        for name, analysis in analyses.items():
            result = analysis(small)
            result = result.compute() if hasattr(result, "compute") else result
            assert _n_bins(result) == 13, name
            expected = asked[name](small)
            expected = expected.compute() if hasattr(expected, "compute") else expected
            for data in (result, expected):
                data.attrs.pop("created", None)
            xr.testing.assert_identical(result, expected)


def test_a_number_given_is_kept_and_warns_once_below_the_rule(small):
    for name, analysis in {**_binned_analyses(20), **_local_analyses(20)}.items():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = analysis(small)
        few = [str(w.message) for w in caught if issubclass(w.category, FewPointsPerBinWarning)]
        assert len(few) == 1, (name, few)  # validate: once, not once per bootstrap/simulation
        assert few[0].startswith("n_bins: n_bins=20 bins of M=265 points hold 13 to 14 "
                                 "points per bin"), name
        assert "use at most 13 bins" in few[0]
        assert _n_bins(result) == 20, name
    # without a binned statistic, the bins are not used: no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error", FewPointsPerBinWarning)
        xuqcal.stats(small, ["zms", "rce"], n_bins=20)
        xuqcal.validate(small, ["zms"], n_boot=100, n_mc=50, n_bins=20)


def test_large_sets_keep_their_bins(small):
    """From M = 400 on the binned statistics keep 20 bins (and local analyses 100 from
    M = 2000 on): the default equals the former fixed default, bit for bit."""
    ds = xuqcal.synthetic.nig(400, nu=6, seed=1)
    for name, analysis in _binned_analyses().items():
        result, former = analysis(ds), _binned_analyses(defaults.N_BINS)[name](ds)
        result = result.compute() if hasattr(result, "compute") else result
        former = former.compute() if hasattr(former, "compute") else former
        for data in (result, former):
            data.attrs.pop("created", None)
        xr.testing.assert_identical(result, former)
        assert _n_bins(result) == defaults.N_BINS, name
    big = xuqcal.synthetic.nig(2000, nu=6, seed=1)
    result = local.local(big, "zm")
    xr.testing.assert_identical(result.drop_attrs(), local.local(big, "zm", n_bins=100)
                                .drop_attrs())
    assert result.sizes["bin"] == _n_bins(result) == defaults.N_BINS_LOCAL


def test_each_slice_gets_its_own_bins(small):
    big = xuqcal.synthetic.nig(3000, nu=6, seed=0)
    stacked = xr.concat([big, small], dim="dataset", join="outer").assign_coords(
        dataset=["big", "small"])
    with warnings.catch_warnings():
        warnings.simplefilter("error", FewPointsPerBinWarning)
        values = xuqcal.stats(stacked, ["ence", "zmse"])
        validated = xuqcal.validate(stacked, ["zms", "ence"], n_boot=100, n_mc=50,
                                    generators="normal")
        per_bin = local.local(stacked, "zms", n_boot=100)
    assert values.n_bins.values.tolist() == [20, 13]
    assert validated.n_bins.values.tolist() == [20, 13]
    assert per_bin.n_bins.values.tolist() == [100, 13]
    np.testing.assert_array_equal(values.sel(dataset="small").values,
                                  xuqcal.stats(small, ["ence", "zmse"]).values)
    for name in ("estimate", "ci_low", "ci_high", "sim_mean"):
        np.testing.assert_array_equal(
            validated[name].sel(dataset="small").values,
            xuqcal.validate(small, ["zms", "ence"], n_boot=100, n_mc=50,
                            generators="normal")[name].values)
    alone = local.local(small, "zms", n_boot=100)
    np.testing.assert_array_equal(per_bin.value.sel(dataset="small").values[:13],
                                  alone.value.values)
    assert bool(per_bin.value.sel(dataset="small").isel(bin=slice(13, None)).isnull().all())
    # a number given warns for the slice it is too many for, naming it
    with pytest.warns(FewPointsPerBinWarning, match=r"^dataset='small': n_bins: n_bins=20 "):
        xuqcal.stats(stacked, ["ence"], n_bins=20)


def test_lazy_slices_whose_present_points_change_the_default_are_refused(small):
    """Dask-backed slices know their present points only when computed: a slice whose default
    number of bins differs from that of all its rows is refused, naming the slice and what to
    do (never a wrong n_bins recorded)."""
    big = xuqcal.synthetic.nig(3000, nu=6, seed=0)
    stacked = xr.concat([big, small], dim="dataset", join="outer").assign_coords(
        dataset=["big", "small"]).chunk()
    lazy = xuqcal.stats(stacked, ["ence"])
    assert lazy.chunks is not None  # nothing computed yet
    with pytest.raises(ValueError, match=r"^dataset='small': the number of bins depends on the "
                                         r"slice's number of present points \(13 bins for its "
                                         r"265 points, 20 for all the rows\).*or give n_bins"):
        lazy.compute()
    computed = xuqcal.stats(stacked, ["ence"], n_bins=13).compute()
    np.testing.assert_array_equal(computed.sel(dataset="small").values,
                                  xuqcal.stats(small, ["ence"]).values)
    loaded = xuqcal.stats(stacked.load(), ["ence"])
    assert loaded.n_bins.values.tolist() == [20, 13]


def test_validate_cli_prints_the_bins_it_used(tmp_path, capsys):
    ds = xuqcal.synthetic.nig(M_SMALL, nu=6, seed=8)
    path = tmp_path / "small.csv"
    pd.DataFrame({"E": ds.E.values, "uE": ds.uE.values}).to_csv(path, index=False)
    options = ["--E", "E", "--uE", "uE", "--n-boot", "100", "--n-mc", "50", "--statistics",
               "zms,ence", "--generators", "normal", "--no-progress"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", FewPointsPerBinWarning)
        assert main(["validate", str(path), *options, "-o", str(tmp_path / "r.nc")]) == 0
    assert ", 13 bins, seed" in capsys.readouterr().out
    with xr.open_dataset(tmp_path / "r.nc") as result:
        assert result.attrs["n_bins"] == 13
    assert main(["validate", str(path), *options, "--n-bins", "20"]) == 0
    printed = capsys.readouterr()
    assert ", 20 bins, seed" in printed.out
    assert ("xuqcal validate: warning: n_bins: n_bins=20 bins of M=265 points hold 13 to 14 "
            "points per bin") in printed.err  # the CLI shows warnings on one line
