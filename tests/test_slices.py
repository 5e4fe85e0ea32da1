"""Many data sets in one call (issue 13): every analysis broadcasts over the extra dimensions of
its data and over the nodes of a DataTree; each slice is bit-identical to the same analysis of
that slice alone (its absent points, E and uE both NaN, dropped)."""

from __future__ import annotations

import functools
import warnings

import dask
import numpy as np
import pandas as pd
import pytest
import xarray as xr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import xuqcal
from xuqcal import recalibration
from xuqcal.analysis import slices
from xuqcal.testing import assert_lazy_until_compute, assert_slice_identical
from xuqcal.testing.strategies import chunkings

SETS = range(1, 10)
VALIDATE = {"statistics": ["zms", "cc", "ence", "zmse"], "n_boot": 100, "n_mc": 100,
            "n_bins": 20}


@pytest.fixture(autouse=True)
def _quiet():
    # small n_boot and few points per bin on purpose: the warnings are not under test here
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", xuqcal.DegenerateIntervalWarning)
        warnings.simplefilter("ignore", UserWarning)
        yield


@pytest.fixture(scope="module")
def nine(load_set):
    """The nine shared sets, and the same stacked along ``dataset`` (ragged: NaN-padded)."""
    sets = {f"set{k}": load_set(k) for k in SETS}
    stacked = xr.concat(list(sets.values()), dim="dataset", join="outer").assign_coords(
        dataset=list(sets))
    return sets, stacked


def _analyses():
    return {
        "validate": lambda d: xuqcal.validate(d, **VALIDATE),
        "bootstrap": lambda d: xuqcal.bootstrap(d, ["zms", "ence"], n_boot=100),
        "local": lambda d: xuqcal.local(d, "zms", n_bins=10, n_boot=100),
        "scores": lambda d: recalibration.scores(d, features=()),
    }


@pytest.mark.parametrize("name", list(_analyses()))
def test_nine_sets_stacked_equal_single_calls(nine, name):
    sets, stacked = nine
    assert int(stacked.sizes["sample"]) == max(d.sizes["sample"] for d in sets.values())
    analysis = _analyses()[name]
    result = analysis(stacked)
    assert next(iter(result.dims)) == "dataset"
    assert result.n_samples.values.tolist() == [d.sizes["sample"] for d in sets.values()]
    for label, ds in sets.items():
        assert_slice_identical(result, analysis(ds), dataset=label)


@pytest.mark.parametrize("name", ["validate", "local"])
def test_nine_sets_as_a_datatree_equal_single_calls(nine, name):
    sets, _ = nine
    tree = xr.DataTree.from_dict({f"/{label}": ds for label, ds in sets.items()})
    analysis = _analyses()[name]
    result = analysis(tree)
    assert result.dataset.values.tolist() == [f"/{label}" for label in sets]
    for label, ds in sets.items():
        assert_slice_identical(result, analysis(ds), dataset=f"/{label}")


