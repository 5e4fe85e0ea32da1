"""Fault catalogue, class 7 of issue 11: misleading verdicts.

An ENCE or ZMSE estimate often lies outside its own BCa interval (the bootstrap bias of the
MAD-type statistics, ``docs/design.md``); a ζ built on that interval then divides by a tiny or
wrong-side half-width and explodes. The result must flag such estimates, say when such a ζ
decided a verdict, and a *not usable* verdict must say what the user can do next.

The other classes of the catalogue are in ``test_faults_cli.py`` (command line and files) and
``test_faults_numeric.py`` (arguments and numbers).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import xarray as xr

import xuqcal
from xuqcal.analysis.validation import NOT_USABLE, summary_table, verdict_notes

# A 265-point NIG set (as the real set of the issue) whose ENCE estimate (0.0526) lies above
# its BCa interval [0.0483, 0.0488]: the bootstrap bias (0.070) exceeds the half-width. Random
# streams version 2: the seed 1 of version 1 gave an estimate only 0.07 half-widths above its
# interval (inside it under version 2); seed 85 was chosen among seeds 0-600 for an estimate 13
# half-widths outside its interval on which, with the default generators, every generator's
# Sim2 test still leads to the same decision for ence, zmse and cc
# (test_a_verdict_of_agreeing_generators_says_so). The premise is asserted by
# test_the_flag_is_the_estimate_outside_its_own_interval.
SIZE, SEED = 265, 85
#: How far (in half-widths of its interval) the ENCE estimate of the set lies outside it at
#: least: the premise of the tests below, far from the edge (13.0 under streams version 2).
MIN_OUTSIDE = 5.0
SETTINGS = {"n_boot": 500, "n_mc": 300, "n_bins": 10, "seed": 0}


@pytest.fixture(scope="module")
def small_set():
    return xuqcal.synthetic.nig(SIZE, nu=6, seed=SEED)


def _validate(ds, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", xuqcal.DegenerateIntervalWarning)
        return xuqcal.validate(ds, ["ence", "zmse", "cc", "zms"], **SETTINGS, **kwargs)


@pytest.fixture(scope="module")
def decided_by_sim(small_set):
    """One generator: no sensitivity check, the SimT ζ decides ence, zmse and cc."""
    return _validate(small_set, generators=["t6"])


@pytest.fixture(scope="module")
def default_generators(small_set):
    return _validate(small_set)


@pytest.mark.parametrize("fixture", ["decided_by_sim", "default_generators"])
def test_the_flag_is_the_estimate_outside_its_own_interval(fixture, request):
    v = request.getfixturevalue(fixture)
    estimate, low, high = (v[name].values for name in ("estimate", "ci_low", "ci_high"))
    expected = (estimate < low) | (estimate > high)
    np.testing.assert_array_equal(v.estimate_outside_interval.values, expected)
    # the case this set was chosen for, far outside: a stream change fails here first
    ence = v.sel(statistic="ence")
    half_width = float(ence.ci_high - ence.ci_low) / 2
    assert float(ence.estimate - ence.ci_high) > MIN_OUTSIDE * half_width
    assert v.estimate_outside_interval.sel(statistic="ence")
    assert not v.estimate_outside_interval.sel(statistic="zms")
    assert v.estimate_outside_interval.attrs["long_name"]


def test_a_zeta_on_an_interval_beside_the_estimate_never_decides_silently(decided_by_sim):
    v = decided_by_sim
    ence = v.sel(statistic="ence")
    assert str(ence.verdict_scheme.values) == "SimT"
    # the figures quoted in docs/guide/validation.rst (fixed by the seeds; random streams
    # version 4 values: the t6 reference of version 2 and 3 was 0.149, its zeta -16.8)
    assert round(float(ence.estimate), 4) == 0.0526
    assert [round(float(ence[b]), 4) for b in ("ci_low", "ci_high")] == [0.0483, 0.0488]
    assert round(float(ence.zeta.sel(scheme="SimT")), 1) == -16.7  # the exploding zeta
    assert round(float(ence.reference.sel(scheme="SimT")), 3) == 0.147
    note = str(ence.verdict_note.values)
    assert "outside its own interval" in note
    assert "SimT zeta-score that decided the verdict" in note
    assert "unreliable" in note
    reference = float(ence.reference.sel(scheme="SimT"))
    contains = float(ence.ci_low) <= reference <= float(ence.ci_high)
    assert ("does not contain" in note) == (not contains)
    assert "--known-generator" in note  # the exact test the user can run instead
    # statistics whose estimate is inside its interval carry no note
    for key in v.statistic.values:
        if not v.estimate_outside_interval.sel(statistic=key):
            assert str(v.verdict_note.sel(statistic=key).values) == ""


def test_the_printed_table_marks_the_verdict_and_prints_the_note(decided_by_sim):
    table = summary_table(decided_by_sim)
    rows = {line.split()[0]: line for line in table.splitlines() if line[:1].isalpha()}
    assert rows["ence"].rstrip().endswith("*")
    assert not rows["zms"].rstrip().endswith("*")
    assert "notes (* in the verdict column):" in table
    assert verdict_notes(decided_by_sim)["ence"] in table


#: Calibrated NIG sets (M, seed) on which a statistic's generators' exact tests (Sim2)
#: disagree while their references differ: *not usable* (issue 22's rule decides only when
#: every generator leads to the same decision). Random streams version 2: zmse and cc were
#: chosen among seeds 0-39 (M = 1000) and 0-29 (M = 1500) for the Sim2 zetas farthest from
#: |zeta| = 1 on both sides (zmse: -0.76, -1.39, -0.70; cc: 0.79, 1.19, 0.78; ence: -0.95,
#: -1.54, -0.84); the test asserts this premise before the verdict.
NOT_USABLE_SETS = {"ence": (1500, 1), "zmse": (1500, 2), "cc": (1500, 23)}


@pytest.mark.parametrize("key, binned", [("ence", True), ("zmse", True), ("cc", False)])
def test_a_not_usable_verdict_says_what_to_do_next(key, binned):
    size, seed = NOT_USABLE_SETS[key]
    r = _validate(xuqcal.synthetic.nig(size, nu=6, seed=seed)).sel(statistic=key)
    # the premise, fixed by the seed: the references differ and so do the decisions
    assert bool(r.generator_sensitive)
    sim2 = r.zeta.sel(scheme=["Sim2N", "Sim2T", "Sim2Tfit"]).values
    assert (np.abs(sim2) <= 1).any() and (np.abs(sim2) > 1).any()  # the decisions differ
    assert str(r.verdict.values) == NOT_USABLE
    note = str(r.verdict_note.values)
    assert "differ between generators" in note and "so do the decisions" in note
    for generator in ("normal", "t6", "tfit"):
        assert f"{generator}: " in note
    assert "known_generator=" in note and "--known-generator" in note
    assert "predefined reference" in note
    assert ("zero_bins_extrapolation" in note) == binned


@pytest.mark.parametrize("key", ["ence", "zmse", "cc"])
def test_a_verdict_of_agreeing_generators_says_so(default_generators, key):
    """On the 265-point set the references differ between generators, but every generator's
    exact test (Sim2) leads to the same decision: that decision is the verdict, and the note
    says the references differ and which zeta is nearest to changing it."""
    r = default_generators.sel(statistic=key)
    assert bool(r.generator_sensitive)
    sim2 = r.zeta.sel(scheme=["Sim2N", "Sim2T", "Sim2Tfit"]).values
    outcome = "pass" if (np.abs(sim2) <= 1).all() else "fail"
    assert str(r.verdict.values) == f"{outcome} under every generator (normal, t6, tfit)"
    note = str(r.verdict_note.values)
    assert "differ between generators" in note and "every generator leads to the same" in note
    scheme = str(r.verdict_scheme.values)
    assert f"the {scheme} zeta" in note


def test_the_report_lists_the_notes(small_set, decided_by_sim, tmp_path):
    from xuqcal.report.html import report

    page = report(small_set, tmp_path / "r", n_boot=200, n_mc=50, n_bins=10,
                  validation_result=decided_by_sim)
    text = page.read_text(encoding="utf-8")
    assert "Notes (* in the verdict column)" in text
    assert "outside its own interval" in text


def test_the_flag_survives_netcdf(decided_by_sim, tmp_path):
    path = xuqcal.to_netcdf(decided_by_sim, tmp_path / "v.nc")
    with xr.open_dataset(path) as back:
        back = back.load()
    np.testing.assert_array_equal(back.estimate_outside_interval.values.astype(bool),
                                  decided_by_sim.estimate_outside_interval.values)
    assert back.verdict_note.values.tolist() == decided_by_sim.verdict_note.values.tolist()
