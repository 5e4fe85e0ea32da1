"""Uncertainty given as ensembles, intervals or quantiles (issue 15): the constructors
(from_ensemble, from_arrays/read_csv with an interval, from_quantiles), their checks, and the
coverage of quantiles and intervals (eager, Dask, extra dimensions)."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from scipy import stats

from xuqcal import io
from xuqcal.analysis.coverage import interval_coverage, quantile_coverage
from xuqcal.core.intervals import wilson_interval

da = pytest.importorskip("dask.array")


def _same(a: xr.Dataset, b: xr.Dataset) -> None:
    """Same variables, values, coordinates and variable attributes (the creation time of the
    dataset attributes may differ)."""
    xr.testing.assert_equal(a, b)
    for name in a.variables:
        assert a[name].attrs == b[name].attrs, name


# --------------------------------------------------------------------------------------------
# Ensembles
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("ddof", [0, 1, 3])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_ensemble_mean_and_std_against_numpy(ddof, axis):
    rng = np.random.default_rng(ddof)
    members = rng.normal(2.0, 0.5, size=(50, 6))  # (sample, member)
    observed = rng.normal(2.0, 0.5, size=50)
    given = members.T if axis == 0 else members
    ds = io.from_ensemble(given, observed, axis=axis, ddof=ddof, units="eV", X=np.arange(50))
    np.testing.assert_allclose(ds.E, observed - members.mean(axis=1), rtol=0, atol=1e-15)
    np.testing.assert_allclose(ds.uE, members.std(axis=1, ddof=ddof), rtol=1e-14)
    assert ds.members.dims == ("sample", "member")
    np.testing.assert_array_equal(ds.members, observed[:, None] - members)
    np.testing.assert_allclose(ds.members.mean("member"), ds.E, rtol=0, atol=1e-14)
    assert ds["member"].values.tolist() == list(range(6))
    assert ds["sample"].values.tolist() == list(range(50))
    assert [ds[v].attrs.get("xuqcal_role") for v in ("E", "uE", "members", "X")] == \
        ["E", "uE", "members", None]
    assert ds.uE.attrs["ddof"] == ddof and ds.attrs["n_members"] == 6
    assert ds.members.attrs["member_dim"] == "member" and ds.members.attrs["units"] == "eV"
    assert io.roles(ds) == ("E", "uE")


def test_ensemble_dataarray_with_labels_and_extra_dimension():
    rng = np.random.default_rng(3)
    values = rng.normal(size=(2, 40, 5))
    predictions = xr.DataArray(values, dims=("model", "sample", "seed"),
                               coords={"model": ["GCN", "RF"], "seed": [10, 11, 12, 13, 14]})
    observed = xr.DataArray(rng.normal(size=40), dims="point")  # its one dimension is sample
    ds = io.from_ensemble(predictions, observed, dim="seed")
    assert ds.E.dims == ("model", "sample") and ds.members.dims == ("model", "sample", "seed")
    assert ds["model"].values.tolist() == ["GCN", "RF"]
    assert ds["seed"].values.tolist() == [10, 11, 12, 13, 14]
    for k in range(2):
        np.testing.assert_allclose(ds.E[k], observed.values - values[k].mean(axis=1),
                                   rtol=0, atol=1e-15)
        np.testing.assert_allclose(ds.uE[k], values[k].std(axis=1, ddof=1), rtol=1e-14)
    # the dataset is a valid input (the member errors are not a feature) and keeps its roles
    assert io.validate_dataset(ds) is ds


def test_ensemble_roles_survive_netcdf_and_rename(tmp_path):
    rng = np.random.default_rng(4)
    ds = io.from_ensemble(rng.normal(size=(30, 4)), rng.normal(size=30), axis=1)
    io.to_netcdf(ds.rename(members="member_errors"), tmp_path / "ens.nc")
    opened = io.open_dataset(tmp_path / "ens.nc")
    assert opened.member_errors.attrs["xuqcal_role"] == "members"
    assert io.variable_with_role(opened, "members") == "member_errors"
    np.testing.assert_array_equal(opened.member_errors, ds.members)


def test_ensemble_dask_is_lazy_and_equal_to_eager():
    rng = np.random.default_rng(5)
    values = rng.normal(size=(3, 60, 4))
    predictions = xr.DataArray(values, dims=("task", "sample", "member"))
    observed = xr.DataArray(rng.normal(size=60), dims="sample")
    eager = io.from_ensemble(predictions, observed, ddof=0)
    lazy = io.from_ensemble(predictions.chunk({"sample": 25}), observed.chunk(20), ddof=0)
    assert all(lazy[v].chunks is not None for v in ("E", "uE", "members"))
    _same(lazy.compute(), eager)


def test_ensemble_errors_name_the_rows():
    rng = np.random.default_rng(6)
    values = rng.normal(size=(8, 3))
    values[[2, 5], 1] = np.nan
    values[6] = 1.5
    with pytest.raises(ValueError) as raised:
        io.from_ensemble(values, np.zeros(8), axis=1)
    message = str(raised.value)
    assert "predictions: 2 of 8 samples have NaN values along 'member' (rows 2, 5)" in message
    assert "predictions: 1 of 8 samples have zero spread" in message
    assert message.endswith("(rows 6)")
    observed = np.zeros(8)
    observed[4] = np.inf
    with pytest.raises(ValueError, match=re.escape("observed: 1 of 8 values are +inf (rows 4)")):
        io.from_ensemble(rng.normal(size=(8, 3)), observed, axis=1)


def test_ensemble_errors_are_raised_lazily_with_the_same_message():
    values = np.random.default_rng(7).normal(size=(10, 4))
    values[7] = 0.25
    predictions = xr.DataArray(values, dims=("sample", "member")).chunk({"sample": 3})
    lazy = io.from_ensemble(predictions, np.zeros(10))  # nothing computed
    with pytest.raises(ValueError, match=re.escape("predictions: 1 of 10 samples have zero "
                                                   "spread")):
        lazy.uE.compute()


def test_ensemble_extra_dimension_messages_name_the_slice():
    values = np.random.default_rng(8).normal(size=(2, 5, 3))
    values[1, 3] = np.nan
    predictions = xr.DataArray(values, dims=("model", "sample", "member"),
                               coords={"model": ["a", "b"]})
    with pytest.raises(ValueError, match=re.escape("(rows 3 at model='b')")):
        io.from_ensemble(predictions, np.zeros(5))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"predictions": np.ones((5, 1)), "axis": 1},
         "predictions: an ensemble needs at least 2 members along 'member', got 1"),
        ({"predictions": np.ones((5, 3))}, "axis: predictions is an array without dimension"),
        ({"predictions": np.ones((5, 3)), "axis": 2}, "axis: expected 0, 1 or -1"),
        ({"predictions": np.ones(5), "axis": 0}, "predictions: expected a 2-D array"),
        ({"predictions": np.ones((5, 3)), "axis": 1, "ddof": 3},
         "ddof: expected an integer from 0 to 2 .the ensemble has 3 members., got 3"),
        ({"predictions": np.ones((5, 3)), "axis": 1, "ddof": 0.5}, "ddof: expected an integer"),
        ({"predictions": np.ones((4, 3)), "axis": 1},
         "length mismatch: predictions has 4 samples, observed has 5"),
        ({"predictions": xr.DataArray(np.ones((5, 3)), dims=("sample", "k"))},
         "predictions: no dimension 'member' .*pass dim='name'"),
        ({"predictions": xr.DataArray(np.ones((5, 3)), dims=("sample", "member")), "axis": 1},
         "axis: only for arrays without dimension names"),
        ({"predictions": xr.DataArray(np.ones((2, 5, 3)), dims=("a", "b", "member"))},
         "predictions: cannot tell which dimension is 'sample' among"),
        ({"predictions": np.array([["x", "y"]] * 5), "axis": 1},
         "predictions: values are not numeric"),
        ({"predictions": np.ones((5, 3)), "axis": 1, "members": np.ones(5)},
         "features: a feature cannot be named 'members'"),
        ({"predictions": np.ones((5, 3)), "axis": 1, "X": np.ones(4)},
         "length mismatch: the data have 5 samples, the feature X has 4 values"),
    ],
)
def test_ensemble_argument_errors(kwargs, match):
    kwargs = {"observed": np.zeros(5), **kwargs}
    with pytest.raises(ValueError, match=match):
        io.from_ensemble(**kwargs)


def test_ensemble_mismatched_coordinates_are_refused():
    predictions = xr.DataArray(np.random.default_rng(9).normal(size=(4, 3)),
                               dims=("sample", "member"), coords={"sample": [10, 11, 12, 13]})
    observed = xr.DataArray(np.zeros(4), dims="sample", coords={"sample": [10, 11, 13, 12]})
    with pytest.raises(ValueError, match=re.escape(
            "observed: its 'sample' coordinate differs from that of predictions at positions "
            "2 (12 vs 13), 3 (13 vs 12)")):
        io.from_ensemble(predictions, observed)
    ds = io.from_ensemble(predictions, observed.assign_coords(sample=[10, 11, 12, 13]))
    assert ds["sample"].values.tolist() == [0, 1, 2, 3]  # numbered like from_arrays


# --------------------------------------------------------------------------------------------
# Intervals
# --------------------------------------------------------------------------------------------


def test_from_arrays_with_an_interval_keeps_uE_absent_unless_asked():
    E, lower, upper = [0.1, -0.3, 0.5], [-0.2, -0.4, -0.1], [0.3, 0.2, 0.4]
    ds = io.from_arrays(E, lower=lower, upper=upper, coverage_level=0.8, units="eV")
    assert list(ds.data_vars) == ["E", "lower", "upper"]
    assert ds.lower.attrs["xuqcal_role"] == "interval_lower"
    assert ds.upper.attrs["xuqcal_role"] == "interval_upper"
    assert ds.lower.attrs["coverage_level"] == ds.upper.attrs["coverage_level"] == 0.8
    assert ds.upper.attrs["units"] == "eV" and ds.attrs["uE_expression"] == ""
    derived = io.from_arrays(E, lower=lower, upper=upper, coverage_level=0.8,
                             uE_from_interval=True)
    z = stats.norm.ppf(0.9)
    np.testing.assert_allclose(derived.uE, (np.array(upper) - lower) / (2 * z), rtol=1e-14)
    assert derived.uE.attrs["xuqcal_role"] == "uE"
    assert derived.uE.attrs["expression"] == f"(upper - lower) / (2 * {z:.7g})"
    given = io.from_arrays(E, [0.2, 0.3, 0.4], lower=lower, upper=upper, coverage_level=0.8)
    np.testing.assert_array_equal(given.uE, [0.2, 0.3, 0.4])
    assert io.validate_dataset(given) is given  # the bounds are not features


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({}, "uE: missing: give the standard uncertainties uE, or a predicted interval"),
        ({"lower": [0.0]}, "upper: missing: lower is given"),
        ({"upper": [0.0]}, "lower: missing: upper is given"),
        ({"lower": [0.0], "upper": [1.0]}, "coverage_level: missing"),
        ({"lower": [0.0], "upper": [1.0], "coverage_level": 95}, "coverage_level: expected"),
        ({"coverage_level": 0.9}, "coverage_level: given without an interval"),
        ({"uE": [1.0], "uE_from_interval": True}, "uE_from_interval: there is no interval"),
        ({"uE": [1.0], "lower": [0.0], "upper": [1.0], "coverage_level": 0.9,
          "uE_from_interval": True}, "uE_from_interval: uE is given as well"),
        ({"lower": [0.0], "upper": [1.0], "coverage_level": 0.9, "uE_from_interval": "yes"},
         "uE_from_interval: expected True or False"),
        ({"lower": [0.0, 0.1], "upper": [1.0], "coverage_level": 0.9},
         "length mismatch: E has 1, lower has 2, upper has 1 values"),
        ({"lower": [True], "upper": [True], "coverage_level": 0.9},
         "lower: values are not numeric .dtype bool."),
    ],
)
def test_from_arrays_interval_argument_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        io.from_arrays([0.1], **kwargs)


def test_interval_bounds_are_checked_naming_the_rows():
    E = np.zeros(6)
    lower, upper = -np.ones(6), np.ones(6)
    lower[[1, 4]] = [2.0, 1.5]
    upper[2] = np.nan
    with pytest.raises(ValueError) as raised:
        io.from_arrays(E, lower=lower, upper=upper, coverage_level=0.9)
    assert "upper: 1 of 6 values are NaN (rows 2)" in str(raised.value)
    assert "lower, upper: 2 of 6 intervals have lower > upper (rows 1, 4)" in str(raised.value)
    # a zero-width interval is an interval; the uE derived from it is not a valid uncertainty
    flat = io.from_arrays([0.0, 0.1], lower=[-1.0, 0.1], upper=[1.0, 0.1], coverage_level=0.9)
    assert float(flat.upper[1] - flat.lower[1]) == 0.0
    with pytest.raises(ValueError, match=r"uE: 1 of 2 values are not positive \(rows 1\); "
                                         r"computed as '\(upper - lower\)"):
        io.from_arrays([0.0, 0.1], lower=[-1.0, 0.1], upper=[1.0, 0.1], coverage_level=0.9,
                       uE_from_interval=True)
    with pytest.raises(ValueError, match=re.escape("E: 1 of 2 values are NaN (rows 0)")):
        io.from_arrays([np.nan, 0.1], lower=[-1.0, 0.0], upper=[1.0, 0.2], coverage_level=0.9)


def test_interval_checks_of_dask_bounds_run_at_compute():
    E = xr.DataArray(da.from_array(np.linspace(-1, 1, 10), chunks=4), dims="x")
    lower = da.from_array(np.r_[-np.ones(9), 3.0], chunks=3)
    lazy = io.from_arrays(E, lower=lower, upper=da.ones(10, chunks=5), coverage_level=0.9)
    assert lazy.lower.chunks is not None and lazy.E.chunks is not None
    with pytest.raises(ValueError, match=re.escape("lower, upper: 1 of 10 intervals have lower "
                                                   "> upper (rows 9)")):
        lazy.E.compute()
    good = io.from_arrays(E, lower=-da.ones(10, chunks=5), upper=da.ones(10, chunks=5),
                          coverage_level=0.9, uE_from_interval=True)
    _same(good.compute(), io.from_arrays(np.linspace(-1, 1, 10), lower=-np.ones(10),
                                         upper=np.ones(10), coverage_level=0.9,
                                         uE_from_interval=True))


def _write_interval_csv(path):
    df = pd.DataFrame({
        "y": [1.0, 2.0, 3.0, 4.0, 5.0],
        "y_pred": [1.1, 1.8, 3.3, 4.0, 4.2],
        "y_lo": [0.6, 1.5, 2.7, 3.9, 3.5],
        "y_hi": [1.5, 2.2, 3.6, 4.1, 4.9],
        "sd": [0.3, 0.2, 0.25, 0.05, 0.4],
    })
    df.to_csv(path, index=False)
    return df


def test_read_csv_with_an_interval(tmp_path):
    df = _write_interval_csv(tmp_path / "pred.csv")
    ds = io.read_csv(tmp_path / "pred.csv", E="y - y_pred", lower="y_lo - y_pred",
                     upper="y_hi - y_pred", coverage_level=0.9, where="upper - lower > 0.5",
                     features=["y"])
    assert ds["sample"].values.tolist() == [0, 1, 2, 4]  # row 3 (width 0.2) is filtered out
    np.testing.assert_allclose(ds.lower, (df.y_lo - df.y_pred).values[[0, 1, 2, 4]])
    assert "uE" not in ds and list(ds.data_vars) == ["E", "y", "lower", "upper"]
    assert ds.lower.attrs["expression"] == "y_lo - y_pred"
    assert ds.attrs["lower_expression"] == "y_lo - y_pred"
    assert ds.attrs["source"] == str(tmp_path / "pred.csv")
    cov = interval_coverage(ds)
    inside = (df.y_lo <= df.y) & (df.y <= df.y_hi)
    assert float(cov.picp) == inside.values[[0, 1, 2, 4]].mean()
    derived = io.read_csv(tmp_path / "pred.csv", E="y - y_pred", lower="y_lo - y_pred",
                          upper="y_hi - y_pred", coverage_level=0.9, uE_from_interval=True)
    np.testing.assert_allclose(derived.uE, (df.y_hi - df.y_lo) / (2 * stats.norm.ppf(0.95)))
    with_uE = io.read_csv(tmp_path / "pred.csv", E="y - y_pred", uE="sd",
                          lower="y_lo - y_pred", upper="y_hi - y_pred", coverage_level=0.9)
    np.testing.assert_array_equal(with_uE.uE, df.sd)
    plain = io.read_csv(tmp_path / "pred.csv", E="y - y_pred", uE="sd")  # unchanged
    assert list(plain.data_vars) == ["E", "uE"] and "lower_expression" not in plain.attrs


def test_read_csv_interval_errors(tmp_path):
    df = _write_interval_csv(tmp_path / "pred.csv")
    df.loc[3, "y_lo"] = 4.5  # above y_hi: the bounds cross
    df.to_csv(tmp_path / "crossed.csv", index=False)
    with pytest.raises(ValueError, match=re.escape(
            "lower, upper: 1 of 5 intervals have lower > upper (rows 3)")):
        io.read_csv(tmp_path / "crossed.csv", E="y - y_pred", lower="y_lo - y_pred",
                    upper="y_hi - y_pred", coverage_level=0.9)
    with pytest.raises(ValueError, match="features: a feature cannot be named 'lower'"):
        io.read_csv(tmp_path / "pred.csv", E="y - y_pred", lower="y_lo", upper="y_hi",
                    coverage_level=0.9, features={"lower": "y"})
    with pytest.raises(ValueError, match="coverage_level: missing"):  # before reading the file
        io.read_csv(tmp_path / "missing.csv", E="y", lower="y_lo", upper="y_hi")
    with pytest.raises(ValueError, match="uE: missing"):
        io.read_csv(tmp_path / "pred.csv", E="y - y_pred")


# --------------------------------------------------------------------------------------------
# Quantiles
# --------------------------------------------------------------------------------------------


def test_from_quantiles_errors_and_quantiles_of_the_error():
    p = [0.1, 0.5, 0.9]
    values = np.array([[0.8, 1.0, 1.3], [1.9, 2.0, 2.1], [2.5, 3.0, 3.2]])
    observed = np.array([1.1, 1.8, 3.5])
    ds = io.from_quantiles(values, observed, p, axis=1, units="K")
    np.testing.assert_allclose(ds.E, observed - values[:, 1])
    np.testing.assert_allclose(ds.quantiles, values - values[:, [1]])
    assert ds.quantiles.dims == ("sample", "quantile")
    assert ds["quantile"].values.tolist() == p
    assert ds.quantiles.attrs["xuqcal_role"] == "quantiles" and ds.E.attrs["units"] == "K"
    assert "uE" not in ds
    # the coverage read on the error is the coverage read on the target
    np.testing.assert_array_equal(ds.E.values[:, None] <= ds.quantiles.values,
                                  observed[:, None] <= values)
    prediction = np.array([1.05, 2.0, 2.9])
    given = io.from_quantiles(values.T, observed, p, axis=0, prediction=prediction)
    np.testing.assert_allclose(given.E, observed - prediction)
    np.testing.assert_allclose(given.quantiles, values - prediction[:, None])
    labelled = io.from_quantiles(xr.DataArray(values, dims=("mol", "q"), coords={"q": p}),
                                 observed, p, dim="q")
    assert labelled.quantiles.dims == ("sample", "q") and labelled["q"].values.tolist() == p
    assert labelled.quantiles.attrs["quantile_dim"] == "q"
    np.testing.assert_array_equal(labelled.quantiles, ds.quantiles)
    np.testing.assert_array_equal(labelled.E, ds.E)


@pytest.mark.parametrize(
    ("probabilities", "match"),
    [
        ([0.0, 0.5, 0.9], r"probabilities: expected values strictly between 0 and 1, got 0 "
                          r"\(position 0\)"),
        ([0.1, 0.5, 1.2], r"got 1.2 \(position 2\)"),
        ([0.1, 0.5, np.nan], r"got nan \(position 2\)"),
        ([0.5, 0.1, 0.9], r"expected strictly increasing values, but 0.5 \(position 0\) is "
                          r"followed by 0.1 \(position 1\)"),
        ([0.1, 0.5, 0.5], "strictly increasing"),
        ([[0.1, 0.5, 0.9]], "probabilities: expected a non-empty 1-D list"),
        ([0.1, 0.5], "quantile_values: 3 quantiles along 'quantile' but 2 probabilities"),
        ([0.1, 0.4, 0.9], "prediction: not given, and 0.5 is not among the probabilities"),
    ],
)
def test_from_quantiles_probability_errors(probabilities, match):
    values = np.array([[0.8, 1.0, 1.3], [1.9, 2.0, 2.1]])
    with pytest.raises(ValueError, match=match):
        io.from_quantiles(values, [1.0, 2.0], probabilities, axis=1)


def test_from_quantiles_value_errors_name_the_rows():
    values = np.tile([0.8, 1.0, 1.3], (7, 1))
    values[2] = [1.0, 0.9, 1.3]  # crossing
    values[5] = [0.8, 1.0, 0.95]  # crossing
    values[6, 0] = np.nan
    with pytest.raises(ValueError) as raised:
        io.from_quantiles(values, np.ones(7), [0.1, 0.5, 0.9], axis=1)
    message = str(raised.value)
    assert "quantile_values: 1 of 7 samples have NaN values along 'quantile' (rows 6)" in message
    assert ("quantile_values: 2 of 7 samples have crossing quantiles: values that decrease as "
            "the probability increases (rows 2, 5)") in message
    lazy = io.from_quantiles(xr.DataArray(values[:6], dims=("sample", "quantile")).chunk(2),
                             np.ones(6), [0.1, 0.5, 0.9])
    with pytest.raises(ValueError, match=re.escape("crossing quantiles: values that decrease as "
                                                   "the probability increases (rows 2, 5)")):
        lazy.compute()
    labelled = xr.DataArray(values[:3], dims=("sample", "quantile"),
                            coords={"quantile": [0.1, 0.5, 0.8]})
    with pytest.raises(ValueError, match=r"its 'quantile' coordinate .* differs from the "
                                         r"probabilities"):
        io.from_quantiles(labelled, np.ones(3), [0.1, 0.5, 0.9])
    with pytest.raises(ValueError, match=re.escape("prediction: 1 of 3 values are NaN (rows 1)")):
        io.from_quantiles(np.tile([0.8, 1.0, 1.3], (3, 1)), np.ones(3), [0.1, 0.5, 0.9],
                          axis=1, prediction=[1.0, np.nan, 1.0])


def _gaussian_quantiles(n: int, probabilities, *, scale: float = 1.0, shift: float = 0.0,
                        seed: int = 0):
    """Predicted quantiles ``mu + scale sigma z_p + shift sigma`` of targets ``y ~ N(mu,
    sigma²)`` with heteroscedastic sigma: calibrated for scale 1 and shift 0."""
    rng = np.random.default_rng(seed)
    mu = rng.uniform(-5.0, 5.0, n)
    sigma = rng.uniform(0.2, 3.0, n)
    y = mu + sigma * rng.standard_normal(n)
    z = stats.norm.ppf(probabilities)
    values = mu[:, None] + sigma[:, None] * (scale * z[None, :] + shift)
    return values, y, mu


PROBABILITIES = [0.025, 0.1, 0.25, 0.5, 0.75, 0.9, 0.975]


def test_quantile_coverage_of_calibrated_gaussian_quantiles():
    values, y, mu = _gaussian_quantiles(20_000, PROBABILITIES)
    ds = io.from_quantiles(values, y, PROBABILITIES, axis=1, prediction=mu)
    cov = quantile_coverage(ds, level=0.99)
    below = (y[:, None] <= values).sum(axis=0)
    np.testing.assert_array_equal(cov["count"], below)
    assert (cov.n == 20_000).all()
    np.testing.assert_allclose(cov.observed, below / 20_000)
    low, high = wilson_interval(below, 20_000, 0.99)
    np.testing.assert_array_equal(cov.ci_low, low)
    np.testing.assert_array_equal(cov.ci_high, high)
    assert bool(cov.valid.all()), cov.observed.values
    assert cov.observed.dims == ("quantile",)
    assert cov.attrs["ci_method"] == "Wilson score interval with continuity correction"


@pytest.mark.parametrize(("scale", "shift"), [(0.7, 0.0), (1.0, 0.3)])
def test_quantile_coverage_detects_miscalibrated_quantiles(scale, shift):
    values, y, mu = _gaussian_quantiles(20_000, PROBABILITIES, scale=scale, shift=shift)
    cov = quantile_coverage(io.from_quantiles(values, y, PROBABILITIES, axis=1, prediction=mu))
    invalid = ~cov.valid.values
    if shift == 0.0:  # too narrow: the outer quantiles are off, the median is right
        assert invalid[[0, 1, 2, 4, 5, 6]].all() and not invalid[3]
        assert cov.observed[0] > 0.025 and cov.observed[-1] < 0.975
    else:  # shifted up: more points below every quantile
        assert invalid[1:-1].all() and (cov.observed > cov["quantile"]).all()


def test_coverage_with_extra_dimensions_and_dask_equals_eager():
    probabilities = [0.1, 0.5, 0.9]
    slices = [_gaussian_quantiles(500, probabilities, scale=s, seed=k)
              for k, s in enumerate((1.0, 0.6))]
    values = xr.DataArray(np.stack([v for v, _, _ in slices]), dims=("model", "sample", "q"),
                          coords={"model": ["good", "narrow"]})
    observed = xr.DataArray(np.stack([y for _, y, _ in slices]), dims=("model", "sample"),
                            coords={"model": ["good", "narrow"]})
    ds = io.from_quantiles(values, observed, probabilities, dim="q")
    eager = quantile_coverage(ds)
    assert eager["count"].dims == ("q", "model")
    for k, name in enumerate(["good", "narrow"]):
        one = quantile_coverage(io.from_quantiles(slices[k][0], slices[k][1], probabilities,
                                                  axis=1, dim="q"))
        _same(eager.sel(model=name, drop=True).drop_attrs(),
              one.drop_attrs())
    lazy = quantile_coverage(io.from_quantiles(values.chunk({"sample": 120}), observed,
                                               probabilities, dim="q"))
    assert lazy.observed.chunks is not None
    _same(lazy.compute(), eager)
    assert not eager.valid.sel(model="narrow", q=0.1) and eager.valid.sel(model="good").all()


def test_interval_coverage_against_numpy_eager_lazy_and_by_slice():
    rng = np.random.default_rng(11)
    sets = []
    for width in (1.645, 1.0):  # a calibrated 90 % interval, then one too narrow
        sigma = rng.uniform(0.5, 2.0, 3000)
        E = sigma * rng.standard_normal(3000)
        sets.append((E, -width * sigma, width * sigma))
    datasets = [io.from_arrays(E, lower=lo, upper=hi, coverage_level=0.9)
                for E, lo, hi in sets]
    for (E, lo, hi), ds in zip(sets, datasets, strict=True):
        cov = interval_coverage(ds)
        inside = ((lo <= E) & (E <= hi)).sum()
        assert int(cov["count"]) == inside and int(cov.n) == 3000
        assert float(cov.picp) == inside / 3000
        assert float(cov.mean_width) == pytest.approx(np.mean(hi - lo), rel=1e-12)
        low, high = wilson_interval(inside, 3000, 0.95)
        assert (float(cov.ci_low), float(cov.ci_high)) == (low, high)
        assert cov.attrs["coverage_level"] == 0.9
    assert bool(interval_coverage(datasets[0]).valid)
    assert not bool(interval_coverage(datasets[1]).valid)
    stacked = xr.concat(datasets, dim=pd.Index(["calibrated", "narrow"], name="model"))
    eager = interval_coverage(stacked)
    assert eager.picp.dims == ("model",)
    for k, name in enumerate(["calibrated", "narrow"]):
        _same(eager.sel(model=name, drop=True).drop_attrs(),
              interval_coverage(datasets[k]).drop_attrs())
    lazy = interval_coverage(stacked.chunk({"sample": 700}))
    assert lazy.picp.chunks is not None
    computed = lazy.compute()
    _same(computed.drop_vars("mean_width"), eager.drop_vars("mean_width"))  # exact counts
    # the sum of the widths is taken chunk by chunk: equal up to the rounding of the sums
    xr.testing.assert_allclose(computed.mean_width, eager.mean_width, rtol=1e-13)


def test_interval_coverage_roles_levels_and_errors():
    ds = io.from_arrays([0.1, -0.3, 0.5], lower=[-0.2, -0.2, -0.4], upper=[0.2, 0.2, 0.4],
                        coverage_level=0.5)
    renamed = ds.rename(E="err", lower="lo", upper="hi")
    _same(interval_coverage(renamed).drop_attrs(), interval_coverage(ds).drop_attrs())
    bare = xr.Dataset({"E": ds.E.copy(), "a": ds.lower.copy(), "b": ds.upper.copy()})
    for name in ("a", "b"):
        bare[name].attrs = {}
    with pytest.raises(ValueError, match="lower: the dataset has no variable with the role "
                                         "interval_lower"):
        interval_coverage(bare)
    with pytest.raises(ValueError, match="coverage_level: not given, and a, b records no"):
        interval_coverage(bare, lower="a", upper="b")
    assert interval_coverage(bare, lower="a", upper="b", coverage_level=0.5).attrs[
        "coverage_level"] == 0.5
    with pytest.raises(ValueError, match="level: expected a confidence level"):
        interval_coverage(ds, level=1.0)
    with pytest.raises(ValueError, match="quantiles: the dataset has no variable with the role "
                                         "quantiles"):
        quantile_coverage(ds)


# --------------------------------------------------------------------------------------------
# Wilson interval with continuity correction
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("level", [0.5, 0.8, 0.9, 0.95, 0.99, 0.999])
@pytest.mark.parametrize("n", [1, 2, 3, 7, 20, 101, 1000])
def test_wilson_cc_equals_scipy_wilsoncc(n, level):
    counts = sorted({0, 1, n // 3, n // 2, n - 1, n} & set(range(n + 1)))
    low, high = wilson_interval(np.array(counts), np.full(len(counts), n), level,
                                continuity=True)
    for k, lo, hi in zip(counts, low, high, strict=True):
        expected = stats.binomtest(k, n).proportion_ci(level, method="wilsoncc")
        assert (lo, hi) == pytest.approx((expected.low, expected.high), rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("bad", [-0.1, 1.0, "0.01", True])
def test_coverage_tolerance_is_checked(bad):
    ds = io.from_arrays(E=[0.1, -0.3, 0.2], lower=[-1.0] * 3, upper=[1.0] * 3,
                        coverage_level=0.9)
    with pytest.raises(ValueError, match=r"^tol: expected a tolerance in \[0, 1\)"):
        interval_coverage(ds, tol=bad)
