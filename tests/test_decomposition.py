"""Score decompositions (issue 24, item 4): the CORP decomposition S = MCB − DSC + UNC of the
squared-error and QLIKE scores of the variance forecast uE² (identity, MCB = 0 for a forecast
that is its own isotonic recalibration, MCB ≥ 0 and DSC ≥ 0, hand-checked cases, ties), the
CORP reliability diagram's consistency band (reproducible for a seed), Pernot's split of the
NLL against xuqcal's own ``nll``, broadcasting over a ``model`` dimension, Dask laziness,
argument checks and the plot."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
import xarray as xr
from plotting import render

import xuqcal
from xuqcal.analysis.decomposition import corp_reliability, nll_split, score_decomposition
from xuqcal.core import decomposition as K
from xuqcal.plot.corp import corp_reliability_diagram
from xuqcal.plot.facets import FacetGrid
from xuqcal.testing import assert_lazy_until_compute, assert_slice_identical

REL = 1e-12


def _data(seed: int, m: int = 500, scale: float = 1.0, nu: float = 6) -> xr.Dataset:
    return xuqcal.synthetic.nig(m, nu=nu, seed=seed, uE_scale=scale)


def _identity_gap(d: xr.Dataset) -> np.ndarray:
    s = d.score_value.values
    return np.abs(s - (d.mcb.values - d.dsc.values + d.unc.values)) / np.abs(s)


# ------------------------------------------------------------------ kernel: the decomposition


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("scale", [0.5, 1.0, 2.0])
def test_identity_both_scores(seed, scale):
    d = score_decomposition(_data(seed, scale=scale))
    assert d.score.values.tolist() == ["squared_error", "qlike"]
    assert np.all(_identity_gap(d) <= REL)
    # and by its definitions: MCB = S − S_rc, DSC = S_mg − S_rc, UNC = S_mg
    assert np.array_equal(d.mcb.values, d.score_value.values - d.recalibrated_score.values)
    assert np.array_equal(d.dsc.values, d.unc.values - d.recalibrated_score.values)


@pytest.mark.parametrize("seed", range(20))
def test_mcb_and_dsc_non_negative(seed):
    rng = np.random.default_rng(seed)
    m = int(rng.integers(2, 400))
    u = rng.gamma(2.0, 1.0, m) * rng.uniform(0.3, 3.0)
    e = u * rng.standard_t(4, m) * rng.uniform(0.5, 2.0)
    v, y = u * u, e * e
    for part in K.corp_decomposition(v, y).values():
        assert part.mcb >= 0 and part.dsc >= 0
        assert abs(part.score - (part.mcb - part.dsc + part.unc)) <= REL * abs(part.score)


@pytest.mark.parametrize("seed", range(5))
def test_mcb_zero_for_recalibrated_forecast(seed):
    ds = _data(seed, scale=0.7)
    v, y = ds.uE.values ** 2, ds.E.values ** 2
    fitted = K.isotonic_recalibration(v, y)
    assert np.all(np.diff(fitted[np.argsort(v)]) >= 0)
    for part in K.corp_decomposition(fitted, y).values():  # the kernel on v̂ itself
        assert abs(part.mcb) <= REL * abs(part.score)
    # the labelled layer, uE replaced by sqrt(v̂): uE² is v̂ up to rounding
    again = score_decomposition(xuqcal.from_arrays(ds.E.values, np.sqrt(fitted)))
    assert np.all(np.abs(again.mcb.values) <= REL * np.abs(again.score_value.values))
    # a recalibrated forecast keeps the discrimination of the original one
    first = score_decomposition(ds)
    np.testing.assert_allclose(again.dsc.values, first.dsc.values, rtol=1e-12)


def test_hand_checked_case():
    # uE = 1, 2, 3, 4 and E = 2, 1, 3, 4: v = 1, 4, 9, 16, y = 4, 1, 9, 16. PAV pools the
    # violators 4 > 1 into 5/2: v̂ = 5/2, 5/2, 9, 16; ȳ = 15/2.
    ds = xuqcal.from_arrays([2.0, 1.0, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0])
    r = corp_reliability(ds, n_boot=40)
    assert r.recalibrated.values.tolist() == [2.5, 2.5, 9.0, 16.0]
    se = r.sel(score="squared_error")
    # S = (9 + 9 + 0 + 0)/4; S_rc = (9/4 + 9/4)/4; S_mg = (49 + 169 + 9 + 289)/16
    S, S_rc, S_mg = Fraction(9, 2), Fraction(9, 8), Fraction(129, 4)
    expected = {"score_value": S, "mcb": S - S_rc, "dsc": S_mg - S_rc, "unc": S_mg}
    assert expected["mcb"] == Fraction(27, 8) and expected["dsc"] == Fraction(249, 8)
    for name, value in expected.items():
        assert float(se[name]) == float(value), name
    # QLIKE y/v + ln v: S = (4 + 1/4 + 1 + 1)/4 + ln(1·4·9·16)/4;
    # S_rc = (8/5 + 2/5 + 1 + 1)/4 + (2 ln(5/2) + ln 9 + ln 16)/4; S_mg = 1 + ln(15/2)
    q = r.sel(score="qlike")
    S = 25 / 16 + math.log(576) / 4
    S_rc = 1 + (2 * math.log(2.5) + math.log(144)) / 4
    S_mg = 1 + math.log(7.5)
    for name, value in {"score_value": S, "mcb": S - S_rc, "dsc": S_mg - S_rc,
                        "unc": S_mg}.items():
        assert float(q[name]) == pytest.approx(value, rel=1e-14, abs=1e-15), name


def test_hand_checked_case_with_tie():
    # uE = 1, 2, 2, 4 and E = 1, 1, 3, 4: v = 1, 4, 4, 16, y = 1, 1, 9, 16. The tied points
    # (v = 4) are pooled to their mean 5 before PAV (monotone already): v̂ = 1, 5, 5, 16.
    # Without pooling the ties the fit would be y itself (1, 1, 9, 16: non-decreasing), giving
    # the tied points different values.
    ds = xuqcal.from_arrays([1.0, 1.0, 3.0, 4.0], [1.0, 2.0, 2.0, 4.0])
    r = corp_reliability(ds, n_boot=40)
    assert r.recalibrated.values.tolist() == [1.0, 5.0, 5.0, 16.0]
    se = score_decomposition(ds, "squared_error").sel(score="squared_error")
    S, S_rc, S_mg = Fraction(17, 2), Fraction(8), Fraction(627, 16)  # ȳ = 27/4
    for name, value in {"score_value": S, "mcb": S - S_rc, "dsc": S_mg - S_rc,
                        "unc": S_mg}.items():
        assert float(se[name]) == float(value), name


def test_ties_pooled_equal_recalibration():
    rng = np.random.default_rng(3)
    u = rng.choice([0.5, 1.0, 1.5, 2.0, 3.0], 300)  # 5 distinct values, many ties
    e = u * rng.normal(size=300) * 1.3
    ds = xuqcal.from_arrays(e, u)
    r = corp_reliability(ds, n_boot=50)
    for value in np.unique(u):
        tied = r.recalibrated.values[r.uE2.values == value ** 2]
        assert np.all(tied == tied[0])
        low = r.band_low.values[r.uE2.values == value ** 2]
        assert np.all(low == low[0])
    # v̂ is the weighted PAV of the tie means
    fitted = K.isotonic_recalibration(u * u, e * e)
    assert np.array_equal(np.sort(fitted), r.recalibrated.values)
    assert np.all(_identity_gap(score_decomposition(ds)) <= REL)


def test_scores_against_gaussian_nll():
    # the mean Gaussian NLL is ½ (ln 2π + QLIKE): the decomposition's S and Pernot's split agree
    ds = _data(1, scale=0.8)
    q = float(score_decomposition(ds, ["qlike"]).score_value.sel(score="qlike"))
    assert 0.5 * (K.LOG_2PI + q) == pytest.approx(float(nll_split(ds).nll), rel=1e-13)


# ------------------------------------------------------------------ Pernot's split of the NLL


@pytest.mark.parametrize("seed", range(4))
def test_nll_split_sums_to_nll(seed):
    ds = _data(seed, m=1000, scale=[0.6, 1.0, 1.4, 2.5][seed])
    s = nll_split(ds)
    nll = float(xuqcal.stats(ds, ["nll"]).sel(statistic="nll"))
    total = float(s.calibration) + float(s.sharpness) + float(s.constant)
    assert abs(total - nll) <= REL * abs(nll)
    assert abs(float(s.nll) - nll) <= REL * abs(nll)
    zms = float(xuqcal.stats(ds, ["zms"]).sel(statistic="zms"))
    assert float(s.calibration) == pytest.approx(zms / 2, rel=1e-13)
    assert float(s.constant) == 0.5 * math.log(2 * math.pi)
    assert float(s.sharpness) == pytest.approx(np.mean(np.log(ds.uE.values ** 2)) / 2,
                                               rel=1e-12)
    assert float(s.nll_reference) == pytest.approx(float(s.nll) - float(s.calibration) + 0.5,
                                                   rel=1e-13)


# ------------------------------------------------------------------ the consistency band


def test_band_reproducible_for_a_seed():
    ds = _data(0, m=300)
    a = corp_reliability(ds, n_boot=100, seed=7)
    b = corp_reliability(ds, n_boot=100, seed=7)
    c = corp_reliability(ds, n_boot=100, seed=8)
    assert np.array_equal(a.band_low.values, b.band_low.values)
    assert np.array_equal(a.band_high.values, b.band_high.values)
    assert not np.array_equal(a.band_low.values, c.band_low.values)
    assert a.attrs["seed"] == 7 and a.attrs["n_boot"] == 100 and a.attrs["level"] == 0.95
    # drawn in the sort order: the band depends on the values of uE only, not on row order
    shuffled = ds.isel(sample=np.random.default_rng(0).permutation(300))
    d = corp_reliability(shuffled, n_boot=100, seed=7)
    assert np.array_equal(a.band_low.values, d.band_low.values)
    assert np.array_equal(a.recalibrated.values, d.recalibrated.values)


def test_band_covers_calibrated_fit():
    # calibrated normal data: the fit lies inside the pointwise 95 % band at most points
    ds = xuqcal.synthetic.nig(2000, nu=6, seed=4, generator="normal")
    r = corp_reliability(ds, n_boot=200)
    inside = (r.recalibrated >= r.band_low) & (r.recalibrated <= r.band_high)
    assert float(inside.mean()) > 0.8
    assert bool((r.band_low <= r.band_high).all())
    assert bool((r.uE2.diff("rank") >= 0).all())
    # and far outside it for uncertainties twice too small
    bad = corp_reliability(xuqcal.synthetic.nig(2000, nu=6, seed=4, generator="normal",
                                                uE_scale=0.5), n_boot=200)
    assert float((bad.recalibrated > bad.band_high).mean()) > 0.5
    assert float(bad.mcb.sel(score="squared_error")) > float(r.mcb.sel(score="squared_error"))


# ------------------------------------------------------------------ broadcasting and laziness


def _two_models() -> tuple[xr.Dataset, xr.Dataset, xr.Dataset]:
    a = _data(0, m=300)
    b = _data(1, m=200, scale=0.6)
    both = xr.concat([a, b], dim="model", join="outer").assign_coords(model=["a", "b"])
    return a, b, both


@pytest.mark.parametrize("function, kwargs", [
    (score_decomposition, {}), (nll_split, {}), (corp_reliability, {"n_boot": 60})])
def test_broadcast_over_model(function, kwargs):
    a, b, both = _two_models()
    stacked = function(both, **kwargs)
    assert "model" in stacked.dims
    assert_slice_identical(stacked, function(a, **kwargs), model="a")
    assert_slice_identical(stacked, function(b, **kwargs), model="b")


@pytest.mark.parametrize("function, kwargs", [
    (score_decomposition, {}), (nll_split, {}), (corp_reliability, {"n_boot": 60})])
def test_lazy_on_dask(function, kwargs):
    ds = _data(2, m=300)
    lazy = assert_lazy_until_compute(function, ds.chunk({"sample": 100}), **kwargs)
    xr.testing.assert_identical(lazy.drop_attrs(), function(ds, **kwargs).drop_attrs())


# ------------------------------------------------------------------ argument and value checks


@pytest.mark.parametrize("kwargs, message", [
    ({"scores": ["x"]}, "scores: unknown score 'x'; choose from 'squared_error', 'qlike'"),
    ({"scores": "crps"}, "scores: unknown score 'crps'"),
    ({"scores": []}, "scores: the list of scores is empty"),
    ({"scores": ["qlike", "qlike"]}, "scores: a score is listed twice"),
    ({"E": "err"}, "E: the dataset has no variable 'err'"),
    ({"uE": "sigma"}, "uE: the dataset has no variable 'sigma'"),
])
def test_score_decomposition_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        score_decomposition(_data(0, m=50), **kwargs)


@pytest.mark.parametrize("kwargs, message", [
    ({"n_boot": 10}, "n_boot: expected an integer >= 40"),
    ({"n_boot": 1.5}, "n_boot: expected an integer"),
    ({"level": 95}, "level: expected a confidence level in"),
    ({"seed": -1}, "seed: expected an integer from 0"),
    ({"n_boot": 2**39}, "n_boot: .* replicates of 50 values need about"),
])
def test_corp_reliability_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        corp_reliability(_data(0, m=50), **kwargs)


def _raw(E: list[float], uE: list[float]) -> xr.Dataset:
    """A data set of unchecked values."""
    return xr.Dataset({"E": ("sample", np.array(E)), "uE": ("sample", np.array(uE))})


@pytest.mark.parametrize("function", [score_decomposition, nll_split, corp_reliability])
def test_bad_values(function):
    with pytest.raises(ValueError,
                       match=r"^uE: 1 of 3 values are not finite and positive \(rows 1\)$"):
        function(_raw([0.1, 0.2, 0.3], [1.0, 0.0, 1.0]))
    with pytest.raises(ValueError, match=r"^E: 1 of 3 values are NaN or infinite \(rows 1\)$"):
        function(_raw([0.1, np.inf, 0.3], [1.0, 1.0, 1.0]))
    with pytest.raises(ValueError, match=r"ds: expected an xarray\.Dataset"):
        function([1.0, 2.0])


def test_kernel_checks():
    with pytest.raises(ValueError, match="v: the forecast variances must be finite and positive"):
        K.isotonic_recalibration([1.0, 0.0], [1.0, 1.0])
    with pytest.raises(ValueError, match="y: the squared errors must be finite and non-negative"):
        K.corp_decomposition([1.0, 2.0], [1.0, -1.0])
    with pytest.raises(ValueError, match="v, y: expected two 1-D arrays of one length"):
        K.corp_decomposition([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="scores: unknown score 'mae'"):
        K.corp_decomposition([1.0, 2.0], [1.0, 2.0], ("mae",))


# ------------------------------------------------------------------ the plot


def test_plot_labelled_and_renders(tmp_path):
    ax = corp_reliability_diagram(corp_reliability(_data(0, m=400), n_boot=100))
    assert ax.get_xlabel() == "uE² (forecast variance)"
    assert ax.get_ylabel() == "recalibrated E² (isotonic)"
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    texts = " ".join(t.get_text() for t in ax.texts)
    assert "MCB" in texts and "DSC" in texts and "UNC" in texts and "QLIKE" in texts
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["95% consistency band", "isotonic recalibration", "diagonal"]
    render(ax, tmp_path / "corp.png")


def test_plot_panels_per_model(tmp_path):
    *_, both = _two_models()
    grid = corp_reliability_diagram(corp_reliability(both, n_boot=60))
    assert isinstance(grid, FacetGrid)
    assert grid.axes.size == 2
    render(grid.axes.flat[0], tmp_path / "corp_models.png")


def test_plot_refuses_other_results():
    with pytest.raises(ValueError, match="result: expected the output of"):
        corp_reliability_diagram(score_decomposition(_data(0, m=50)))
