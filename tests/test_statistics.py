"""The registry, labelled point estimates and descriptive statistics."""

from __future__ import annotations

import dask
import numpy as np
import pytest
import xarray as xr
from naive import naive_statistics
from scipy.stats.mstats import hdquantiles

import xuqcal
from xuqcal.core.statistics import STATISTICS, compute, get_statistics
from xuqcal.testing import assert_results_identical


@pytest.fixture(scope="module")
def data():
    ds = xuqcal.synthetic.nig(3000, nu=4, seed=8)
    return ds.assign(X=("sample", np.random.default_rng(0).integers(0, 9, 3000).astype(float)))


def test_registry_metadata():
    assert set(STATISTICS) == {"mse", "rmse", "mv", "rmv", "zm", "zms", "zv", "rce", "nll",
                               "cc", "ence", "uce", "zmse", "zisd"}
    refs = {k: s.reference for k, s in STATISTICS.items() if s.reference is not None}
    assert refs == {"zm": 0.0, "zms": 1.0, "zv": 1.0, "rce": 0.0, "zisd": 1.0}
    # zisd (ErrViewLib's LZISD statistic) is computed on request only: "all" is unchanged
    assert [s.key for s in get_statistics(None)] == [
        "mse", "rmse", "mv", "rmv", "zm", "zms", "zv", "rce", "nll", "cc", "ence", "uce",
        "zmse"]
    assert STATISTICS["nll"].has_reference and not STATISTICS["cc"].has_reference
    uE = np.array([0.5, 2.0])
    assert STATISTICS["nll"].reference_value(uE) == pytest.approx(
        0.5 * (1 + np.mean(np.log(uE**2)) + np.log(2 * np.pi)))
    assert np.isnan(STATISTICS["ence"].reference_value())


def test_stats_is_labelled_and_correct(data):
    keys = list(STATISTICS)
    values = data.uqcal.stats(keys, n_bins=15)
    assert values.dims == ("statistic",)
    assert values.statistic.values.tolist() == keys
    assert values.attrs["n_bins"] == 15 and values.attrs["by"] == "uE"
    want = naive_statistics(data.E.values, data.uE.values, 15)
    np.testing.assert_allclose(values.values, [want[k] for k in keys], rtol=1e-10)


def test_stats_binned_on_a_feature(data):
    values = xuqcal.stats(data, ["ence", "zmse"], n_bins=10, by="X")
    want = naive_statistics(data.E.values, data.uE.values, 10, by=data.X.values)
    np.testing.assert_allclose(values.values, [want["ence"], want["zmse"]], rtol=1e-12)


def test_stats_lazy_for_any_sample_chunks(data):
    lazy = data.chunk({"sample": 700})
    values = xuqcal.stats(lazy, ["zms", "cc", "ence"])
    assert isinstance(values.data, dask.array.Array)
    # bit-identical except the time each result was made (a second apart at times)
    assert_results_identical(values.compute(), xuqcal.stats(data, ["zms", "cc", "ence"]))


def test_stats_keeps_extra_dimensions():
    sets = [xuqcal.synthetic.nig(500, nu=6, seed=1, replicate=r) for r in range(3)]
    stacked = xr.concat(sets, dim="replicate")
    values = xuqcal.stats(stacked, ["zms", "ence"], n_bins=5)
    assert values.dims == ("replicate", "statistic")
    for r, ds in enumerate(sets):
        np.testing.assert_array_equal(values.isel(replicate=r),
                                      xuqcal.stats(ds, ["zms", "ence"], n_bins=5))


def test_errors(data):
    with pytest.raises(ValueError, match=r"unknown statistic 'ZMS'.*known statistics are"):
        data.uqcal.stats(["ZMS"])
    with pytest.raises(ValueError, match="listed twice"):
        get_statistics(["zms", "zms"])
    with pytest.raises(ValueError, match="n_bins=2000 needs at least 4000 points"):
        data.uqcal.stats(["ence"], n_bins=2000)
    with pytest.raises(ValueError, match="n_bins: expected a positive integer"):
        data.uqcal.stats(["ence"], n_bins=0)
    with pytest.raises(ValueError, match="binning variable 'Y'"):
        data.uqcal.stats(["ence"], by="Y")
    # a missing variable is named as such, even with too many bins or no binned statistic
    with pytest.raises(ValueError, match=r"binning variable 'Y' is not in the dataset"):
        data.uqcal.stats(["ence"], by="Y", n_bins=2000)
    with pytest.raises(ValueError, match=r"binning variable 'Y' is not in the dataset"):
        data.uqcal.stats(["zms"], by="Y")


def test_accessor_validates_input():
    bad = xr.Dataset({"E": ("sample", [1.0, np.nan, 0.5]), "uE": ("sample", [1.0, 1.0, -1.0])})
    for data in (bad, bad.chunk()):  # the same message eagerly and, lazily, at compute time
        with pytest.raises(ValueError, match=r"E: 1 of 3 values are NaN") as info:
            data.uqcal.stats(["zms"]).compute()
        assert "uE: 1 of 3 values are not positive" in str(info.value)


