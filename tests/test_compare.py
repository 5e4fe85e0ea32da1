"""Model comparison (issue 24): the paired bootstrap of xuqcal.compare, its differences,
intervals, verdicts and rank probabilities."""

from __future__ import annotations

import dask
import numpy as np
import pytest
import xarray as xr

import xuqcal
from xuqcal.analysis import compare as C
from xuqcal.analysis import resampling
from xuqcal.core import kernels as K
from xuqcal.core.random import stream_key
from xuqcal.core.statistics import codes_of, get_statistics

ALL = ["zms", "rce", "zm", "zv", "nll", "cc", "ence", "uce", "zmse"]


def _models(m=1500, seed=0, **models):
    base = xuqcal.synthetic.nig(m, nu=6, seed=seed)
    return xuqcal.stack_datasets({name: make(base) for name, make in models.items()},
                                 dim="model")


def _identical_values(a: xr.Dataset, b: xr.Dataset) -> None:
    assert set(a.data_vars) == set(b.data_vars)
    for name in a.data_vars:
        x, y = a[name].values, b[name].values
        if x.dtype.kind == "f":
            assert np.array_equal(x, y, equal_nan=True), name
        else:
            assert (x == y).all(), name


def test_identical_models_differ_by_exactly_zero_and_share_the_ranks():
    ds = _models(A=lambda d: d, B=lambda d: d)
    r = C.compare(ds, ALL, n_boot=400)
    off = r.sel(model="A", other="B")
    assert (off.difference == 0).all() and (off.ci_low == 0).all() and (off.ci_high == 0).all()
    assert (off.value_difference == 0).all() and (off.value_ci_low == 0).all()
    assert (off.value_ci_high == 0).all()
    assert (off.zeta == 0).all()
    assert set(off.verdict.values.tolist()) == {"no significant difference"}
    # the tie rule: two identical models share ranks 1 and 2 equally in every replicate
    np.testing.assert_array_equal(r.rank_probability.values, np.full((2, 2, len(ALL)), 0.5))
    np.testing.assert_array_equal(r.p_best.values, np.full((2, len(ALL)), 0.5))
    assert (r.verdict.sel(model="A", other="A") == "").all()


def test_a_calibrated_model_beats_its_overconfident_copy():
    # the acceptance of issue 24: the same 5000 points, uE x 0.8, n_boot 2000
    ds = _models(5000, A=lambda d: d, B=lambda d: d.assign(uE=d.uE * 0.8))
    r = C.compare(ds, ["zms", "rce", "nll", "ence", "zmse"], n_boot=2000)
    assert float(r.p_best.sel(model="A", statistic="zms")) >= 0.99
    for key in ("zms", "rce", "nll", "ence", "zmse"):
        assert str(r.verdict.sel(model="A", other="B", statistic=key).values) == "better", key
        assert str(r.verdict.sel(model="B", other="A", statistic=key).values) == "worse", key
    # antisymmetric: the difference and interval of (B, A) are those of (A, B) negated
    ab, ba = r.sel(model="A", other="B"), r.sel(model="B", other="A")
    np.testing.assert_array_equal(ab.difference, -ba.difference)
    np.testing.assert_array_equal(ab.ci_low, -ba.ci_high)
    np.testing.assert_array_equal(ab.value_ci_high, -ba.value_ci_low)
    # the values: zms(B) = zms(A) / 0.64; their difference is that of the estimates, exactly
    zms = r.estimate.sel(statistic="zms")
    assert float(ab.value_difference.sel(statistic="zms")) == float(zms[0] - zms[1])
    assert float(ab.value_ci_high.sel(statistic="zms")) < 0
    # nll is compared by |zms - 1| / 2, exactly
    np.testing.assert_array_equal(r.distance.sel(statistic="nll"),
                                  np.abs(r.estimate.sel(statistic="zms") - 1) / 2)


