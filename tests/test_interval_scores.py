"""Scores of predicted intervals, quantiles and ensembles (issue 15, items 4 and 5): the mean
interval (Winkler) score of :func:`interval_coverage` with bootstrap intervals, the pinball
loss and calibration error of :func:`quantile_coverage` with the quantile calibration plot,
and the fair ensemble CRPS of :func:`proper_scores`."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from plotting import render
from scipy import stats

import xuqcal
from xuqcal import io
from xuqcal.analysis.coverage import INTERVAL_SCORES, interval_coverage, quantile_coverage
from xuqcal.analysis.probabilistic import ENSEMBLE_SCORE, SCORES, proper_scores
from xuqcal.plot import quantile_calibration


def _attrs_free(ds: xr.Dataset) -> xr.Dataset:
    return ds.drop_attrs()


# --------------------------------------------------------------------------------------------
# Interval (Winkler) score
# --------------------------------------------------------------------------------------------


def _winkler(y, lo, hi, level):
    alpha = 1.0 - level
    return (hi - lo) + 2.0 / alpha * np.maximum(lo - y, 0.0) + 2.0 / alpha * np.maximum(
        y - hi, 0.0)


def _interval_set(n, width, seed, level=0.9):
    """Heteroscedastic normal errors with the interval ``±width σ`` (calibrated at ``level``
    for ``width = Φ⁻¹((1 + level)/2)``)."""
    rng = np.random.default_rng(seed)
    sigma = rng.uniform(0.5, 2.0, n)
    E = sigma * rng.standard_normal(n)
    return E, -width * sigma, width * sigma, sigma


def test_interval_score_known_answer():
    ds = io.from_arrays([0.1, -0.3, 0.5, 0.0], lower=[-0.2, -0.2, -0.4, -0.1],
                        upper=[0.2, 0.2, 0.4, 0.1], coverage_level=0.5)
    cov = interval_coverage(ds)
    # widths 0.4, 0.4, 0.8, 0.2; -0.3 is 0.1 below, 0.5 is 0.1 above: penalty (2/0.5) 0.1 each
    assert float(cov.interval_score) == pytest.approx((1.8 + 2 * 4 * 0.1) / 4, rel=1e-14)
    assert cov.interval_score.attrs["long_name"].startswith("mean interval (Winkler) score")
    assert "score" not in cov.dims and "score_ci_low" not in cov


@pytest.mark.parametrize("level", [0.5, 0.9, 0.99])
def test_interval_score_against_the_direct_formula(level):
    E, lo, hi, _ = _interval_set(2000, 1.3, seed=1)
    cov = interval_coverage(io.from_arrays(E, lower=lo + 0.1, upper=hi, coverage_level=level))
    expected = np.mean(_winkler(E, lo + 0.1, hi, level))
    assert float(cov.interval_score) == pytest.approx(expected, rel=1e-12)
    assert cov.attrs["coverage_level"] == level


def test_interval_score_of_the_error_is_that_of_the_target():
    """Bounds of the error are those of the target minus the prediction: the score is the
    same, whatever the sign of the shift (sign convention E = y - y_pred)."""
    rng = np.random.default_rng(2)
    y_pred = rng.normal(size=500) * 10
    y = y_pred + rng.normal(size=500)
    y_lo, y_hi = y_pred - 1.2 + 0.3 * rng.random(500), y_pred + 1.0 + 0.3 * rng.random(500)
    df = pd.DataFrame({"y": y, "y_pred": y_pred, "lo": y_lo, "hi": y_hi})
    ds = io.from_dataframe(df, E="y - y_pred", lower="lo - y_pred", upper="hi - y_pred",
                           coverage_level=0.8)
    cov = interval_coverage(ds)
    assert float(cov.interval_score) == pytest.approx(np.mean(_winkler(y, y_lo, y_hi, 0.8)),
                                                      rel=1e-11)
    assert float(cov.picp) == np.mean((y_lo <= y) & (y <= y_hi))


def test_interval_score_of_calibrated_normal_intervals():
    """For N(0, σ²) and the central interval ±zσ at level 1 - α, E[score] = 4 σ φ(z) / α."""
    level = 0.9
    z = stats.norm.ppf(0.95)
    E, lo, hi, sigma = _interval_set(20_000, z, seed=3, level=level)
    cov = interval_coverage(io.from_arrays(E, lower=lo, upper=hi, coverage_level=level),
                            n_boot=400, seed=1)
    expected = 4.0 * float(np.mean(sigma)) * stats.norm.pdf(z) / (1.0 - level)
    score = cov.sel(score="interval_score")
    assert float(score.score_ci_low) < expected < float(score.score_ci_high)
    # a too narrow interval scores worse on the same errors
    narrow = interval_coverage(io.from_arrays(E, lower=0.6 * lo, upper=0.6 * hi,
                                              coverage_level=level))
    assert float(narrow.interval_score) > float(cov.interval_score)


@pytest.mark.parametrize("method", ["bca", "percentile"])
def test_bootstrap_intervals_present_and_containing_the_estimates(method):
    E, lo, hi, _ = _interval_set(1500, 1.645, seed=4)
    ds = io.from_arrays(E, lower=lo, upper=hi, coverage_level=0.9, units="eV")
    plain = interval_coverage(ds)
    cov = interval_coverage(ds, n_boot=500, method=method, seed=3)
    assert cov.score.values.tolist() == list(INTERVAL_SCORES) == ["mean_width", "interval_score"]
    for summary in ("bias", "se", "ci_low", "ci_high"):
        assert cov[f"score_{summary}"].dims == ("score",)
        assert cov[f"score_{summary}"].attrs["units"] == "eV"
    # the estimates and the PICP do not depend on the bootstrap
    xr.testing.assert_identical(_attrs_free(cov.drop_vars([v for v in cov.data_vars
                                                           if v.startswith("score_")]
                                                          ).drop_vars("score")),
                                _attrs_free(plain))
    estimate = np.array([float(cov.mean_width), float(cov.interval_score)])
    assert np.all(cov.score_ci_low.values < estimate)
    assert np.all(estimate < cov.score_ci_high.values)
    # the standard error is that of a mean: sd / sqrt(M)
    width = hi - lo
    assert float(cov.score_se.sel(score="mean_width")) == pytest.approx(
        np.std(width) / math.sqrt(width.size), rel=0.15)
    assert cov.attrs["n_boot"] == 500 and cov.attrs["method"] == method
    assert cov.attrs["seed"] == 3 and "random_streams" in cov.attrs
    # reproducible, and the seed matters
    again = interval_coverage(ds, n_boot=500, method=method, seed=3)
    xr.testing.assert_identical(again.drop_attrs(), cov.drop_attrs())
    other = interval_coverage(ds, n_boot=500, method=method, seed=4)
    assert not np.array_equal(other.score_ci_low.values, cov.score_ci_low.values)


def test_bootstrap_uses_the_shared_mean_kernel():
    """The summaries are those of proper_scores' helper on the same per-point columns."""
    from xuqcal.analysis.probabilistic import _score_intervals
    from xuqcal.core.scores import interval_score

    E, lo, hi, _ = _interval_set(800, 1.2, seed=5)
    cov = interval_coverage(io.from_arrays(E, lower=lo, upper=hi, coverage_level=0.8),
                            n_boot=300, seed=9)
    columns = {"mean_width": hi - lo, "interval_score": interval_score(E, lo, hi, 0.8)}
    expected = _score_intervals(columns, np.array([np.mean(v) for v in columns.values()]),
                                np.arange(800), n_boot=300, method="bca", level=0.95, seed=9,
                                names=INTERVAL_SCORES)
    for summary in ("bias", "se", "ci_low", "ci_high"):
        np.testing.assert_allclose(cov[f"score_{summary}"].values, expected[summary],
                                   rtol=1e-12)


