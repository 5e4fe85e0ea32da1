"""Running statistics of Z along a sorted variable, and the z-score plot."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from plotting import render

import xuqcal
from xuqcal.analysis.features import add_formula_features
from xuqcal.analysis.running import centred_move_mean, default_window, running_statistics
from xuqcal.core import defaults
from xuqcal.plot.zscores import zscores


def _direct(values: np.ndarray, window: int, min_count: int | None) -> np.ndarray:
    """Centred window means by a loop: positions i - window // 2 ... i + (window - 1) // 2."""
    m = values.size
    min_count = window if min_count is None else min_count
    out = np.full(m, np.nan)
    for i in range(m):
        lo, hi = max(i - window // 2, 0), min(i + (window - 1) // 2, m - 1)
        if hi - lo + 1 >= min_count:
            out[i] = values[lo:hi + 1].mean()
    return out


def _data(m: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    uE = rng.choice(np.linspace(0.1, 2.0, 25), m)  # ties
    E = uE * rng.standard_normal(m) * rng.uniform(0.5, 1.5, m)
    X = rng.integers(0, 7, m).astype(float)
    return xuqcal.from_arrays(E, uE, X=X)


@pytest.mark.parametrize("window", [1, 2, 3, 4, 10, 11, 57])
@pytest.mark.parametrize("min_count", [None, 1, "half"])
@pytest.mark.parametrize("by", ["uE", "X"])
def test_against_a_direct_computation(window, min_count, by):
    ds = _data(300, seed=window)
    if min_count == "half":
        min_count = max(window // 2, 1)
    r = running_statistics(ds, by=by, window=window, min_count=min_count)
    order = np.argsort(ds[by].values, kind="stable")
    z = ds.E.values[order] / ds.uE.values[order]
    assert dict(r.sizes) == {"rank": 300}
    np.testing.assert_array_equal(r["rank"].values, np.arange(300))
    np.testing.assert_array_equal(r.sample.values, order)
    np.testing.assert_array_equal(r[by].values, ds[by].values[order])
    np.testing.assert_array_equal(r.Z.values, z)
    for name, values in (("running_mean", z), ("running_mean_square", z * z)):
        expected = _direct(values, window, min_count)
        np.testing.assert_allclose(r[name].values, expected, rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(np.isnan(r[name].values), np.isnan(expected))
    # the same as pandas' centred rolling mean
    pandas = pd.Series(z).rolling(window, center=True, min_periods=min_count).mean()
    np.testing.assert_allclose(r.running_mean.values, pandas.to_numpy(), atol=1e-12)
    assert r.attrs["window"] == window and r.attrs["by"] == by
    assert r.attrs["min_count"] == (window if min_count is None else min_count)


@pytest.mark.parametrize("seed", range(4))
def test_trailing_mean_is_numbagg_s_bit_for_bit(seed):
    """xuqcal's cached running mean (numbagg compiles in every process) gives numbagg's
    move_mean bits: the same running sums, with NaNs skipped, every window and min_count, on
    values of mixed magnitudes (where the order of the additions shows in the last bits)."""
    import numbagg

    from xuqcal.core.moving import trailing_mean

    rng = np.random.default_rng(seed)
    m = int(rng.integers(1, 400))
    a = rng.standard_normal(m) * 10.0 ** rng.integers(-8, 9, m)
    a[rng.random(m) < 0.2] = np.nan
    compared = 0
    for window in sorted({1, 2, 3, m // 3 or 1, m // 2 or 1, m}):
        for min_count in sorted({1, window // 2 or 1, window}):
            out = np.empty(m)
            trailing_mean(a, window, min_count, out)
            expected = numbagg.move_mean(a, window=window, min_count=min_count)
            assert np.array_equal(out, expected, equal_nan=True), (m, window, min_count)
            compared += 1
    assert compared >= 3


def test_edges_are_nan_where_the_window_is_incomplete():
    ds = _data(50)
    r = running_statistics(ds, window=6)
    nan = np.isnan(r.running_mean.values)
    # window 6 at position i: i-3 ... i+2
    assert nan.tolist() == [True] * 3 + [False] * 45 + [True] * 2
    r = running_statistics(ds, window=50)
    assert np.flatnonzero(~np.isnan(r.running_mean.values)).tolist() == [25]
    assert r.running_mean.values[25] == pytest.approx(np.mean(ds.E.values / ds.uE.values))
    assert not np.isnan(running_statistics(ds, window=50, min_count=1).running_mean).any()


@pytest.mark.parametrize(("m", "window"), [
    (1, 1), (7, 7), (20, 20), (99, 20), (265, 20), (1234, 20), (2000, 20), (2099, 20),
    (2100, 21), (13_885, 138), (100_000, 1000)])
def test_default_window_is_m_over_100_but_at_least_20_points(m, window):
    """min(M, max(M // 100, 20)): M/100 (METHODS §6), never the 2-point window of M = 265 that
    was pure noise, nor more than M."""
    assert default_window(m) == window
    assert window == min(m, max(m // defaults.RUNNING_WINDOW_DIVISOR,
                                defaults.MIN_POINTS_PER_BIN_LOCAL))
    if m <= 2100:
        r = running_statistics(_data(m, seed=m))
        assert r.attrs["window"] == window
        assert r.running_mean.attrs["window"] == window
        np.testing.assert_allclose(r.running_mean.values, _direct(r.Z.values, window, None),
                                   rtol=1e-12, atol=1e-12)


def test_default_window_errors_and_an_explicit_window_of_one():
    for bad in (0, -3, 2.5, True, None):
        with pytest.raises(ValueError, match="m: expected a positive number of points"):
            default_window(bad)
    small = running_statistics(_data(99), window=1)  # asked for: the z-scores themselves
    assert small.attrs["window"] == 1
    np.testing.assert_array_equal(small.running_mean.values, small.Z.values)
    np.testing.assert_array_equal(small.running_mean_square.values, small.Z.values ** 2)


def test_zscores_plot_uses_the_default_window_of_small_sets():
    ax = zscores(xuqcal.synthetic.nig(265, nu=6, seed=4))
    labels = ax.get_legend_handles_labels()[1]
    assert "running mean of Z (window 20)" in labels  # not window 2 (= 265 // 100)
    plt.close("all")


def test_stable_sort_and_row_numbers_of_a_filtered_dataset():
    df = pd.DataFrame({"E": [0.3, -0.1, 0.2, 0.4, -0.2, 0.1],
                       "uE": [0.5, 0.2, 0.2, 1.0, 0.2, 0.9]})
    ds = xuqcal.from_dataframe(df, E="E", uE="uE", where="E != 0.4")
    assert ds.sample.values.tolist() == [0, 1, 2, 4, 5]
    r = running_statistics(ds, window=1)
    assert r.sample.values.tolist() == [1, 2, 4, 0, 5]  # ties of 0.2 keep the row order
    assert r.uE.values.tolist() == [0.2, 0.2, 0.2, 0.5, 0.9]
    assert r.uE.attrs == ds.uE.attrs


def test_errors():
    ds = _data(40)
    with pytest.raises(ValueError, match="by: unknown variable 'Y'; available variables: E, uE, X"):
        running_statistics(ds, by="Y")
    with pytest.raises(ValueError, match="by: unknown variable 'sample'"):
        running_statistics(ds, by="sample")
    with pytest.raises(ValueError, match="window: must be between 1 and the number of points"):
        running_statistics(ds, window=0)
    with pytest.raises(ValueError, match=r"window: must be between 1 and .*M = 40, got 41"):
        running_statistics(ds, window=41)
    with pytest.raises(ValueError, match="window: expected an integer"):
        running_statistics(ds, window=2.5)
    with pytest.raises(ValueError, match="window: expected an integer"):
        running_statistics(ds, window=True)
    with pytest.raises(ValueError, match="min_count: must be between 1 and the window"):
        running_statistics(ds, window=5, min_count=6)
    with pytest.raises(ValueError, match="min_count: must be between 1"):
        running_statistics(ds, window=5, min_count=0)
    with pytest.raises(ValueError, match="name of an output variable"):
        running_statistics(ds.assign(Z=ds.X), by="Z")
    with pytest.raises(ValueError, match=r"^X: 1 of 40 values are NaN or infinite \(rows 3\)$"):
        running_statistics(ds.assign(X=ds.X.where(ds.sample != 3)), by="X")
    with pytest.raises(ValueError, match="1-D variable over 'sample'"):
        running_statistics(ds.assign(Y=ds.X.expand_dims(k=2)), by="Y")
    with pytest.raises(ValueError, match="window: must be between 1"):
        centred_move_mean(np.ones(3), 4)


def test_qm9_running_statistics(shared_data):
    path = shared_data / "BUS2022/qm9_U0_test_Orig.csv"
    ds = xuqcal.read_csv(path, E="U0 - prediction", uE="sqrt(uncertainty_total)")
    r = running_statistics(ds)
    assert r.attrs["window"] == 138
    z = ds.E.values / ds.uE.values
    assert np.mean(z * z) == pytest.approx(0.96, abs=0.005)  # TARGETS: <Z²> = 0.96
    inner = slice(69, 13_885 - 68)
    assert not np.isnan(r.running_mean_square.values[inner]).any()
    assert np.isnan(r.running_mean_square.values[:69]).all()
    assert np.isnan(r.running_mean_square.values[-68:]).all()
    # spot check of one window against a direct mean
    order = np.argsort(ds.uE.values, kind="stable")
    assert r.running_mean_square.values[5000] == pytest.approx(
        np.mean(z[order][5000 - 69:5000 + 69] ** 2), rel=1e-12)


# --------------------------------------------------------------------------------------------
# z-score plot
# --------------------------------------------------------------------------------------------


def test_zscores_plot(tmp_path):
    ds = xuqcal.synthetic.nig(3000, nu=6, seed=4)
    ax = zscores(ds)
    assert ax.get_xlabel() == "uE" and ax.get_ylabel() == "Z = E / uE"
    assert ax.get_xscale() == "log"
    labels = ax.get_legend_handles_labels()[1]
    assert labels == ["±1.96 (95 % of N(0, 1))", "Z", "±1", "running mean of Z (window 30)",
                      "running RMS of Z (window 30)"]
    r = running_statistics(ds)
    line = next(li for li in ax.get_lines() if li.get_label().startswith("running RMS"))
    np.testing.assert_allclose(line.get_ydata(), np.sqrt(r.running_mean_square.values))
    render(ax, tmp_path / "zscores.png")


def test_zscores_plot_along_a_feature_on_given_axes(tmp_path, shared_data):
    path = shared_data / "BUS2022/qm9_U0_test_Orig.csv"
    ds = xuqcal.read_csv(path, E="U0 - prediction", uE="sqrt(uncertainty_total)")
    ds = add_formula_features(ds, pd.read_csv(path, usecols=["formula"])["formula"])
    _fig, axs = plt.subplots(1, 2, figsize=(10, 4))
    assert zscores(ds, by="X2", ax=axs[0]) is axs[0]
    assert axs[0].get_xlabel() == "X2" and axs[0].get_xscale() == "linear"
    zscores(ds, by="uE", window=500, ax=axs[1], log_x=False, min_count=1)
    assert axs[1].get_xscale() == "linear"
    assert "running mean of Z (window 500)" in axs[1].get_legend_handles_labels()[1]
    render(axs[0], tmp_path / "zscores_qm9.png")


def test_zscores_plot_errors():
    ds = xuqcal.from_arrays([0.1, -0.3, 0.2], [0.1, 0.3, 0.2], X=[-1.0, 0.0, 1.0])
    with pytest.raises(ValueError, match=r"log_x: .*positive values of 'X'"):
        zscores(ds, by="X", log_x=True)
    with pytest.raises(ValueError, match="by: unknown variable"):
        zscores(ds, by="nope")
    plt.close("all")
