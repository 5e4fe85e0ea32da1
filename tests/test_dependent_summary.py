"""The resample of :func:`xuqcal.summary`, of :func:`xuqcal.local_coverage` and of the
report's per-bin analyses (issue 25): a summary with ``resample=`` reads the analyses computed
with that resample, the local coverage's per-bin intervals become the dependent bootstrap of
the coverage indicator, ``xuqcal validate --groups`` no longer warns about its own analyses,
and the iid defaults are unchanged."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import xuqcal
from xuqcal.analysis.binning import equal_count_bounds, equal_count_order
from xuqcal.analysis.curves import coverage_replicates, local_coverage
from xuqcal.analysis.dependent import Dependence, row_layout
from xuqcal.analysis.summary import SUMMARY_STATISTICS, local_replicates, summary
from xuqcal.core.intervals import acceleration, bca_interval, coverage_validity
from xuqcal.core.random import stream_key

ROOT = Path(__file__).resolve().parents[1]
CLUSTER = {"resample": "cluster", "groups": "g"}
COUNTS = {"n_boot": 300, "n_mc": 60}


def _grouped(n_groups: int = 40, size: int = 25, seed: int = 0,
             per_group_uE: bool = False) -> xr.Dataset:
    """Groups whose z-scores share a group effect (z = sqrt(0.4) a_g + sqrt(0.6) eps),
    lognormal uE (per point, or one per group), a time order and a feature."""
    rng = np.random.default_rng(seed)
    g = np.repeat(np.arange(n_groups), size)
    z = np.sqrt(0.4) * rng.normal(size=n_groups)[g] + np.sqrt(0.6) * rng.normal(size=g.size)
    uE = rng.lognormal(size=n_groups)[g] if per_group_uE else rng.lognormal(size=g.size)
    ds = xuqcal.from_arrays(z * uE, uE)
    return ds.assign(g=("sample", g), time=("sample", np.arange(g.size)),
                     x=("sample", rng.normal(size=g.size)))


@pytest.fixture(scope="module")
def grouped() -> xr.Dataset:
    return _grouped()


def _without_time(result: xr.Dataset) -> xr.Dataset:
    return result.drop_attrs(deep=False).assign_attrs(
        {k: v for k, v in result.attrs.items() if k != "created"})


def _same(a, b) -> bool:
    return np.array_equal(np.asarray(a, dtype=float), np.asarray(b, dtype=float),
                          equal_nan=True)


# --------------------------------------------------------------------------------------------
# summary
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("resampling", [CLUSTER, {"resample": "circular", "block": "time",
                                                  "block_length": 25}],
                         ids=["cluster", "circular"])
def test_summary_reads_the_analyses_of_its_resample(grouped, resampling):
    s = summary(grouped, features=["x"], **COUNTS, **resampling)
    # the validation of the statistics
    valid = xuqcal.validate(grouped, list(SUMMARY_STATISTICS), **COUNTS, **resampling)
    for key in ("zms", "zm", "picp95"):
        one = valid.sel(statistic=key)
        assert _same([s[key], s[f"{key}_low"], s[f"{key}_high"]],
                     [one.estimate, one.ci_low, one.ci_high])
    # LZMS by uE and by the feature, and the local coverage, with the same resample
    boot = local_replicates(COUNTS["n_boot"])
    fv = ["fraction_valid", "fraction_valid_low", "fraction_valid_high"]
    lzms = xuqcal.local(grouped, "zms", by="uE", n_boot=boot, **resampling)
    assert _same([s.fv_lzms_uE, s.fv_lzms_uE_low, s.fv_lzms_uE_high], [lzms[v] for v in fv])
    by_x = xuqcal.local(grouped, "zms", by="x", n_boot=boot, **resampling)
    assert _same([s.fv_feature.item(), s.fv_feature_low.item(), s.fv_feature_high.item()],
                 [by_x[v] for v in fv])
    lcp = local_coverage(grouped, by="uE", n_boot=boot, seed=0, **resampling)
    assert _same([s.fv_lcp_uE, s.fv_lcp_uE_low, s.fv_lcp_uE_high], [lcp[v] for v in fv])
    iid = xuqcal.local(grouped, "zms", by="uE", n_boot=boot)
    assert not _same(lzms.ci_low, iid.ci_low)  # the resample changed the per-bin intervals
    # the summary says how the points were resampled
    assert s.attrs["resample"] == resampling["resample"]
    if "groups" in resampling:
        assert s.attrs["groups"] == "g"
    else:
        assert (s.attrs["block"], s.attrs["block_length"]) == ("time", 25)


def test_summary_with_a_validation_result_validates_the_rest_with_its_resample(grouped):
    given = xuqcal.validate(grouped, ["zms", "zm"], **COUNTS, **CLUSTER)
    s = summary(grouped, validation_result=given, **COUNTS, **CLUSTER)
    rest = xuqcal.validate(grouped, ["picp95", "cc", "ence", "zmse"], **COUNTS, **CLUSTER)
    one = rest.sel(statistic="picp95")
    assert _same([s.picp95_low, s.picp95_high], [one.ci_low, one.ci_high])


@pytest.mark.filterwarnings("ignore::xuqcal.DependenceWarning")
def test_summary_iid_is_unchanged(grouped):
    s = summary(grouped, **COUNTS)
    assert "resample" not in s.attrs
    assert _without_time(s).identical(_without_time(summary(grouped, resample="iid",
                                                            **COUNTS)))
    lzms = xuqcal.local(grouped, "zms", by="uE", n_boot=local_replicates(COUNTS["n_boot"]))
    assert _same([s.fv_lzms_uE_low, s.fv_lzms_uE_high],
                 [lzms.fraction_valid_low, lzms.fraction_valid_high])
    lcp = local_coverage(grouped, by="uE")
    assert _same(s.fv_lcp_uE, lcp.fraction_valid)


@pytest.mark.filterwarnings("ignore::xuqcal.DependenceWarning")
def test_summary_refuses_analyses_of_another_resample(grouped):
    boot = local_replicates(COUNTS["n_boot"])
    iid = xuqcal.local(grouped, "zms", by="uE", n_boot=boot)
    with pytest.raises(ValueError, match=r"analyses\['local_zms_uE'\]: computed with "
                                         r"resample = 'iid', the summary uses 'cluster'"):
        summary(grouped, analyses={"local_zms_uE": iid}, **COUNTS, **CLUSTER)
    clustered = xuqcal.local(grouped, "zms", by="uE", n_boot=boot, **CLUSTER)
    with pytest.raises(ValueError, match="computed with resample = 'cluster', the summary "
                                         "uses 'iid'"):
        summary(grouped, analyses={"local_zms_uE": clustered}, **COUNTS)
    other = grouped.assign(h=grouped.g // 2)
    by_h = local_coverage(other, by="uE", n_boot=boot, resample="cluster", groups="h")
    with pytest.raises(ValueError, match=r"analyses\['local_coverage'\]: computed with "
                                         r"groups = 'h', the summary uses 'g'"):
        summary(other, analyses={"local_coverage": by_h}, **COUNTS, **CLUSTER)
    fewer = local_coverage(grouped, by="uE", n_boot=200, **CLUSTER)
    with pytest.raises(ValueError, match="computed with n_boot = 200"):
        summary(grouped, analyses={"local_coverage": fewer}, **COUNTS, **CLUSTER)
    # the same settings are read, not computed again
    same = local_coverage(grouped, by="uE", n_boot=boot, **CLUSTER)
    s = summary(grouped, analyses={"local_coverage": same, "local_zms_uE": clustered},
                **COUNTS, **CLUSTER)
    assert _same(s.fv_lcp_uE, same.fraction_valid)


def test_summary_refuses_a_bad_resample(grouped):
    with pytest.raises(ValueError, match="groups: resample='cluster' resamples whole groups"):
        summary(grouped, resample="cluster", **COUNTS)
    with pytest.raises(ValueError, match="resample"):
        summary(grouped, resample="jackknife", **COUNTS)
    with pytest.raises(ValueError, match="groups: only used with a dependent resample"):
        summary(grouped, groups="g", **COUNTS)


# --------------------------------------------------------------------------------------------
# local_coverage
# --------------------------------------------------------------------------------------------


def test_local_coverage_replicates_are_the_fractions_of_the_drawn_counts(grouped):
    """A replicate's per-bin fraction: Σ n_p 1{inside} / Σ n_p over the bin, n_p the row
    counts of RowLayout.fill from the stream (seed, "local_coverage-cluster", r)."""
    m, n_bins, seed = grouped.sizes["sample"], 10, 3
    E, uE = grouped.E.values, grouped.uE.values
    lc = local_coverage(grouped, n_bins=n_bins, n_boot=400, seed=seed, **CLUSTER)
    inside = np.abs(E) <= uE * lc.attrs["quantile"]
    order, offsets = equal_count_order(uE), equal_count_bounds(m, n_bins)
    layout = row_layout(grouped.g.values, Dependence("cluster", "g"))
    key = stream_key(seed, "local_coverage-cluster")
    rows = np.empty((400, m), dtype=np.int32)
    layout.fill(key, 0, 400, rows)
    counts = rows[:, layout.row_of_point]  # (replicate, point) in the data order
    direct = np.full((400, n_bins), np.nan)
    for b in range(n_bins):
        points = order[offsets[b]:offsets[b + 1]]
        total = counts[:, points].sum(axis=1)
        inner = (counts[:, points] * inside[points]).sum(axis=1)
        direct[total > 0, b] = inner[total > 0] / total[total > 0]
    reps = coverage_replicates(inside, order, offsets, layout, key, 0, 400)
    assert np.array_equal(reps, direct, equal_nan=True)
    # the interval of each bin: BCa of those replicates, its acceleration from the
    # delete-one-group jackknife over the groups present in the bin
    units = layout.unit_of_row[layout.row_of_point]
    for b in range(n_bins):
        points = order[offsets[b]:offsets[b + 1]]
        jack = [inside[points][units[points] != u].mean() for u in np.unique(units[points])]
        kept = direct[np.isfinite(direct[:, b]), b]
        low, high = bca_interval(kept[None, :], np.array([inside[points].mean()]),
                                 acceleration_value=acceleration(np.array(jack))[None])
        assert (lc.ci_low[b].item(), lc.ci_high[b].item()) == (low[0], high[0])
    assert lc.n_units.values.tolist() == [len(np.unique(units[order[offsets[b]:offsets[b + 1]]]))
                                          for b in range(n_bins)]
    assert (lc.n_boot_excluded == np.sum(~np.isfinite(direct), axis=0)).all()
    valid = (lc.ci_low <= 0.955) & (0.945 <= lc.ci_high)
    assert lc.valid.values.tolist() == valid.values.tolist()
    assert lc.attrs["resample"] == "cluster" and lc.attrs["n_boot"] == 400
    assert "local_coverage-cluster" in lc.attrs["random_streams"]


@pytest.mark.filterwarnings("ignore::xuqcal.DependenceWarning")
def test_local_coverage_intervals_are_wider_on_grouped_data():
    # uE constant within a group: the bins of uE hold whole groups, whose points are
    # inside or outside together
    ds = _grouped(n_groups=80, size=25, per_group_uE=True, seed=1)
    iid = local_coverage(ds, n_bins=10)
    clustered = local_coverage(ds, n_bins=10, n_boot=500, **CLUSTER)
    width = (clustered.ci_high - clustered.ci_low).mean().item()
    assert width > 1.3 * (iid.ci_high - iid.ci_low).mean().item()
    assert (clustered.coverage.values == iid.coverage.values).all()


@pytest.mark.filterwarnings("ignore::xuqcal.DependenceWarning")
def test_local_coverage_iid_is_the_wilson_interval(grouped):
    lc = local_coverage(grouped, n_bins=8)
    assert "resample" not in lc.attrs and "n_units" not in lc and "n_boot" not in lc.attrs
    _, low, high, _ = coverage_validity(lc.n_inside.values, lc["count"].values,
                                                   0.95, 0.95, 0.005)
    assert np.array_equal(lc.ci_low.values, low) and np.array_equal(lc.ci_high.values, high)
    assert _without_time(lc).identical(_without_time(local_coverage(grouped, n_bins=8,
                                                                    resample="iid")))


def test_local_coverage_block_and_lazy(grouped):
    block = local_coverage(grouped, n_bins=8, n_boot=300, resample="moving", block="time",
                           block_length="auto")
    assert block.attrs["block_length_rule"] != "given"
    assert isinstance(block.attrs["block_length"], int)
    eager = local_coverage(grouped, n_bins=8, n_boot=300, **CLUSTER)
    lazy = local_coverage(grouped.chunk({"sample": 250}), n_bins=8, n_boot=300, **CLUSTER)
    assert lazy.ci_low.chunks is not None
    assert lazy.compute().drop_attrs().identical(eager.drop_attrs())


def test_local_coverage_errors(grouped):
    with pytest.raises(ValueError, match="n_boot: only used with a dependent resample"):
        local_coverage(grouped, n_boot=100)
    with pytest.raises(ValueError, match="groups: resample='cluster' resamples whole groups"):
        local_coverage(grouped, resample="cluster")
    with pytest.raises(ValueError, match="n_boot"):
        local_coverage(grouped, n_boot=5, **CLUSTER)
    with pytest.raises(ValueError, match="block_length"):
        local_coverage(grouped, resample="circular", block="time", block_length=0)


# --------------------------------------------------------------------------------------------
# CLI and report
# --------------------------------------------------------------------------------------------


def _forces(path: Path) -> Path:
    ds = _grouped(n_groups=80, size=25)
    pd.DataFrame({"E": ds.E.values, "uE": ds.uE.values, "structure_id": ds.g.values,
                  "time": ds.time.values}).to_csv(path, index=False)
    return path


def test_cli_validate_groups_prints_no_dependence_warning(tmp_path, capsys):
    from xuqcal.cli import main

    path = str(_forces(tmp_path / "forces.csv"))
    fast = ["--E", "E", "--uE", "uE", "--n-boot", "300", "--n-mc", "100", "--no-progress"]
    assert main(["validate", path, *fast, "--groups", "structure_id"]) == 0
    captured = capsys.readouterr()
    assert "DependenceWarning" not in captured.err + captured.out
    assert "cluster bootstrap of the groups of structure_id" in captured.out


def test_the_summary_of_a_dependent_validation_warns_only_when_iid(grouped):
    """What the CLI did before: a cluster validation, then an iid summary (the dependence
    check warns about its own iid analyses); with the resample passed on, no warning."""
    given = xuqcal.validate(grouped, list(SUMMARY_STATISTICS), **COUNTS, **CLUSTER)
    with pytest.warns(xuqcal.DependenceWarning):
        summary(grouped.drop_vars("time"), validation_result=given, **COUNTS)
    with warnings.catch_warnings():
        warnings.simplefilter("error", xuqcal.DependenceWarning)
        summary(grouped.drop_vars("time"), validation_result=given, **COUNTS, **CLUSTER)

