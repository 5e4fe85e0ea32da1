"""Out-of-core statistics (issue 14, item 4): exact chunk-wise sums, analytic intervals, exact
quantile edges, the refusal of data too large for one task, and chunked NetCDF/Zarr input."""

from __future__ import annotations

import math
import warnings

import dask
import dask.array as da
import numpy as np
import pytest
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special, stats

import xuqcal
from xuqcal.analysis import outofcore
from xuqcal.core import exact as X
from xuqcal.core import kernels as K
from xuqcal.core import memory
from xuqcal.core.intervals import student_interval
from xuqcal.core.statistics import STATISTICS, PreparedData, point_columns
from xuqcal.testing import assert_results_identical, count_computes
from xuqcal.testing.strategies import chunkings

MOMENTS = ["mse", "rmse", "mv", "rmv", "zm", "zms", "zv", "rce", "nll"]
BINNED = ["ence", "uce", "zmse"]
ALL = MOMENTS + BINNED
EPS = np.finfo(np.float64).eps


def _data(m: int, seed: int) -> xr.Dataset:
    ds = xuqcal.synthetic.nig(m, nu=6, seed=seed)
    return ds.assign(X=("sample", np.random.default_rng(seed).standard_normal(m)))


DATA = _data(600, 3)  # continuous uE and X: no ties


def _identical(a: xr.Dataset, b: xr.Dataset) -> None:
    assert_results_identical(a.drop_attrs(), b.drop_attrs())


# ------------------------------------------------------------------------------- exact sums


def _accumulate(values: np.ndarray, carry_every: int = X.CARRY_EVERY) -> np.ndarray:
    acc = X.new_accumulators(1, 1)
    X.sum_columns(X.as_bits(values.reshape(1, 1, -1)), np.ones((1, values.size), bool), acc,
                  carry_every)
    return acc


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False, min_value=-1e300,
                          max_value=1e300) | st.sampled_from([5e-324, -5e-324, 1e-310]),
                min_size=1, max_size=60), st.data())
def test_exact_sums_are_math_fsum_for_any_cut(values, data):
    values = np.array(values)
    expected = math.fsum(values)
    assert X.exact_sum(values) == expected
    cuts = data.draw(chunkings(values.size))
    merged = X.new_accumulators(1, 1)
    start = 0
    for size in cuts:
        X.merge(merged, _accumulate(values[start:start + size]))
        start += size
    assert X.rounded(merged)[0, 0] == expected
    assert X.rounded(_accumulate(values, carry_every=1))[0, 0] == expected


def test_exact_sums_of_extreme_cancellation_and_non_finite_values():
    values = np.array([1e308, 1e308, -1e308, -1e308, 2.0**-1074, 3.0, -3.0] * 5)
    assert X.exact_sum(values) == 5 * 2.0**-1074
    assert X.exact_sum(np.array([2.0**1023, -(2.0**1023), 1.0])) == 1.0
    assert X.exact_sum(np.array([1e16, 1.0, -1e16])) == 1.0  # naive summation gives 0
    assert np.isnan(X.exact_sum(np.array([1.0, np.inf])))


def test_sort_keys_order_values_like_floats_and_integers():
    x = np.array([-np.inf, -1e300, -2.5, -5e-324, -0.0, 0.0, 5e-324, 1.0, 1e300, np.inf])
    keys = X.sort_keys(x)
    assert np.all(keys[:-1].astype(object) <= keys[1:].astype(object))
    assert keys[4] == keys[5]  # -0.0 == 0.0
    np.testing.assert_array_equal(X.key_values(keys, x.dtype), x + 0.0)
    i = np.array([-5, -1, 0, 3], dtype=np.int32)
    assert np.all(np.diff(X.sort_keys(i).astype(object)) > 0)
    np.testing.assert_array_equal(X.key_values(X.sort_keys(i), i.dtype), i)


