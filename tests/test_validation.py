"""Validation: ζ-scores per scheme (BS, Sim, Sim2) and the recommended workflow."""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest
import xarray as xr

import xuqcal
from xuqcal.analysis.validation import NOT_USABLE, UNDECIDED, agreed_decision, summary_table
from xuqcal.core.intervals import DegenerateIntervalWarning, wilson_interval, zeta

KEYS = ["zms", "rce", "zm", "zv", "nll", "cc", "ence", "zmse"]


@pytest.fixture(scope="module")
def result():
    ds = xuqcal.synthetic.nig(4000, nu=6, seed=12, uE_scale=0.9)
    return ds, xuqcal.validate(ds, KEYS, n_boot=2000, n_mc=2000)


def test_structure(result):
    _, v = result
    assert v.scheme.values.tolist() == ["BS", "SimN", "SimT", "SimTfit", "Sim2N", "Sim2T",
                                        "Sim2Tfit"]
    assert v.scheme_generator.values.tolist() == ["", "normal", "t6", "tfit", "normal", "t6",
                                                  "tfit"]
    for name in ("estimate", "bias", "se", "ci_low", "ci_high", "verdict", "verdict_scheme",
                 "generator_sensitive"):
        assert v[name].dims == ("statistic",)
    for name in ("reference", "u_ref", "zeta", "valid"):
        assert v[name].dims == ("statistic", "scheme")
    for name in ("sim_mean", "sim_se", "sim_q025", "sim_q975"):
        assert v[name].dims == ("statistic", "generator")
    assert v.attrs["n_boot"] == 2000 and v.attrs["n_mc"] == 2000


def test_bs_scheme(result):
    ds, v = result
    bs = v.sel(scheme="BS")
    ref = bs.reference.to_series()
    assert ref[["zms", "rce", "zm", "zv"]].tolist() == [1.0, 0.0, 0.0, 1.0]
    uE = ds.uE.values
    assert ref["nll"] == pytest.approx(0.5 * (1 + np.mean(np.log(uE**2)) + np.log(2 * np.pi)))
    for key in ("cc", "ence", "zmse"):  # BS does not apply: NaN, not valid
        assert np.isnan(bs.reference.sel(statistic=key))
        assert np.isnan(bs.zeta.sel(statistic=key)) and not bs.valid.sel(statistic=key)
    np.testing.assert_allclose(bs.zeta, xuqcal.zeta(v.estimate, bs.reference, v.ci_low,
                                                     v.ci_high))


def test_sim_schemes(result):
    _, v = result
    for gen, suffix in (("normal", "N"), ("t6", "T")):
        sim = v.sel(scheme=f"Sim{suffix}")
        mean, se = v.sim_mean.sel(generator=gen), v.sim_se.sel(generator=gen)
        np.testing.assert_array_equal(sim.reference, mean)
        np.testing.assert_allclose(sim.u_ref, 2 * se)
        np.testing.assert_allclose(sim.zeta, xuqcal.zeta(v.estimate, mean, v.ci_low, v.ci_high,
                                                          2 * se))
        sim2 = v.sel(scheme=f"Sim2{suffix}")
        above = v.estimate > mean
        q = xr.where(above, v.sim_q975.sel(generator=gen), v.sim_q025.sel(generator=gen))
        np.testing.assert_allclose(sim2.zeta, (v.estimate - mean) / abs(mean - q))
        # Sim2 is valid exactly when the estimate lies in the simulated 95 % range
        inside = (v.sim_q025.sel(generator=gen) <= v.estimate) & \
            (v.estimate <= v.sim_q975.sel(generator=gen))
        np.testing.assert_array_equal(sim2.valid, inside)