def _multi_task(m: int = 800, seed: int = 5) -> tuple[xr.Dataset, dict[str, xr.Dataset]]:
    """Two targets of one multi-task model over the same molecules, 10 % of each missing (E and
    uE NaN, as a mask gives), and a shared 1-D feature."""
    rng = np.random.default_rng(seed)
    tasks = {}
    for k, task in enumerate(("logP", "solubility")):
        ds = xuqcal.synthetic.nig(m, nu=6, seed=seed + k, uE_scale=1.0 + 0.3 * k)
        missing = rng.choice(m, size=m // 10, replace=False)
        ds["E"][missing] = np.nan
        ds["uE"][missing] = np.nan
        tasks[task] = ds
    stacked = xr.concat(list(tasks.values()), dim="task").assign_coords(task=list(tasks))
    stacked["x"] = ("sample", rng.normal(size=m))  # shared by both tasks
    singles = {task: stacked.sel(task=task).where(
        ~(np.isnan(stacked.E.sel(task=task)) & np.isnan(stacked.uE.sel(task=task))),
        drop=True).drop_vars("task") for task in tasks}
    for task, ds in singles.items():  # the feature of the kept rows; E, uE as float64
        singles[task] = ds.assign(x=stacked.x.sel(sample=ds.sample))
    return stacked, singles


def test_multi_task_missing_targets():
    stacked, singles = _multi_task()
    assert stacked.E.dims == ("task", "sample") and stacked.x.dims == ("sample",)
    calls = {
        "stats": lambda d: xuqcal.stats(d, ["zms", "ence", "cc"], n_bins=10),
        "validate": lambda d: xuqcal.validate(d, ["zms", "ence"], n_boot=100, n_mc=100,
                                              n_bins=10),
        "local_by_feature": lambda d: xuqcal.local(d, "zms", by="x", n_bins=8, n_boot=100),
        "reliability": lambda d: xuqcal.reliability(d, n_bins=8, n_boot=100),
        "running": lambda d: xuqcal.running_statistics(d, window=50),
        "bins": lambda d: xuqcal.make_bins(d, n_bins=5),
        "confidence_curve": lambda d: xuqcal.curves.confidence_curve(d, n_mc=50),
    }
    for name, call in calls.items():
        result = call(stacked)
        assert result.n_samples.values.tolist() == [720, 720], name
        for task, ds in singles.items():
            assert ds.sizes["sample"] == 720
            assert_slice_identical(result, call(ds), task=task)


def test_model_by_seed_with_a_shared_feature():
    m = 600
    rng = np.random.default_rng(1)
    x = rng.uniform(0, 1, m)
    models, seeds = ["GCN", "RF"], [0, 1, 2]
    E = np.empty((2, 3, m))
    uE = np.empty((2, 3, m))
    for i in range(2):
        for j in range(3):
            ds = xuqcal.synthetic.nig(m, nu=6, seed=10 * i + j)
            E[i, j], uE[i, j] = ds.E.values * (1 + x), ds.uE.values
    stacked = xr.Dataset({"E": (("model", "seed", "sample"), E),
                          "uE": (("model", "seed", "sample"), uE),
                          "x": ("sample", x)},
                         coords={"model": models, "seed": seeds})
    for call in (lambda d: xuqcal.local(d, "zms", by="x", n_bins=6, n_boot=100),
                 lambda d: xuqcal.rank_correlation(d),
                 lambda d: xuqcal.validate(d, ["zms", "nll"], n_boot=100, n_mc=50)):
        result = call(stacked)
        assert result.dims[:2] == ("model", "seed") if isinstance(result, xr.DataArray) \
            else list(result.dims)[:2] == ["model", "seed"]
        for model in models:
            for seed in seeds:
                one = stacked.sel(model=model, seed=seed).drop_vars(["model", "seed"])
                assert_slice_identical(result, call(one), model=model, seed=seed)


def test_slices_do_not_depend_on_order_chunks_or_other_slices():
    stacked, singles = _multi_task()
    call = lambda d: xuqcal.validate(d, ["zms", "ence"], n_boot=200, n_mc=100,  # noqa: E731
                                     n_bins=10, chunks=37)
    reference = call(stacked)
    reversed_order = call(stacked.isel(task=[1, 0]))
    rechunked = call(stacked.chunk({"sample": 123, "task": 1})).compute()
    alone = call(stacked.isel(task=[1]))
    for result in (reversed_order, rechunked):
        for task, ds in singles.items():
            assert_slice_identical(result, call(ds), task=task)
    assert_slice_identical(alone, call(singles["solubility"]), task="solubility")
    assert_slice_identical(reference, call(singles["logP"]), task="logP")


def test_slices_on_a_distributed_cluster_are_bit_identical():
    distributed = pytest.importorskip("distributed")
    stacked, singles = _multi_task(m=400)
    call = lambda d: xuqcal.bootstrap(d, ["zms", "ence"], n_boot=200, n_bins=8)  # noqa: E731
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster):
        lazy = call(stacked.chunk({"sample": 100}))
        on_cluster = lazy.compute()
    for task, ds in singles.items():
        assert_slice_identical(on_cluster, call(ds), task=task)


@pytest.mark.parametrize("method", ["bootstrap", "validate", "local", "stats", "simulate",
                                    "reliability", "describe", "running_statistics"])
