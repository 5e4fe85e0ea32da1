"""One vocabulary for coverage (issue 27, part 3).

- the nominal coverage of an interval is ``coverage_level`` / ``coverage_levels`` everywhere
  (the old keywords ``p``, ``interval_level`` and ``levels`` are removed, not aliased), and
  results and data written until version 0.1 with the old names are still read, to the same
  values;
- :func:`xuqcal.curves.local_coverage` takes a given interval of the error by name
  (``lower=``, ``upper=``) through the argument checks of :func:`xuqcal.interval_coverage`;
- the figures of :mod:`xuqcal.plot` are nouns (``pit``, ``quantile_calibration``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from scipy import stats as sps

import xuqcal
from xuqcal import plot
from xuqcal.analysis.coverage import interval_bounds, interval_coverage
from xuqcal.analysis.curves import calibration_curve, local_coverage
from xuqcal.cli import main
from xuqcal.core.intervals import wilson_interval
from xuqcal.recalibration import Recalibrator, apply, conformal_coverage, fit


def _interval_data(m: int = 600, seed: int = 0) -> xr.Dataset:
    """Normal errors with the given central 0.9-intervals ±1.6449 uE, shifted by 0.1 uE."""
    rng = np.random.default_rng(seed)
    u = np.exp(rng.normal(0.0, 0.5, m))
    E = u * rng.standard_normal(m)
    return xuqcal.from_arrays(E, u, lower=-1.6449 * u + 0.1 * u, upper=1.6449 * u + 0.1 * u,
                              coverage_level=0.9)


def _written_until_0_1(ds: xr.Dataset) -> xr.Dataset:
    """``ds`` as version 0.1 wrote it: the bounds record ``interval_level``."""
    old = ds.copy()
    for bound in ("lower", "upper"):
        attrs = dict(old[bound].attrs)
        attrs["interval_level"] = attrs.pop("coverage_level")
        old[bound].attrs = attrs
    return old


def _same(a: xr.Dataset, b: xr.Dataset) -> None:
    """The same variables with bit-identical values."""
    assert sorted(a.variables) == sorted(b.variables)
    for name in a.variables:
        np.testing.assert_array_equal(a[name].values, b[name].values, err_msg=name)


# ---------------------------------------------------------------------- the old keywords


@pytest.mark.parametrize("call", [
    lambda ds: calibration_curve(ds, p=[0.5, 0.9]),
    lambda ds: local_coverage(ds, p=0.9),
    lambda ds: interval_coverage(ds, interval_level=0.9),
    lambda ds: interval_bounds(ds, interval_level=0.9),
    lambda ds: ds.uqcal.calibration_curve(p=[0.5, 0.9]),
    lambda ds: ds.uqcal.local_coverage(p=0.9),
    lambda ds: ds.uqcal.interval_coverage(interval_level=0.9),
    lambda ds: fit(ds, "conformal", levels=[0.9]),
    lambda ds: ds.uqcal.recalibrate("conformal", levels=[0.9]),
    lambda ds: xuqcal.from_arrays(ds.E.values, lower=ds.lower.values, upper=ds.upper.values,
                                  interval_level=0.9),
    lambda ds: xuqcal.from_dataframe(pd.DataFrame({"E": ds.E.values, "lo": ds.lower.values,
                                                   "hi": ds.upper.values}),
                                     E="E", lower="lo", upper="hi", interval_level=0.9),
    lambda ds: xuqcal.sip_matrix(xr.concat([ds, ds], "model"), "interval", n_boot=40,
                                 interval_level=0.9),
], ids=["calibration_curve", "local_coverage", "interval_coverage", "interval_bounds",
        "accessor calibration_curve", "accessor local_coverage", "accessor interval_coverage",
        "fit", "accessor recalibrate", "from_arrays", "from_dataframe", "sip_matrix"])
def test_the_old_keywords_are_removed(call):
    with pytest.raises(TypeError, match=r"unexpected keyword argument "
                                        r"'(p|interval_level|levels)'"):
        call(_interval_data(100))


def test_read_csv_refuses_the_old_keyword_before_reading(tmp_path):
    path = tmp_path / "never_read.csv"  # not written: the keyword is refused first
    with pytest.raises(TypeError, match="'interval_level' \\(renamed coverage_level"):
        xuqcal.read_csv(path, E="E", lower="lo", upper="hi", interval_level=0.9)


def test_the_command_line_option_is_renamed(tmp_path, capsys):
    data = xuqcal.synthetic.nig(300, nu=6, seed=0)
    csv = tmp_path / "d.csv"
    pd.DataFrame({"E": data.E.values, "uE": data.uE.values}).to_csv(csv, index=False)
    argv = ["recalibrate", str(csv), str(csv), "--E", "E", "--uE", "uE", "--method",
            "conformal", "-o", str(tmp_path / "o.nc")]
    assert main([*argv, "--levels", "0.9"]) == 2
    assert "unrecognized arguments: --levels" in capsys.readouterr().err
    assert not (tmp_path / "o.nc").exists()
    assert main([*argv, "--coverage-levels", "0.9"]) == 0
    capsys.readouterr()
    table = xr.open_dataset(tmp_path / "o_evaluation.nc")
    assert table.attrs["coverage_levels"] == "0.9" and table.coverage_level.values.tolist() == [
        0.9]
    table.close()


# ---------------------------------------------------------- files written until version 0.1


def test_bounds_written_until_0_1_are_read_to_the_same_values(tmp_path):
    new = _interval_data()
    assert new.lower.attrs["coverage_level"] == 0.9 and "interval_level" not in new.lower.attrs
    xuqcal.to_netcdf(_written_until_0_1(new), tmp_path / "old.nc")
    old = xuqcal.open_dataset(tmp_path / "old.nc")
    assert old.lower.attrs["interval_level"] == 0.9 and "coverage_level" not in old.lower.attrs
    assert interval_bounds(old)[1] == 0.9
    _same(interval_coverage(old, n_boot=50), interval_coverage(new, n_boot=50))
    _same(local_coverage(old, interval=True, n_bins=5), local_coverage(new, interval=True,
                                                                       n_bins=5))
    # a new file records the new name
    xuqcal.to_netcdf(new, tmp_path / "new.nc")
    with xr.open_dataset(tmp_path / "new.nc") as written:
        assert written.lower.attrs["coverage_level"] == 0.9
        assert "interval_level" not in written.lower.attrs


def test_a_calibration_curve_written_until_0_1_is_drawn_the_same(tmp_path):
    ds = xuqcal.synthetic.nig(500, nu=6, seed=0)
    cal = calibration_curve(ds, coverage_levels=[0.2, 0.5, 0.8, 0.95])
    assert cal.observed.dims == ("coverage_level",)
    np.testing.assert_array_equal(cal.coverage_level.values, [0.2, 0.5, 0.8, 0.95])
    xuqcal.to_netcdf(cal.rename(coverage_level="p"), tmp_path / "old.nc")
    with xr.open_dataset(tmp_path / "old.nc") as old:
        assert old.observed.dims == ("p",)
        drawn_old = plot.calibration_curve(old.load())
    drawn_new = plot.calibration_curve(cal)
    for a, b in zip(drawn_old.lines, drawn_new.lines, strict=True):
        np.testing.assert_array_equal(a.get_xydata(), b.get_xydata())
    assert drawn_old.get_title() == drawn_new.get_title()


def test_a_local_coverage_written_until_0_1_is_drawn_the_same():
    lc = local_coverage(xuqcal.synthetic.nig(600, nu=6, seed=0), coverage_level=0.9, n_bins=6)
    assert lc.attrs["coverage_level"] == 0.9 and "p" not in lc.attrs
    old = lc.copy()
    old.attrs = {("p" if k == "coverage_level" else k): v for k, v in lc.attrs.items()}
    drawn_old, drawn_new = plot.local_coverage(old), plot.local_coverage(lc)
    assert drawn_old.get_ylabel() == drawn_new.get_ylabel() == "coverage of the 0.9-interval"
    for a, b in zip(drawn_old.lines, drawn_new.lines, strict=True):
        np.testing.assert_array_equal(a.get_xydata(), b.get_xydata())


def test_conformal_files_written_until_0_1_apply_to_the_same_values(tmp_path):
    train = xuqcal.synthetic.nig(400, nu=6, seed=0)
    test = xuqcal.synthetic.nig(300, nu=6, seed=1)
    rec = fit(train, "conformal", coverage_levels=[0.683, 0.9])
    assert rec.score_quantile.dims == ("coverage_level",) and "level" not in rec.dims
    xuqcal.to_netcdf(rec.rename(coverage_level="level"), tmp_path / "old.nc")
    with xr.open_dataset(tmp_path / "old.nc") as stored:
        assert stored.score_quantile.dims == ("level",)
    old = Recalibrator.open(tmp_path / "old.nc")
    assert "coverage_levels=(0.683, 0.9)" in repr(old)
    new = apply(rec, test)
    _same(old.apply(test), new)
    assert new.conformal_half_width.dims == ("sample", "coverage_level")
    # data recalibrated by version 0.1: half-widths over (sample, level)
    applied_old = new.rename(coverage_level="level")
    _same(conformal_coverage(applied_old, n_bins=5), conformal_coverage(new, n_bins=5))
    _same(apply(rec, applied_old), apply(rec, new))  # applied again: the new intervals replace


# --------------------------------------------------------- local coverage of named bounds


def test_local_coverage_of_named_bounds_counts_lower_le_E_le_upper():
    ds = _interval_data(800)
    bare = xr.Dataset({"E": ds.E, "uE": ds.uE, "lo": ("sample", ds.lower.values),
                       "hi": ("sample", ds.upper.values)})  # no roles, no recorded level
    lc = local_coverage(bare, lower="lo", upper="hi", coverage_level=0.9, n_bins=8)
    order = np.argsort(ds.uE.values, kind="stable")
    inside = ((ds.lower.values <= ds.E.values) & (ds.E.values <= ds.upper.values))[order]
    counts = [part.sum() for part in np.array_split(inside, 8)]
    np.testing.assert_array_equal(lc.n_inside.values, counts)
    lo, hi = wilson_interval(np.array(counts), np.full(8, 100), 0.95)
    np.testing.assert_array_equal(lc.ci_low.values, lo)
    np.testing.assert_array_equal(lc.ci_high.values, hi)
    assert lc.attrs["coverage_level"] == 0.9 and lc.attrs["interval"].startswith("lo <= E <= hi")
    # the same as the bounds found by their roles
    _same(lc, local_coverage(ds, interval=True, n_bins=8))


def test_local_coverage_checks_named_bounds_as_interval_coverage():
    ds = _interval_data(200)
    bare = xr.Dataset({"E": ds.E, "uE": ds.uE, "lo": ("sample", ds.lower.values),
                       "hi": ("sample", ds.upper.values)})
    cases = [
        (bare, dict(lower="lo", upper="hi"), r"coverage_level: not given, and lo, hi records no "
                                             r"attribute 'coverage_level'"),
        (bare, dict(lower="lo"), r"upper: the dataset has no variable with the role "
                                 r"interval_upper"),
        (bare, dict(lower="nope", upper="hi", coverage_level=0.9),
         r"lower: the dataset has no variable 'nope'"),
    ]
    for data, kwargs, message in cases:
        with pytest.raises(ValueError, match=message):
            interval_coverage(data, **kwargs)
        with pytest.raises(ValueError, match=message):
            local_coverage(data, **kwargs)
    with pytest.raises(ValueError, match=r"coverage_level: 0.95 differs from the level of the "
                                         r"given intervals \(0.9\)"):
        local_coverage(ds, lower="lower", upper="upper", coverage_level=0.95)


# -------------------------------------------------------------------------------- figures


def test_the_figures_are_nouns():
    import importlib

    for old in ("plot_pit", "plot_quantile_calibration"):
        assert not hasattr(plot, old)
    module = importlib.import_module("xuqcal.plot.pit_histogram")
    assert plot.pit is module.pit and callable(plot.pit)
    assert plot.quantile_calibration is importlib.import_module("xuqcal.plot.coverage"
                                                                ).quantile_calibration
    ds = xuqcal.synthetic.nig(400, nu=6, seed=0)
    assert plot.pit(xuqcal.pit(ds)).get_xlabel() == "PIT"
    q = sps.norm.ppf([0.1, 0.5, 0.9]) * np.ones((400, 1))
    cov = xuqcal.quantile_coverage(xuqcal.from_quantiles(q, ds.E.values, [0.1, 0.5, 0.9],
                                                         axis=1))
    assert plot.quantile_calibration(cov).get_xlabel() == "nominal probability p"
    # the public figures that share a name with a module of xuqcal.plot (the module is then
    # reached by import only): ``local`` and ``zscores``, from before issue 27; ``pit`` not
    import pkgutil

    modules = {m.name for m in pkgutil.iter_modules(plot.__path__)}
    assert modules & set(plot.__all__) == {"local", "zscores"}