def test_every_model_resamples_the_same_rows():
    """Replicate r of each model is its statistic on the rows drawn by (seed, "compare", r),
    whatever the order of its own arrays (here: models binned on opposite orders of uE and on
    the row order)."""
    base = xuqcal.synthetic.nig(300, nu=6, seed=3)
    e, u = base.E.values, base.uE.values
    keys = ["zms", "ence", "cc"]
    codes = codes_of(get_statistics(keys))
    key = stream_key(11, "compare")
    draws = np.empty(300, dtype=np.int64)
    models = [C._prepare(e, u, x, n_bins=5, by="x", needs_bins=True)
              for x in (u, -u, np.arange(300.0))]
    got = C._paired_chunk(models, codes, key, 4, 7)  # (model, replicate, code)
    for r in range(4, 7):
        K.fill_draws(key, r, draws)  # the rows drawn, as fill_counts counts them
        for i, x in enumerate((u, -u, np.arange(300.0))):
            resample = xuqcal.from_arrays(e[draws], u[draws]).assign(x=("sample", x[draws]))
            direct = xuqcal.stats(resample, keys, n_bins=5, by="x")
            np.testing.assert_allclose(got[i, r - 4], direct.values, rtol=1e-12)


def test_the_replicates_do_not_depend_on_how_the_chunks_split_them(monkeypatch):
    base = xuqcal.synthetic.nig(400, nu=6, seed=5)
    models = [C._prepare(base.E.values, base.uE.values * f, None, n_bins=8, by="uE",
                         needs_bins=True) for f in (1.0, 0.9)]
    codes = codes_of(get_statistics(["zms", "zmse", "cc"]))
    key = stream_key(0, "compare")
    whole = C._paired_chunk(models, codes, key, 0, 50)
    monkeypatch.setattr(resampling, "COUNTS_BLOCK", 7 * 400)  # blocks of 7 replicates
    parts = np.concatenate([C._paired_chunk(models, codes, key, 0, 20),
                            C._paired_chunk(models, codes, key, 20, 50)], axis=1)
    np.testing.assert_array_equal(whole, parts)


def test_common_pairing_drops_and_counts_the_points_absent_from_a_model():
    a = xuqcal.synthetic.nig(800, nu=6, seed=2)
    b = a.assign(uE=a.uE * 1.1).isel(sample=slice(50, None))  # B lacks the first 50 points
    ds = xr.concat([a, b], dim="model", join="outer").assign_coords(model=["A", "B"])
    r = C.compare(ds, ["zms"], n_boot=200)
    assert r.n_samples.values.tolist() == [750, 750]
    assert r.n_dropped.sel(model="A").item() == 50 and r.n_dropped.sel(model="B").item() == 0
    same = C.compare(ds.isel(sample=slice(50, None)), ["zms"], n_boot=200)
    np.testing.assert_array_equal(r.estimate, same.estimate)
    ragged = C.compare(ds, ["zms"], n_boot=200, pairing="independent")
    assert ragged.n_samples.values.tolist() == [800, 750]
    assert ragged.attrs["interval"] == "percentile of independent replicates"


def test_the_paired_interval_is_narrower_than_independent_bootstraps():
    rng = np.random.default_rng(5)
    m = 3000
    u_a = xuqcal.synthetic.nig(m, nu=6, seed=4).uE.values
    u_b = u_a * np.exp(rng.normal(0, 0.1, m))
    z1, z2 = rng.standard_normal(m), rng.standard_normal(m)
    ds = xuqcal.stack_datasets({
        "A": xuqcal.from_arrays(u_a * z1, u_a),
        "B": xuqcal.from_arrays(u_b * (0.8 * z1 + 0.6 * z2), u_b)}, dim="model")
    paired = C.compare(ds, ["zms"], n_boot=1000).sel(model="A", other="B")
    apart = C.compare(ds, ["zms"], n_boot=1000, pairing="independent").sel(model="A",
                                                                           other="B")
    width = float((paired.ci_high - paired.ci_low).squeeze())
    # 0.78 of the independent width here; the study of benchmarks/compare_power.py measures
    # the gain over many pairs
    assert width < 0.85 * float((apart.ci_high - apart.ci_low).squeeze())