def test_accessor_is_lazy_with_extra_dimensions(method):
    stacked, singles = _multi_task(m=300)
    # lazy slices know their present points only when computed: n_bins given (the default,
    # recommended_n_bins of the present points, differs between solubility's 270 and its rows)
    kwargs = {"bootstrap": {"n_boot": 100}, "validate": {"n_boot": 100, "n_mc": 50, "n_bins": 10},
              "local": {"n_boot": 100, "n_bins": 5}, "simulate": {"n_mc": 50, "n_bins": 10},
              "reliability": {"n_boot": 100, "n_bins": 5}}.get(method, {})
    lazy = stacked.chunk({"sample": 100})
    result = assert_lazy_until_compute(lambda: getattr(lazy.uqcal, method)(**kwargs))
    for task, ds in singles.items():
        assert_slice_identical(result, getattr(ds.uqcal, method)(**kwargs), task=task)


def _labelled(m: int = 200) -> xr.Dataset:
    sets = [xuqcal.synthetic.nig(m, nu=6, seed=s) for s in range(4)]
    E = np.stack([d.E.values for d in sets]).reshape(2, 2, m)
    uE = np.stack([d.uE.values for d in sets]).reshape(2, 2, m)
    return xr.Dataset({"E": (("model", "seed", "sample"), E),
                       "uE": (("model", "seed", "sample"), uE)},
                      coords={"model": ["GCN", "RF"], "seed": [2, 3]})


@pytest.mark.parametrize(("edit", "message"), [
    (lambda ds: ds.E.loc[{"model": "GCN", "seed": 3}].__setitem__((5,), np.nan),
     r"^model='GCN', seed=3: E: 1 of 200 values are NaN \(rows? 5\)"),
    (lambda ds: ds.uE.loc[{"model": "RF", "seed": 2}].__setitem__((7,), -1.0),
     r"^model='RF', seed=2: uE: 1 of 200 values are not positive \(rows? 7\)"),
    (lambda ds: ds.E.loc[{"model": "RF", "seed": 3}].__setitem__((9,), np.inf),
     r"^model='RF', seed=3: E: 1 of 200 values are \+inf \(rows? 9\)"),
    (lambda ds: (ds.E.loc[{"model": "GCN", "seed": 2}].__setitem__(slice(None), np.nan),
                 ds.uE.loc[{"model": "GCN", "seed": 2}].__setitem__(slice(None), np.nan)),
     r"^model='GCN', seed=2: no points"),
])
@pytest.mark.parametrize("lazy", [False, True])
def test_bad_values_name_the_slice_and_the_rows(edit, message, lazy):
    ds = _labelled()
    ds = ds.copy(deep=True)
    edit(ds)
    data = ds.chunk() if lazy else ds
    with pytest.raises(ValueError, match=message):
        xuqcal.bootstrap(data, ["zms"], n_boot=100).compute()
    with pytest.raises(ValueError, match=message):
        xuqcal.validate(data, ["zms"], n_boot=100, n_mc=20).compute()
    if not lazy:
        with pytest.raises(ValueError, match=message):
            xuqcal.validate_dataset(ds)


def test_absent_points_keep_their_row_numbers_in_messages():
    ds = _labelled()
    ds = ds.copy(deep=True)
    for name in ("E", "uE"):  # rows 0-9 absent from this slice
        ds[name].loc[{"model": "RF", "seed": 3}][:10] = np.nan
    ds.E.loc[{"model": "RF", "seed": 3}][12] = np.nan
    with pytest.raises(ValueError, match=r"^model='RF', seed=3: E: 1 of 190 values are NaN "
                                         r"\(rows? 12\)"):
        xuqcal.stats(ds)


def test_argument_errors_name_the_slice():
    stacked, _ = _multi_task(m=300)
    short = stacked.copy(deep=True)
    for name in ("E", "uE"):
        short[name].loc[{"task": "solubility"}][30:] = np.nan
    with pytest.raises(ValueError, match=r"^task='solubility': n_bins: n_bins=20 needs at "
                                         r"least 40 points"):
        xuqcal.stats(short, ["ence"], n_bins=20)