def test_constant_width_has_an_exact_interval():
    rng = np.random.default_rng(6)
    E = rng.normal(size=300)
    cov = interval_coverage(io.from_arrays(E, lower=np.full(300, -1.3), upper=np.full(300, 1.3),
                                           coverage_level=0.8), n_boot=200)
    width = cov.sel(score="mean_width")
    assert float(width.score_ci_low) == float(width.score_ci_high) == 2.6
    assert float(width.score_se) == 0.0 and float(width.score_bias) == 0.0
    score = cov.sel(score="interval_score")
    assert float(score.score_ci_low) < float(cov.interval_score) < float(score.score_ci_high)


def test_interval_scores_many_sets_lazy_equal_eager():
    sets = [_interval_set(n, w, seed=s) for n, w, s in ((1200, 1.645, 7), (900, 1.0, 8))]
    datasets = [io.from_arrays(E, lower=lo, upper=hi, coverage_level=0.9)
                for E, lo, hi, _ in sets]
    stacked = xr.concat(datasets, dim=pd.Index(["calibrated", "narrow"], name="model"),
                        join="outer")  # the second set is NaN-padded: 300 absent points
    eager = interval_coverage(stacked, n_boot=300, seed=2)
    assert eager.score_ci_low.dims == ("model", "score")
    for k, name in enumerate(["calibrated", "narrow"]):
        one = interval_coverage(datasets[k], n_boot=300, seed=2)
        for var in ("interval_score", "score_bias", "score_se", "score_ci_low",
                    "score_ci_high", "picp", "n"):
            np.testing.assert_array_equal(eager[var].sel(model=name).values, one[var].values,
                                          err_msg=var)
    lazy = interval_coverage(stacked.chunk({"sample": 250}), n_boot=300, seed=2)
    for var in ("interval_score", "score_ci_low", "score_ci_high", "score_se"):
        assert lazy[var].chunks is not None, var
    computed = lazy.compute()
    xr.testing.assert_identical(computed.drop_vars("mean_width").drop_attrs(),
                                eager.drop_vars("mean_width").drop_attrs())
    xr.testing.assert_allclose(computed.mean_width, eager.mean_width, rtol=1e-13)
    assert float(eager.interval_score.sel(model="narrow")) > float(
        eager.interval_score.sel(model="calibrated"))


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"n_boot": 10}, r"^n_boot: expected an integer >= 40"),
    ({"n_boot": 1.5}, r"^n_boot: "),
    ({"n_boot": True}, r"^n_boot: "),
    ({"n_boot": 100, "method": "student"}, r"^method: "),
    ({"n_boot": 100, "seed": -1}, r"^seed: expected an integer from 0 to 2\*\*64 - 1"),
    ({"method": "bootstrap"}, r"^method: "),
    ({"level": 1.5}, r"^level: "),
])
def test_interval_coverage_argument_errors(kwargs, message):
    E, lo, hi, _ = _interval_set(50, 1.6, seed=0)
    ds = io.from_arrays(E, lower=lo, upper=hi, coverage_level=0.9).chunk()
    with pytest.raises(ValueError, match=message):
        interval_coverage(ds, **kwargs)


