"""Tests of xuqcal.io: constructors, validation, the expression evaluator, NetCDF, real data."""

from __future__ import annotations

import os
import re
import warnings
from datetime import datetime

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from hypothesis import example, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from xuqcal import io
from xuqcal._version import __version__

# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------


def _assert_netcdf_safe_attrs(attrs: dict) -> None:
    for key, value in attrs.items():
        assert isinstance(value, str | int | float | np.integer | np.floating), (key, value)
        assert not isinstance(value, bool | np.bool_), key


@pytest.fixture
def frame() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "y": [1.0, 2.0, 3.0, 4.0, 5.0],
            "y_pred": [1.5, 1.5, 3.5, 3.0, 5.5],
            "var": [0.25, 0.16, 0.09, 0.04, 0.01],
            "X": [10.0, 20.0, 30.0, 40.0, 50.0],
            "n": [1, 2, 3, 4, 5],
            "label": ["a", "b", "c", "d", "e"],
            "col name": [0.1, 0.2, 0.3, 0.4, 0.5],
        }
    )


NS = {
    "a": np.array([1.0, 2.0, 3.0, 4.0]),
    "b": np.array([0.5, -1.0, 2.0, 8.0]),
    "b c": np.array([1.0, 1.0, 2.0, 2.0]),
    "k": np.array([1, 2, 3, 4]),
    "flag": np.array([True, False, True, False]),
}


def ev(expression: str, namespace=NS, variable: str = "X") -> np.ndarray:
    return io.evaluate_expression(expression, namespace, variable=variable)


# --------------------------------------------------------------------------------------------
# expression evaluator
# --------------------------------------------------------------------------------------------

a, b = NS["a"], NS["b"]


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("a + b", a + b),
        ("a - b * 2", a - b * 2),
        ("(a - b) * 2", (a - b) * 2),
        ("a / b", a / b),
        ("a ** 2", a**2),
        ("2 ** -a", 2.0**-a),
        ("a % 3", a % 3),
        ("-a", -a),
        ("+a", a),
        ("1e-3 * a", 1e-3 * a),
        ("k * 0.5", NS["k"] * 0.5),
    ],
)
def test_evaluate_arithmetic(expression, expected):
    result = ev(expression)
    assert result.dtype == np.float64
    np.testing.assert_array_equal(result, expected)


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("sqrt(a)", np.sqrt(a)),
        ("log(a)", np.log(a)),
        ("log10(a)", np.log10(a)),
        ("exp(b)", np.exp(b)),
        ("abs(b)", np.abs(b)),
        ("square(b)", b**2),
        ("std(a)", np.full(4, np.std(a, ddof=1))),
        ("mean(b)", np.full(4, b.mean())),
        ("median(b)", np.full(4, np.median(b))),
        ("min(b)", np.full(4, b.min())),
        ("max(b)", np.full(4, b.max())),
        ("min(a, b)", np.minimum(a, b)),
        ("max(a, b)", np.maximum(a, b)),
        ("a - mean(a)", a - a.mean()),
        ("sqrt(abs(b)) + log(exp(a))", np.sqrt(np.abs(b)) + a),
    ],
)
def test_evaluate_functions(expression, expected):
    np.testing.assert_allclose(ev(expression), expected, rtol=1e-15)


def test_std_uses_ddof_1_like_r_sd():
    x = np.array([1.0, 2.0, 4.0])
    assert ev("std(x)", {"x": x})[0] == pytest.approx(np.sqrt(7 / 3))


def test_invalid_math_gives_nan_or_inf_without_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = ev("log(b) + 1 / (a - 1)")
        assert np.isnan(ev("std(x)", {"x": np.array([1.0])})).all()
    assert np.isnan(result[1]) and np.isinf(result[0])


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("a < b", a < b),
        ("a <= 2", a <= 2),
        ("a > b", a > b),
        ("a >= 3", a >= 3),
        ("a == 2", a == 2),
        ("a != 2", a != 2),
        ("1 < a <= 3", (a > 1) & (a <= 3)),
        ("(a > 1) & (b < 5)", (a > 1) & (b < 5)),
        ("(a > 3) | (b < 0)", (a > 3) | (b < 0)),
        ("~(a > 2)", ~(a > 2)),
        ("a > 1 and b < 5", (a > 1) & (b < 5)),
        ("a > 3 or b < 0 or a < 2", (a > 3) | (b < 0) | (a < 2)),
        ("not a > 2", ~(a > 2)),
        ("flag & isfinite(a / (a - 1))", NS["flag"] & np.array([False, True, True, True])),
    ],
)
def test_evaluate_comparisons_and_booleans(expression, expected):
    result = ev(expression)
    assert result.dtype == np.bool_
    np.testing.assert_array_equal(result, expected)


def test_booleans_count_as_zero_one_in_arithmetic():
    np.testing.assert_array_equal(ev("flag + flag"), [2.0, 0.0, 2.0, 0.0])
    np.testing.assert_array_equal(ev("-(a > 2)"), [0.0, 0.0, -1.0, -1.0])


def test_backticks_for_column_names_that_are_not_identifiers():
    np.testing.assert_array_equal(ev("`b c` * 2 + a"), NS["b c"] * 2 + a)
    ns = {"E (eV)": np.array([1.0, 2.0]), "1st": np.array([3.0, 4.0])}
    np.testing.assert_array_equal(ev("`E (eV)` - `1st`", ns), [-2.0, -2.0])