def test_ragged_results_are_padded():
    stacked, _ = _multi_task(m=300)
    short = stacked.copy(deep=True)
    for name in ("E", "uE"):
        short[name].loc[{"task": "logP"}][200:] = np.nan
    result = xuqcal.running_statistics(short, window=20)
    counts = result.n_samples.values.tolist()
    assert counts[0] < counts[1]
    logp = result.sel(task="logP")
    assert int(logp.running_mean.notnull().sum()) < int(
        result.sel(task="solubility").running_mean.notnull().sum())
    bins = xuqcal.make_bins(short, n_bins=5)
    # a result over sample is reindexed on the data's rows: absent points have no bin
    assert bins.sizes["sample"] == short.sizes["sample"]


def test_datatree_of_different_layouts_returns_a_tree():
    a = xuqcal.synthetic.nig(300, nu=6, seed=0)
    b = xuqcal.synthetic.nig(200, nu=6, seed=1)
    a["x"] = a.uE * 2
    b["y"] = b.E ** 2
    tree = xr.DataTree.from_dict({"/a": a, "/b": b})
    correlations = xuqcal.rank_correlation(tree)
    assert isinstance(correlations, xr.DataTree)
    xr.testing.assert_identical(correlations["b"].to_dataset()[slices._VALUE].rename(None),
                                xuqcal.rank_correlation(b).rename(None))
    stacked = xuqcal.stats(tree, ["zms"])
    assert stacked.dims == ("dataset", "statistic")
    assert stacked.n_samples.values.tolist() == [300, 200]


def test_recalibration_per_slice_matches_slices_by_label(tmp_path):
    def sets(offset, sizes):
        return {m: xuqcal.synthetic.nig(n, nu=6, seed=s + offset, uE_scale=0.6 + 0.2 * s)
                for s, (m, n) in enumerate(sizes.items())}

    train = sets(0, {"GCN": 3000, "RF": 2000})
    test = sets(10, {"GCN": 1500, "RF": 1800})

    def stack(d):
        return xr.concat(list(d.values()), dim="model", join="outer").assign_coords(
            model=list(d))

    for method in ("temperature", "bvs", "isotonic"):
        fitted = recalibration.fit(stack(train), method, features=())
        assert fitted.model.values.tolist() == ["GCN", "RF"]
        applied = recalibration.apply(fitted, stack(test).isel(model=[1, 0]))
        for model in train:
            single = recalibration.fit(train[model], method, features=())
            assert_slice_identical(fitted, single, model=model)
            # the slice of the stacked test set (its attributes are those of the stack)
            alone = stack(test).sel(model=model).dropna("sample", how="all").drop_vars("model")
            assert_slice_identical(applied, recalibration.apply(single, alone), model=model)
    path = tmp_path / "isotonic.nc"
    recalibration.Recalibrator(fitted).to_netcdf(path)
    reopened = recalibration.Recalibrator.open(path)
    assert reopened.dataset.model.values.tolist() == ["GCN", "RF"]
    xr.testing.assert_identical(reopened.apply(stack(test)).uE,
                                recalibration.apply(fitted, stack(test)).uE)
    with pytest.raises(ValueError, match=r"^recalibrator: made per slice along model, but ds "
                                         r"has no such dimension"):
        recalibration.apply(fitted, test["GCN"])
    with pytest.raises(ValueError, match=r"^recalibrator: has no slice model='RF'"):
        recalibration.apply(fitted.sel(model=["GCN"]), stack(test))


def test_scores_per_slice(nine):
    sets, stacked = nine
    scores = recalibration.scores(stacked, features=())
    assert "dataset" in scores.dims
    assert_slice_identical(scores, recalibration.scores(sets["set8"], features=()),
                           dataset="set8")


def test_no_extra_dimension_is_the_plain_function():
    ds = xuqcal.synthetic.nig(300, nu=6, seed=3)
    result = xuqcal.stats(ds, ["zms"])
    assert "n_samples" not in result.coords and "slice_dims" not in result.attrs
    assert result.attrs["n_samples"] == 300


