"""Sensitivity cubes: build, determinism, persistence, extend, resume, queries."""

from __future__ import annotations

import json

import dask
import numpy as np
import pytest
import xarray as xr
from naive import naive_statistics

import xuqcal
from xuqcal.core import random as _random
from xuqcal.core.generators import get_generator
from xuqcal.studies import cube


def _assert_identical(a, b):
    """Identical results apart from the time they were created at."""
    xr.testing.assert_identical(a.assign_attrs(created=None), b.assign_attrs(created=None))


SMALL = {"size": [300, 600], "n_bins": [3, 6], "nu": [3.0, 6.0],
         "generators": ["normal", "t6"], "n_mc": 40}


@pytest.fixture(scope="module")
def small():
    return cube.build(["zms", "ence", "zmse", "cc"], **SMALL, keep_replicates=True).compute()


def test_cells_are_statistics_of_nig_data_sets(small):
    """Replicate r of cell (M, ν, D) is the NIG data set drawn from that cell's streams."""
    for size, nu, gen in ((300, 3.0, "t6"), (600, 6.0, "normal")):
        key_u, key_e = cube._nig_keys(0, size, nu, get_generator(gen))
        for r in (0, 17):
            gamma, eps = np.empty(size), np.empty(size)
            _random.fill_gamma(key_u, r, nu / 2, gamma)
            g = get_generator(gen)
            _random.fill_variates(key_e, r, g.code, g.parameter, eps)
            uE = np.sqrt(nu / 2 / gamma)
            for n_bins in SMALL["n_bins"]:
                want = naive_statistics(uE * eps, uE, n_bins)
                got = small.replicates.sel(size=size, nu=nu, generator=gen, n_bins=n_bins,
                                           replicate=r)
                np.testing.assert_allclose(got, [want[k] for k in got.statistic.values],
                                           rtol=1e-9)


def test_summaries_and_labels(small):
    assert dict(small["mean"].sizes) == {"size": 2, "nu": 2, "generator": 2, "n_bins": 2,
                                         "statistic": 4}
    reps = small.replicates
    xr.testing.assert_allclose(small["mean"], reps.mean("replicate"))
    xr.testing.assert_allclose(small["se"], reps.std("replicate", ddof=1) / np.sqrt(40))
    np.testing.assert_array_equal(small.df.values, [np.nan, 6.0])
    grid = json.loads(small.attrs["grid"])
    assert grid["size"] == [300, 600] and grid["statistic"] == ["zms", "ence", "zmse", "cc"]
    for key in ("n_mc", "seed", "kind", "random_streams", "xuqcal_version"):
        assert key in small.attrs


def test_lazy_and_deterministic_across_chunks_and_schedulers(small):
    lazy = cube.build(["zms", "ence", "zmse", "cc"], **SMALL, keep_replicates=True, chunks=7)
    assert isinstance(lazy["mean"].data, dask.array.Array)
    for scheduler in ("threads", "processes"):
        with dask.config.set(scheduler=scheduler):
            _assert_identical(lazy.compute(), small)


def test_distributed_equals_synchronous(small):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster):
        remote = cube.build(["zms", "ence", "zmse", "cc"], **SMALL, keep_replicates=True,
                            chunks=15).compute()
    _assert_identical(remote, small)


def test_build_from_equals_reference_and_shares_data_sets():
    sets = {"a": xuqcal.synthetic.nig(500, nu=6, seed=1),
            "b": xuqcal.synthetic.nig(800, nu=3, seed=2)}
    c = cube.build_from(sets, ["cc", "ence"], generators=["normal", "t4"], n_bins=[5, 10],
                        n_mc=60).compute()
    assert c["mean"].dims == ("dataset", "generator", "n_bins", "statistic")
    for name, ds in sets.items():
        ref = xuqcal.simulate(ds, ["cc", "ence"], generators=["normal", "t4"], n_mc=60,
                               n_bins=10).compute()
        np.testing.assert_array_equal(c["mean"].sel(dataset=name, n_bins=10).values,
                                      ref["mean"].values.T)
    # cc does not depend on the bins: one synthetic set serves every n_bins value
    np.testing.assert_array_equal(c["mean"].sel(statistic="cc", n_bins=5),
                                  c["mean"].sel(statistic="cc", n_bins=10))