def test_reversed_bounds_are_refused():
    ds = xr.Dataset({"E": ("sample", [0.0, 0.1, 0.2]), "a": ("sample", [-1.0, 1.0, -1.0]),
                     "b": ("sample", [1.0, -1.0, 1.0])})
    with pytest.raises(ValueError, match=r"lower, upper: 1 of 3 intervals have lower > upper"):
        interval_coverage(ds, lower="a", upper="b", coverage_level=0.9)


# --------------------------------------------------------------------------------------------
# Pinball loss and quantile calibration
# --------------------------------------------------------------------------------------------


PROBABILITIES = [0.05, 0.25, 0.5, 0.75, 0.95]


def _gaussian_quantiles(n, probabilities, scale=1.0, seed=0):
    rng = np.random.default_rng(seed)
    mu = rng.uniform(-5.0, 5.0, n)
    sigma = rng.uniform(0.2, 3.0, n)
    y = mu + sigma * rng.standard_normal(n)
    values = mu[:, None] + scale * sigma[:, None] * stats.norm.ppf(probabilities)[None, :]
    return values, y, mu, sigma


def test_pinball_loss_known_answer():
    # E = observed (prediction 0); quantiles of the error [-1, 0, 1] at 0.1, 0.5, 0.9
    ds = io.from_quantiles([[-1.0, 0.0, 1.0], [-1.0, 0.0, 1.0]], [2.0, -2.0], [0.1, 0.5, 0.9],
                           axis=1, prediction=[0.0, 0.0])
    cov = quantile_coverage(ds)
    # y = 2: (3 * 0.1, 2 * 0.5, 1 * 0.9); y = -2: (1 * 0.9, 2 * 0.5, 3 * 0.1)
    np.testing.assert_allclose(cov.pinball_loss.values, [0.6, 1.0, 0.6], rtol=1e-14)
    assert cov.pinball_loss.dims == ("quantile",)