def test_stacking_keeps_per_slice_coordinates():
    stacked, singles = _multi_task(m=400)
    result = xuqcal.local(stacked, "zms", n_bins=5, n_boot=100)
    for task, ds in singles.items():
        single = xuqcal.local(ds, "zms", n_bins=5, n_boot=100)
        np.testing.assert_array_equal(result.bin_low.sel(task=task).values,
                                      single.bin_low.values)
    assert result.bin_low.dims == ("task", "bin")


def test_stack_datasets_of_pandas_index_labels_keeps_them():
    a = xuqcal.synthetic.nig(100, nu=6, seed=0)
    b = xuqcal.synthetic.nig(120, nu=6, seed=1)
    both = xr.concat([a, b], dim=pd.Index(["a", "b"], name="model"), join="outer")
    with dask.config.set(scheduler="synchronous"):
        result = xuqcal.stats(both)
    assert result.model.values.tolist() == ["a", "b"]


def test_cube_from_stacked_data_has_one_cell_per_slice():
    from xuqcal.studies import cube

    a = xuqcal.synthetic.nig(500, nu=6, seed=1)
    b = xuqcal.synthetic.nig(300, nu=3, seed=2)
    stacked = xr.concat([a, b], dim="dataset", join="outer").assign_coords(dataset=["a", "b"])
    options = {"statistics": ["ence", "cc"], "generators": ["normal", "t6"], "n_bins": [5],
               "n_mc": 50}
    from_stack = cube.build_from(stacked, **options).compute()
    from_mapping = cube.build_from({"a": a, "b": b}, **options).compute()
    assert from_stack.dataset.values.tolist() == ["a", "b"]
    xr.testing.assert_identical(from_stack["mean"], from_mapping["mean"])
    labelled = cube.build_from(_labelled(), **options).compute()
    assert labelled.dataset.values.tolist() == ["model='GCN', seed=2", "model='GCN', seed=3",
                                                "model='RF', seed=2", "model='RF', seed=3"]


def test_recalibration_evaluate_per_slice():
    sets = {m: xuqcal.synthetic.nig(n, nu=6, seed=s, uE_scale=0.6)
            for s, (m, n) in enumerate([("A", 1000), ("B", 800)])}
    stacked = xr.concat(list(sets.values()), dim="model", join="outer").assign_coords(
        model=list(sets))
    options = {"features": (), "n_bins": 10, "n_mc": 20, "n_boot": 100}
    fitted = recalibration.fit(stacked, "temperature")
    table = recalibration.evaluate({"train": stacked,
                                    "train T": recalibration.apply(fitted, stacked)}, **options)
    assert table.zms.dims[:2] == ("dataset", "model")
    for model, ds in sets.items():
        single_fit = recalibration.fit(ds, "temperature")
        single = recalibration.evaluate(
            {"train": ds, "train T": recalibration.apply(single_fit, ds)}, **options)
        for name in ("zms", "zms_simulated", "nll", "nll_simulated"):
            np.testing.assert_array_equal(table[name].sel(model=model).values,
                                          single[name].values)
        assert int(table.n_points.sel(model=model).max()) == ds.sizes["sample"]


@functools.lru_cache(maxsize=1)
def _chunked_case():
    """Data, analysis and the single calls of the chunking property (built once)."""
    stacked, singles = _multi_task(m=240, seed=8)

    def call(ds, **kwargs):
        return xuqcal.bootstrap(ds, ["zms", "ence", "cc"], n_boot=120, n_bins=6, **kwargs)

    return stacked, call, {task: call(ds) for task, ds in singles.items()}


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_chunking_of_sample_and_replicates_gives_the_single_calls(data):
    """As flox's tests over chunkings: any chunks along ``sample`` (and the replicate chunks)
    leave every slice bit-identical to its single call."""
    stacked, call, expected = _chunked_case()
    sample_chunks = data.draw(chunkings(stacked.sizes["sample"], max_chunks=6))
    replicate_chunk = data.draw(st.integers(min_value=7, max_value=120))
    lazy = stacked.chunk({"sample": sample_chunks, "task": 1})
    result = call(lazy, chunks=replicate_chunk).compute()
    for task, single in expected.items():
        assert_slice_identical(result, single, task=task)