def test_lazy_chunked_and_scheduled_alike_bit_for_bit():
    ds = _models(600, A=lambda d: d, B=lambda d: d.assign(uE=d.uE * 0.9),
                 C=lambda d: d.assign(E=d.E * 1.1))
    eager = C.compare(ds, ["zms", "cc", "ence"], n_boot=300, seed=7)
    lazy = C.compare(ds.chunk(sample=200), ["zms", "cc", "ence"], n_boot=300, seed=7)
    assert lazy.difference.chunks is not None
    with dask.config.set(scheduler="synchronous"):
        chunked = C.compare(ds, ["zms", "cc", "ence"], n_boot=300, seed=7, chunks=37)
    _identical_values(eager, lazy.compute())
    _identical_values(eager, chunked)
    assert eager.attrs["seed"] == 7 and eager.attrs["analysis"] == "compare"


def test_other_extra_dimensions_are_compared_slice_by_slice():
    ds = _models(500, A=lambda d: d, B=lambda d: d.assign(uE=d.uE * 0.9))
    tasks = xr.concat([ds, ds.assign(E=ds.E * 1.2)], dim="task").assign_coords(
        task=["t1", "t2"])
    r = C.compare(tasks, ["zms", "rce"], n_boot=200)
    assert r.difference.dims == ("task", "model", "other", "statistic")
    one = C.compare(tasks.sel(task="t2"), ["zms", "rce"], n_boot=200)
    np.testing.assert_array_equal(r.difference.sel(task="t2"), one.difference)
    np.testing.assert_array_equal(r.ci_low.sel(task="t2"), one.ci_low)


def test_rank_probabilities_follow_the_tie_rule():
    d = np.array([[0.1, 0.2, np.nan], [0.1, 0.1, 0.3], [0.3, 0.1, 0.3]])
    p = C.rank_probabilities(d)
    # replicate 1: models 0 and 1 tie first; 2: models 1 and 2 tie first, 0 third; 3: model
    # 0 undefined (NaN) ranks last, behind 1 and 2 tied first
    np.testing.assert_allclose(p, [[1 / 6, 1 / 6, 2 / 3], [1 / 2, 1 / 2, 0],
                                   [1 / 3, 1 / 3, 1 / 3]])
    np.testing.assert_allclose(p.sum(axis=1), 1.0)
    np.testing.assert_allclose(p.sum(axis=0), 1.0)


@pytest.mark.parametrize("call, message", [
    (lambda ds: C.compare(ds, ["zms"], dim="method"), r"^dim: 'method' is not a dimension"),
    (lambda ds: C.compare(ds.isel(model=[0]), ["zms"]), r"^dim: comparing needs at least 2"),
    (lambda ds: C.compare(ds.assign_coords(model=["A", "A"]), ["zms"]),
     r"^dim: the labels along 'model' repeat \(A\)"),
    (lambda ds: C.compare(ds, ["picp95"]), r"^statistics: 'picp95' is a coverage statistic"),
    (lambda ds: C.compare(ds, ["mse"]), r"^statistics: mse cannot be compared"),
    (lambda ds: C.compare(ds, ["zms"], pairing="rows"), r"^pairing: "),
    (lambda ds: C.compare(ds, ["zms"], n_boot=10), r"^n_boot: expected an integer >= 40"),
    (lambda ds: C.compare(ds, ["zms"], dim="sample"), r"^dim: 'sample' is not|^dim: the "),
])
def test_bad_arguments_are_refused_before_any_work(call, message, monkeypatch):
    ds = _models(100, A=lambda d: d, B=lambda d: d)

    def never(*args, **kwargs):
        raise AssertionError("compared before the error")

    monkeypatch.setattr(C, "_compare_arrays", never)
    with pytest.raises(ValueError, match=message):
        call(ds)