def test_pinball_loss_against_the_direct_formula_and_expected_value():
    values, y, mu, sigma = _gaussian_quantiles(20_000, PROBABILITIES, seed=1)
    cov = quantile_coverage(io.from_quantiles(values, y, PROBABILITIES, axis=1, prediction=mu,
                                              units="kcal/mol"))
    tau = np.asarray(PROBABILITIES)
    diff = y[:, None] - values
    direct = np.mean(diff * (tau - (diff < 0)), axis=0)
    np.testing.assert_allclose(cov.pinball_loss.values, direct, rtol=1e-12)
    assert cov.pinball_loss.attrs["units"] == "kcal/mol"
    # calibrated normal quantiles: E[ρ_τ(Y - q_τ)] = σ φ(z_τ)
    expected = np.mean(sigma) * stats.norm.pdf(stats.norm.ppf(tau))
    np.testing.assert_allclose(cov.pinball_loss.values, expected, rtol=0.03)


def test_calibration_error_is_the_mean_distance_to_the_diagonal():
    # E = 0, 1, ..., 9 and constant quantiles: observed fractions 0.1, 0.3, 0.9 exactly
    q = np.tile([0.5, 2.5, 8.5], (10, 1))
    ds = io.from_quantiles(q, np.arange(10.0), [0.1, 0.5, 0.9], axis=1, prediction=np.zeros(10))
    cov = quantile_coverage(ds)
    np.testing.assert_allclose(cov.observed.values, [0.1, 0.3, 0.9])
    assert float(cov.calibration_error) == pytest.approx(0.2 / 3, rel=1e-12)
    assert cov.calibration_error.dims == ()
    assert cov.attrs["quantile_dim"] == "quantile"
    # the area grows with the miscalibration
    errors = []
    for scale in (1.0, 0.8, 0.5):
        values, y, mu, _ = _gaussian_quantiles(5000, PROBABILITIES, scale=scale, seed=2)
        errors.append(float(quantile_coverage(io.from_quantiles(
            values, y, PROBABILITIES, axis=1, prediction=mu)).calibration_error))
    assert errors[0] < 0.01 < errors[1] < errors[2]