def test_scalar_results_are_broadcast_to_the_row_count():
    result = ev("std(a)")
    assert result.shape == (4,)


def test_expression_without_column_is_an_error():
    with pytest.raises(
        ValueError, match=re.escape("E: expression '3' does not depend on any column")
    ):
        ev("3", variable="E")


def test_unknown_name_names_variable_name_and_columns():
    with pytest.raises(ValueError) as info:
        ev("a - bb", variable="uE")
    message = str(info.value)
    assert message.startswith("uE: ")
    assert "unknown name 'bb'" in message
    assert "'a - bb'" in message
    assert "available columns: a, b, `b c`, k, flag" in message
    assert "did you mean 'b'" in message


def test_unknown_backticked_name():
    with pytest.raises(ValueError, match="unknown name 'b d'"):
        ev("`b d`")


@pytest.mark.parametrize(
    ("expression", "what"),
    [
        ("__import__('os')", "unknown function '__import__'"),
        ("__import__('os').system('true')", "attribute access"),
        ("a.b", "attribute access"),
        ("a.__class__", "attribute access"),
        ("a[0]", "indexing"),
        ("lambda: 1", "lambda"),
        ("(lambda x: x)(a)", "lambda"),
        ("'text'", "string literal"),
        ("a if b else a", "conditional expression"),
        ("[a]", "list"),
        ("(a, b)", "tuple"),
        ("[x for x in a]", "comprehension"),
        ("(a := 1)", "assignment"),
        ("a // 2", "'//'"),
        ("a ^ 2", "use \\*\\* for powers"),
        ("a in b", "'in'"),
        ("a is b", "'is'"),
        ("True", "constant True"),
        ("open('x')", "unknown function 'open'"),
        ("eval('1')", "unknown function 'eval'"),
        ("sqrt(x=a)", "keyword argument"),
        ("sqrt(*a)", "unpacking"),
    ],
)
def test_unsafe_or_unsupported_constructs_are_rejected(expression, what):
    with pytest.raises(ValueError, match=what) as info:
        ev(expression, variable="E")
    assert f"'{expression}'" in str(info.value)
    assert str(info.value).startswith("E: ")


@pytest.mark.parametrize(
    ("expression", "match"),
    [
        ("a +", "cannot parse expression 'a \\+'"),
        ("a ` b", "unmatched backtick"),
        ("``", "empty column name"),
        ("  ", "empty expression"),
        ("sqrt(a, b)", "function 'sqrt' takes 1 argument"),
        ("min(a, b, a)", "function 'min' takes 1 or 2 argument"),
        ("a > 0 & b < 1", "operator '&' needs true/false operands"),
        ("~a", "operator '~' needs true/false"),
        ("a and b", "operator 'and' needs true/false"),
        ("sqrt", "'sqrt' is a function"),
        ("1" * 400 + " * a", "too large"),
    ],
)
def test_evaluate_errors(expression, match):
    with pytest.raises(ValueError, match=match):
        ev(expression)


def test_non_numeric_column_in_expression():
    ns = {"s": np.array(["x", "y"], dtype=object), "t": np.array(["1", "n/a"], dtype=object)}
    with pytest.raises(ValueError, match="E: column 's' is not numeric: it holds text"):
        ev("s * 2", ns, variable="E")
    with pytest.raises(ValueError, match=r"column 't' is not numeric: 1 of 2 values .*1: 'n/a'"):
        ev("t", ns)


def test_columns_of_different_lengths():
    with pytest.raises(ValueError, match="different lengths"):
        ev("a + z", {"a": np.ones(3), "z": np.ones(4)})


def test_name_lookup_is_lazy():
    class Strict(dict):
        def __getitem__(self, key):
            if key == "bad":
                raise AssertionError("unreferenced column was read")
            return super().__getitem__(key)

    ns = Strict(a=np.ones(2), bad=None)
    np.testing.assert_array_equal(ev("a * 2", ns), [2.0, 2.0])


finite = st.floats(allow_nan=False, allow_infinity=False, width=64)


@settings(max_examples=60, deadline=None)
@given(
    st.integers(min_value=1, max_value=30).flatmap(
        lambda n: st.tuples(
            hnp.arrays(np.float64, n, elements=finite), hnp.arrays(np.float64, n, elements=finite)
        )
    )
)
def test_property_matches_numpy(arrays):
    x, y = arrays
    with np.errstate(all="ignore"):
        expected = x + y * 2
    np.testing.assert_array_equal(
        io.evaluate_expression("a + b * 2", {"a": x, "b": y}, variable="E"), expected
    )


# --------------------------------------------------------------------------------------------
# from_arrays
# --------------------------------------------------------------------------------------------