# ------------------------------------------------------------------------------ the command


def _three_files(tmp_path):
    a = xuqcal.synthetic.nig(600, nu=6, seed=0)
    paths = []
    for name, ds in (("good", a), ("tight", a.assign(uE=a.uE * 0.8)),
                     ("noisy", a.assign(E=a.E * 1.1))):
        path = tmp_path / f"{name}.csv"
        ds.to_dataframe().to_csv(path)
        paths.append(str(path))
    return paths


def test_the_compare_command_prints_a_ranking_and_writes_every_result(tmp_path, capsys):
    from xuqcal.cli.commands import main

    files = _three_files(tmp_path)
    out = tmp_path / "cmp.nc"
    args = ["compare", *files, "--E", "E", "--uE", "uE", "--n-boot", "300",
            "--statistics", "zms,rce,ence", "--no-progress", "-o", str(out)]
    assert main(args) == 0
    printed = capsys.readouterr().out
    first = printed.splitlines()[0]
    assert first.startswith("Comparison of 3 models (good, tight, noisy) on 600 common points")
    block = printed.split("zms (distance |zms - 1|)")[1].splitlines()
    assert block[2].split()[0] == "good"  # first by expected rank
    assert "good better than tight: difference" in printed
    assert "mean scores (lower is better" in printed and "SIP (crps)" in printed
    written = xuqcal.io.netcdf.read_netcdf(out)
    assert {"difference", "rank_probability", "mean_score", "dm_p_value", "sip"} <= set(
        written.data_vars)
    assert written.dataset.values.tolist() == ["good", "tight", "noisy"]
    expected = C.compare(xuqcal.stack_datasets({
        p.rsplit("/", 1)[1][:-4]: xuqcal.read_csv(p, E="E", uE="uE") for p in files}),
        ["zms", "rce", "ence"], dim="dataset", n_boot=300)
    np.testing.assert_array_equal(written.ci_low.values, expected.ci_low.values)
    assert main(args) == 2  # the output exists: refused without --overwrite
    assert "--overwrite" in capsys.readouterr().err


@pytest.mark.parametrize("extra, message", [
    (["--statistics", "zms,picp95"], "--statistics: picp95 cannot be compared"),
    (["--dim", "model"], "--dim: 'model' is not a dimension of the data"),
    (["--pairing", "rows"], "--pairing: invalid choice"),
])
def test_the_compare_command_refuses_bad_options_in_one_line(tmp_path, capsys, extra,
                                                             message):
    from faults import one_line_error

    from xuqcal.cli.commands import main

    files = _three_files(tmp_path)
    line = one_line_error(capsys, main(["compare", *files, "--E", "E", "--uE", "uE",
                                        "--n-boot", "100", "--no-progress", *extra]),
                          command="compare")
    assert message in line


@pytest.mark.slow  # 800 comparisons of 1000 points (pytest -m slow)
def test_paired_coverage_and_power_study():
    """Issue 24's acceptance: for two calibrated models with errors correlated at 0.8 on
    shared points, the paired 95 % interval of the zms difference covers the true difference
    (0) in 95 % ± 2 % of 400 pairs (benchmarks/compare_power.py; its record in
    benchmarks/measured/ gives the width ratios)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "compare_power.py"
    spec = importlib.util.spec_from_file_location("compare_power", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    record = module.study(pairs=400, m=1000, n_boot=1000)
    zms = record["statistics"]["zms"]
    assert 0.93 <= zms["coverage"] <= 0.97, zms  # the difference of the distances
    assert 0.93 <= zms["value_coverage"] <= 0.97, zms  # of the values zms(A) - zms(B)
    # power: the paired interval of the zms difference at least 30 % narrower than the one
    # of independent bootstraps (the distances, folded at the reference, gain less)
    assert zms["value_median_width_ratio"] <= 0.7, zms
    assert zms["median_width_ratio"] < 1.0, zms