def test_labels_that_depend_on_the_number_of_points():
    """zero_bins_extrapolation keeps the N with enough points per bin: a shorter set has fewer
    N. NumPy data: the union of the labels, NaN where a set has none. Dask data: a clear error
    (the labels are unknown before the data are computed)."""
    a = xuqcal.synthetic.nig(3000, nu=6, seed=0)
    b = xuqcal.synthetic.nig(1500, nu=6, seed=1)
    stacked = xr.concat([a, b], dim="dataset", join="outer").assign_coords(dataset=["a", "b"])
    result = xuqcal.studies.zero_bins_extrapolation(stacked)
    single = xuqcal.studies.zero_bins_extrapolation(b)
    assert result.sizes["n_bins"] > single.sizes["n_bins"]
    np.testing.assert_array_equal(result.value.sel(dataset="b", n_bins=single.n_bins).values,
                                  single.value.values)
    assert bool(result.value.sel(dataset="b").drop_sel(n_bins=single.n_bins).isnull().all())
    for name in ("intercept", "zeta", "valid"):
        np.testing.assert_array_equal(result[name].sel(dataset="b").values, single[name].values)
    with pytest.raises(ValueError, match=r"^dataset='b': the labels of the result's dimension "
                                         r"'n_bins' depend on the slice's number of present"):
        xuqcal.studies.zero_bins_extrapolation(stacked.chunk()).compute()


def test_warnings_of_a_slice_name_it():
    from xuqcal.core.binning import FewPointsPerBinWarning

    big = xuqcal.synthetic.nig(3000, nu=6, seed=0)
    small = xuqcal.synthetic.nig(300, nu=6, seed=1)
    stacked = xr.concat([big, small], dim="dataset", join="outer").assign_coords(
        dataset=["big", "small"])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        xuqcal.local(stacked, "zms", n_bins=50, n_boot=100)
    few = [str(w.message) for w in caught if issubclass(w.category, FewPointsPerBinWarning)]
    assert len(few) == 1 and few[0].startswith("dataset='small': n_bins: n_bins=50 bins of "
                                               "M=300 points")
    with warnings.catch_warnings():  # the user's filters still apply to the relabelled warning
        warnings.simplefilter("error", FewPointsPerBinWarning)
        with pytest.raises(FewPointsPerBinWarning, match=r"^dataset='small': "):
            xuqcal.local(stacked, "zms", n_bins=50, n_boot=100)


def test_a_lazy_datatree_stays_lazy_and_equals_single_calls():
    a = xuqcal.synthetic.nig(300, nu=6, seed=0)
    b = xuqcal.synthetic.nig(200, nu=6, seed=1)
    tree = xr.DataTree.from_dict({"/a": a.chunk(), "/b": b.chunk()})
    result = assert_lazy_until_compute(
        lambda: xuqcal.local(tree, "zms", n_bins=5, n_boot=100))
    assert result.n_samples.values.tolist() == [300, 200]
    for path, ds in (("/a", a), ("/b", b)):
        assert_slice_identical(result, xuqcal.local(ds, "zms", n_bins=5, n_boot=100),
                               dataset=path)


def test_recalibration_scan_per_slice_with_the_test_slice_of_the_same_label():
    def sets(offset, sizes):
        return {m: xuqcal.synthetic.nig(n, nu=6, seed=s + offset, uE_scale=0.5)
                for s, (m, n) in enumerate(sizes.items())}

    def stack(d):
        return xr.concat(list(d.values()), dim="model", join="outer").assign_coords(
            model=list(d))

    train, test = sets(0, {"A": 1000, "B": 800}), sets(7, {"A": 700, "B": 900})
    options = {"n_bins": [2, 4], "features": (), "n_bins_scores": 10, "n_boot": 100}
    result = recalibration.scan(stack(train), stack(test).isel(model=[1, 0]), **options)
    for model in train:
        alone = stack(test).sel(model=model).dropna("sample", how="all").drop_vars("model")
        assert_slice_identical(result, recalibration.scan(train[model], alone, **options),
                               model=model)