def test_recommended_workflow(result):
    _, v = result
    verdict = v.verdict.to_series()
    scheme = v.verdict_scheme.to_series()
    # predefined references decide by BS; uncertainties 10 % too small fail ZMS clearly
    assert (scheme[["zms", "rce", "zm", "zv", "nll"]] == "BS").all()
    assert verdict["zms"] == "fail" and verdict["rce"] == "fail"
    # cc, ence and zmse references differ between the generators far beyond their
    # uncertainty, but every generator's exact test (Sim2) leads to the same decision (issue
    # 22): cc passes, ence and zmse fail, decided by the Sim2 zeta nearest to changing it
    every = "under every generator (normal, t6, tfit)"
    # random streams version 2: the cc estimate (0.3069) lies on the normal and tfit references
    # (0.3069, 0.3071; Sim2 zetas -0.001, -0.007) and 0.020 above the t6 one (zeta 0.76), so
    # Sim2T is the pass nearest to changing (Sim2N under version 1)
    assert verdict["cc"] == f"pass {every}" and scheme["cc"] == "Sim2T"
    for key in ("ence", "zmse"):
        assert verdict[key] == f"fail {every}" and scheme[key] == "Sim2T"
    for key in ("cc", "ence", "zmse"):
        assert bool(v.generator_sensitive.sel(statistic=key))
        sim2 = v.zeta.sel(statistic=key, scheme=["Sim2N", "Sim2T", "Sim2Tfit"]).values
        decided, nearest = agreed_decision(sim2, ["normal", "t6", "tfit"])
        assert verdict[key] == decided and scheme[key] == ["Sim2N", "Sim2T", "Sim2Tfit"][nearest]
    assert NOT_USABLE not in verdict.values
    # ζ values are still reported for every scheme
    assert np.isfinite(v.zeta.sel(statistic="cc", scheme=["SimN", "SimT"])).all()


def test_generator_sensitivity_rule(result):
    _, v = result
    diff = abs(v.sim_mean.sel(generator="normal") - v.sim_mean.sel(generator="t6"))
    combined = np.hypot(2 * v.sim_se.sel(generator="normal"), 2 * v.sim_se.sel(generator="t6"))
    np.testing.assert_array_equal(v.generator_sensitive, diff > combined)


def test_known_generator_is_respected():
    ds = xuqcal.synthetic.nig(2000, nu=6, seed=2)
    v = xuqcal.validate(ds, ["zms", "ence"], n_boot=500, n_mc=500, generators=["t6"],
                        known_generator="normal")
    assert v.scheme.values.tolist() == ["BS", "SimT", "SimN", "Sim2T", "Sim2N"]
    assert v.verdict_scheme.sel(statistic="ence") == "Sim2N"  # the exact test under known D
    assert v.verdict_scheme.sel(statistic="zms") == "BS"
    assert v.attrs["known_generator"] == "normal"
    assert v.attrs["simulated_scheme"] == "Sim2"
    other = xuqcal.validate(ds, ["ence"], n_boot=500, n_mc=500, generators=["uniform"])
    assert other.scheme.values.tolist() == ["BS", "Sim[uniform]", "Sim2[uniform]"]
    assert other.verdict_scheme.item() == "Sim[uniform]"  # one generator: no sensitivity check
    with pytest.raises(ValueError, match="unknown generator"):
        xuqcal.validate(ds, ["ence"], generators=["student"])


def test_summary_table(result):
    _, v = result
    table, _, rest = summary_table(v).partition("\n\n")
    # below the table: the heavy-tail screen (issue 15), then the notes
    screen, _, notes = rest.partition("\n\n")
    assert screen == (f"β_GM(Z²) = {float(v.beta_gm_z2):.3f} (heavy-tail screening of zms "
                      "above 0.85)")
    lines = table.splitlines()
    assert len(lines) == 1 + v.sizes["statistic"]
    # the notes below the table: one line per statistic with a verdict note (issue 11)
    expected = xuqcal.analysis.validation.verdict_notes(v)
    assert notes.splitlines()[1:] == [f"  {k}: {n}" for k, n in expected.items()]
    assert ([line.split()[0] for line in lines[1:] if line.endswith("*")]
            == list(expected))
    assert lines[0].split()[4:11] == ["ζ_BS", "ζ_SimN", "ζ_SimT", "ζ_SimTfit", "ζ_Sim2N",
                                      "ζ_Sim2T", "ζ_Sim2Tfit"]
    assert lines[1].split()[0] == "zms" and lines[1].endswith("fail (BS)")