def test_save_open_round_trip(small, tmp_path):
    path = cube.save(small, tmp_path / "c.nc")
    back = cube.open(path)
    xr.testing.assert_identical(back.drop_attrs(), small.drop_attrs())
    for key, value in small.attrs.items():
        assert back.attrs[key] == value
    assert "created" in back.attrs
    with pytest.raises(FileExistsError, match="overwrite"):
        cube.save(small, path)
    (tmp_path / "other.nc").write_text("")
    with pytest.raises(ValueError):
        cube.open(xuqcal.to_netcdf(xuqcal.synthetic.nig(10, 6, seed=0), tmp_path / "x.nc"))


@pytest.mark.parametrize(("dim", "values"), [("size", [900]), ("nu", [12.0]),
                                            ("generator", ["uniform"]), ("n_bins", [9])])
def test_extend_equals_a_full_build(tmp_path, dim, values):
    base = dict(SMALL)
    path = tmp_path / "c.nc"
    cube.build(["ence", "zms"], **base, path=path)
    extended = cube.extend(path, **{dim: values})
    full_grid = dict(base)
    key = "generators" if dim == "generator" else dim  # the dimension of build(generators=)
    full_grid[key] = base[key] + values
    full = cube.build(["ence", "zms"], **full_grid).compute()
    summaries = list(cube.SUMMARIES)
    for result in (extended, cube.open(path)):
        xr.testing.assert_identical(result[summaries].drop_attrs(deep=False),
                                    full[summaries].drop_attrs(deep=False))
        assert json.loads(result.attrs["grid"]) == json.loads(full.attrs["grid"])
    with pytest.raises(ValueError, match="already has"):
        cube.extend(path, **{dim: values})


def test_interrupted_build_resumes_without_recomputing(tmp_path, monkeypatch):
    path = tmp_path / "c.nc"
    computed = []
    original = cube._compute_cell

    def failing(*args):
        if len(computed) == 3:
            raise KeyboardInterrupt("simulated interruption")
        computed.append(args[-1])
        return original(*args)

    monkeypatch.setattr(cube, "_compute_cell", failing)
    with pytest.raises(KeyboardInterrupt):
        cube.build(["ence", "zms"], **SMALL, path=path)
    assert not path.exists()
    assert len(list((tmp_path / "c.nc.partial").iterdir())) == 3
    monkeypatch.setattr(cube, "_compute_cell", lambda *args: computed.append(args[-1])
                        or original(*args))
    resumed = cube.build(["ence", "zms"], **SMALL, path=path)
    assert len(computed) == 8  # 3 before the interruption, the 5 missing cells after
    assert not (tmp_path / "c.nc.partial").exists()
    uninterrupted = cube.build(["ence", "zms"], **SMALL).compute()
    xr.testing.assert_identical(resumed.drop_attrs(), uninterrupted.drop_attrs())
    summaries = list(cube.SUMMARIES)
    xr.testing.assert_identical(cube.open(path)[summaries].drop_attrs(deep=False),
                                uninterrupted[summaries].drop_attrs(deep=False))


def _interrupted_after_one_cell(path, monkeypatch):
    """Build a cube of ence at ``path``, interrupted after its first cell: one checkpoint."""
    original = cube._compute_cell
    calls = []

    def failing(*args):
        if calls:
            raise KeyboardInterrupt
        calls.append(1)
        return original(*args)

    monkeypatch.setattr(cube, "_compute_cell", failing)
    with pytest.raises(KeyboardInterrupt):
        cube.build(["ence"], **SMALL, path=path)
    monkeypatch.setattr(cube, "_compute_cell", original)