@pytest.mark.parametrize("cap", [1 << 14, 16, 1])
def test_selection_finds_exact_order_statistics(monkeypatch, cap):
    """Gathered ranges, histogram passes (a small GATHER_CAP forces them), ties and several
    rows: the keys found are np.sort's, whatever the blocks."""
    monkeypatch.setattr(X, "GATHER_CAP", cap)
    rng = np.random.default_rng(cap)
    for x in (rng.standard_normal((3, 500)), np.round(rng.standard_normal((2, 700)), 1),
              np.exp(50 * rng.standard_normal((1, 300)))):
        n_bins = 7
        keys = X.sort_keys(x)
        s = X.Selection.start(keys.min(1), keys.max(1), np.full(x.shape[0], x.shape[1]),
                              n_bins)
        rows = np.arange(x.shape[0])
        for _ in range(4):
            seen: dict = {}
            for part in np.array_split(np.arange(x.shape[1]), 3):
                seen = X.Selection.combine(seen, s.block(keys[:, part],
                                                         np.ones((x.shape[0], part.size), bool),
                                                         rows))
            s = s.advance(seen) if not s.done.all() else s
        want = np.sort(x, axis=1)[:, (np.arange(1, n_bins) * x.shape[1]) // n_bins]
        np.testing.assert_array_equal(X.key_values(s.edges(), x.dtype), want)


# --------------------------------------------------------------------- chunking independence


@settings(max_examples=12, deadline=None)
@given(chunkings(DATA.sizes["sample"], max_chunks=7), st.sampled_from(["uE", "X"]))
def test_any_chunking_gives_the_same_bits(chunks, by):
    reference = outofcore.reduce_statistics(DATA, ALL, n_bins=6, by=by)
    lazy = DATA.chunk(sample=chunks)
    _identical(outofcore.reduce_statistics(lazy, ALL, n_bins=6, by=by).compute(), reference)


def test_chunks_1000_and_137_and_numpy_are_identical():
    ds = _data(3000, 4)
    results = [xuqcal.reduce_statistics(ds.chunk(sample=c), ALL).compute()
               for c in (1000, 137)]
    results.append(xuqcal.reduce_statistics(ds, ALL))
    _identical(results[0], results[1])
    _identical(results[0], results[2])
    assert not any(v.chunks for v in results[2].variables.values())  # NumPy: computed


def test_histogram_passes_and_ties_in_a_large_set_are_chunk_independent():
    """More points than GATHER_CAP: the edges come from histogram passes; with few distinct
    values (ties) from the gathered distinct keys."""
    ds = _data(X.GATHER_CAP + 4000, 5)
    ds["T"] = ("sample", np.round(ds.X.values, 1))
    for by in ("uE", "T"):
        a = xuqcal.reduce_statistics(ds.chunk(sample=7001), BINNED, by=by).compute()
        b = xuqcal.reduce_statistics(ds.chunk(sample=2500), BINNED, by=by).compute()
        _identical(a, b)
        values = np.sort(ds[by].values)
        m = values.size
        np.testing.assert_array_equal(a.bin_edge, values[(np.arange(1, 20) * m) // 20])


# ----------------------------------------------------------------- exact sums: brute force


def _fsum_statistics(E: np.ndarray, uE: np.ndarray, keys, n_bins: int, by=None) -> np.ndarray:
    """Each statistic from math.fsum of its per-point columns, finished by the registry."""
    m = E.size
    z_shift = math.fsum(E / uE) / m
    columns = point_columns(E, uE, K.COLUMNS, z_shift=z_shift)
    sums = {c: math.fsum(v) for c, v in columns.items()}
    sums.update(count=float(m), z_shift=z_shift)
    order = np.argsort(uE if by is None else by, kind="stable")
    bounds = (np.arange(n_bins + 1) * m) // n_bins
    bin_sums = {c: np.array([[math.fsum(columns[c][order[bounds[b]:bounds[b + 1]]])
                              for b in range(n_bins)]]) for c in ("e2", "u2", "z2")}
    bin_sums["count"] = np.diff(bounds)[np.newaxis].astype(float)
    return np.array([float(np.asarray(STATISTICS[k].from_sums(sums)))
                     if STATISTICS[k].kind == "moment"
                     else float(STATISTICS[k].from_bin_sums(bin_sums)[0]) for k in keys])


@pytest.mark.parametrize("by", ["uE", "X"])
def test_estimates_equal_the_registry_on_math_fsum_sums(by):
    result = xuqcal.reduce_statistics(DATA.chunk(sample=111), ALL, n_bins=6, by=by).compute()
    want = _fsum_statistics(DATA.E.values, DATA.uE.values, ALL, 6,
                            None if by == "uE" else DATA.X.values)
    np.testing.assert_array_equal(result.estimate.values, want)


def test_estimates_agree_with_in_memory_stats_to_rounding():
    """xuqcal.stats sums in floating point: |difference| <= 4 M eps times the size of the
    summed terms (a missing or extra point would differ by ~1/M)."""
    ds = _data(2000, 6)
    E, uE = ds.E.values, ds.uE.values
    z = E / uE
    m = E.size
    result = xuqcal.reduce_statistics(ds, ALL, n_bins=10)
    memory_values = xuqcal.stats(ds, ALL, n_bins=10)
    scale = {"mse": np.mean(E**2), "rmse": np.sqrt(np.mean(E**2)), "mv": np.mean(uE**2),
             "rmv": np.sqrt(np.mean(uE**2)), "zm": np.mean(np.abs(z)), "zms": np.mean(z**2),
             "zv": np.mean(z**2), "rce": 1.0,
             "nll": 0.5 * (np.mean(z**2) + np.mean(np.abs(np.log(uE**2))) + np.log(2 * np.pi)),
             "ence": 1.0, "uce": np.mean(E**2) + np.mean(uE**2), "zmse": 1.0}
    for key in ALL:
        got = float(result.estimate.sel(statistic=key))
        want = float(memory_values.sel(statistic=key))
        assert abs(got - want) <= 4 * m * EPS * scale[key], key


def test_edges_without_ties_give_the_in_memory_equal_count_bins():
    m, n_bins = DATA.sizes["sample"], 7
    result = xuqcal.reduce_statistics(DATA, BINNED, n_bins=n_bins)
    edges = result.bin_edge.values
    x = DATA.uE.values
    counts = np.bincount(np.searchsorted(edges, x, side="right"), minlength=n_bins)
    np.testing.assert_array_equal(counts, np.diff((np.arange(n_bins + 1) * m) // n_bins))
    memory_values = xuqcal.stats(DATA, BINNED, n_bins=n_bins)
    np.testing.assert_allclose(result.estimate, memory_values, rtol=64 * EPS, atol=0)


def test_ties_at_an_edge_go_to_the_upper_bin():
    """40 points, 4 bins: the 6 points uE = 2 straddle the equal-count boundary at position 10.
    Out of core they all go to bin 1 (edge_1 = 2 <= x); in memory 4 stay in bin 0."""
    rng = np.random.default_rng(0)
    uE = np.concatenate([np.linspace(1.0, 1.9, 6), np.full(6, 2.0), np.linspace(2.1, 5.0, 28)])
    rng.shuffle(uE)
    E = uE * rng.standard_normal(40)
    ds = xuqcal.from_arrays(E, uE)
    result = xuqcal.reduce_statistics(ds, BINNED, n_bins=4)
    edges = result.bin_edge.values
    assert edges[0] == 2.0
    counts = np.bincount(np.searchsorted(edges, uE, side="right"), minlength=4)
    np.testing.assert_array_equal(counts, [6, 14, 10, 10])  # in memory: 10 in each
    bins = np.searchsorted(edges, uE, side="right")
    columns = point_columns(E, uE, ("e2", "u2", "z2"))
    bin_sums = {c: np.array([[math.fsum(columns[c][bins == b]) for b in range(4)]])
                for c in columns}
    bin_sums["count"] = counts[np.newaxis].astype(float)
    want = [float(STATISTICS[k].from_bin_sums(bin_sums)[0]) for k in BINNED]
    np.testing.assert_array_equal(result.estimate.values, want)
    assert not np.allclose(result.estimate.values, xuqcal.stats(ds, BINNED, n_bins=4).values)


def test_a_tie_group_spanning_a_bin_leaves_it_empty_with_a_warning():
    uE = np.concatenate([np.full(30, 1.0), np.linspace(2.0, 3.0, 10)])
    ds = xuqcal.from_arrays(np.linspace(-1.0, 1.0, 40), uE)
    with pytest.warns(xuqcal.UndefinedStatisticWarning, match=r"ence is undefined: bins 0, 1 "
                      r"hold no point: a tie group"):
        result = xuqcal.reduce_statistics(ds, ["ence"], n_bins=4)
    assert np.isnan(result.estimate.values[0])


# -------------------------------------------------------------------------------- intervals


def test_intervals_equal_brute_force_formulas():
    ds = _data(1500, 8)
    E, uE = ds.E.values, ds.uE.values
    z, e2, u2 = E / uE, E**2, uE**2
    m = E.size
    level = 0.9
    result = xuqcal.reduce_statistics(ds.chunk(sample=400), MOMENTS, level=level).compute()
    q = special.ndtri((1 + level) / 2)
    want = {}
    for key, values in (("mse", e2), ("mv", u2), ("zm", z), ("zms", z**2),
                        ("nll", 0.5 * (z**2 + np.log(u2) + np.log(2 * np.pi)))):
        want[key] = student_interval(values, level)[1:]
    for key, values in (("rmse", e2), ("rmv", u2)):
        root = np.sqrt(values.mean())
        se = values.std(ddof=1) / np.sqrt(m) / (2 * root)
        want[key] = (root - q * se, root + q * se)
    a, b = e2.mean(), u2.mean()
    cov = np.cov(e2, u2, ddof=1)
    gradient = np.array([-1 / (2 * np.sqrt(a * b)), np.sqrt(a) / (2 * b**1.5)])
    rce = 1 - np.sqrt(a / b)
    se = np.sqrt(gradient @ cov @ gradient / m)
    want["rce"] = (rce - q * se, rce + q * se)
    s2 = z.var(ddof=1)
    m2, m4 = np.mean((z - z.mean()) ** 2), np.mean((z - z.mean()) ** 4)
    se = np.sqrt((m4 - m2**2 * (m - 3) / (m - 1)) / m)  # Cho's eq. 1, ErrViewLib's plug-in
    want["zv"] = (s2 - q * se, s2 + q * se)
    for key in MOMENTS:
        got = result.sel(statistic=key)
        np.testing.assert_allclose([got.ci_low, got.ci_high], want[key], rtol=1e-11, err_msg=key)
    assert result.interval.values.tolist() == ["student", "delta", "student", "delta",
                                               "student", "student", "delta", "delta",
                                               "student"]


def test_the_zv_interval_is_var_z_interval_s_cho_interval():
    """One Cho formula: the out-of-core ``zv`` interval (central sums chunk by chunk) and
    ErrViewLib's ``varZCI`` port (:func:`xuqcal.var_z_interval`, method "cho") give the same
    interval of Var(Z), as do their 1/SD(Z) forms (``zisd``; ``inverse=True``). They used two
    plug-ins (s⁴ against m2², a difference of order 1/M in the SE): with the former the bounds
    here differed by 2.1e-4 relative, far outside the tolerance."""
    ds = _data(400, 3)
    for key, inverse in (("zv", False), ("zisd", True)):
        chunked = xuqcal.reduce_statistics(ds.chunk(sample=150), [key]).compute()
        cho = xuqcal.var_z_interval(ds, inverse=inverse)
        got = [float(chunked.sel(statistic=key)[v]) for v in ("estimate", "ci_low", "ci_high")]
        want = [float(cho[v]) for v in ("value", "ci_low", "ci_high")]
        np.testing.assert_allclose(got, want, rtol=1e-12, err_msg=key)


def test_intervals_cover_the_truth_at_the_level():
    """1000 calibrated NIG sets (in the population RCE = 0 and, D being normal, <Z²> = Var(Z)
    = 1), reduced in one call over ``replicate``: the coverage of the 95 % intervals (delta
    for rce and zv, Student for zms) is 0.95 within 3 binomial standard deviations."""
    n_sets, level = 1000, 0.95
    sets = [xuqcal.synthetic.nig(1000, nu=20, seed=11, replicate=r) for r in range(n_sets)]
    result = xuqcal.reduce_statistics(xr.concat(sets, dim="replicate"), ["rce", "zms", "zv"],
                                      level=level)
    truth = xr.DataArray([0.0, 1.0, 1.0], coords={"statistic": ["rce", "zms", "zv"]})
    coverage = ((result.ci_low <= truth) & (truth <= result.ci_high)).mean("replicate")
    tolerance = 3 * math.sqrt(level * (1 - level) / n_sets)
    assert (abs(coverage - level) <= tolerance).all(), coverage.values


# --------------------------------------------------------------------- extra dims, laziness


def test_extra_dimensions_are_reduced_slice_by_slice():
    sets = [_data(m, s) for m, s in ((500, 1), (380, 2), (450, 3))]
    stacked = xr.concat(sets, dim="model", join="outer").assign_coords(model=["a", "b", "c"])
    lazy = stacked.chunk(model=2, sample=170)
    result = xuqcal.reduce_statistics(lazy, ALL, n_bins=5, by="X").compute()
    assert result.estimate.dims == ("model", "statistic")
    assert result.n_samples.values.tolist() == [500, 380, 450]
    for label, ds in zip("abc", sets, strict=True):
        alone = xuqcal.reduce_statistics(ds, ALL, n_bins=5, by="X")
        _identical(result.sel(model=label).drop_vars(["model", "n_samples"]), alone)


def test_dask_input_is_lazy_and_numpy_input_is_computed():
    lazy = DATA.chunk(sample=200)
    with count_computes() as computes:
        result = DATA.uqcal.reduce_statistics(["zms", "ence"])
        pending = lazy.uqcal.reduce_statistics(["zms", "ence"])
    assert computes.count == 1  # the NumPy-backed call only
    assert all(pending[v].chunks is not None for v in ("estimate", "ci_low", "bin_edge"))
    _identical(pending.compute(), result)
    assert result.attrs["summation"] == "exact sums: correctly rounded, independent of chunking"
    assert result.attrs["n_samples"] == 600 and result.attrs["n_bins"] == 20


def test_each_pass_reads_the_chunks_again_instead_of_holding_them():
    """Every pass is bound to the previous one's result: a chunk is read once per pass that
    needs it (a reduction that kept the chunks between passes would read each once)."""
    reads = {"E": 0, "uE": 0}

    def reader(name):
        def read(block):
            reads[name] += block.size > 0  # not the empty block of Dask's meta inference
            return block
        return read

    n_chunks = 5
    for statistics, u_passes in ((["zms", "rce"], 2), (["zms", "ence"], 2 + outofcore.EDGE_PASSES)):
        reads.update(E=0, uE=0)
        ds = DATA.assign({name: ("sample", da.from_array(DATA[name].values, chunks=120)
                                 .map_blocks(reader(name), dtype=float)) for name in reads})
        with dask.config.set(scheduler="sync"):
            xuqcal.reduce_statistics(ds, statistics).compute()
        assert reads == {"E": 2 * n_chunks, "uE": u_passes * n_chunks}  # checks, (edges,) sums


# ------------------------------------------------------------------------ errors and checks


def test_cc_is_refused_with_the_reason():
    with pytest.raises(ValueError, match=r"^statistics: cc cannot be reduced out of core: a rank "
                       r"correlation needs the ranks of all the points.*use xuqcal.stats"):
        xuqcal.reduce_statistics(DATA, ["zms", "cc"])
    result = xuqcal.reduce_statistics(DATA, None)
    assert result.statistic.values.tolist() == ALL


def test_bad_values_are_named_with_their_rows_when_computed():
    bad = DATA.copy(deep=True)
    bad["uE"][[5, 17]] = -1.0
    with pytest.raises(ValueError, match=r"^uE: 2 of 600 values are not positive \(rows 5, 17\)$"):
        xuqcal.reduce_statistics(bad, ["zms"])
    bad["E"][3] = np.nan
    lazy = bad.chunk(sample=100)
    with count_computes() as computes:
        pending = xuqcal.reduce_statistics(lazy, ["zms"])
    assert computes.count == 0
    with pytest.raises(ValueError, match=r"invalid input data \(2 problems\):\n  E: 1 of 600 "
                       r"values are NaN \(rows 3\)\n  uE: 2 of 600 values are not positive"):
        pending.compute()
    labelled = DATA.copy(deep=True).assign_coords(sample=np.arange(600) + 1000)
    labelled["X"][[7]] = np.inf
    with pytest.raises(ValueError, match=r"^by: the binning variable 'X' has 1 of 600 values NaN "
                       r"or infinite \(rows 1007\)"):
        xuqcal.reduce_statistics(labelled.chunk(sample=250), ["ence"], by="X").compute()


def test_bad_values_of_a_slice_start_with_its_labels():
    stacked = xr.concat([DATA, DATA], dim="model").assign_coords(model=["a", "b"])
    stacked["uE"][1, 9] = 0.0
    with pytest.raises(ValueError, match=r"^model='b': uE: 1 of 600 values are not positive "
                       r"\(rows 9\)"):
        xuqcal.reduce_statistics(stacked.chunk(sample=100), ["zms"]).compute()
    stacked = xr.concat([DATA, DATA.isel(sample=slice(0, 30))], dim="model",
                        join="outer").assign_coords(model=["a", "b"])
    with pytest.raises(ValueError, match=r"^model='b': n_bins: n_bins=20 needs at least 40 "
                       r"points"):
        xuqcal.reduce_statistics(stacked, ["ence"])


def test_argument_errors_before_any_computation():
    lazy = DATA.chunk(sample=100)
    with count_computes() as computes:
        with pytest.raises(ValueError, match=r"^E: the dataset has no variable 'err'"):
            xuqcal.reduce_statistics(lazy, E="err")
        with pytest.raises(ValueError, match=r"^level: expected a confidence level"):
            xuqcal.reduce_statistics(lazy, level=95)
        with pytest.raises(ValueError, match=r"^by: the binning variable 'Y' is not in"):
            xuqcal.reduce_statistics(lazy, ["ence"], by="Y")
        with pytest.raises(ValueError, match=r"^n_bins: n_bins=400 needs at least 800 points"):
            xuqcal.reduce_statistics(lazy, ["ence"], n_bins=400)
    assert computes.count == 0


# --------------------------------------------------------------------- data too large for a task


def test_prepared_data_bytes_per_point_match_its_arrays():
    prepared = PreparedData.from_arrays(DATA.E.values, DATA.uE.values)
    held = sum(value.nbytes for value in vars(prepared).values()
               if isinstance(value, np.ndarray))
    assert held == memory.PREPARED_BYTES_PER_POINT * prepared.size
    assert memory.TASK_BYTES_PER_POINT > memory.PREPARED_BYTES_PER_POINT


def test_data_too_large_for_the_option_limit():
    with xuqcal.set_options(task_memory_limit=10**6):
        assert memory.check_fits_in_one_task(5000, 199, "bootstrap") == 995_000
        with pytest.raises(xuqcal.DataTooLargeError, match=r"^local: 6,000 points need about "
                           r"1.19 MB in one task \(199 bytes per point\), more than the 1 MB one "
                           r"task may use \(the option task_memory_limit\).*reduce_statistics"):
            memory.check_fits_in_one_task(6000, 199, "local")
    with pytest.raises(ValueError, match=r"^task_memory_limit: expected bytes one task"):
        xuqcal.set_options(task_memory_limit=0)
    assert issubclass(xuqcal.DataTooLargeError, MemoryError)
    with pytest.raises(ValueError, match=r"^n_points: expected a non-negative integer"):
        memory.check_fits_in_one_task(1.5, 199, "bootstrap")


def test_data_too_large_for_the_smallest_worker():
    from distributed import Client, LocalCluster

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cluster = LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                               memory_limit="50MB", dashboard_address=None)
        client = Client(cluster)
    try:
        assert memory.task_memory_limit()[0] == 50_000_000
        assert memory.check_fits_in_one_task(100_000, 199, "bootstrap") == 19_900_000
        with pytest.raises(xuqcal.DataTooLargeError, match=r"^bootstrap: 1,000,000 points need "
                           r"about 199 MB in one task.*more than the 50 MB one task may use "
                           r"\(the smallest memory_limit of the 1 dask.distributed worker"):
            memory.check_fits_in_one_task(10**6, 199, "bootstrap")
    finally:
        client.close()
        cluster.close()
    assert "psutil" in memory.task_memory_limit()[1]


# ----------------------------------------------------------------------- NetCDF and Zarr input


def test_zarr_store_round_trip(tmp_path):
    pytest.importorskip("zarr")
    store = tmp_path / "x.zarr"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zarr 3: consolidated metadata is not in the spec
        DATA.chunk(sample=150).to_zarr(store)
        opened = xuqcal.open_dataset(store, chunks={"sample": 200})
        plain = xr.open_zarr(store)
    assert opened.E.chunks == ((200, 200, 200),)
    assert opened.E.attrs["xuqcal_role"] == "E"
    want = xuqcal.reduce_statistics(DATA, ALL, n_bins=5)
    _identical(xuqcal.reduce_statistics(opened, ALL, n_bins=5).compute(), want)
    _identical(xuqcal.reduce_statistics(plain, ALL, n_bins=5).compute(), want)


def test_netcdf_opened_lazily_in_chunks(tmp_path):
    path = xuqcal.to_netcdf(DATA, tmp_path / "x.nc")
    lazy = xuqcal.open_dataset(path, chunks={"sample": 250})
    assert lazy.E.chunks == ((250, 250, 100),)
    loaded = xuqcal.open_dataset(path)
    assert loaded.E.chunks is None
    _identical(xuqcal.reduce_statistics(lazy, ALL).compute(),
               xuqcal.reduce_statistics(loaded, ALL))
    with pytest.raises(ValueError, match=r"^chunks: expected None, an integer"):
        xuqcal.open_dataset(path, chunks=1.5)


def test_student_quantile_is_scipy_t(monkeypatch):
    """The interval of zm on four points is the textbook one (t with 3 degrees of freedom)."""
    ds = xuqcal.from_arrays([0.5, -1.0, 2.0, 0.0], [1.0, 1.0, 1.0, 1.0])
    result = xuqcal.reduce_statistics(ds, ["zm"])
    z = np.array([0.5, -1.0, 2.0, 0.0])
    half = stats.t.ppf(0.975, 3) * z.std(ddof=1) / 2
    np.testing.assert_allclose([result.ci_low[0], result.ci_high[0]],
                               [z.mean() - half, z.mean() + half], rtol=1e-14)


def test_analyses_needing_one_task_refuse_data_too_large_before_any_work(monkeypatch):
    # bootstrap, simulate and validate prepare all the points in one task: refused at the
    # call (no graph is built, nothing computed), naming the analysis and the remedy
    from xuqcal.analysis import resampling

    def never(*args, **kwargs):
        raise AssertionError("data were prepared")

    monkeypatch.setattr(resampling.PreparedData, "from_arrays", never)
    # 10**6 points need about 200 MB in one task; the replicates of these counts, and a task
    # of the out-of-core reduction (a chunk and its temporaries), fit in 100 MB
    ds = xuqcal.synthetic.nig(10**6, nu=6, seed=0).chunk(sample=10**5)
    with xuqcal.set_options(task_memory_limit=100 * 10**6):
        for call, name in ((lambda: xuqcal.bootstrap(ds, ["zms"], n_boot=100), "bootstrap"),
                           (lambda: xuqcal.simulate(ds, ["cc"], n_mc=100), "simulate"),
                           (lambda: xuqcal.validate(ds, ["zms", "cc"], n_boot=100, n_mc=100),
                            "bootstrap"),
                           (lambda: xuqcal.validate(ds, ["zms"], n_boot="auto"), "validate")):
            with pytest.raises(xuqcal.DataTooLargeError,
                               match=rf"^{name}: 1,000,000 points need about .*"
                                     r"xuqcal\.reduce_statistics"):
                call()
        # the out-of-core reduction of the same data is not refused
        result = xuqcal.reduce_statistics(ds, ["zms"]).compute()
    assert np.isfinite(result.estimate.values).all()