def test_result_round_trips_through_netcdf(result, tmp_path):
    _, v = result
    path = xuqcal.to_netcdf(v, tmp_path / "v.nc")
    with xr.open_dataset(path) as back:
        back = back.load()
    np.testing.assert_array_equal(back.zeta, v.zeta)
    assert back.verdict.values.tolist() == v.verdict.values.tolist()
    assert back.valid.dtype == bool and back.generator_sensitive.dtype == bool
    assert back.attrs["seed"] == 0
    with pytest.raises(FileExistsError, match="overwrite"):
        xuqcal.to_netcdf(v, path)


@functools.cache
def _pass_counts(n_sets: int) -> dict[tuple[str, str], float]:
    """Over ``n_sets`` calibrated NIG sets (M = 1000, D = normal, validated with D = normal),
    per (statistic, how), how many pass: ``"SimN"`` is the ζ of that scheme, ``"verdict"`` the
    verdict with the default deciding scheme (Sim2 under a known D), ``"unadjusted"`` the SimN
    ζ with the interval
    estimate ± z·se instead of BCa; ``"undefined"`` counts undefined BCa intervals;
    ``"bias/se"`` is the mean ratio of bootstrap bias to bootstrap se, and ``"se/sd"`` that of
    the bootstrap se to the sampling sd of the simulated calibrated sets."""
    z = 1.959963984540054
    counts: dict[tuple[str, str], float] = {
        (k, how): 0 for k in ("ence", "zmse")
        for how in ("SimN", "verdict", "unadjusted", "undefined", "bias/se", "se/sd")}
    for r in range(n_sets):
        ds = xuqcal.synthetic.nig(1000, nu=6, seed=77, replicate=r)
        with warnings.catch_warnings():
            # a few sets have every replicate above the estimate (undefined BCa interval, SimN
            # not valid); that is part of what the SimN count measures
            warnings.simplefilter("ignore", DegenerateIntervalWarning)
            v = xuqcal.validate(ds, ["ence", "zmse"], n_boot=1000, n_mc=1000, seed=r,
                                generators=["normal"], known_generator="normal")
        for key in ("ence", "zmse"):
            one = v.sel(statistic=key)
            assert str(one.verdict_scheme.values) == "Sim2N"
            counts[key, "verdict"] += str(one.verdict.values) == "pass"
            counts[key, "SimN"] += bool(one.valid.sel(scheme="SimN"))
            counts[key, "undefined"] += bool(np.isnan(one.ci_low))
            estimate, se = float(one.estimate), float(one.se)
            unadjusted = zeta(estimate, float(one.reference.sel(scheme="SimN")),
                              estimate - z * se, estimate + z * se,
                              float(one.u_ref.sel(scheme="SimN")))
            counts[key, "unadjusted"] += abs(float(unadjusted)) <= 1.0
            counts[key, "bias/se"] += float(one.bias) / se / n_sets
            sampling_sd = float(one.sim_se.sel(generator="normal")) * np.sqrt(1000)
            counts[key, "se/sd"] += se / sampling_sd / n_sets
    return counts


def _pass_fractions(n_sets: int, how: str) -> dict[str, tuple[int, float, float]]:
    counts = _pass_counts(n_sets)
    return {k: (int(n), *wilson_interval(int(n), n_sets))
            for (k, h), n in counts.items() if h == how}