def test_resume_refuses_mismatched_checkpoints(tmp_path, monkeypatch):
    path = tmp_path / "c.nc"
    _interrupted_after_one_cell(path, monkeypatch)
    with pytest.raises(ValueError, match="seed"):
        cube.build(["ence"], **{**SMALL, "n_mc": 40}, seed=5, path=path)


def test_other_random_streams_are_refused_not_mixed(tmp_path, monkeypatch):
    """A checkpoint or a cube made under another stream version (its ``random_streams``
    attribute) is refused with a message naming it: its cells would not reproduce with new
    ones. The cube file is left as it was."""
    from xuqcal.analysis import resampling

    path = tmp_path / "c.nc"
    cube.build(["ence"], **SMALL, path=path)
    before = path.read_bytes()
    monkeypatch.setattr(cube, "RNG_DESCRIPTION", resampling.RNG_DESCRIPTION + " (other)")
    with pytest.raises(ValueError, match=r"other random streams.*build the cube again"):
        cube.extend(path, nu=[12.0])
    assert path.read_bytes() == before
    other = tmp_path / "d.nc"
    _interrupted_after_one_cell(other, monkeypatch)  # its checkpoint: the "(other)" streams
    monkeypatch.setattr(cube, "RNG_DESCRIPTION", resampling.RNG_DESCRIPTION)
    with pytest.raises(ValueError, match="random_streams"):
        cube.build(["ence"], **SMALL, path=other)


def test_build_refuses_to_overwrite(tmp_path):
    path = tmp_path / "c.nc"
    path.write_text("precious")
    with pytest.raises(FileExistsError, match="overwrite"):
        cube.build(["ence"], **SMALL, path=path)
    assert path.read_text() == "precious"


def test_grid_errors():
    with pytest.raises(ValueError, match="size=10"):
        cube.build(["ence"], size=[10], n_bins=[20], nu=[6])
    with pytest.raises(ValueError, match="nu"):
        cube.build(["ence"], size=[100], n_bins=[2], nu=[0])
    with pytest.raises(ValueError, match="listed twice"):
        cube.build(["ence"], size=[100, 100], n_bins=[2], nu=[6])
    with pytest.raises(ValueError, match="unknown generator"):
        cube.build(["ence"], size=[100], n_bins=[2], nu=[6], generators="gauss")


def test_fit_sqrt_recovers_a_synthetic_law():
    c = xr.Dataset(
        {"mean": (("size", "n_bins"), 0.01 + 0.5 * np.sqrt(np.array([[5, 10], [5, 10]])
                                                           / np.array([[100], [400]]))),
         "se": (("size", "n_bins"), np.full((2, 2), 1e-3))},
        coords={"size": [100, 400], "n_bins": [5, 10]},
    ).expand_dims(statistic=["ence"], generator=["normal"])
    fit = cube.fit_sqrt(c)
    assert fit["a"].item() == pytest.approx(0.01) and fit["alpha"].item() == pytest.approx(0.5)
    assert fit.chi2_dof.item() == pytest.approx(0.0, abs=1e-12)


def test_reference_for_interpolates_in_sqrt_n_over_m(small):
    # (300, 6) is the only cell at sqrt(N/M) = sqrt(0.02): the reference is that cell
    ref = cube.reference_for(small, size=300, n_bins=6, generator="normal", nu=3.0)
    np.testing.assert_allclose(ref["mean"], small["mean"].sel(size=300, n_bins=6, nu=3.0,
                                                              generator="normal"))
    # (300, 3) and (600, 6) share sqrt(N/M) = 0.1: their means are averaged
    tie = cube.reference_for(small, size=300, n_bins=3, generator="normal", nu=3.0)
    both = small["mean"].sel(nu=3.0, generator="normal")
    np.testing.assert_allclose(tie["mean"], (both.sel(size=300, n_bins=3)
                                             + both.sel(size=600, n_bins=6)) / 2)
    mid = cube.reference_for(small, size=450, n_bins=4, generator="t6", nu=6.0)
    assert mid["mean"].dims == ("statistic",)
    with pytest.raises(ValueError, match="outside"):
        cube.reference_for(small, size=10_000, n_bins=3, generator="normal", nu=3.0)
    with pytest.raises(ValueError, match="several nu"):
        cube.reference_for(small, size=300, n_bins=3, generator="normal")


