"""The dependence scan of an iid analysis (issue 25, part 3b): scan_dependence finds the group
and ordered variables along which the z-scores are dependent, warn_if_dependent names them and
the resample= to use, the option dependence_check turns it off, and nothing lazy is read."""

from __future__ import annotations

import warnings

import dask
import dask.array as da
import numpy as np
import pandas as pd
import pytest
import xarray as xr

import xuqcal
from xuqcal.analysis import dependence_scan as S
from xuqcal.analysis.dependence_scan import DependenceWarning, scan_dependence, warn_if_dependent


def _data(z: np.ndarray, rng: np.random.Generator, **variables) -> xr.Dataset:
    """E = z uE with uE lognormal, and the variables over sample given."""
    u = rng.lognormal(0.0, 0.5, z.size)
    return xr.Dataset({"E": ("sample", z * u), "uE": ("sample", u),
                       **{name: ("sample", v) for name, v in variables.items()}})


def random_effect(n_groups=200, size=50, icc=0.3, seed=0) -> xr.Dataset:
    rng = np.random.default_rng(seed)
    g = np.repeat(np.arange(n_groups), size)
    z = np.sqrt(icc) * rng.normal(size=n_groups)[g] + np.sqrt(1 - icc) * rng.normal(size=g.size)
    return _data(z, rng, structure_id=g)


def ar1(n=5000, rho=0.8, seed=0) -> xr.Dataset:
    rng = np.random.default_rng(seed)
    eps = rng.normal(size=n) * np.sqrt(1 - rho**2)
    z = np.empty(n)
    z[0] = rng.normal()
    for i in range(1, n):
        z[i] = rho * z[i - 1] + eps[i]
    ds = _data(z, rng)
    time = np.datetime64("2020-01-01") + np.arange(n).astype("timedelta64[h]")
    return ds.assign_coords(time=("sample", time)).isel(sample=rng.permutation(n))


def grid(n=100, width=5, seed=0) -> xr.Dataset:
    """A 100 x 100 lat/lon grid of spatially correlated z-scores (a moving average of white
    noise over width x width cells), stacked into sample."""
    rng = np.random.default_rng(seed)
    noise = rng.normal(size=(n + width, n + width))
    c = np.cumsum(np.cumsum(noise, axis=0), axis=1)
    c = np.pad(c, ((1, 0), (1, 0)))
    field = (c[width:, width:] - c[:-width, width:] - c[width:, :-width] + c[:-width, :-width])
    field = field[:n, :n] / width
    u = rng.lognormal(0.0, 0.5, (n, n))
    ds = xr.Dataset({"E": (("lat", "lon"), field * u), "uE": (("lat", "lon"), u)},
                    coords={"lat": np.linspace(-50, 50, n), "lon": np.linspace(0, 99, n)})
    return ds.stack(sample=("lat", "lon"))


def independent(seed: int, m=2000) -> xr.Dataset:
    rng = np.random.default_rng(seed)
    ds = _data(rng.standard_t(4, size=m) if seed % 2 else rng.normal(size=m), rng,
               structure_id=rng.integers(0, 100, m))
    return ds.assign_coords(time=("sample", rng.permutation(m).astype(float)))


def _caught(ds: xr.Dataset, **kwargs) -> list[warnings.WarningMessage]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warn_if_dependent(ds, analysis="validate", **kwargs)
    return [w for w in caught if issubclass(w.category, DependenceWarning)]


def test_random_effect_warns_with_the_cluster_bootstrap():
    ds = random_effect()
    caught = _caught(ds)
    assert len(caught) == 1
    text = str(caught[0].message)
    assert text.startswith("resample: validate ")
    assert "'structure_id'" in text and "resample='cluster', groups='structure_id'" in text
    assert "over 200 groups" in text and "too narrow" in text
    assert caught[0].filename == __file__  # the user's line, not xuqcal's
    (found,) = scan_dependence(ds)
    assert found.kind == "groups" and found.significant and found.n_groups == 200
    assert 0.2 < found.z < 0.4 and found.p_value < 1e-50
    assert 10 < found.design_effect < 25 and found.n_effective == 10_000 / found.design_effect
    # describe's estimators, reused: the same ICC bit for bit
    d = xuqcal.describe(ds, groups="structure_id")
    assert found.z == float(d.icc_z) and found.z2 == float(d.icc_z2)


@pytest.mark.parametrize("kind", ["int", "str", "object", "categorical", "bool"])
def test_group_variables_of_every_discrete_dtype(kind):
    ds = random_effect(n_groups=2 if kind == "bool" else 200, size=5000 if kind == "bool" else 50)
    g = ds.structure_id.values
    values = {"int": g, "str": g.astype(str), "object": g.astype(str).astype(object),
              "categorical": pd.Categorical(g.astype(str)), "bool": g == 1}[kind]
    ds = ds.assign(structure_id=("sample", values))
    (found,) = scan_dependence(ds)
    assert found.variable == "structure_id" and found.kind == "groups"
    if kind == "bool":  # 2 groups of 5000 differing by chance: tested, maybe not significant
        assert found.n_groups == 2
        return
    assert found.significant


def test_ar1_series_warns_with_a_block_scheme():
    caught = _caught(ar1())
    assert len(caught) == 1
    text = str(caught[0].message)
    assert "'time'" in text and "lag-1 autocorrelation of Z = 0.8" in text
    assert "resample='circular', block='time', block_length='auto'" in text
    (found,) = scan_dependence(ar1())
    assert found.kind == "order" and 0.75 < found.z < 0.85
    assert found.design_effect == pytest.approx(9.0, rel=0.3)