def test_quantile_scores_many_sets_lazy_equal_eager():
    slices = [_gaussian_quantiles(600, PROBABILITIES, scale=s, seed=k)
              for k, s in enumerate((1.0, 0.6))]
    values = xr.DataArray(np.stack([v for v, *_ in slices]), dims=("model", "sample", "q"),
                          coords={"model": ["good", "narrow"]})
    observed = xr.DataArray(np.stack([y for _, y, *_ in slices]), dims=("model", "sample"),
                            coords={"model": ["good", "narrow"]})
    ds = io.from_quantiles(values, observed, PROBABILITIES, dim="q")
    eager = quantile_coverage(ds)
    assert eager.pinball_loss.dims == ("q", "model")
    assert eager.calibration_error.dims == ("model",)
    for k, name in enumerate(["good", "narrow"]):
        one = quantile_coverage(io.from_quantiles(slices[k][0], slices[k][1], PROBABILITIES,
                                                  axis=1, dim="q"))
        xr.testing.assert_identical(eager.sel(model=name, drop=True).drop_attrs(),
                                    one.drop_attrs())
    chunked = io.from_quantiles(values.chunk({"sample": 150, "q": 2}), observed, PROBABILITIES,
                                dim="q")
    lazy = quantile_coverage(chunked)
    assert lazy.pinball_loss.chunks is not None and lazy.calibration_error.chunks is not None
    xr.testing.assert_identical(lazy.compute().drop_attrs(), eager.drop_attrs())
    assert float(eager.calibration_error.sel(model="narrow")) > float(
        eager.calibration_error.sel(model="good"))


# --------------------------------------------------------------------------------------------
# The quantile calibration plot
# --------------------------------------------------------------------------------------------


def _quantile_result(scale=1.0, seed=0, n=3000):
    values, y, mu, _ = _gaussian_quantiles(n, PROBABILITIES, scale=scale, seed=seed)
    return quantile_coverage(io.from_quantiles(values, y, PROBABILITIES, axis=1, prediction=mu))


def test_quantile_calibration(tmp_path):
    result = _quantile_result(scale=0.7)
    ax = quantile_calibration(result)
    assert ax.get_xlabel() == "nominal probability p"
    assert ax.get_ylabel() == "observed fraction with E ≤ q_p"
    assert ax.get_xlim() == (0.0, 1.0) and ax.get_ylim() == (0.0, 1.0)
    assert "calibration error" in ax.get_title()
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels[0] == "perfect calibration"
    assert "observed, Wilson 95 % interval" in labels  # the median is valid
    assert any(label.startswith("interval misses") for label in labels)  # the tails are not
    # one error bar per level, drawn at the nominal probabilities
    points = np.concatenate([c.lines[0].get_xdata() for c in ax.containers])
    np.testing.assert_allclose(np.sort(points), PROBABILITIES)
    diagonal = ax.lines[0]
    assert list(diagonal.get_xdata()) == [0, 1] and list(diagonal.get_ydata()) == [0, 1]
    render(ax, tmp_path / "quantile_calibration.png")


def test_plot_quantile_calibration_many_sets(tmp_path):
    both = xr.concat([_quantile_result(1.0, 1), _quantile_result(0.6, 2)],
                     dim=pd.Index(["good", "narrow"], name="model"))
    ax = quantile_calibration(both)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels[0].startswith("good (calibration error 0.00")
    assert labels[1].startswith("narrow (calibration error") and "perfect calibration" in labels
    assert ax.get_legend().get_title().get_text() == "model"
    render(ax, tmp_path / "overlaid.png")
    grid = quantile_calibration(both, col="model")
    assert grid.axes.shape == (1, 2)
    assert grid.axes[0, 1].get_title().startswith("model = narrow\ncalibration error")
    render(grid.axes[0, 0], tmp_path / "grid.png")


def test_plot_quantile_calibration_errors():
    with pytest.raises(ValueError, match=r"^result: expected the output of "
                                         r"xuqcal.analysis.coverage.quantile_coverage"):
        quantile_calibration(xr.Dataset({"observed": ("q", [0.5])}))
    with pytest.raises(ValueError, match=r"^result: expected the output"):
        quantile_calibration([0.1, 0.5])
    with pytest.raises(ValueError, match=r"^col: 'task' is not an extra dimension"):
        quantile_calibration(_quantile_result(), col="task")


# --------------------------------------------------------------------------------------------
# Fair ensemble CRPS in proper_scores
# --------------------------------------------------------------------------------------------