def test_from_arrays_structure_and_attributes():
    ds = io.from_arrays([0.1, -0.2, 0.3], np.array([1, 2, 3]), name="demo", units="eV", X=[1, 2, 3])
    assert ds.sizes == {"sample": 3}
    assert list(ds.data_vars) == ["E", "uE", "X"]
    assert ds.E.dtype == np.float64 and ds.uE.dtype == np.float64
    assert ds["sample"].values.tolist() == [0, 1, 2]
    assert ds.E.attrs["long_name"] == "prediction error"
    assert ds.uE.attrs["long_name"] == "prediction uncertainty"
    assert ds.E.attrs["units"] == "eV" and ds.uE.attrs["units"] == "eV"
    assert ds.attrs["name"] == "demo"
    assert ds.attrs["source"] == "arrays"
    assert ds.attrs["xuqcal_version"] == __version__
    assert ds.attrs["where"] == ""
    assert ds.attrs["n_rows_read"] == 3 and ds.attrs["n_rows_dropped"] == 0
    created = datetime.fromisoformat(ds.attrs["created"])
    assert created.utcoffset().total_seconds() == 0
    _assert_netcdf_safe_attrs(ds.attrs)
    for var in ds.variables.values():
        _assert_netcdf_safe_attrs(var.attrs)


def test_from_arrays_without_name_or_units():
    ds = io.from_arrays([0.1], [1.0])
    assert "name" not in ds.attrs and "units" not in ds.E.attrs


def test_from_arrays_accepts_dataarrays_with_any_dim_name():
    E = xr.DataArray([0.1, 0.2], dims="point", coords={"point": [10, 20]})
    uE = xr.DataArray([1.0, 2.0], dims="i")
    ds = io.from_arrays(E, uE, X=pd.Series([5.0, 6.0], index=[7, 8]))
    assert ds.E.dims == ("sample",)
    assert ds["sample"].values.tolist() == [0, 1]
    np.testing.assert_array_equal(ds.X, [5.0, 6.0])


def test_from_arrays_keeps_dask_data_lazy():
    da = pytest.importorskip("dask.array")
    E = xr.DataArray(da.from_array(np.linspace(-1, 1, 10), chunks=4), dims="x")
    ds = io.from_arrays(E, da.ones(10, chunks=5))
    assert ds.E.chunks is not None and ds.uE.chunks is not None
    np.testing.assert_allclose(ds.E.values, np.linspace(-1, 1, 10))
    bad = da.from_array(np.r_[np.ones(9), 0.0], chunks=4)
    lazy = io.from_arrays(E, bad)  # nothing computed: the value checks are in the graph
    with pytest.raises(ValueError, match=re.escape("uE: 1 of 10 values are not positive (rows 9)")):
        lazy.uE.compute()


class _CountComputes:
    """A Dask scheduler that counts the graphs it computes."""

    def __init__(self):
        self.count = 0

    def __call__(self, dsk, keys, **kwargs):
        import dask

        self.count += 1
        return dask.get(dsk, keys, **kwargs)


def _lazy_bad_dataset(da):
    E = np.r_[np.linspace(-1, 1, 9), np.nan, 0.5, np.inf]
    uE = np.r_[np.ones(10), -1.0, 1.0]
    return xr.Dataset({"E": ("sample", da.from_array(E, chunks=5)),
                       "uE": ("sample", da.from_array(uE, chunks=3))},
                      coords={"sample": np.arange(100, 112)})


def test_validate_dataset_lazy_computes_nothing_and_raises_at_compute():
    da = pytest.importorskip("dask.array")
    import dask

    counter = _CountComputes()
    with dask.config.set(scheduler=counter):
        checked = io.validate_dataset(_lazy_bad_dataset(da))
        assert counter.count == 0
        assert checked.E.chunks == ((5, 5, 2),) and checked.uE.chunks == ((3, 3, 3, 3),)
        expected = ("invalid input data (3 problems):\n  E: 1 of 12 values are NaN (rows 109)\n"
                    "  E: 1 of 12 values are +inf (rows 111)\n"
                    "  uE: 1 of 12 values are not positive (rows 110)")
        for variable in ("E", "uE"):
            with pytest.raises(ValueError) as info:
                checked[variable].compute()
            assert str(info.value) == expected
        assert counter.count == 2


def test_validate_dataset_lazy_messages_equal_the_eager_ones():
    pytest.importorskip("dask.array")
    cases = [
        (np.r_[1.0, 2.0, 3.0, 1e200], np.r_[1.0, 1.0, 1.0, 1e-200]),   # z² overflows
        (np.r_[1e300, 1.0], np.r_[1.0, 1e-300]),                        # span of 2^1990
        (np.r_[np.nan, np.nan, 2.0, -np.inf] * np.ones(4), np.r_[0.0, 1.0, np.nan, 2.0]),
        (np.arange(20.0), np.r_[np.zeros(8), np.ones(12)]),             # more than 5 rows
    ]
    for E, uE in cases:
        eager = xr.Dataset({"E": ("sample", E), "uE": ("sample", uE)})
        with pytest.raises(ValueError) as expected:
            io.validate_dataset(eager)
        lazy = io.validate_dataset(eager.chunk(sample=3))
        with pytest.raises(ValueError) as info:
            lazy.compute()
        assert str(info.value) == str(expected.value)


_SPECIAL = st.sampled_from([0.0, -0.0, 1.0, -2.5, 1e-200, -1e-300, 1e200, 1e300, 3e-310,
                            np.nan, np.inf, -np.inf])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_SPECIAL, _SPECIAL, _SPECIAL), min_size=1, max_size=6),
       st.sampled_from([np.float64, np.float32]))
