"""Published numbers of TARGETS.md reproduced on ../shared/data (average calibration).

Tolerances follow from the noise: the estimates are deterministic (rounding of the published
value only); a BCa bound from 10 000 replicates has a Monte Carlo sd of ~0.7 % of the interval
width, so a bound must agree within 0.01 (as TARGETS.md says) plus the published rounding; ζ
inherits the bound's noise through its denominator.
"""

from __future__ import annotations

import numpy as np
import pytest

import xuqcal

# set: (ZMS, ZMS lo, ZMS hi, ζ_ZMS, RCE, RCE lo, RCE hi, ζ_RCE), as published
AVERAGE_CALIBRATION = {
    1: (0.960, 0.867, 1.10, -0.28, 0.0186, -0.0209, 0.0542, 0.47),
    2: (0.885, 0.803, 0.995, -1.05, -0.0387, -0.107, 0.0193, -0.67),
    3: (1.120, 1.05, 1.20, 1.67, -0.00748, -0.0524, 0.0400, -0.16),
    7: (0.972, 0.936, 1.01, -0.71, -0.264, -0.685, -0.0028, -1.01),
}
BOUND_TOLERANCE = 0.01


def _half_unit(published: float) -> float:
    """Half a unit in the last published digit (3 significant digits in TARGETS.md)."""
    text = f"{published:.3g}"
    decimals = len(text.split(".")[1]) if "." in text else 0
    return 0.5 * 10.0**-decimals


@pytest.fixture(scope="module")
def validated(load_set):
    # the BS scheme decides for zms and rce; the simulated references only need to exist
    return {k: xuqcal.validate(load_set(k), ["zms", "rce"], n_boot=10_000, n_mc=200, seed=0)
            for k in AVERAGE_CALIBRATION}


@pytest.mark.parametrize("k", sorted(AVERAGE_CALIBRATION))
@pytest.mark.parametrize("key", ["zms", "rce"])
def test_average_calibration_table(validated, k, key):
    published = AVERAGE_CALIBRATION[k]
    estimate, lo, hi, z = published[:4] if key == "zms" else published[4:]
    r = validated[k].sel(statistic=key, scheme="BS")
    assert r.estimate.item() == pytest.approx(estimate, abs=_half_unit(estimate) + 1e-12)
    assert r.ci_low.item() == pytest.approx(lo, abs=BOUND_TOLERANCE + _half_unit(lo))
    assert r.ci_high.item() == pytest.approx(hi, abs=BOUND_TOLERANCE + _half_unit(hi))
    # ζ = Δ / width with width the distance to the bound on the reference's side: a shift δ of
    # that bound changes ζ by |ζ| δ / width
    width = abs(r.estimate.item() - (hi if r.estimate.item() <= r.reference.item() else lo))
    tolerance = abs(z) * (BOUND_TOLERANCE + _half_unit(hi)) / width + 0.005
    assert r.zeta.item() == pytest.approx(z, abs=tolerance)
    if abs(abs(z) - 1) > tolerance:  # the verdict is decided beyond the noise
        assert str(r.verdict.values) == ("pass" if abs(z) <= 1 else "fail")


def test_zms_of_every_shared_set_is_finite(load_set):
    for k in range(1, 10):
        value = xuqcal.stats(load_set(k), ["zms", "rce", "cc", "ence", "zmse"])
        assert np.isfinite(value.values).all(), k


# Bootstrap of the binned statistics, as published with the simulated-reference study
# (P. Pernot 2024, "Validation of ML-UQ calibration statistics using simulated reference
# values: a sensitivity analysis"; tables of ENCE and ZMSE, B = 5000, 20 bins, R's
# nptest::np.boot): set: (bias, upper BCa bound) of ENCE, then of ZMSE. Set 6 is left out:
# its published estimate (ENCE 0.244) is not that of the data as ../shared/data prepares them
# (0.248). The lower BCa bounds are left out too: z0 ~ -1.7 puts their level near 1e-8, below
# 1 / B, so they are the smallest replicate, an extreme value that depends on B.
BINNED_BOOTSTRAP = {
    1: ((0.0160, 0.153), (0.034, 0.299)),
    2: ((0.0330, 0.13), (0.072, 0.283)),
    3: ((0.0240, 0.101), (0.048, 0.18)),
    4: ((0.0072, 0.157), (0.011, 0.287)),
    5: ((0.0230, 0.139), (0.052, 0.304)),
    7: ((0.0055, 0.085), (0.018, 0.131)),
    8: ((0.0150, 0.118), (0.033, 0.246)),
    9: ((0.0130, 0.14), (0.025, 0.287)),
}


def _half_unit_2(published: float) -> float:
    """Half a unit in the last of 2 significant digits (the published biases)."""
    return 0.5 * 10.0 ** (np.floor(np.log10(abs(published))) - 1)


@pytest.mark.parametrize("k", sorted(BINNED_BOOTSTRAP))
def test_binned_bootstrap_bias_and_interval(load_set, k):
    """The bias of the replicates is precise (Monte Carlo sd se / sqrt(B) per run), so it
    checks how a resample is re-sorted: with tied uE (set 7, 135 distinct values) the tied
    points must keep their draw order, as in R; ordering them by data row instead moves the
    biases of set 7 far outside the tolerance (this test fails on that implementation)."""
    n = 5000
    r = load_set(k).uqcal.bootstrap(["ence", "zmse"], n_boot=n, seed=0, n_bins=20).compute()
    for i, (bias, high) in enumerate(BINNED_BOOTSTRAP[k]):
        # two independent Monte Carlo runs (the study's and this one): 4 sd of their difference
        noise = 4 * r.se.values[i] * np.sqrt(2 / n)
        assert r.bias.values[i] == pytest.approx(bias, abs=_half_unit_2(bias) + noise), i
        assert r.ci_high.values[i] == pytest.approx(high, abs=BOUND_TOLERANCE + _half_unit(high))