def _brute_force_fair_crps(x, y):
    """``mean|X_i − y| − Σ_{i,j}|X_i − X_j| / (2 m (m − 1))`` by the double sum, per point
    (NaN members left out)."""
    out = []
    for xi, yi in zip(x, y, strict=True):
        xi = xi[~np.isnan(xi)]
        m = xi.size
        pairs = sum(abs(a - b) for a in xi for b in xi)
        out.append(np.mean(np.abs(xi - yi)) - pairs / (2 * m * (m - 1)))
    return np.array(out)


def _ensemble(n, m, seed, spread=1.0):
    rng = np.random.default_rng(seed)
    centre = rng.normal(size=n) * 3
    x = centre[:, None] + spread * rng.normal(size=(n, m))
    y = centre + rng.normal(size=n)
    return x, y


@pytest.mark.parametrize(("n", "m"), [(7, 2), (20, 3), (50, 8)])
def test_ensemble_crps_equals_the_brute_force_double_sum(n, m):
    x, y = _ensemble(n, m, seed=n + m)
    scores = proper_scores(io.from_ensemble(x, y, axis=1), nu=6)
    expected = np.mean(_brute_force_fair_crps(x, y))
    assert float(scores[ENSEMBLE_SCORE]) == pytest.approx(expected, rel=1e-12, abs=1e-14)
    assert scores[ENSEMBLE_SCORE].attrs["long_name"] == "mean fair CRPS of the ensemble"
    assert scores.attrs["members"] == "members" and scores.attrs["member_dim"] == "member"


def test_ensemble_crps_with_labelled_members_and_a_renamed_variable():
    x, y = _ensemble(30, 4, seed=1)
    predictions = xr.DataArray(x, dims=("sample", "draw"), coords={"draw": list("abcd")})
    ds = io.from_ensemble(predictions, y, dim="draw").rename(members="ens")
    scores = proper_scores(ds, nu=6)  # found by its role
    assert float(scores.crps_ensemble) == pytest.approx(
        np.mean(_brute_force_fair_crps(x, y)), rel=1e-12)
    bare = ds.copy()
    bare["ens"].attrs = {}
    assert "crps_ensemble" not in proper_scores(bare, nu=6)  # no role: no ensemble
    assert float(proper_scores(bare, nu=6, members="ens").crps_ensemble) == float(
        scores.crps_ensemble)


def test_ensemble_crps_bootstrap_interval_and_the_other_scores_unchanged():
    x, y = _ensemble(1500, 10, seed=2)
    ds = io.from_ensemble(x, y, axis=1)
    with_members = proper_scores(ds, n_boot=400, seed=5)
    without = proper_scores(ds.drop_vars("members"), n_boot=400, seed=5)
    assert with_members.score.values.tolist() == [*SCORES, ENSEMBLE_SCORE]
    assert without.score.values.tolist() == list(SCORES) and ENSEMBLE_SCORE not in without
    xr.testing.assert_identical(
        with_members.drop_vars(ENSEMBLE_SCORE).sel(score=list(SCORES)).drop_attrs(),
        without.drop_attrs())
    crps = with_members.sel(score=ENSEMBLE_SCORE)
    estimate = float(with_members.crps_ensemble)
    assert float(crps.ci_low) < estimate < float(crps.ci_high)
    assert float(crps.se) == pytest.approx(
        np.std(_brute_force_fair_crps(x, y)) / math.sqrt(1500), rel=0.15)


def test_fair_ensemble_crps_is_unbiased_for_the_gaussian_crps():
    """Members drawn from N(mean, σ²): the fair CRPS estimates the CRPS of that Gaussian
    (its mean over many points is close to the closed form), the standard one exceeds it."""
    rng = np.random.default_rng(3)
    n, m = 4000, 4
    sigma = rng.uniform(0.5, 2.0, n)
    x = sigma[:, None] * rng.normal(size=(n, m))
    y = sigma * rng.normal(size=n)
    scores = proper_scores(io.from_ensemble(x, y, axis=1), nu=6, n_boot=400)
    exact = float(np.mean(xuqcal.core.scores.crps_normal(y, sigma)))
    crps = scores.sel(score=ENSEMBLE_SCORE)
    assert float(crps.ci_low) < exact < float(crps.ci_high)