@example([(1e200, 1.0, 0.0)], np.float64)  # z finite, z² not
@example([(0.0, 1e-200, 0.0), (0.0, 1e200, 0.0)], np.float64)  # the span only
def test_the_fast_value_test_passes_exactly_the_data_the_checks_pass(rows, dtype):
    """In-memory data skip the masks of the value checks when their raw arrays pass
    (schema._values_pass): they must pass exactly when the checks find nothing."""
    from xuqcal.io import schema

    with np.errstate(over="ignore"):  # float32: 1e200 and 1e300 are inf
        E, uE, X = (np.asarray(column, dtype=dtype) for column in zip(*rows, strict=True))
    ds = xr.Dataset({"E": ("sample", E), "uE": ("sample", uE), "X": ("sample", X)})
    names = ["E", "uE", "X"]
    checks, totals = schema._value_checks(ds, names, "E", "uE")
    try:
        schema.check_points(ds, checks, totals=totals)
        found = False
    except ValueError:
        found = True
    assert schema._values_pass(ds, names, "E", "uE") is not found


def test_validate_dataset_lazy_good_data_unchanged():
    da = pytest.importorskip("dask.array")
    ds = io.from_arrays(da.linspace(-1, 1, 10, chunks=4), da.ones(10, chunks=4), X=np.arange(10))
    checked = io.validate_dataset(ds)
    xr.testing.assert_identical(checked.compute(), ds.compute())
    assert checked.E.attrs == ds.E.attrs and checked.X.chunks == ds.X.chunks


def test_validate_dataset_mixed_backing_checks_memory_data_at_once():
    da = pytest.importorskip("dask.array")
    ds = xr.Dataset({"E": ("sample", np.r_[1.0, np.nan]),
                     "uE": ("sample", da.ones(2, chunks=1))})
    with pytest.raises(ValueError, match=re.escape("E: 1 of 2 values are NaN (rows 1)")):
        io.validate_dataset(ds)


def test_roles_recorded_by_the_constructors_survive_a_rename(tmp_path):
    ds = io.from_arrays([0.1, -0.2], [0.3, 0.2], X=[1.0, 2.0])
    assert ds.E.attrs["xuqcal_role"] == "E" and ds.uE.attrs["xuqcal_role"] == "uE"
    assert "xuqcal_role" not in ds.X.attrs
    renamed = ds.rename(E="err", uE="sigma")
    assert io.roles(renamed) == ("err", "sigma")
    assert io.roles(renamed, E="X") == ("X", "sigma")
    assert io.roles(xr.Dataset({"E": ("sample", [1.0])})) == ("E", "uE")
    io.validate_dataset(renamed)  # finds err and sigma
    df = pd.DataFrame({"y": [1.0, 2.0], "p": [1.5, 1.0], "s": [0.2, 0.3]})
    built = io.from_dataframe(df, E="y - p", uE="s")
    assert (built.E.attrs["xuqcal_role"], built.uE.attrs["xuqcal_role"]) == ("E", "uE")
    io.to_netcdf(renamed, tmp_path / "renamed.nc")
    opened = io.open_dataset(tmp_path / "renamed.nc")
    assert io.roles(opened) == ("err", "sigma")
    reassigned = io.open_dataset(tmp_path / "renamed.nc", E="X", uE="sigma")
    assert io.roles(reassigned) == ("X", "sigma") and "xuqcal_role" not in reassigned.err.attrs
    from xuqcal.io import synthetic

    assert io.roles(synthetic.nig(5, nu=6, seed=0).rename(uE="u")) == ("E", "u")


def test_roles_ambiguous_and_bad_names():
    ds = io.from_arrays([0.1, -0.2], [0.3, 0.2])
    both = ds.assign(E2=ds.E).rename(E="E1")
    with pytest.raises(ValueError, match=r"^E: 2 variables have the role E \(E1, E2\); pass E="):
        io.roles(both)
    assert io.roles(ds.assign(E2=ds.E)) == ("E", "uE")  # the default name decides
    with pytest.raises(ValueError, match=r"^uE: expected the name of a variable"):
        io.roles(ds, uE=3)


@pytest.mark.parametrize(
    ("E", "uE", "match"),
    [
        ([1.0, np.nan, 2.0, np.nan], [1.0] * 4, "E: 2 of 4 values are NaN (rows 1, 3)"),
        ([1.0, np.inf, 2.0, 3.0], [1.0] * 4, "E: 1 of 4 values are +inf (rows 1)"),
        ([1.0, 2.0, -np.inf, 3.0], [1.0] * 4, "E: 1 of 4 values are -inf (rows 2)"),
        ([1.0] * 4, [1.0, np.nan, 1.0, 1.0], "uE: 1 of 4 values are NaN (rows 1)"),
        ([1.0] * 4, [1.0, 1.0, np.inf, 1.0], "uE: 1 of 4 values are +inf (rows 2)"),
        ([1.0] * 4, [0.0, 1.0, -2.0, 1.0], "uE: 2 of 4 values are not positive (rows 0, 2)"),
    ],
)
def test_from_arrays_value_errors(E, uE, match):
    with pytest.raises(ValueError, match=re.escape(match)):
        io.from_arrays(E, uE)


def test_nan_and_inf_are_counted_separately_and_reported_together():
    E = [np.nan, np.inf, -np.inf, np.nan, 1.0]
    with pytest.raises(ValueError) as info:
        io.from_arrays(E, [1.0, 0.0, 1.0, 1.0, 1.0])
    message = str(info.value)
    assert "4 problems" in message
    assert "E: 2 of 5 values are NaN (rows 0, 3)" in message
    assert "E: 1 of 5 values are +inf (rows 1)" in message
    assert "E: 1 of 5 values are -inf (rows 2)" in message
    assert "uE: 1 of 5 values are not positive (rows 1)" in message


