"""Paired comparisons of point-wise scores between models (issue 24: Diebold-Mariano, SIP)."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from scipy import special, stats

import xuqcal
import xuqcal.testing
from xuqcal.analysis.paired_scores import paired_scores, sip_matrix
from xuqcal.core import paired as P
from xuqcal.core.scores import crps_normal


def _models(E_rows, uE_rows, labels=None) -> xr.Dataset:
    E_rows, uE_rows = np.asarray(E_rows, float), np.asarray(uE_rows, float)
    labels = labels or [f"m{k}" for k in range(E_rows.shape[0])]
    return xr.Dataset({"E": (("model", "sample"), E_rows), "uE": (("model", "sample"), uE_rows)},
                      coords={"model": labels, "sample": np.arange(E_rows.shape[1])})


def _calibrated(m: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    uE = rng.uniform(0.5, 2.0, m)
    return uE * rng.standard_normal(m), uE


@pytest.fixture(scope="module")
def three() -> xr.Dataset:
    """Three distinct models on 300 points (one calibrated, one overconfident, one noisy)."""
    E, uE = _calibrated(300, seed=3)
    rng = np.random.default_rng(4)
    return _models([E, E, E + 0.3 * rng.standard_normal(300)],
                   [uE, 0.8 * uE, uE * rng.uniform(0.7, 1.3, 300)], ["a", "b", "c"])


# ------------------------------------------------------------------------------ point scores


def test_point_scores_definitions():
    E = np.array([0.0, 0.5, -3.0, 2.5])
    uE = np.array([1.0, 0.5, 2.0, 1.0])
    np.testing.assert_array_equal(P.point_scores(E, uE, "crps"), crps_normal(E, uE))
    z = E / uE
    np.testing.assert_allclose(P.point_scores(E, uE, "nll"),
                               0.5 * (np.log(2 * np.pi) + np.log(uE**2) + z**2), rtol=1e-14)
    p = 0.9
    half = special.ndtri((1 + p) / 2) * uE
    expected = (2 * half + 2 / (1 - p) * np.maximum(-half - E, 0)
                + 2 / (1 - p) * np.maximum(E - half, 0))
    np.testing.assert_allclose(P.point_scores(E, uE, "interval", p), expected, rtol=1e-14)


# ------------------------------------------------------------------------- identical models


def test_identical_models_differences_zero_dm_nan_sip_zero():
    E, uE = _calibrated(200)
    ds = _models([E, E], [uE, uE])
    result = paired_scores(ds)
    assert (result.score_difference.values == 0).all()
    # documented: every d_i = 0, so DM = 0/0 is NaN and so is its p-value (no evidence)
    assert np.isnan(result.dm_statistic.values).all()
    assert np.isnan(result.dm_p_value.values).all()
    np.testing.assert_array_equal(result.mean_score.sel(model="m0"),
                                  result.mean_score.sel(model="m1"))
    sips = sip_matrix(ds, n_boot=100)
    # ties count for neither model: SIP = 0 both ways, and so is its interval
    assert (sips.sip.values == 0).all()
    assert (sips.sip_low.values == 0).all() and (sips.sip_high.values == 0).all()


# ------------------------------------------------------------------- calibrated vs shrunk uE


def test_calibrated_beats_overconfident_at_5000_points():
    E, uE = _calibrated(5000, seed=1)
    ds = _models([E, E], [uE, 0.8 * uE], ["calibrated", "overconfident"])
    result = paired_scores(ds, ("nll", "crps"))
    for score in ("nll", "crps"):
        mean = result.mean_score.sel(score=score)
        assert float(mean.sel(model="calibrated")) < float(mean.sel(model="overconfident"))
        pair = dict(model="calibrated", other="overconfident", score=score)
        assert float(result.score_difference.sel(pair)) < 0
        assert float(result.dm_statistic.sel(pair)) < 0
        assert float(result.dm_p_value.sel(pair)) < 0.01
        swapped = dict(model="overconfident", other="calibrated", score=score)
        assert float(result.dm_statistic.sel(swapped)) == -float(result.dm_statistic.sel(pair))
    assert int(result.n_samples) == 5000
    assert result.n_dropped.values.tolist() == [0, 0]


# ------------------------------------------------------------------- against direct formulas


def test_dm_and_differences_equal_direct_numpy(three):
    result = paired_scores(three, coverage_level=0.9)
    E, uE = three.E.values, three.uE.values
    for score in ("crps", "nll", "interval"):
        s = P.point_scores(E, uE, score, 0.9)
        for a in range(3):
            np.testing.assert_allclose(float(result.mean_score[a].sel(score=score)),
                                       s[a].mean(), rtol=1e-14)
            for b in range(3):
                cell = result.isel(model=a, other=b).sel(score=score)
                if a == b:
                    assert float(cell.score_difference) == 0
                    assert np.isnan(float(cell.dm_statistic))
                    continue
                d = s[a] - s[b]
                dm = d.mean() / np.sqrt(d.var(ddof=1) / d.size)
                np.testing.assert_allclose(float(cell.score_difference), d.mean(), rtol=1e-12)
                np.testing.assert_allclose(float(cell.dm_statistic), dm, rtol=1e-12)
                np.testing.assert_allclose(float(cell.dm_p_value),
                                           2 * stats.norm.sf(abs(dm)), rtol=1e-12)


def test_sip_equals_direct_count(three):
    for score in ("crps", "nll", "interval"):
        sips = sip_matrix(three, score, n_boot=100)
        s = P.point_scores(three.E.values, three.uE.values, score)
        for a in range(3):
            for b in range(3):
                expected = np.count_nonzero(s[a] < s[b]) / s.shape[1]
                assert float(sips.sip[a, b]) == expected
        assert (sips.sip.values + sips.sip.values.T <= 1).all()
        assert (sips.sip_low.values <= sips.sip.values + 1e-12).all()
        assert (sips.sip.values <= sips.sip_high.values + 1e-12).all()


def test_sip_ties_count_for_neither():
    E = np.array([[1.0, 2.0, 0.5, 0.1], [1.0, 1.0, 0.5, 0.3]])
    uE = np.ones_like(E)
    sips = sip_matrix(_models(E, uE), "nll", n_boot=40)
    assert sips.sip.values.tolist() == [[0.0, 0.25], [0.25, 0.0]]  # two ties of four
    assert "neither" in sips.attrs["tie_rule"]


# ----------------------------------------------------------------------------- reproducible


def test_sip_interval_reproducible_and_same_on_dask(three, monkeypatch):
    first = sip_matrix(three, n_boot=200, seed=7)
    again = sip_matrix(three, n_boot=200, seed=7)
    lazy = sip_matrix(three.chunk({"sample": 64}), n_boot=200, seed=7)
    for name in ("sip", "sip_low", "sip_high"):
        np.testing.assert_array_equal(first[name].values, again[name].values)
        np.testing.assert_array_equal(first[name].values, lazy[name].values)
    other = sip_matrix(three, n_boot=200, seed=8)
    assert not np.array_equal(first.sip_low.values, other.sip_low.values) or \
        not np.array_equal(first.sip_high.values, other.sip_high.values)
    assert first.attrs["seed"] == 7 and first.attrs["n_boot"] == 200
    # the replicates do not depend on how they are blocked (counter-based streams)
    s = P.point_scores(three.E.values, three.uE.values, "crps")
    whole = P.sip_replicates(s, 50, seed=7)
    monkeypatch.setattr(P, "_BLOCK_ELEMENTS", 7 * s.shape[1])
    np.testing.assert_array_equal(whole, P.sip_replicates(s, 50, seed=7))
    np.testing.assert_array_equal(whole[..., :20], P.sip_replicates(s, 20, seed=7))


def test_paired_scores_same_on_dask(three):
    eager = paired_scores(three)
    with xuqcal.testing.count_computes() as counter:
        lazy = paired_scores(three.chunk({"sample": 50, "model": 1}))
        sips = sip_matrix(three.chunk({"sample": 50}), n_boot=200, seed=7)
    assert counter.count == 0  # lazy: nothing read before .compute()
    assert lazy.mean_score.chunks is not None and lazy.n_samples.chunks is not None
    assert sips.sip.chunks is not None
    for name in ("mean_score", "score_difference", "dm_statistic", "dm_p_value",
                 "n_samples", "n_dropped"):
        np.testing.assert_array_equal(eager[name].values, lazy[name].values)


# ------------------------------------------------------------------------------------- pairing


def test_common_pairing_drops_and_reports_absent_points():
    E, uE = _calibrated(120, seed=5)
    sets = {"long": xuqcal.from_arrays(E, uE),
            "short": xuqcal.from_arrays(E[:100] * 1.1, uE[:100]),
            "mid": xuqcal.from_arrays(E[:110], uE[:110] * 0.9)}
    ds = xuqcal.stack_datasets(sets, dim="model")
    result = paired_scores(ds, "crps")
    assert int(result.n_samples) == 100
    assert result.n_dropped.sel(model=["long", "short", "mid"]).values.tolist() == [20, 0, 10]
    assert result.attrs["pairing"] == "common" and result.attrs["n_samples"] == 100
    truncated = paired_scores(ds.isel(sample=slice(0, 100)), "crps")
    np.testing.assert_array_equal(result.score_difference.values,
                                  truncated.score_difference.values)
    sips = sip_matrix(ds, n_boot=40)
    assert int(sips.n_samples) == 100
    np.testing.assert_array_equal(sips.sip.values,
                                  sip_matrix(ds.isel(sample=slice(0, 100)), n_boot=40).sip.values)


# ---------------------------------------------------------------------------------- broadcast


def test_task_dimension_broadcasts(three):
    other = three.assign(E=three.E * 1.2)
    ds = xr.concat([three, other], dim=xr.DataArray(["t1", "t2"], dims="task"))
    result = paired_scores(ds)
    sips = sip_matrix(ds, n_boot=100, seed=3)
    assert result.score_difference.dims == ("task", "model", "other", "score")
    assert sips.sip.dims == ("task", "model", "other")
    assert result.n_samples.dims == ("task",) and result.n_dropped.dims == ("task", "model")
    for task, alone in (("t1", three), ("t2", other)):
        single = paired_scores(alone)
        single_sip = sip_matrix(alone, n_boot=100, seed=3)
        for name in ("mean_score", "score_difference", "dm_statistic", "dm_p_value"):
            np.testing.assert_array_equal(result[name].sel(task=task).values,
                                          single[name].values)
        for name in ("sip", "sip_low", "sip_high"):
            np.testing.assert_array_equal(sips[name].sel(task=task).values,
                                          single_sip[name].values)


def test_attributes():
    E, uE = _calibrated(50)
    result = paired_scores(_models([E, E], [uE, uE * 1.1]))
    for key in ("pairing", "n_samples", "coverage_level", "score_crps", "score_nll",
                "score_interval", "dm_test", "xuqcal_version", "created"):
        assert key in result.attrs
    assert result.other.values.tolist() == result.model.values.tolist()
    sips = sip_matrix(_models([E, E], [uE, uE * 1.1]), "interval", n_boot=40)
    for key in ("pairing", "n_samples", "level", "seed", "n_boot", "score_definition",
                "tie_rule", "coverage_level"):
        assert key in sips.attrs


# ------------------------------------------------------------------------------- bad inputs


@pytest.mark.parametrize(("call", "message"), [
    (lambda ds: paired_scores(ds.isel(model=0)),
     "dim: 'model' is not a dimension of ds (its dimensions: sample)"),
    (lambda ds: paired_scores(ds.isel(model=[0])), "dim: comparing needs at least 2 models, got 1"),
    (lambda ds: paired_scores(ds, ("crps", "x")),
     "scores: unknown score 'x'; choose from crps, nll, interval"),
    (lambda ds: paired_scores(ds, ()), "scores: expected a score name"),
    (lambda ds: paired_scores(ds, pairing="all"), "pairing: expected 'common'"),
    (lambda ds: paired_scores(ds, coverage_level=95), "coverage_level: expected a coverage "
                                                      "level"),
    (lambda ds: paired_scores(ds, dim="sample"), "dim: the compared dimension cannot be"),
    (lambda ds: sip_matrix(ds, "x"), "score: unknown score 'x'; choose from crps, nll, interval"),
    (lambda ds: sip_matrix(ds, n_boot=5), "n_boot: expected an integer >= 40"),
    (lambda ds: sip_matrix(ds, seed=-1), "seed: expected an integer"),
    (lambda ds: sip_matrix(ds, pairing=None), "pairing: expected 'common'"),
    (lambda ds: sip_matrix(ds, E="err"), "E: the dataset has no variable 'err'"),
])
def test_bad_arguments(call, message):
    E, uE = _calibrated(20)
    ds = _models([E, E], [uE, uE])
    with pytest.raises(ValueError, match="^" + message.replace("(", r"\(").replace(")", r"\)")
                       .replace("*", r"\*")) as info:
        call(ds)
    assert "\n" not in str(info.value)


def test_bad_values_and_too_few_common_points():
    E, uE = _calibrated(6)
    E2 = E.copy()
    E2[2] = np.nan
    with pytest.raises(ValueError, match=r"^E: NaN where uE is present at 1 point\(s\) "
                                         r"\(model='m1'; samples 2\)"):
        paired_scores(_models([E, E2], [uE, uE]))
    bad = uE.copy()
    bad[4] = -1.0
    with pytest.raises(ValueError, match=r"^uE: <= 0 at 1 point\(s\) \(model='m0'; samples 4\)"):
        sip_matrix(_models([E, E], [bad, uE]), n_boot=40)
    absent = np.full(6, np.nan)
    absent[:1] = 0.5
    with pytest.raises(ValueError, match=r"^pairing: 'common' leaves 1 point\(s\) present in "
                                         r"every model of 6; a paired comparison needs at least 2"):
        paired_scores(_models([E, absent], [uE, absent]))


def test_dim_defaults_to_model_else_dataset(three):
    """``dim=None`` (the default) is ``model`` if the data have it, else ``dataset``, as
    :func:`xuqcal.compare`."""
    sets = three.rename(model="dataset")
    result = paired_scores(sets, "crps")
    assert result.attrs["dim"] == "dataset"
    xr.testing.assert_identical(result.drop_attrs(), paired_scores(sets, "crps", dim="dataset")
                                .drop_attrs())
    sips = sip_matrix(sets, n_boot=40)
    assert sips.sip.dims == ("dataset", "other")
    both = three.expand_dims(dataset=["d"])  # both dimensions: model first
    assert paired_scores(both, "nll").attrs["dim"] == "model"
    with pytest.raises(ValueError, match=r"^dim: expected a dimension name"):
        paired_scores(three, dim=0)