def test_ensemble_crps_many_sets_of_different_sizes_lazy_equal_eager():
    """Ensembles of different sizes and lengths stacked along model: NaN members are missing,
    NaN points absent; each slice is the set alone, eager or lazy."""
    (x1, y1), (x2, y2) = _ensemble(60, 5, seed=4), _ensemble(45, 3, seed=5)
    sets = [io.from_ensemble(x1, y1, axis=1), io.from_ensemble(x2, y2, axis=1)]
    stacked = xr.concat(sets, dim=pd.Index(["five", "three"], name="model"), join="outer")
    assert stacked.members.sizes == {"model": 2, "sample": 60, "member": 5}
    eager = proper_scores(stacked, nu=6, n_boot=200)
    for k, (x, y) in enumerate(((x1, y1), (x2, y2))):
        one = proper_scores(sets[k], nu=6, n_boot=200)
        for var in (*SCORES, ENSEMBLE_SCORE, "ci_low", "ci_high", "se"):
            np.testing.assert_array_equal(eager[var].isel(model=k).values, one[var].values,
                                          err_msg=var)
        assert float(one.crps_ensemble) == pytest.approx(
            np.mean(_brute_force_fair_crps(x, y)), rel=1e-12)
    lazy = proper_scores(stacked.chunk({"sample": 20}), nu=6, n_boot=200)
    assert lazy.crps_ensemble.chunks is not None
    xr.testing.assert_identical(lazy.compute().drop_attrs(), eager.drop_attrs())
    one_lazy = proper_scores(sets[0].chunk({"sample": 25, "member": 2}), nu=6)
    assert one_lazy.crps_ensemble.chunks is not None
    assert float(one_lazy.crps_ensemble) == float(proper_scores(sets[0], nu=6).crps_ensemble)


def test_without_members_proper_scores_is_unchanged():
    ds = xuqcal.synthetic.nig(500, nu=6, seed=0)
    scores = proper_scores(ds, nu=6, n_boot=100)
    assert sorted(scores.data_vars) == ["bias", "ci_high", "ci_low", "crps_normal",
                                        "crps_student", "nll_normal", "nll_student", "nu", "se"]
    assert "members" not in scores.attrs and scores.score.values.tolist() == list(SCORES)


def test_ensemble_argument_and_value_errors():
    x, y = _ensemble(20, 3, seed=6)
    ds = io.from_ensemble(x, y, axis=1)
    with pytest.raises(ValueError, match=r"^members: the dataset has no variable 'ens'"):
        proper_scores(ds, nu=6, members="ens")
    one_member = ds.isel(member=[0])
    with pytest.raises(ValueError, match=r"^members: the fair ensemble CRPS needs at least 2 "
                                         r"members, 'members' has 1 along 'member'"):
        proper_scores(one_member, nu=6)
    two = ds.assign(other=ds.members.copy())
    with pytest.raises(ValueError, match=r"^members: 2 variables have the role members"):
        proper_scores(two, nu=6)
    flat = ds.assign(feature=ds.E.copy())
    with pytest.raises(ValueError, match=r"^members: cannot tell the dimension of the members"):
        proper_scores(flat, nu=6, members="feature")
    bad = ds.copy(deep=True)
    bad["members"][[3, 7], 0] = np.inf
    with pytest.raises(ValueError, match=r"^members: 2 of 20 points have infinite member "
                                         r"values \(rows 3, 7\)"):
        proper_scores(bad, nu=6)
    lazy = proper_scores(bad.chunk(), nu=6)  # built without reading the values
    with pytest.raises(ValueError, match=r"members: 2 of 20 points have infinite member"):
        lazy.compute()
    sparse = ds.copy(deep=True)
    sparse["members"][5, :2] = np.nan
    with pytest.raises(ValueError, match=r"^members: 1 of 20 points have fewer than 2 members "
                                         r"that are not NaN .*\(rows 5\)"):
        proper_scores(sparse, nu=6)
