"""Binning schemes: equal-count, strata, groups, 2-D grids, learned limits."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st

import xuqcal
from xuqcal.analysis import binning


def test_equal_count_positions_and_labels():
    x = np.array([3.0, 1.0, 2.0, 2.0, 5.0, 4.0, 2.0])
    bins = binning.equal_count(x, 3, by="x")
    # stable order: 1(1) 2(2) 2(3) 2(6) 3(0) 4(5) 5(4); bounds [0, 2, 4, 7]
    assert bins.bin_index.values.tolist() == [2, 0, 0, 1, 2, 2, 1]
    assert bins["count"].values.tolist() == [2, 2, 3]
    assert bins.bin_low.values.tolist() == [1.0, 2.0, 3.0]
    assert bins.bin_high.values.tolist() == [2.0, 2.0, 5.0]
    np.testing.assert_allclose(bins.bin_centre, [1.5, 2.0, 4.0])
    assert bins.attrs == {"scheme": "equal", "by": "x", "n_bins": 3}


def test_equal_count_tiebreak():
    x = np.array([1.0, 1.0, 1.0, 1.0])
    bins = binning.equal_count(x, 2, tiebreak=np.array([4.0, 3.0, 2.0, 1.0]))
    assert bins.bin_index.values.tolist() == [1, 1, 0, 0]


def test_min_count_reduces_the_number_of_bins():
    bins = binning.equal_count(np.arange(250.0), 10, min_count=100)
    assert bins.sizes["bin"] == 2
    assert bins.attrs["n_bins_requested"] == 10 and bins.attrs["min_count"] == 100


def test_strata_merging_rule():
    # values 1..6 with counts 5, 1, 2, 6, 1, 4 and min_count 3:
    # 2 (1 pt) merges with its smaller neighbour 3 (2 pts) -> value (2+6)/3, 3 pts;
    # 5 (1 pt) has neighbours 4 (6) and 6 (4): merges with 6 -> value (5+24)/5, 5 pts
    x = np.repeat([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], [5, 1, 2, 6, 1, 4])
    bins = binning.strata(x, min_count=3, by="x")
    assert bins["count"].values.tolist() == [5, 3, 6, 5]
    np.testing.assert_allclose(bins.bin_centre, [1.0, 8 / 3, 4.0, 29 / 5])
    assert bins.bin_low.values.tolist() == [1.0, 2.0, 4.0, 5.0]
    assert bins.bin_high.values.tolist() == [1.0, 3.0, 4.0, 6.0]


def test_strata_tie_goes_right_and_ends_merge_inwards():
    x = np.repeat([1.0, 2.0, 3.0], [1, 5, 1])  # first has only a right neighbour
    assert binning.strata(x, min_count=2)["count"].values.tolist() == [7]
    x = np.repeat([1.0, 2.0, 3.0], [4, 1, 4])  # equal neighbours: merge with the right one
    bins = binning.strata(x, min_count=2)
    assert bins["count"].values.tolist() == [4, 5]
    np.testing.assert_allclose(bins.bin_centre, [1.0, (2 + 12) / 5])


def test_strata_does_not_depend_on_data_order():
    rng = np.random.default_rng(0)
    x = rng.integers(0, 30, 2000).astype(float)
    a = binning.strata(x, min_count=80)
    perm = rng.permutation(x.size)
    b = binning.strata(x[perm], min_count=80)
    xr.testing.assert_equal(a.drop_vars("bin_index"), b.drop_vars("bin_index"))
    np.testing.assert_array_equal(a.bin_index.values[perm], b.bin_index.values)


@settings(max_examples=50, deadline=None)
@given(train=st.lists(st.floats(-100, 100), min_size=10, max_size=200),
       new=st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=100),
       n_bins=st.integers(1, 5))
def test_learned_limits_assign_every_new_point_exactly_once(train, new, n_bins):
    bins = binning.equal_count(np.array(train), n_bins)
    index = binning.apply_bins(bins, np.array(new))
    assert index.shape == (len(new),)
    assert ((0 <= index) & (index < n_bins)).all()
    # monotone in the value: a larger value never goes to an earlier bin
    order = np.argsort(new, kind="stable")
    assert (np.diff(index[order]) >= 0).all()
    # training points keep their bin unless tied across a boundary
    again = binning.apply_bins(bins, np.array(train))
    assert (again <= bins.bin_index.values).all()


def test_learned_limits_outside_the_training_range():
    bins = binning.equal_count(np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0]), 3)
    assert binning.apply_bins(bins, [-1e9, 2.5, 6.0, 1e9]).tolist() == [0, 1, 2, 2]


def test_strata_limits_apply_by_value():
    bins = binning.strata(np.repeat([1.0, 2.0, 3.0], [5, 1, 5]), min_count=3)
    assert binning.apply_bins(bins, [0.5, 1.0, 1.5, 2.0, 2.5, 9.0]).tolist() == \
        [0, 0, 1, 1, 1, 1]


def test_groups_and_unknown_labels():
    bins = binning.groups(np.array(["b", "a", "b"]), by="g")
    assert bins.label.values.tolist() == ["a", "b"]
    assert binning.apply_bins(bins, np.array(["a", "a", "b"])).tolist() == [0, 0, 1]
    with pytest.raises(ValueError, match="labels not seen"):
        binning.apply_bins(bins, np.array(["c"]))


def test_grid_cells_and_apply():
    rng = np.random.default_rng(3)
    x, y = rng.normal(size=400), rng.normal(size=400)
    g = binning.grid(x, y, 4, 5, by_x="x", by_y="y")
    assert g.sizes["bin"] == 20 and int(g["count"].sum()) == 400
    np.testing.assert_array_equal(binning.apply_bins(g, x, y), g.bin_index.values)
    np.testing.assert_array_equal(g.cell_x.values[g.bin_index.values],
                                  binning.equal_count(x, 4).bin_index.values)


def test_make_bins_from_a_dataset_and_errors():
    ds = xuqcal.synthetic.nig(500, nu=6, seed=0)
    ds = ds.assign(X=("sample", np.round(ds.uE.values, 1)))
    assert binning.make_bins(ds, "X", binning="strata", min_count=50).attrs["scheme"] == \
        "strata"
    assert binning.make_bins(ds, ("uE", "X"), n_bins=(2, 3), binning="grid").sizes["bin"] == 6
    with pytest.raises(ValueError, match="unknown scheme"):
        binning.make_bins(ds, "uE", binning="quantile")
    with pytest.raises(ValueError, match="'Y' is not in the dataset"):
        binning.make_bins(ds, "Y")
    with pytest.raises(ValueError, match="needs at least 2000 points"):
        binning.make_bins(ds, "uE", n_bins=1000)
    with pytest.raises(ValueError, match="min_count"):
        binning.strata(ds.uE.values, min_count=0)


def test_bins_round_trip_through_netcdf(tmp_path):
    bins = binning.equal_count(np.random.default_rng(1).normal(size=300), 7, by="uE")
    path = xuqcal.to_netcdf(bins, tmp_path / "bins.nc")
    with xr.open_dataset(path) as back:
        back = back.load()
    xr.testing.assert_identical(back, bins)
    new = np.linspace(-4, 4, 50)
    np.testing.assert_array_equal(binning.apply_bins(back, new), binning.apply_bins(bins, new))


@settings(max_examples=200, deadline=None)
@given(m=st.integers(1, 5000), n_bins=st.integers(1, 500))
def test_points_per_bin_are_the_sizes_of_the_equal_count_bounds(m, n_bins):
    """The warning's closed form (xuqcal.core.binning.points_per_bin) is the fewest and most
    points of the bins that equal_count_bounds makes: the rule and the bins cannot drift."""
    from xuqcal.core.binning import points_per_bin

    if m < binning.MIN_POINTS_PER_BIN * n_bins:  # equal_count_bounds refuses these
        return
    sizes = np.diff(binning.equal_count_bounds(m, n_bins))
    assert points_per_bin(m, n_bins) == (int(sizes.min()), int(sizes.max()))


_SORT_VALUES = st.sampled_from([0.0, -0.0, 5e-324, 1e-300, 0.5, 1.0, 1.0 + 2**-52, 2.0, 1e300,
                                np.inf, np.nan, -1.0])


def _numpy_order(values):
    order = np.argsort(values, kind="stable")
    tie = np.zeros(values.shape[0], np.bool_)
    tie[1:] = values[order][1:] == values[order][:-1]
    return order, tie


@settings(max_examples=200, deadline=None)
@given(st.lists(_SORT_VALUES, min_size=1, max_size=40))
def test_stable_order_is_numpy_s_stable_argsort(listed):
    """The radix sort of the data preparation gives NumPy's stable permutation (ties in row
    order) and the tie flags of the sorted values, and NumPy's own sort takes the values it
    cannot (NaN, negatives, -0.0)."""
    from xuqcal.core import binning as core_binning

    values = np.array(listed)
    saved = core_binning.RADIX_ARGSORT_FROM
    core_binning.RADIX_ARGSORT_FROM = 1  # the radix sort even for a few values
    try:
        order, tie = core_binning.stable_order(values)
    finally:
        core_binning.RADIX_ARGSORT_FROM = saved
    expected_order, expected_tie = _numpy_order(values)
    np.testing.assert_array_equal(order, expected_order)
    np.testing.assert_array_equal(tie, expected_tie)
    assert order.dtype == np.int64


def test_stable_order_of_millions_with_long_runs_of_ties():
    """Runs of equal keys longer than the radix sort's insertion runs, and keys spanning
    more than 32 bits (its full-key fix-up of the runs)."""
    from xuqcal.core.binning import stable_order

    rng = np.random.default_rng(5)
    values = np.concatenate([
        np.repeat(rng.uniform(0.0, 1.0, 200), 700),  # 200 runs of 700 equal values
        np.exp(rng.uniform(-700.0, 700.0, 60_000)),  # a span of 2^2000
        np.zeros(500)])[rng.permutation(200 * 700 + 60_500)]
    order, tie = stable_order(values)
    expected_order, expected_tie = _numpy_order(values)
    np.testing.assert_array_equal(order, expected_order)
    np.testing.assert_array_equal(tie, expected_tie)
