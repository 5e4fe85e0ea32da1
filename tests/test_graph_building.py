"""The graphs of lazy analyses are built without optimising their inputs' graphs, one task per
block of replicates (issue 26: the serial start of a call on many slices).

``xuqcal.analysis.lazy.delayed_call`` must compute what ``dask.delayed(f, pure=True)(...)``
computes for every kind of argument, and ``blocks_along`` what the block function gives when
called directly.
"""

from __future__ import annotations

import collections

import dask
import dask.array as da
import numpy as np
import pytest
import xarray as xr
from dask.delayed import Delayed

import xuqcal
from xuqcal.analysis.lazy import blocks_along, delayed_call, lazy_result, template
from xuqcal.analysis.resampling import bootstrap_replicates, jackknife, prepare_lazily
from xuqcal.core.statistics import codes_of, get_statistics


def _total(*values, scale=1.0, offset=None):
    """A function of what its arguments compute to: arrays, Datasets, sequences, None."""
    total = 0.0
    for value in values:
        if isinstance(value, tuple | list):
            total += _total(*value)
        elif isinstance(value, xr.Dataset):
            total += sum(float(np.sum(v.values)) for v in value.data_vars.values())
        elif value is not None:
            total += float(np.sum(value))
    return scale * total + (0.0 if offset is None else float(np.sum(offset)))


@pytest.fixture(scope="module")
def lazy_inputs():
    x = da.arange(12.0, chunks=5) * 2.0  # three blocks, a Blockwise layer on top
    ds = xr.Dataset({"a": ("i", x), "b": ("i", np.ones(12))}).chunk({"i": 4})
    return x, ds


@pytest.mark.parametrize("case", ["array", "dataset", "tuple", "delayed", "keywords",
                                  "literal-list", "nested-collection"])
def test_delayed_call_computes_what_dask_delayed_computes(lazy_inputs, case):
    x, ds = lazy_inputs
    d = dask.delayed(np.arange)(3.0)
    args, kwargs = {
        "array": ((x,), {}),
        "dataset": ((ds,), {"scale": 2.0}),
        "tuple": (((ds, x, None, d),), {}),
        "delayed": ((d, x), {}),
        "keywords": ((ds,), {"offset": x}),
        "literal-list": (([1.0, 2.0], None), {"scale": 3.0}),
        "nested-collection": (([x, 1.0],), {}),  # a list holding a collection: dask.delayed
    }[case]
    expected = dask.delayed(_total, pure=True)(*args, **kwargs).compute()
    called = delayed_call(_total, *args, **kwargs)
    assert isinstance(called, Delayed)
    assert called.compute() == expected
    # pure: the same arguments give the same task, other keywords another one
    assert delayed_call(_total, *args, **kwargs).key == called.key
    assert delayed_call(_total, *args, **{**kwargs, "scale": 5.0}).key != called.key


def test_delayed_call_keeps_the_inputs_graphs_as_they_are():
    """Dask's delayed optimises (fuses) an argument's graph when the call is built; here the
    graph is optimised once, when it is computed: the input's own block keys are in it."""
    base = da.arange(12.0, chunks=5)
    x = base * 2.0  # optimised, the multiplication is fused with the blocks of `base`
    ds = xr.Dataset({"a": ("i", x)})
    for built in (delayed_call(_total, (ds, x)), delayed_call(_total, x)):
        keys = set(built.__dask_graph__().keys())
        assert set(dask.core.flatten(base.__dask_keys__())) <= keys


def test_delayed_call_takes_a_keyword_named_function():
    # the function is positional-only: analyses pass `function=` to their bodies
    def body(value, *, function):
        return function(value)

    assert delayed_call(body, da.ones(3, chunks=2), function=np.sum).compute() == 3.0


def test_delayed_call_of_a_future_takes_dask_delayed():
    distributed = pytest.importorskip("distributed")
    with distributed.Client(processes=False, n_workers=1, threads_per_worker=1,
                            dashboard_address=None) as client:
        future = client.scatter(np.arange(4.0))
        assert delayed_call(_total, future, scale=2.0).compute() == 12.0


def test_lazy_result_gives_each_variable_by_one_task(lazy_inputs):
    _, ds = lazy_inputs
    layout = template({"m": ((), float, {}), "v": (("k",), float, {})}, {"k": 2})

    def body(d):
        return xr.Dataset({"m": d.a.mean(), "v": ("k", [float(d.b.sum()), 1.0])})

    result = lazy_result(body, ds, layout)
    assert float(result.m.compute()) == pytest.approx(11.0)
    assert result.v.compute().values.tolist() == [12.0, 1.0]
    own = {k for k in result.m.data.__dask_graph__() if isinstance(k, tuple)
           and k[0] == result.m.data.name}
    assert len(own) == 1


def _kernel_tasks(array: da.Array) -> collections.Counter:
    return collections.Counter(k[0] for k in array.__dask_graph__().keys()
                               if isinstance(k, tuple) and k[0] == array.name)