def test_at_most_five_example_rows():
    uE = np.ones(100)
    uE[[5, 17, 23, 40, 41, 60, 99]] = -1
    with pytest.raises(
        ValueError,
        match=re.escape("uE: 7 of 100 values are not positive (rows 5, 17, 23, 40, 41, ...)"),
    ):
        io.from_arrays(np.zeros(100), uE)


def test_from_arrays_feature_must_be_finite():
    with pytest.raises(ValueError, match=re.escape("X1: 1 of 3 values are NaN (rows 2)")):
        io.from_arrays([1.0, 2.0, 3.0], [1.0, 1.0, 1.0], X1=[0.0, 1.0, np.nan])


def test_from_arrays_length_mismatch():
    with pytest.raises(ValueError, match="length mismatch: E has 3, uE has 2, X has 3 values"):
        io.from_arrays([1.0, 2.0, 3.0], [1.0, 1.0], X=[1, 2, 3])


def test_from_arrays_empty():
    with pytest.raises(ValueError, match="empty data: the dataset has 0 rows"):
        io.from_arrays([], [])


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"E": ["a", "b"], "uE": [1.0, 1.0]}, "E: the input is not numeric: it holds text"),
        ({"E": [1.0, 2.0], "uE": [True, False]}, "uE: values are not numeric \\(dtype bool\\)"),
        ({"E": [1.0, 2.0], "uE": [1.0, 1.0], "g": ["x", "y"]}, "g: the input is not numeric"),
        ({"E": [[1.0, 2.0]], "uE": [1.0, 1.0]}, "E: expected 1-D values, got an array of shape"),
        ({"E": 1.0, "uE": 1.0}, "E: expected 1-D values"),
    ],
)
def test_from_arrays_type_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        io.from_arrays(**kwargs)


def test_from_arrays_reserved_feature_name():
    with pytest.raises(ValueError, match="feature cannot be named 'sample'"):
        io.from_arrays([1.0], [1.0], sample=[1.0])


def test_from_arrays_boolean_feature_is_allowed():
    ds = io.from_arrays([1.0, 2.0], [1.0, 1.0], big=[False, True])
    assert ds.big.dtype == np.bool_


# --------------------------------------------------------------------------------------------
# validate_dataset
# --------------------------------------------------------------------------------------------


def _valid(n=4) -> xr.Dataset:
    return xr.Dataset(
        {"E": ("sample", np.linspace(-1, 1, n)), "uE": ("sample", np.full(n, 0.5))},
        coords={"sample": np.arange(n)},
    )


def test_validate_returns_the_dataset_unchanged():
    ds = _valid()
    assert io.validate_dataset(ds) is ds


def test_validate_missing_variables():
    with pytest.raises(ValueError, match=r"E: the dataset has no variable 'E' .*pass E='name'"):
        io.validate_dataset(_valid().drop_vars("E"))
    with pytest.raises(ValueError, match="uE: the dataset has no variable 'unc'"):
        io.validate_dataset(_valid(), uE="unc")


def test_validate_custom_variable_names():
    ds = _valid().rename({"E": "err", "uE": "unc"})
    assert io.validate_dataset(ds, E="err", uE="unc") is ds


def test_validate_wrong_dimension():
    ds = _valid().rename({"sample": "index"})
    with pytest.raises(ValueError, match=r"E: expected a 1-D variable over .*'sample'.*rename"):
        io.validate_dataset(ds)


def test_validate_two_dimensional_feature():
    ds = _valid().assign(M=(("sample", "k"), np.ones((4, 2))))
    with pytest.raises(ValueError, match=r"M: expected a 1-D variable over the dimension 'sample'"):
        io.validate_dataset(ds)
    assert io.validate_dataset(ds, features=[]) is ds


def test_validate_non_numeric_variable():
    ds = _valid().assign(label=("sample", np.array(["a", "b", "c", "d"])))
    with pytest.raises(ValueError, match="label: values are not numeric"):
        io.validate_dataset(ds)


def test_validate_unknown_feature():
    with pytest.raises(ValueError, match="unknown feature variable 'X9'"):
        io.validate_dataset(_valid(), features=["X9"])


def test_validate_empty_dataset():
    with pytest.raises(ValueError, match="empty data: the dataset has 0 rows"):
        io.validate_dataset(_valid().isel(sample=slice(0, 0)))


def test_validate_reports_sample_coordinate_labels():
    ds = _valid(6).assign_coords(sample=[10, 11, 12, 13, 14, 15])
    ds["E"][[1, 4]] = np.nan
    with pytest.raises(ValueError, match=re.escape("E: 2 of 6 values are NaN (rows 11, 14)")):
        io.validate_dataset(ds)


def test_validate_feature_nan_names_feature():
    ds = _valid().assign(X=("sample", [1.0, np.nan, 2.0, 3.0]))
    with pytest.raises(ValueError, match=re.escape("X: 1 of 4 values are NaN (rows 1)")):
        io.validate_dataset(ds)


def test_validate_rejects_non_dataset():
    with pytest.raises(TypeError, match=r"xarray\.Dataset"):
        io.validate_dataset({"E": [1.0]})


# --------------------------------------------------------------------------------------------
# from_dataframe / read_csv
# --------------------------------------------------------------------------------------------