def test_beta_gm_and_kappa_cs_definitions():
    x = np.random.default_rng(1).gamma(2.0, size=5000)
    med = hdquantiles(x, prob=[0.5])[0]
    assert xuqcal.beta_gm(x) == pytest.approx((x.mean() - med) / np.mean(np.abs(x - med)))
    q = hdquantiles(x, prob=[0.025, 0.25, 0.75, 0.975])
    assert xuqcal.kappa_cs(x) == pytest.approx((q[3] - q[0]) / (q[2] - q[1]) - 2.91)
    assert xuqcal.beta_gm(x) > 0.1  # right-skewed
    normal = np.random.default_rng(2).standard_normal(50_000)
    assert abs(xuqcal.beta_gm(normal)) < 0.02
    assert abs(xuqcal.kappa_cs(normal)) < 0.05


def test_other_variable_names_bin_on_their_uncertainty():
    """With E and uE under other names, the default ``by="uE"`` means the uncertainty variable
    (it used to look for a variable literally named uE)."""
    ds = xuqcal.synthetic.nig(600, nu=6, seed=2)
    renamed = ds.rename({"E": "err", "uE": "u"})
    keys = ["zms", "cc", "ence"]
    np.testing.assert_array_equal(xuqcal.stats(renamed, keys, E="err", uE="u"),
                                  xuqcal.stats(ds, keys))
    ours = xuqcal.bootstrap(renamed, keys, n_boot=200, seed=1, E="err", uE="u").compute()
    xr.testing.assert_identical(ours.drop_attrs(), xuqcal.bootstrap(ds, keys, n_boot=200, seed=1)
                                .compute().drop_attrs())
    # built by xuqcal, the renamed set keeps its roles (xuqcal.io.by_role) ...
    np.testing.assert_array_equal(xuqcal.stats(renamed, keys), xuqcal.stats(ds, keys))
    # ... a hand-made one has none: the names must be given
    hand_made = xr.Dataset({name: ("sample", renamed[name].values) for name in ("err", "u")})
    with pytest.raises(ValueError, match=r"binning variable 'uE' is not in the dataset "
                                         r"\(variables: err, u\)"):
        xuqcal.stats(hand_made, keys)


def test_cc_of_a_constant_variable_is_undefined():
    """Spearman's correlation of a constant uE (or |E|) is undefined: NaN, as scipy gives, in
    the estimate and in every bootstrap replicate (it raised ZeroDivisionError in the kernel)."""
    rng = np.random.default_rng(3)
    constant_u = xuqcal.from_arrays(rng.standard_normal(60), np.full(60, 0.7))
    named = pytest.warns(xuqcal.UndefinedStatisticWarning, match="cc is undefined: uE is constant")
    with named:
        assert np.isnan(constant_u.uqcal.stats("cc").item())
    assert constant_u.uqcal.stats("zms").item() > 0
    with named:
        boot = constant_u.uqcal.bootstrap(["cc", "zms"], n_boot=50, seed=0).compute()
    assert np.isnan(boot.estimate.sel(statistic="cc").item())
    assert np.isfinite(boot.ci_low.sel(statistic="zms").item())
    constant_e = xuqcal.from_arrays(np.full(60, 0.5) * rng.choice([-1, 1], 60),
                                    rng.uniform(0.5, 1.5, 60))
    with pytest.warns(xuqcal.UndefinedStatisticWarning,
                      match=r"cc is undefined: \|E\| is constant"):
        assert np.isnan(constant_e.uqcal.stats("cc").item())


def test_a_statistic_is_one_object_finished_like_the_kernels():
    """from_sums / from_bin_sums of every statistic (the finishers' NumPy twins) give the
    kernels' values: one definition of each formula, for the kernels and for NumPy users."""
    from xuqcal.core import kernels as K
    from xuqcal.core.binning import equal_count_bounds
    from xuqcal.core.statistics import point_columns

    rng = np.random.default_rng(5)
    uE = np.sort(rng.gamma(2.0, 1.0, 200))
    E = uE * rng.standard_normal(200)
    columns = point_columns(E, uE)
    sums = {"count": 200, **{c: np.sum(v) for c, v in columns.items()}}
    bounds = equal_count_bounds(200, 5)
    bin_sums = {"count": np.diff(bounds).astype(float),
                **{c: np.add.reduceat(v, bounds[:-1]) for c, v in columns.items()}}
    for s in STATISTICS.values():
        kernel = float(compute(E, uE, [s.key], n_bins=5)[0])
        if s.kind == "moment":
            assert set(s.columns) <= set(K.COLUMNS) and s.columns
            assert float(s.from_sums(sums)) == pytest.approx(kernel, rel=1e-12)
        elif s.kind == "binned":
            assert float(s.from_bin_sums(bin_sums)) == pytest.approx(kernel, rel=1e-12)
            assert s.bin_terms(bin_sums).shape == (5,)
        else:
            assert s.columns == ()
    assert STATISTICS["mse"].unit_power == 2 and STATISTICS["zms"].unit_power == 0
    with pytest.raises(ValueError, match="sums: zms needs the sums 'z2'"):
        STATISTICS["zms"].from_sums({"count": 3})
    with pytest.raises(ValueError, match="statistics: ence is not a moment statistic"):
        STATISTICS["ence"].from_sums(sums)


def test_moment_finishers_match_numpy_means_bit_for_bit():
    z2 = np.random.default_rng(1).random(1001) * 3.0
    assert float(STATISTICS["zms"].from_sums({"count": z2.size, "z2": np.sum(z2)})) \
        == float(np.mean(z2))