@pytest.mark.slow  # a study of hundreds of data sets (pytest -m slow)
def test_the_sim_scheme_failure_is_the_bootstrap_bias():
    """What docs/design.md says of the SimN scheme on calibrated data (ENCE, ZMSE, 20 bins):
    it passes far fewer than 95 % of the sets, because the bootstrap bias is about 2 se; an
    unadjusted interval (estimate ± z·se) errs the other way: it passes more than 95 % of the
    sets (the bootstrap se overstates the spread)."""
    counts = _pass_counts(150)
    for key in ("ence", "zmse"):
        assert _pass_fractions(150, "SimN")[key][2] < 0.95, counts  # Wilson upper bound
        assert 1.5 < counts[key, "bias/se"] < 2.5, counts
        assert counts[key, "unadjusted"] / 150 > 0.95, counts
        assert counts[key, "se/sd"] > 1.05, counts
        assert counts[key, "undefined"] >= 1, counts  # every replicate above: no BCa interval
    assert wilson_interval(int(counts["ence", "unadjusted"]), 150)[0] > 0.95, counts


@pytest.mark.slow  # 150 validations (pytest -m slow)
def test_known_generator_verdicts_pass_calibrated_data_at_the_nominal_rate():
    """The acceptance criterion of the simulated-reference issue: calibrated NIG data
    (D = normal), validated with D = normal, pass ENCE and ZMSE in a fraction of data sets
    compatible with 0.95 (Wilson-cc interval), with the default deciding scheme (Sim2 under a
    known D, as every verdict of _pass_counts checks)."""
    for key, (n, lo, hi) in _pass_fractions(150, "verdict").items():
        assert lo <= 0.95 <= hi, (key, n, lo, hi)


def test_simulated_scheme_option():
    ds = xuqcal.synthetic.nig(1000, nu=6, seed=4)
    v = xuqcal.validate(ds, ["zms", "ence"], n_boot=300, n_mc=300, generators=["normal"],
                        simulated_scheme="Sim2")
    assert v.verdict_scheme.values.tolist() == ["BS", "Sim2N"]
    assert v.attrs["simulated_scheme"] == "Sim2"
    zeta = float(v.zeta.sel(statistic="ence", scheme="Sim2N"))
    assert str(v.verdict.sel(statistic="ence").values) == ("pass" if abs(zeta) <= 1 else "fail")
    default = xuqcal.validate(ds, ["zms", "ence"], n_boot=300, n_mc=300, generators=["normal"])
    assert default.verdict_scheme.values.tolist() == ["BS", "SimN"]  # D unknown: Sim
    assert default.attrs["simulated_scheme"] == "Sim"
    known = xuqcal.validate(ds, ["zms", "ence"], n_boot=300, n_mc=300, generators=["normal"],
                            known_generator="normal", simulated_scheme="Sim")
    assert known.verdict_scheme.values.tolist() == ["BS", "SimN"]  # the override wins
    zeta = float(known.zeta.sel(statistic="ence", scheme="SimN"))
    assert str(known.verdict.sel(statistic="ence").values) == ("pass" if abs(zeta) <= 1
                                                                else "fail")
    with pytest.raises(ValueError, match="simulated_scheme: 'Sim3' is not one of Sim, Sim2"):
        xuqcal.validate(ds, ["ence"], n_boot=100, n_mc=100, simulated_scheme="Sim3")