def test_from_dataframe_with_expressions(frame):
    ds = io.from_dataframe(
        frame,
        E="y - y_pred",
        uE="sqrt(var)",
        features={"logX": "log10(X)", "w": "2 * `col name`"},
        name="toy",
        units="eV",
    )
    np.testing.assert_allclose(ds.E, frame.y - frame.y_pred)
    np.testing.assert_allclose(ds.uE, np.sqrt(frame["var"]))
    np.testing.assert_allclose(ds.logX, np.log10(frame.X))
    np.testing.assert_allclose(ds.w, 2 * frame["col name"])
    assert ds.attrs["source"] == "dataframe"
    assert ds.attrs["E_expression"] == "y - y_pred"
    assert ds.attrs["uE_expression"] == "sqrt(var)"
    assert ds.attrs["name"] == "toy"
    assert ds.E.attrs["expression"] == "y - y_pred"
    assert ds.logX.attrs["expression"] == "log10(X)"
    assert "units" not in ds.logX.attrs and ds.uE.attrs["units"] == "eV"
    _assert_netcdf_safe_attrs(ds.attrs)


def test_from_dataframe_feature_names_and_exact_column_names(frame):
    df = frame.rename(columns={"y": "E (eV)"})
    ds = io.from_dataframe(df, E="E (eV)", uE="var", features=["X", "n", "col name", "`y_pred`"])
    assert list(ds.data_vars) == ["E", "uE", "X", "n", "col name", "y_pred"]
    np.testing.assert_array_equal(ds.E, df["E (eV)"])
    assert ds.n.dtype == np.float64


def test_from_dataframe_single_feature_string(frame):
    ds = io.from_dataframe(frame, E="y - y_pred", uE="var", features="X")
    assert list(ds.data_vars) == ["E", "uE", "X"]


def test_from_dataframe_feature_expression_needs_mapping_form(frame):
    with pytest.raises(ValueError, match=r"features: 'log\(X\)' is an expression.*mapping form"):
        io.from_dataframe(frame, E="y", uE="var", features=["log(X)"])


def test_from_dataframe_feature_cannot_be_named_E(frame):
    with pytest.raises(ValueError, match="feature cannot be named 'E'"):
        io.from_dataframe(frame, E="y", uE="var", features={"E": "X"})


def test_from_dataframe_duplicate_feature(frame):
    with pytest.raises(ValueError, match="'X' is given twice"):
        io.from_dataframe(frame, E="y", uE="var", features=["X", "X"])


def test_where_keeps_original_row_numbers(frame):
    ds = io.from_dataframe(frame, E="y - y_pred", uE="sqrt(var)", where="uE > 0.25")
    assert ds["sample"].values.tolist() == [0, 1, 2]
    assert ds.attrs["where"] == "uE > 0.25"
    assert ds.attrs["n_rows_read"] == 5 and ds.attrs["n_rows_dropped"] == 2


def test_where_namespace_prefers_computed_variables(frame):
    df = frame.assign(E=[100.0] * 5)  # a column named E is shadowed by the computed E
    ds = io.from_dataframe(
        df, E="y - y_pred", uE="var", features={"X": "X / 10"}, where="(E < 0) & (X >= 2)"
    )
    assert ds["sample"].values.tolist() == [2, 4]
    np.testing.assert_array_equal(ds.X, [3.0, 5.0])


def test_where_can_use_unused_columns_and_backticks(frame):
    ds = io.from_dataframe(frame, E="y - y_pred", uE="var", where="(n != 3) & (`col name` < 0.45)")
    assert ds["sample"].values.tolist() == [0, 1, 3]


def test_where_removes_rows_with_bad_values_before_validation(frame):
    df = frame.copy()
    df.loc[1, "y"] = np.nan
    df.loc[3, "var"] = 0.0
    with pytest.raises(ValueError) as info:
        io.from_dataframe(df, E="y - y_pred", uE="sqrt(var)")
    message = str(info.value)
    assert "E: 1 of 5 values are NaN (rows 1); computed as 'y - y_pred'" in message
    assert "uE: 1 of 5 values are not positive (rows 3)" in message
    assert "where=" in message  # the hint
    ds = io.from_dataframe(df, E="y - y_pred", uE="sqrt(var)", where="isfinite(E) & (uE > 0)")
    assert ds["sample"].values.tolist() == [0, 2, 4]
    assert ds.attrs["n_rows_dropped"] == 2


def test_where_must_be_boolean(frame):
    with pytest.raises(ValueError, match="where: expression 'uE \\* 2' must give true/false"):
        io.from_dataframe(frame, E="y", uE="var", where="uE * 2")


def test_where_must_depend_on_a_column(frame):
    with pytest.raises(ValueError, match="where: expression '1 > 0' does not depend on any column"):
        io.from_dataframe(frame, E="y", uE="var", where="1 > 0")


def test_where_removing_everything_is_an_error(frame):
    with pytest.raises(ValueError, match="where: expression 'uE > 10' keeps none of the 5 rows"):
        io.from_dataframe(frame, E="y", uE="var", where="uE > 10")


def test_where_hint_about_nan_in_reductions(frame):
    df = frame.copy()
    df.loc[0, "y"] = np.nan
    with pytest.raises(ValueError, match=r"keeps none.*E contain non-finite values"):
        io.from_dataframe(df, E="y", uE="var", where="uE > 1e-6 * std(E)")