def test_blocks_along_is_one_task_per_block_with_the_direct_values():
    def rows(offset, scale, start, stop):
        return offset + scale * np.arange(start, stop, dtype=float)[:, None] * np.ones((1, 2))

    offset = dask.delayed(np.float64)(10.0)
    scale = dask.delayed(np.float64)(3.0)  # a Delayed among the arguments
    values = blocks_along(rows, offset, (scale,), [(0, 4), (4, 5), (5, 9)], (2,))
    assert values.chunks == ((4, 1, 4), (2,))
    assert sum(_kernel_tasks(values).values()) == 3
    np.testing.assert_array_equal(values.compute(), rows(10.0, 3.0, 0, 9))


def test_replicates_and_jackknife_are_one_task_per_block():
    ds = xuqcal.synthetic.nig(500, nu=6, seed=2)
    stats = get_statistics(["zms", "cc", "ence"])
    codes = codes_of(stats)
    prepared = prepare_lazily(ds, stats, n_bins=5, by="uE")
    replicates = bootstrap_replicates(prepared, codes, 250, seed=1, chunks=100)
    assert replicates.chunks[0] == (100, 100, 50)
    assert sum(_kernel_tasks(replicates).values()) == 3
    # the same values in one block as in three
    one = bootstrap_replicates(prepared, codes, 250, seed=1, chunks=250).compute()
    np.testing.assert_array_equal(replicates.compute(), one)
    with xuqcal.set_options(jackknife_chunk=200):
        leave_one_out = jackknife(prepared, codes, 500)
    assert sum(_kernel_tasks(leave_one_out).values()) == 3
    with xuqcal.set_options(jackknife_chunk=500):
        whole = jackknife(prepared, codes, 500).compute()
    np.testing.assert_array_equal(leave_one_out.compute(), whole)


@pytest.mark.parametrize("chunks", [None, 64, 97])
def test_simulated_summaries_are_those_of_the_kept_replicates(chunks):
    """The summaries gather each generator's blocks in one task (summarized_lazily): the
    same numbers as the summaries of the kept replicates, whatever the chunks."""
    from xuqcal.analysis.simulation import reference_result
    from xuqcal.core.generators import get_generator

    ds = xuqcal.synthetic.nig(400, nu=6, seed=4)
    stats = get_statistics(["zms", "cc", "ence"])
    result = xuqcal.simulate(ds, [s.key for s in stats], generators=["normal", "t6"],
                             n_mc=300, seed=9, chunks=chunks, keep_replicates=True).compute()
    again = reference_result(result.replicates, stats,
                             [get_generator("normal"), get_generator("t6")], n_mc=300, seed=9,
                             n_bins=5, by="uE", m=400, keep_replicates=False,
                             warn_undefined=True)
    for name in ("mean", "se", "q025", "q975"):
        np.testing.assert_array_equal(result[name].values, again[name].values)


def test_simulated_summaries_laid_out_over_more_statistics():
    from xuqcal.analysis.simulation import simulate_checked
    from xuqcal.core.generators import get_generator

    ds = xuqcal.synthetic.nig(400, nu=6, seed=4)
    simulated = get_statistics(["ence", "cc"])
    every = get_statistics(["zms", "cc", "nll", "ence"])
    arguments = dict(n_mc=200, seed=3, n_bins=5, by="uE", chunks=50, keep_replicates=False,
                     E="E", uE="uE")
    gens = [get_generator("normal"), get_generator("t6")]
    alone = simulate_checked(ds, simulated, gens, **arguments)
    laid_out = simulate_checked(ds, simulated, gens, laid_out=every, **arguments)
    assert laid_out.statistic.values.tolist() == ["zms", "cc", "nll", "ence"]
    expected = alone.reindex(statistic=["zms", "cc", "nll", "ence"])
    for name in ("mean", "se", "q025", "q975"):
        np.testing.assert_array_equal(laid_out[name].values, expected[name].values)
    assert laid_out.attrs == alone.attrs
    # one task per generator gathers the blocks (four blocks each here)
    keys = laid_out["mean"].data.__dask_graph__().keys()
    assert sum(1 for k in keys if str(k).startswith("summarize_replicates-")) == 2


def test_blocks_along_takes_collections_once_and_refuses_what_it_cannot():
    def rows(offset, weights, start, stop):
        return offset + np.outer(np.arange(start, stop, dtype=float), weights)

    weights = da.from_array(np.array([1.0, 2.0]), chunks=1)  # gathered once, for every block
    values = blocks_along(rows, dask.delayed(1.0), (weights,), [(0, 3), (3, 4)], (2,))
    np.testing.assert_array_equal(values.compute(), rows(1.0, np.array([1.0, 2.0]), 0, 4))
    with pytest.raises(TypeError, match="container of Dask collections"):
        blocks_along(rows, dask.delayed(1.0), ([weights],), [(0, 4)], (2,))