def test_size_bins_cube_fit_acceptance():
    """Normal D: ENCE ≈ 0.56 sqrt(N/M) with a ≈ 0; t6 slopes differ by far more than their
    errors (TARGETS.md; reduced grid of the full study)."""
    c = cube.build(["ence", "zmse"], size=[2000, 16000], n_bins=[10, 30, 50], nu=[3.0, 12.0],
                   generators=["normal", "t6"], n_mc=600).compute()
    fit = cube.fit_sqrt(c)
    normal = fit.sel(statistic="ence", generator="normal")
    assert normal.alpha.item() == pytest.approx(0.56, abs=0.005 + 3 * normal.alpha_se.item())
    smallest = c["mean"].sel(statistic="ence", generator="normal").min().item()
    assert abs(normal.a.item()) < 0.05 * smallest  # intercept ≈ 0
    for statistic in ("ence", "zmse"):
        f = fit.sel(statistic=statistic)
        gap = abs(f.alpha.sel(generator="t6") - f.alpha.sel(generator="normal")).item()
        assert gap > 10 * np.hypot(*f.alpha_se.values)
    sens = cube.generator_sensitivity(c)
    assert bool(sens.sensitive.sel(generator="t6").all())


def test_progress_is_shown_by_argument_or_option(tmp_path, capsys):
    grid = {"size": [300], "n_bins": [3], "nu": [6.0], "generators": ["normal"], "n_mc": 20}
    cube.build(["ence"], **grid, path=tmp_path / "quiet.nc")
    assert capsys.readouterr().err == ""
    cube.build(["ence"], **grid, path=tmp_path / "shown.nc", progress=True)
    err = capsys.readouterr().err
    # xuqcal.studies.progress.TimeLeft (Dask's bar with the time left); not a terminal here:
    # whole lines, no carriage return
    assert "cell 1/1" in err and "done in" in err and "\r" not in err
    with xuqcal.set_options(progress=True):
        cube.extend(tmp_path / "quiet.nc", nu=[8.0])
    assert "done in" in capsys.readouterr().err
    with pytest.raises(ValueError, match=r"^progress: expected True or False"):
        cube.build(["ence"], **grid, path=tmp_path / "bad.nc", progress="yes")


def test_cube_attributes_come_from_provenance():
    c = cube.build(["ence"], size=[300], n_bins=[3], nu=[6.0], generators="normal", n_mc=20)
    assert c.attrs["xuqcal_version"] == xuqcal.__version__
    assert c.attrs["created"].endswith("+00:00")
    fit = cube.fit_sqrt(cube.build(["ence"], size=[300, 600], n_bins=[3, 6], nu=[6.0],
                                   generators="normal", n_mc=20))
    assert fit.attrs["created"].endswith("+00:00") and "model" in fit.attrs


def test_build_from_finds_the_uncertainties_by_role():
    ds = xuqcal.synthetic.nig(500, nu=6, seed=1)
    direct = cube.build_from(ds, ["ence"], generators="normal", n_bins=[5], n_mc=30).compute()
    renamed = cube.build_from(ds.rename(uE="sigma", E="err"), ["ence"], generators="normal",
                              n_bins=[5], n_mc=30).compute()
    xr.testing.assert_identical(renamed["mean"], direct["mean"])
    with pytest.raises(ValueError, match=r"^generators: "):
        cube.build_from(ds, ["ence"], generators=["nope"], n_bins=[5], n_mc=30)