def test_undefined_bca_interval_gives_an_undecided_verdict():
    """A calibrated set (M = 4800) where every one of 2000 bootstrap replicates of ENCE and ZMSE
    lies above the estimate: the BCa interval is undefined, said by a warning, and the Sim
    verdict is "undecided", not "fail"; Sim2 (the default under a known D) still decides.

    The set is built, not drawn (a NIG set with that property depended on its seed and lost it
    with random streams version 2): uE takes each value twice, and the z-scores cycle through
    sqrt(1/2), -sqrt(3/2), -sqrt(1/2), sqrt(3/2), so that every group of 4 consecutive points
    in uE order has <Z²> = 1 and mean squared error equal to its mean variance. The 20 default
    bins hold 240 points (60 groups) each: ENCE and ZMSE are 0 up to rounding, and a resample
    unbalances the bins, so every replicate lies above the estimate."""
    m = 4800
    uE = np.repeat(np.linspace(0.5, 2.0, m // 2), 2)
    z = np.tile([np.sqrt(0.5), -np.sqrt(1.5), -np.sqrt(0.5), np.sqrt(1.5)], m // 4)
    ds = xuqcal.from_arrays(E=uE * z, uE=uE)
    # the premise: ZMS exactly 1, ENCE and ZMSE 0 up to rounding (replicates are > 1e-3)
    estimate = xuqcal.stats(ds, ["zms", "ence", "zmse"]).compute()
    assert estimate.attrs["n_bins"] == 20 and m % (4 * 20) == 0
    assert estimate.sel(statistic="zms").item() == pytest.approx(1.0, abs=1e-12)
    assert (estimate.sel(statistic=["ence", "zmse"]).values < 1e-12).all()
    kwargs = {"n_boot": 2000, "n_mc": 500, "seed": 5, "known_generator": "normal"}
    with pytest.warns(DegenerateIntervalWarning, match=r"undefined for ence \(all above\), zmse"):
        v = xuqcal.validate(ds, ["zms", "ence", "zmse"], simulated_scheme="Sim", **kwargs)
    assert np.isnan(v.ci_low.sel(statistic=["ence", "zmse"])).all()
    assert np.isfinite(v.ci_low.sel(statistic="zms"))
    assert v.verdict.values.tolist()[1:] == [UNDECIDED, UNDECIDED]
    assert "undecided" in summary_table(v)
    with pytest.warns(DegenerateIntervalWarning):
        v2 = xuqcal.validate(ds, ["ence", "zmse"], **kwargs)
    assert set(v2.verdict.values.tolist()) <= {"pass", "fail"}


# ------------------------------------------------------------------ heavy-tail screening (issue 15)


def _student_errors(nu: float, m: int = 4000, seed: int = 0) -> xr.Dataset:
    """Calibrated data whose z-scores are Student-t(ν) scaled to unit variance (ν > 2)."""
    rng = np.random.default_rng(seed)
    u = rng.uniform(0.5, 2.0, m)
    return xuqcal.from_arrays(E=u * rng.standard_t(nu, m) / np.sqrt(nu / (nu - 2.0)), uE=u)


def test_beta_gm_of_normal_z2_is_that_of_chi2_1():
    # β_GM of χ²(1): (1 - median) / E|X - median| = 0.6358 (numerical integration)
    from scipy import integrate, stats

    median = stats.chi2(1).median()
    mad = sum(integrate.quad(lambda x: abs(x - median) * stats.chi2(1).pdf(x), a, b)[0]
              for a, b in ((0.0, median), (median, 200.0)))
    exact = (1.0 - median) / mad
    z = np.random.default_rng(1).standard_normal(200_000)
    beta = xuqcal.analysis.validation.robust_skewness_z2(z, np.ones_like(z))
    assert abs(beta - exact) < 0.01 and abs(exact - 0.6358) < 1e-4


def test_heavy_tails_make_zms_not_testable():
    heavy = _student_errors(2.2)
    v = xuqcal.validate(heavy, ["zms", "rce"], n_boot=400, n_mc=100, seed=1)
    beta = float(v.beta_gm_z2)
    assert beta > 0.85
    verdict = str(v.verdict.sel(statistic="zms").values)
    assert verdict == f"not testable: heavy tails (β_GM(Z²) = {beta:.3f} > 0.85)"
    assert "heavy-tailed" in str(v.verdict_note.sel(statistic="zms").values)
    # only the tail-sensitive statistic is screened; its zeta is still there
    assert str(v.verdict.sel(statistic="rce").values) in ("pass", "fail")
    assert np.isfinite(v.zeta.sel(statistic="zms", scheme="BS"))
    assert v.attrs["heavy_tail_threshold"] == 0.85
    assert v.attrs["heavy_tail_screening"] == "zms"
    # no screening: the ordinary verdict, the same numbers
    off = xuqcal.validate(heavy, ["zms", "rce"], n_boot=400, n_mc=100, seed=1,
                          heavy_tail_threshold=None)
    assert str(off.verdict.sel(statistic="zms").values) in ("pass", "fail")
    assert off.attrs["heavy_tail_threshold"] == "none"
    xr.testing.assert_identical(off.zeta, v.zeta)
    assert float(off.beta_gm_z2) == beta
    # a threshold above the data's value does not screen either
    high = xuqcal.validate(heavy, ["zms"], n_boot=400, n_mc=100, seed=1, heavy_tail_threshold=0.99)
    assert str(high.verdict.values[0]) in ("pass", "fail")


@pytest.mark.parametrize("nu", [4.0, 20.0])
def test_moderate_tails_are_not_screened(nu):
    v = xuqcal.validate(_student_errors(nu), ["zms"], n_boot=400, n_mc=100, seed=1)
    assert float(v.beta_gm_z2) < 0.85
    assert str(v.verdict.values[0]) in ("pass", "fail")


def test_heavy_tail_screening_lazy_auto_and_many_sets_agree():
    heavy = _student_errors(2.2, m=2000)
    eager = xuqcal.validate(heavy, ["zms"], n_boot=400, n_mc=100, seed=2)
    lazy = xuqcal.validate(heavy.chunk(), ["zms"], n_boot=400, n_mc=100, seed=2)
    assert lazy.verdict.chunks is not None  # explicit counts: lazy
    lazy = lazy.compute()
    assert float(lazy.beta_gm_z2) == float(eager.beta_gm_z2)
    assert lazy.verdict.values.tolist() == eager.verdict.values.tolist()
    auto = xuqcal.validate(heavy, ["zms"], n_boot="auto", seed=2)
    assert float(auto.beta_gm_z2) == float(eager.beta_gm_z2)
    assert str(auto.verdict.values[0]).startswith("not testable")
    both = xr.concat([heavy, _student_errors(20.0, m=2000)], dim="model")
    many = xuqcal.validate(both, ["zms"], n_boot=400, n_mc=100, seed=2)
    assert many.beta_gm_z2.dims == ("model",)
    assert float(many.beta_gm_z2[0]) == float(eager.beta_gm_z2)
    assert str(many.verdict.isel(model=0).values[0]).startswith("not testable")
    assert str(many.verdict.isel(model=1).values[0]) in ("pass", "fail")


@pytest.mark.parametrize("bad", [0.0, 1.0, 1.5, -0.2, "0.8", True])
def test_heavy_tail_threshold_errors(bad):
    ds = _student_errors(6.0, m=100)
    with pytest.raises(ValueError, match=r"^heavy_tail_threshold: expected None or a robust"):
        xuqcal.validate(ds, ["zms"], n_boot=100, heavy_tail_threshold=bad)


def test_auto_validate_fits_tfit_beside_its_first_rounds(monkeypatch):
    """With ``n_mc="auto"``, tfit's ν (a serial scipy fit) is fitted in a thread while the
    data are prepared and the first bootstrap round runs; the simulations use that ν, the one
    of :func:`xuqcal.core.generators.fitted_nu`."""
    import threading

    import xuqcal.analysis.validation as validation
    from xuqcal.core.generators import fitted_nu

    threads = []

    def recording(E, uE):
        threads.append(threading.current_thread() is threading.main_thread())
        return fitted_nu(E, uE)

    monkeypatch.setattr(validation, "fitted_nu", recording)
    ds = xuqcal.synthetic.nig(800, nu=5, seed=3)
    v = xuqcal.validate(ds, ["zms", "ence"], generators=["normal", "tfit"], n_boot="auto",
                        n_mc="auto", seed=2)
    assert threads == [False]  # once, not on the main thread
    assert float(v.nu_tfit) == fitted_nu(ds.E.values, ds.uE.values)


def test_a_failure_of_the_thread_is_raised_by_its_result():
    from xuqcal.analysis.validation import _in_thread

    with pytest.raises(ZeroDivisionError):
        _in_thread(lambda: 1 / 0).result()