def test_from_dataframe_unknown_column(frame):
    with pytest.raises(ValueError) as info:
        io.from_dataframe(frame, E="y - ypred", uE="var")
    message = str(info.value)
    assert message.startswith("E: unknown name 'ypred'")
    assert "available columns: y, y_pred, var, X, n, label, `col name`" in message


def test_from_dataframe_non_numeric_column(frame):
    with pytest.raises(ValueError, match="uE: column 'label' is not numeric"):
        io.from_dataframe(frame, E="y", uE="label")


def test_from_dataframe_boolean_E_is_rejected(frame):
    with pytest.raises(ValueError, match="E: expression 'y > 2' gives true/false values"):
        io.from_dataframe(frame, E="y > 2", uE="var")


def test_from_dataframe_constant_E_is_rejected(frame):
    with pytest.raises(ValueError, match=re.escape("E: expression '3' does not depend on any")):
        io.from_dataframe(frame, E="3", uE="var")


def test_from_dataframe_empty():
    with pytest.raises(ValueError, match="empty data: dataframe has 0 rows"):
        io.from_dataframe(pd.DataFrame({"E": [], "uE": []}), E="E", uE="uE")


def test_from_dataframe_duplicated_columns():
    df = pd.DataFrame([[1.0, 2.0]], columns=["a", "a"])
    with pytest.raises(ValueError, match="duplicated column names: a"):
        io.from_dataframe(df, E="a", uE="a")


def test_from_dataframe_uses_positions_not_index(frame):
    ds = io.from_dataframe(frame.set_index("label"), E="y", uE="var", source="mine")
    assert ds["sample"].values.tolist() == [0, 1, 2, 3, 4]
    assert ds.attrs["source"] == "mine"


def test_from_dataframe_nullable_dtypes():
    df = pd.DataFrame({"E": pd.array([1, None, 3], dtype="Int64"), "uE": [1.0, 1.0, 1.0]})
    with pytest.raises(ValueError, match=re.escape("E: 1 of 3 values are NaN (rows 1)")):
        io.from_dataframe(df, E="E", uE="uE")


def test_read_csv(tmp_path):
    path = tmp_path / "data.csv"
    path.write_text("E;u;X\n0.1;0.2;1\n-0.3;0;2\n0.2;0.4;3\n")
    ds = io.read_csv(path, E="E", uE="u", features=["X"], where="uE > 0", units="eV", sep=";")
    assert ds["sample"].values.tolist() == [0, 2]
    np.testing.assert_array_equal(ds.E, [0.1, 0.2])
    assert ds.attrs["source"] == str(path)
    assert ds.attrs["n_rows_read"] == 3 and ds.attrs["n_rows_dropped"] == 1


def test_read_csv_reports_file_rows(tmp_path):
    path = tmp_path / "data.csv"
    path.write_text("E,uE\n0.1,0.2\n0.1,-0.2\n0.1,0.2\n")
    with pytest.raises(ValueError, match=re.escape("uE: 1 of 3 values are not positive (rows 1)")):
        io.read_csv(path, E="E", uE="uE")


# --------------------------------------------------------------------------------------------
# NetCDF
# --------------------------------------------------------------------------------------------


@pytest.fixture
def sample_ds() -> xr.Dataset:
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"y": rng.normal(size=20), "u": rng.uniform(0.1, 1, 20), "X": np.arange(20)})
    return io.from_dataframe(
        df, E="y", uE="u", features={"X2": "X ** 2"}, where="X != 3", name="rt", units="eV"
    )


def test_netcdf_round_trip(tmp_path, sample_ds):
    path = tmp_path / "ds.nc"
    assert io.to_netcdf(sample_ds, path) == path
    back = io.open_dataset(path)
    xr.testing.assert_identical(back, sample_ds)
    assert back["sample"].values.tolist() == sample_ds["sample"].values.tolist()
    assert 3 not in back["sample"].values
    assert back.attrs["n_rows_dropped"] == 1
    assert back.E.dtype == np.float64
    assert os.listdir(tmp_path) == ["ds.nc"]  # no temporary file left behind


def test_netcdf_round_trip_from_arrays(tmp_path):
    ds = io.from_arrays([0.5, -0.5], [1.0, 2.0], units="s", flag=[True, False])
    back = io.open_dataset(io.to_netcdf(ds, str(tmp_path / "a.nc")))
    assert back.E.dtype == np.float64  # units "s" must not be decoded to timedelta
    xr.testing.assert_identical(back, ds)


def test_netcdf_refuses_to_overwrite(tmp_path, sample_ds):
    path = tmp_path / "ds.nc"
    io.to_netcdf(sample_ds, path)
    before = path.read_bytes()
    other = io.from_arrays([1.0], [1.0])
    with pytest.raises(FileExistsError) as info:
        io.to_netcdf(other, path)
    assert str(path) in str(info.value) and "overwrite=True" in str(info.value)
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["ds.nc"]
    io.to_netcdf(other, path, overwrite=True)
    xr.testing.assert_identical(io.open_dataset(path), other)


def test_netcdf_overwrite_of_an_open_file(tmp_path, sample_ds):
    path = io.to_netcdf(sample_ds, tmp_path / "ds.nc")
    ds = io.open_dataset(path)  # loaded and closed: the file can be replaced
    io.to_netcdf(ds.assign(E=ds.E * 2), path, overwrite=True)
    np.testing.assert_array_equal(io.open_dataset(path).E, sample_ds.E * 2)


