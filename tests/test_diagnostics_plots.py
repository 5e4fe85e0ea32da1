"""Distribution diagnostics and the plots (rendered to PNG, headless)."""

from __future__ import annotations

import numpy as np
import pytest
from plotting import render
from scipy import stats

import xuqcal


def test_describe_recovers_the_nig_model():
    ds = xuqcal.synthetic.nig(40_000, nu=6, seed=9)
    d = ds.uqcal.describe()
    E = ds.E.values
    assert d["mean"].sel(variable="E") == pytest.approx(E.mean())
    assert d["sd"].sel(variable="Z") == pytest.approx((E / ds.uE.values).std(ddof=1))
    assert d.relative_bias.sel(variable="E") == pytest.approx(E.mean() / E.std(ddof=1))
    # E ~ t(6) in the NIG model; Z ~ N(0, 1); uE² ~ IG(3, 3)
    assert 5.0 < d.nu_eff.sel(variable="E") < 7.5
    assert d.nu_eff.sel(variable="Z") > 30
    assert d.uE2_shape.item() == pytest.approx(3.0, rel=0.05)
    assert d.uE2_scale.item() == pytest.approx(3.0, rel=0.05)
    assert d.beta_gm_uE.item() == pytest.approx(xuqcal.beta_gm(ds.uE.values))
    assert abs(d.kappa_cs.sel(variable="Z")) < 0.1


def test_describe_warnings_point_at_the_caller():
    """The warnings of describe name the user's line, not xuqcal's internals (a fixed
    stacklevel pointed into xuqcal.analysis.lazy once describe went through analysis())."""
    from xuqcal.analysis.diagnostics import DESCRIPTIONS, describe
    from xuqcal.core.statistics import UndefinedStatisticWarning

    ds = xuqcal.synthetic.nig(50, nu=6, seed=0)
    with pytest.warns(UndefinedStatisticWarning, match="uE is constant") as record:
        d = describe(ds.assign(uE=ds.uE * 0 + 1.0))
    assert {w.filename for w in record} == {__file__}
    assert all(d[name].attrs["description"] == DESCRIPTIONS[name] for name in d.data_vars)
    dependence = {"icc_z", "icc_z2", "design_effect_z2", "n_effective_groups", "acf1_z",
                  "acf1_z2", "n_effective_block"}  # only with groups= or block=
    assert set(DESCRIPTIONS) - dependence == set(d.data_vars)
    both = describe(ds.assign(g=("sample", np.arange(50) // 5), t=("sample", np.arange(50.0))),
                    groups="g", block="t")
    assert set(DESCRIPTIONS) == set(both.data_vars)
    assert all(both[name].attrs["description"] == DESCRIPTIONS[name] for name in dependence)


def test_student_t_fit_is_maximum_likelihood():
    from xuqcal.analysis.diagnostics import student_t_fit

    x = 1.0 + 0.3 * stats.t(5).rvs(5000, random_state=4)
    nu, loc, scale = student_t_fit(x)
    best = stats.t.logpdf(x, nu, loc, scale).sum()
    for other in ((nu * 1.1, loc, scale), (nu, loc + 0.01, scale), (nu, loc, scale * 1.02)):
        assert stats.t.logpdf(x, *other).sum() < best


def test_zeta_plot(tmp_path):
    ds = xuqcal.synthetic.nig(1500, nu=6, seed=1)
    v = xuqcal.validate(ds, ["zms", "rce", "cc", "ence"], n_boot=300, n_mc=300)
    ax = ds.uqcal.plot.zeta(v)
    assert ax.get_ylabel() == "ζ-score" and ax.get_xlabel() == "statistic"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["zms", "rce", "cc", "ence"]
    labels = ax.get_legend_handles_labels()[1]
    assert {"BS", "SimN", "SimT", "Sim2N", "Sim2T"} <= set(labels)
    render(ax, tmp_path / "zeta.png")
    # without a result, the accessor runs the validation itself
    ax = ds.uqcal.plot.zeta(statistics=["zms"], n_boot=200, n_mc=200)
    render(ax, tmp_path / "zeta2.png")


@pytest.mark.parametrize("variable", ["E", "Z"])
def test_error_distribution_plot(tmp_path, variable):
    ds = xuqcal.synthetic.nig(2000, nu=6, seed=1)
    ax = ds.uqcal.plot.error_distribution(["normal", "t6", "uniform"], variable=variable,
                                          n_sets=5)
    assert ax.get_xlabel() == variable and ax.get_yscale() == "log"
    labels = ax.get_legend_handles_labels()[1]
    assert labels == ["data", "simulated, D = normal", "simulated, D = t6",
                      "simulated, D = uniform"]
    render(ax, tmp_path / f"dist_{variable}.png")
    with pytest.raises(ValueError, match="variable"):
        ds.uqcal.plot.error_distribution(variable="uE")


def test_plots_of_constant_data_draw_degenerate_intervals(tmp_path):
    """Identical rows give per-bin intervals equal to the value up to rounding; the error bars
    were negative by 1e-17 and matplotlib refused the figure ('yerr' must not contain negative
    values), which stopped `xuqcal report` on such a file."""
    import warnings

    import matplotlib.pyplot as plt

    from xuqcal.plot._common import error_bars

    ds = xuqcal.from_arrays(np.full(100, 0.3), np.full(100, 0.5))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", xuqcal.UndefinedStatisticWarning)
        loc = xuqcal.local(ds, "zms", n_bins=5, n_boot=200)
        rel = xuqcal.reliability(ds, n_bins=5, n_boot=200)
    for ax in (xuqcal.plot.local(loc), xuqcal.plot.reliability(rel)):
        assert ax.get_xlabel() and ax.get_ylabel()
        plt.close(ax.figure)
    bars = error_bars([1.0, 2.0, 3.0], [1.0 + 1e-16, 1.5, np.nan], [1.2, 2.0 - 1e-16, 3.5])
    assert (bars[:, :2] >= 0).all() and np.isnan(bars[0, 2])
    np.testing.assert_allclose(bars[:, :2], [[0.0, 0.5], [0.2, 0.0]], atol=1e-15)