@pytest.mark.parametrize("marker", [{"name": "step"}, {"attrs": {"axis": "T"}},
                                    {"attrs": {"standard_name": "time"}},
                                    {"attrs": {"units": "days since 2000-01-01"}}])
def test_numeric_axes_by_name_or_cf_attributes(marker):
    ds = ar1(2000)
    order = (ds.time.values - ds.time.values.min()).astype(float)
    ds = ds.drop_vars("time")
    name = marker.get("name", "position")
    ds = ds.assign_coords({name: ("sample", order, marker.get("attrs", {}))})
    (found,) = scan_dependence(ds)
    assert found.variable == name and found.kind == "order" and found.significant


def test_stacked_lat_lon_grid_warns():
    ds = grid()
    names = [str(w.message).split("dependent along ")[1].split(":")[0] for w in _caught(ds)]
    assert sorted(names) == ["'lat'", "'lon'"]  # both orders of the grid, sorted stably
    assert "sample" not in {f.variable for f in scan_dependence(ds)}


def test_independent_data_do_not_warn():
    """Two candidates (200 groups of structure_id, a time order) on 200 independent data
    sets, half of them with Student-t(4) z-scores: at most 1 % false alarms."""
    alarms = sum(f.significant for seed in range(200) for f in scan_dependence(independent(seed)))
    assert alarms <= 2
    assert {f.variable for f in scan_dependence(independent(0))} == {"structure_id", "time"}
    assert _caught(independent(0)) == []


def test_a_float_feature_is_never_a_candidate():
    """Z's scale grows with the feature x (miscalibration along x: Z² sorted by x is strongly
    autocorrelated), but x is not an axis: no finding. Marked as an axis, it is one."""
    rng = np.random.default_rng(1)
    x = rng.uniform(0, 1, 5000)
    ds = _data(rng.normal(size=5000) * (0.2 + 3 * x), rng, x=x, y=rng.normal(size=5000))
    assert scan_dependence(ds) == [] and _caught(ds) == []
    marked = ds.assign(x=ds.x.assign_attrs(axis="X"))
    (found,) = scan_dependence(marked)
    assert found.variable == "x" and found.significant  # the reason features are left out


def test_dask_backed_data_are_never_computed():
    def refuse(*args, **kwargs):
        raise AssertionError("the scan computed a Dask graph")

    ds = random_effect()
    lazy_groups = ds.assign(structure_id=ds.structure_id.chunk(sample=1000))
    with dask.config.set(scheduler=refuse):
        assert scan_dependence(ds.chunk(sample=1000)) == []
        assert scan_dependence(lazy_groups) == []  # the lazy candidate is skipped
        assert _caught(ds.chunk(sample=1000)) == [] and _caught(lazy_groups) == []

    def fail(block):
        raise AssertionError("the scan computed a block")

    bomb = da.map_blocks(fail, da.ones(10_000, chunks=1000), meta=np.array((), dtype=float))
    assert scan_dependence(ds.assign(uE=("sample", bomb))) == []


def test_the_option_turns_it_off():
    ds = random_effect()
    with xuqcal.set_options(dependence_check=False):
        assert _caught(ds) == []
        assert warn_if_dependent(ds, analysis="validate") == []
    assert len(_caught(ds)) == 1 and xuqcal.get_options()["dependence_check"] is True
    with pytest.raises(ValueError, match=r"^dependence_check: expected .* got 1"):
        xuqcal.set_options(dependence_check=1)


def test_skipped_silently():
    ds = random_effect()
    assert scan_dependence(ds.isel(sample=slice(0, S.MIN_POINTS - 1))) == []
    nan_groups = ds.assign(structure_id=ds.structure_id.astype(float).where(ds.sample != 3))
    assert scan_dependence(nan_groups) == []  # NaN in the candidate
    inf = ds.assign(E=ds.E.where(ds.sample != 5, np.inf))
    assert scan_dependence(inf) == [] and _caught(inf) == []  # non-finite Z
    ids = ds.assign(structure_id=("sample", np.arange(10_000) // 1))
    assert scan_dependence(ids) == []  # more than M/2 distinct values: no groups
    pairs = ds.assign(structure_id=("sample", np.arange(10_000) // 2))
    assert [f.n_groups for f in scan_dependence(pairs)] == [5000]
    assert scan_dependence(ds.drop_vars("uE")) == []
    assert scan_dependence(ds, E="err") == []


def test_thresholds():
    assert S.ALPHA == 1e-3
    assert S.ORDER_CRITICAL == pytest.approx(3.4808, abs=1e-4)
    assert {"x", "y", "z"}.isdisjoint(S.AXIS_NAMES)


def test_few_groups_are_flagged_in_the_message():
    ds = random_effect(n_groups=8, size=500, icc=0.3, seed=2)
    (w,) = _caught(ds)
    assert "only 8 groups" in str(w.message)


def test_a_lazily_opened_file_is_not_read(tmp_path):
    """Opened without chunks, a file's variables are lazy (loaded on first access): the scan
    reads nothing; loaded, they are scanned."""
    pytest.importorskip("netCDF4")
    random_effect().to_netcdf(tmp_path / "grouped.nc", engine="netcdf4")
    with xr.open_dataset(tmp_path / "grouped.nc", engine="netcdf4") as ds:
        assert scan_dependence(ds) == []
        assert not ds.E.variable._in_memory  # still not loaded
        assert [f.variable for f in scan_dependence(ds.load())] == ["structure_id"]