def test_netcdf_converts_bool_attrs_without_modifying_input(tmp_path, sample_ds):
    ds = sample_ds.copy()
    ds.attrs["recalibrated"] = True
    ds.E.attrs["centred"] = np.bool_(False)
    io.to_netcdf(ds, tmp_path / "b.nc")
    assert ds.attrs["recalibrated"] is True and ds.E.attrs["centred"] is np.False_
    back = io.open_dataset(tmp_path / "b.nc")
    assert back.attrs["recalibrated"] == 1 and not isinstance(back.attrs["recalibrated"], bool)
    assert back.E.attrs["centred"] == 0


def test_netcdf_rejects_unstorable_attribute(tmp_path, sample_ds):
    ds = sample_ds.copy()
    ds.attrs["bad"] = None
    with pytest.raises(ValueError, match="dataset: attribute 'bad' = None"):
        io.to_netcdf(ds, tmp_path / "c.nc")
    assert os.listdir(tmp_path) == []


def test_netcdf_writes_dask_data(tmp_path):
    da = pytest.importorskip("dask.array")
    ds = io.from_arrays(da.linspace(-1, 1, 8, chunks=3), da.ones(8, chunks=3))
    back = io.open_dataset(io.to_netcdf(ds, tmp_path / "d.nc"))
    np.testing.assert_allclose(back.E, np.linspace(-1, 1, 8))


def test_open_dataset_validates(tmp_path, sample_ds):
    path = tmp_path / "bad.nc"
    io.to_netcdf(sample_ds.assign(uE=-sample_ds.uE), path)  # to_netcdf does not validate
    with pytest.raises(ValueError) as info:
        io.open_dataset(path)
    assert str(info.value).startswith(
        f"{path}: uE: 19 of 19 values are not positive (rows 0, 1, 2, 4"
    )


def test_open_dataset_custom_names(tmp_path, sample_ds):
    renamed = sample_ds.rename({"E": "err", "uE": "unc"})
    path = io.to_netcdf(renamed, tmp_path / "n.nc")
    assert io.roles(io.open_dataset(path)) == ("err", "unc")  # the recorded roles
    for name in ("err", "unc"):
        del renamed[name].attrs["xuqcal_role"]
    path = io.to_netcdf(renamed, tmp_path / "n.nc", overwrite=True)
    with pytest.raises(ValueError, match="E: the dataset has no variable 'E'"):
        io.open_dataset(path)
    assert io.open_dataset(path, E="err", uE="unc").sizes["sample"] == 19


# --------------------------------------------------------------------------------------------
# real data (shared literature sets)
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("filename", "M", "dropped"),
    [
        ("Diffusion_RF_Test_cal.csv", 2040, 0),  # set 1
        ("Perovskite_RF_Test_cal.csv", 3834, 2),  # set 2
        ("Perovskite_GPR_Bayesian_Test_cal.csv", 3818, 18),  # set 6
    ],
)
def test_pal2022(shared_data, filename, M, dropped):
    path = shared_data / "PAL2022" / filename
    ds = io.read_csv(path, E="E", uE="uE", where="uE > 1e-6 * std(E)", units="eV")
    assert ds.sizes["sample"] == M
    assert ds.attrs["n_rows_dropped"] == dropped
    assert ds.attrs["n_rows_read"] == M + dropped
    assert list(ds.data_vars) == ["E", "uE"]
    raw = pd.read_csv(path)
    np.testing.assert_array_equal(ds.E, raw.E.to_numpy()[ds["sample"].values])


def test_bus2022_qm9_calibrated(shared_data):
    path = shared_data / "BUS2022" / "qm9_qm9_E_calibrated_isotonic_test.csv"
    ds = io.read_csv(path, E="E_ - prediction", uE="sqrt(uncertainty_total)", units="eV")
    assert ds.sizes["sample"] == 13885
    zms = float(((ds.E / ds.uE) ** 2).mean())
    assert zms == pytest.approx(0.972, abs=1e-3)


def test_ras2023_logp(shared_data):
    path = shared_data / "RAS2023" / "logP_10k_a_LS-GCN_test.csv"
    ds = io.read_csv(path, E="logP - y_pred", uE="uq", features=["error"])
    assert ds.sizes["sample"] == 5000
    # `error` is y_pred - logP, computed by the authors in float32 precision
    np.testing.assert_allclose(ds.E, -ds.error, rtol=0, atol=1e-6)


def test_read_table_reads_once_with_the_checks_of_read_csv(tmp_path):
    path = tmp_path / "t.csv"
    pd.DataFrame({"E": [0.1, -0.2], "uE": [0.3, 0.2], "formula": ["CH4", "H2O"]}).to_csv(
        path, index=False)
    table = io.read_table(path)
    assert table.columns.tolist() == ["E", "uE", "formula"]
    ds = io.from_dataframe(table, E="E", uE="uE", source=str(path))
    xr.testing.assert_identical(ds.drop_attrs(), io.read_csv(path, E="E", uE="uE").drop_attrs())
    assert ds.attrs["source"] == str(path)
    nc = io.to_netcdf(ds, tmp_path / "t.nc")
    with pytest.raises(ValueError, match="is a NetCDF file, not a CSV file"):
        io.read_table(nc)
