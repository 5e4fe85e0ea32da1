"""Cluster-robust and HAC intervals (issue 25, part 4): the NumPy references of
:mod:`xuqcal.core.robust` against statsmodels, and ``reduce_statistics(se="cluster" | "hac")``
out of core: against the references, bit-identical for any chunking, and its errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import xarray as xr

import xuqcal
from xuqcal.analysis import outofcore
from xuqcal.core import moments
from xuqcal.core.memory import DataTooLargeError
from xuqcal.core.robust import cluster_robust_cov, hac_cov, newey_west_lags
from xuqcal.testing import assert_results_identical

MOMENTS = ["mse", "rmse", "mv", "rmv", "zm", "zms", "zv", "rce", "nll"]

# ------------------------------------------------------------------ statsmodels' answers
#
# Known answers from statsmodels 0.15.0 (numpy default_rng data of the generators below):
#
#     import numpy as np, statsmodels.api as sm
#     x, g = _cluster_data(*args)
#     sm.OLS(x, np.ones(x.size)).fit(cov_type="cluster", cov_kwds={"groups": g}).bse[0]
#     x = _series(*args)
#     sm.OLS(x, np.ones(x.size)).fit(cov_type="HAC", cov_kwds={"maxlags": lag}).bse[0]
#
# printed with repr(float(...)). statsmodels' defaults: use_correction=True for cluster
# (G/(G-1) (N-1)/(N-K)), use_correction=False for HAC (no factor).

CLUSTER_ANSWERS = [
    ((0, 300, 7, True), 0.621754663627549),
    ((1, 1000, 50, False), 0.13633049924653431),
    ((2, 97, 2, True), 0.04009403522571067),
    ((3, 500, 120, True), 0.1846799701021643),
]
HAC_ANSWERS = [
    ((4, 400, 0.8), 0, 0.08575574806646084),
    ((4, 400, 0.8), 1, 0.11526254964060723),
    ((4, 400, 0.8), 5, 0.17671070422657156),
    ((4, 400, 0.8), 20, 0.2514816541039265),
    ((5, 1500, 0.3), 0, 0.026842526834353116),
    ((5, 1500, 0.3), 1, 0.031136083997000883),
    ((5, 1500, 0.3), 5, 0.035312303962984674),
    ((5, 1500, 0.3), 20, 0.03816960042220316),
]


def _cluster_data(seed: int, n: int, n_groups: int, unbalanced: bool
                  ) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    if unbalanced:
        weights = rng.exponential(size=n_groups)
        groups = rng.choice(n_groups, size=n, p=weights / weights.sum())
    else:
        groups = np.arange(n) % n_groups
    effect = rng.standard_normal(n_groups)
    x = effect[groups] + rng.standard_normal(n) * rng.uniform(0.5, 2.0, n)
    return x, groups


def _series(seed: int, n: int, rho: float) -> np.ndarray:
    rng = np.random.default_rng(seed)
    noise = rng.standard_normal(n)
    x = np.empty(n)
    x[0] = noise[0]
    for t in range(1, n):
        x[t] = rho * x[t - 1] + noise[t]
    return x + 3.0


@pytest.mark.parametrize(("args", "want"), CLUSTER_ANSWERS)
def test_cluster_se_of_a_mean_is_statsmodels(args, want):
    x, groups = _cluster_data(*args)
    se = np.sqrt(cluster_robust_cov(x, groups)[0, 0])
    assert se == pytest.approx(want, rel=1e-10)
    # labels of any kind that sort: the same groups as strings, and two columns at once
    both = cluster_robust_cov(np.stack([x, 2.0 * x], axis=1), groups.astype(str))
    assert np.sqrt(both[1, 1]) == pytest.approx(2.0 * want, rel=1e-10)


@pytest.mark.parametrize(("args", "lags", "want"), HAC_ANSWERS)
def test_hac_se_of_a_mean_is_statsmodels(args, lags, want):
    se = np.sqrt(hac_cov(_series(*args), lags)[0, 0])
    assert se == pytest.approx(want, rel=1e-10)


def test_newey_west_rule_and_the_default_lags():
    assert [newey_west_lags(n) for n in (2, 100, 5000, 10**6)] == [1, 4, 9, 30]
    x = _series(4, 400, 0.8)
    assert np.array_equal(hac_cov(x), hac_cov(x, newey_west_lags(400)))


def test_reference_errors():
    with pytest.raises(ValueError, match=r"^values: expected an \(n, k\) array"):
        cluster_robust_cov(np.ones((1, 2)), [0])
    with pytest.raises(ValueError, match=r"^groups: expected 3 labels"):
        cluster_robust_cov(np.ones(3), [0, 1])
    with pytest.raises(ValueError, match=r"^groups: .* at least 2 groups, got 1"):
        cluster_robust_cov(np.ones(3), [0, 0, 0])
    for lags in (-1, 3, 1.5, True):
        with pytest.raises(ValueError, match=r"^lags: expected an integer 0 <= lags < 3"):
            hac_cov(np.ones(3), lags)


# ----------------------------------------------------------------- one formula per statistic


def _columns(E: np.ndarray, uE: np.ndarray) -> dict[str, np.ndarray]:
    z = E / uE
    zd = z - np.mean(z)
    return {"e2": E * E, "u2": uE * uE, "z2": z * z, "lnu2": np.log(uE * uE), "zd": zd,
            "zd2": zd * zd}


def _reference(ds: xr.Dataset, keys, cov_of, df: float, level: float = 0.95) -> np.ndarray:
    """(statistic, 3) estimates and intervals from a NumPy covariance of the column means,
    through :func:`xuqcal.core.moments.covariance_interval` in plain units."""
    E, uE = ds.E.values, ds.uE.values
    columns = _columns(E, uE)
    names = moments.mean_columns(keys)
    cov_matrix = cov_of(np.stack([columns[c] for c in names], axis=1))
    means = {c: np.array(np.mean(columns[c])) for c in names}
    cov = {(a, b): np.array(cov_matrix[i, j]) for i, a in enumerate(names)
           for j, b in enumerate(names)}
    zero = {c: np.array(0) for c in ("e2", "u2", "z2", "lnu2", "zd")}
    out = []
    iid = xuqcal.reduce_statistics(ds, keys)
    for key in keys:
        estimate = iid.estimate.sel(statistic=key).values
        low, high = moments.covariance_interval(key, estimate, np.array(float(E.size)), means,
                                                cov, zero, level, np.array(df))
        out.append([estimate, low, high])
    return np.array(out, dtype=np.float64)


def test_covariance_interval_with_the_iid_covariance_is_the_analytic_interval():
    ds = xuqcal.synthetic.nig(5000, nu=6, seed=4)
    n = ds.sizes["sample"]
    iid = xuqcal.reduce_statistics(ds, MOMENTS)
    want = np.stack([iid.estimate, iid.ci_low, iid.ci_high], axis=-1)
    got = _reference(ds, MOMENTS, lambda x: np.cov(x, rowvar=False, ddof=1).reshape(
        x.shape[1], x.shape[1]) / n, n - 1.0)
    exact = [k != "zv" for k in MOMENTS]
    np.testing.assert_allclose(got[exact], want[exact], rtol=1e-9)
    # zv: the variance of <d²> instead of (m4 - m2² (M-3)/(M-1)) / M, equal to O(1/M)
    np.testing.assert_allclose(got[~np.array(exact)], want[~np.array(exact)], rtol=1e-3)


# ---------------------------------------------------------------------- out of core: data


def _grouped(n_groups: int, size: int, icc: float, seed: int, *,
             shuffle: bool = True) -> xr.Dataset:
    """Calibrated data, Z with intra-class correlation ``icc`` within groups (labels from
    1000), the points of a group consecutive in time unless ``shuffle``."""
    rng = np.random.default_rng(seed)
    n = n_groups * size
    groups = np.repeat(np.arange(n_groups), size)
    z = np.sqrt(icc) * rng.standard_normal(n_groups)[groups] \
        + np.sqrt(1.0 - icc) * rng.standard_normal(n)
    uE = rng.gamma(4.0, 0.25, n)
    order = rng.permutation(n) if shuffle else np.arange(n)
    return xr.Dataset({"E": ("sample", (z * uE)[order]), "uE": ("sample", uE[order]),
                       "structure_id": ("sample", groups[order] + 1000),
                       "time": ("sample", np.arange(n) * 0.5)})


DATA = _grouped(30, 20, 0.3, 7)  # 600 points, groups shuffled against time
SERIES = _grouped(30, 20, 0.3, 7, shuffle=False)  # the groups consecutive in time


def _zarr(ds: xr.Dataset, path, chunk: int) -> xr.Dataset:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zarr 3: consolidated metadata is not in the spec
        ds.chunk(sample=chunk).to_zarr(path)
        return xr.open_zarr(path)


def _values(result: xr.Dataset) -> np.ndarray:
    return np.stack([result.estimate, result.ci_low, result.ci_high], axis=-1)


@pytest.mark.parametrize(("se", "options"), [
    ("cluster", {"groups": "structure_id"}),
    ("hac", {"block": "time", "lags": 5}),
    ("hac", {"block": "time"}),
])
def test_out_of_core_is_bit_identical_for_any_chunking(tmp_path, se, options):
    pytest.importorskip("zarr")
    ds = SERIES if se == "hac" else DATA
    memory = xuqcal.reduce_statistics(ds, MOMENTS, se=se, **options)
    for chunk in (64, 251):
        lazy = xuqcal.reduce_statistics(_zarr(ds, tmp_path / f"{chunk}.zarr", chunk),
                                        MOMENTS, se=se, **options)
        assert lazy.estimate.chunks is not None  # nothing read before compute
        assert_results_identical(lazy.compute(), memory)
    assert np.array_equal(memory.estimate, xuqcal.reduce_statistics(ds, MOMENTS).estimate)
    # the same as the NumPy references, whose covariance sums in floating point
    n = ds.sizes["sample"]
    if se == "cluster":
        groups = ds.structure_id.values
        want = _reference(ds, MOMENTS, lambda x: cluster_robust_cov(x, groups),
                          np.unique(groups).size - 1.0)
        assert int(memory.n_groups) == 30
    else:
        lags = options.get("lags", newey_west_lags(n))
        want = _reference(ds, MOMENTS, lambda x: hac_cov(x, lags), n - 1.0)
        assert int(memory.lags) == lags == 5
        assert memory.attrs["lags"] == options.get("lags", memory.attrs["lags"])
    np.testing.assert_allclose(_values(memory), want, rtol=1e-10, atol=1e-14)
    assert memory.attrs["se"] == se


def test_iid_is_unchanged():
    chunked = DATA.chunk(sample=128)
    before = xuqcal.reduce_statistics(chunked, [*MOMENTS, "ence"], n_bins=4).compute()
    explicit = xuqcal.reduce_statistics(chunked, [*MOMENTS, "ence"], n_bins=4,
                                        se="iid").compute()
    assert_results_identical(explicit, before)
    assert before.attrs["se"] == "iid"
    assert "n_groups" not in before.coords and "lags" not in before.coords


def test_cluster_intervals_widen_with_a_random_effect_only():
    stats = ["zm", "zms", "rce"]
    dependent = _grouped(200, 50, 0.3, 11)
    iid = xuqcal.reduce_statistics(dependent, stats)
    robust = xuqcal.reduce_statistics(dependent, stats, se="cluster", groups="structure_id")
    assert np.array_equal(robust.estimate, iid.estimate)
    ratio = (robust.ci_high - robust.ci_low) / (iid.ci_high - iid.ci_low)
    assert float(ratio.sel(statistic="zms")) > 1.5
    assert float(ratio.sel(statistic="zm")) > 2.5
    independent = _grouped(1000, 10, 0.0, 12)
    iid = xuqcal.reduce_statistics(independent, stats)
    robust = xuqcal.reduce_statistics(independent, stats, se="cluster", groups="structure_id")
    ratio = (robust.ci_high - robust.ci_low) / (iid.ci_high - iid.ci_low)
    np.testing.assert_allclose(ratio, 1.0, atol=0.05)


def test_hac_intervals_widen_on_a_series():
    rng = np.random.default_rng(3)
    n = 3000
    z = np.empty(n)
    z[0] = rng.standard_normal()
    for t in range(1, n):
        z[t] = 0.8 * z[t - 1] + np.sqrt(1 - 0.64) * rng.standard_normal()
    ds = xr.Dataset({"E": ("sample", z), "uE": ("sample", np.ones(n)),
                     "time": ("sample", np.arange(n))})
    iid = xuqcal.reduce_statistics(ds, ["zm", "zms"])
    hac = xuqcal.reduce_statistics(ds, ["zm", "zms"], se="hac", block="time", lags=30)
    ratio = (hac.ci_high - hac.ci_low) / (iid.ci_high - iid.ci_low)
    assert (ratio > 1.5).all()


@pytest.mark.parametrize(("se", "options"), [
    ("cluster", {"groups": "structure_id"}),
    ("hac", {"block": "time"}),
])
def test_each_slice_is_the_slice_alone(se, options):
    other = _grouped(30, 20, 0.1, 8, shuffle=False)
    absent = np.zeros(600, dtype=bool)
    absent[::7] = True
    e2 = np.where(absent, np.nan, other.E.values)
    u2 = np.where(absent, np.nan, other.uE.values)
    ds = SERIES.assign(E=(("model", "sample"), np.stack([SERIES.E.values, e2])),
                       uE=(("model", "sample"), np.stack([SERIES.uE.values, u2])))
    ds = ds.assign_coords(model=["a", "b"])
    both = xuqcal.reduce_statistics(ds.chunk(sample=97, model=1), ["zms", "rce", "nll"], se=se,
                                    **options).compute()
    alone = [SERIES, other.assign(structure_id=SERIES.structure_id,
                                  time=SERIES.time).isel(sample=~absent)]
    for i, part in enumerate(alone):
        want = xuqcal.reduce_statistics(part, ["zms", "rce", "nll"], se=se, **options)
        assert np.array_equal(_values(both.isel(model=i)), _values(want))
    name = "n_groups" if se == "cluster" else "lags"
    assert both[name].dims == ("model",)
    if se == "hac":
        assert both.lags.values.tolist() == [newey_west_lags(600), newey_west_lags(514)]


# ------------------------------------------------------------------------------- errors


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"se": "robust"}, "^se: expected one of 'iid', 'cluster', 'hac', got 'robust'"),
    ({"groups": "structure_id"}, "^groups: only used with se='cluster'"),
    ({"block": "time"}, "^block: only used with se='cluster'"),
    ({"lags": 2}, "^lags: only used with se='cluster'"),
    ({"se": "cluster"}, "^groups: se='cluster' needs the variable"),
    ({"se": "cluster", "groups": "structure_id", "block": "time"},
     "^block: not used by se='cluster'"),
    ({"se": "cluster", "groups": "structure_id", "lags": 3}, "^lags: not used by se='cluster'"),
    ({"se": "cluster", "groups": "nothing"}, "^groups: no variable 'nothing' over sample"),
    ({"se": "cluster", "groups": "grid"}, "^groups: 'grid' must be a variable over sample "
                                          "alone"),
    ({"se": "hac", "groups": "structure_id"}, "^groups: not used by se='hac'"),
    ({"se": "hac"}, "^block: se='hac' needs the variable that orders the points"),
    ({"se": "hac", "block": "name"}, "^block: 'name' does not hold numbers or times"),
    ({"se": "hac", "block": "time", "lags": -1}, "^lags: expected an integer >= 0, got -1"),
    ({"se": "hac", "block": "time", "lags": 2.5}, "^lags: expected an integer >= 0"),
    ({"se": "hac", "block": "time", "lags": True}, "^lags: expected an integer >= 0"),
    ({"se": "hac", "block": "time", "lags": 600}, "^lags: 600 lags need more than 600 points, "
                                                  "and the data have 600"),
])
def test_argument_errors_before_any_work(kwargs, message):
    ds = DATA.assign(grid=(("sample", "x"), np.zeros((600, 2))),
                     name=("sample", np.array(["a"] * 600)))
    with pytest.raises(ValueError, match=message):
        xuqcal.reduce_statistics(ds.chunk(sample=100), ["zms"], **kwargs)


def test_errors_when_computed():
    one = DATA.assign(structure_id=("sample", np.zeros(600, dtype=int)))
    with pytest.raises(ValueError, match=r"^groups: 'structure_id' holds 1 group; "
                                         r"cluster-robust intervals need at least 2"):
        xuqcal.reduce_statistics(one.chunk(sample=100), ["zms"], se="cluster",
                                 groups="structure_id").compute()
    labels = DATA.structure_id.values.astype(float)
    labels[[250, 420]] = np.nan
    with pytest.raises(ValueError, match=r"^groups: 'structure_id' is missing at 2 point\(s\) "
                                         r"\(rows 250, 420\)"):
        xuqcal.reduce_statistics(DATA.assign(structure_id=("sample", labels)), ["zms"],
                                 se="cluster", groups="structure_id")
    time = DATA.time.values.copy()
    time[[130, 131]] = time[[131, 130]]  # inside a chunk
    with pytest.raises(ValueError, match=r"^block: the data are not in the order of 'time': "
                                         r"row 131 \(time = 65.0\) comes after time = 65.5"):
        xuqcal.reduce_statistics(DATA.assign(time=("sample", time)).chunk(sample=100), ["zms"],
                                 se="hac", block="time").compute()
    time = DATA.time.values.copy()
    time[[199, 200]] = time[[200, 199]]  # across two chunks, and a later problem too
    time[450] = -1.0
    with pytest.raises(ValueError, match=r"^block: .* row 200 \(time = 99.5\) comes after "
                                         r"time = 100.0\. Out of core, HAC takes the points in "
                                         r"the order of the data: sort them by 'time'"):
        xuqcal.reduce_statistics(DATA.assign(time=("sample", time)).chunk(sample=100), ["zms"],
                                 se="hac", block="time").compute()
    time = DATA.time.values.copy()
    time[300] = np.nan
    with pytest.raises(ValueError, match=r"^block: 'time' is missing \(NaN\) at 1 point\(s\) of "
                                         r"a chunk \(rows 300\)"):
        xuqcal.reduce_statistics(DATA.assign(time=("sample", time)), ["zms"], se="hac",
                                 block="time")
    few = DATA.assign(E=(("model", "sample"), np.stack([DATA.E.values, np.where(
        np.arange(600) < 10, DATA.E.values, np.nan)])),
        uE=(("model", "sample"), np.stack([DATA.uE.values, np.where(
            np.arange(600) < 10, DATA.uE.values, np.nan)])))
    with pytest.raises(ValueError, match=r"^lags: 20 lags need more than 20 points, and there "
                                         r"are 10 in model=1"):
        xuqcal.reduce_statistics(few, ["zms"], se="hac", block="time", lags=20)


def test_accumulators_too_large(monkeypatch):
    limit = outofcore.TASK_OVERHEAD_BYTES + 500_000
    monkeypatch.setattr(outofcore, "task_memory_limit", lambda: (limit, "a test limit"))
    many = DATA.assign(structure_id=("sample", np.arange(600)))
    with pytest.raises(DataTooLargeError, match=r"^groups: 600 groups of 'structure_id' × 1 "
                                                r"column"):
        xuqcal.reduce_statistics(many.chunk(sample=100), ["zms"], se="cluster",
                                 groups="structure_id").compute()
    with pytest.raises(DataTooLargeError, match=r"^lags: 400 lags of 1 column"):
        xuqcal.reduce_statistics(DATA.chunk(sample=100), ["zms"], se="hac", block="time",
                                 lags=400)
