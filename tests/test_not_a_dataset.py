"""Every public function that takes data as ``ds`` refuses anything but a Dataset with one
clear error naming ``ds`` and the type it got, before any work: never an AttributeError,
IndexError or KeyError from deep inside (found by calling each with such values: ``summary``,
``make_bins``, ``roles``, ``scan_dependence`` and the figures of recalibrators did)."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
import xarray as xr

import xuqcal

NOT_DATA = {"None": None, "a number": 3.0, "a list": [1.0, 2.0],
            "a DataArray": xr.DataArray(np.ones(5), dims="sample")}

#: required arguments besides ``ds`` (given valid values: only ``ds`` is wrong)
REQUIRED = {"order_sensitivity": {"by": "uE"}, "warn_if_dependent": {"analysis": "validate"},
            "add_formula_features": {"formulas": ["H2O"]}, "merge_strata": {"by": "uE"},
            "to_netcdf": {"path": "never-written.nc"}}


def _functions_of_ds() -> list[str]:
    names = []
    for name in xuqcal.__all__:
        function = getattr(xuqcal, name)
        if inspect.ismodule(function) or inspect.isclass(function) or not callable(function):
            continue
        parameters = list(inspect.signature(function).parameters)
        if parameters and parameters[0] == "ds":
            names.append(name)
    return sorted(names)


FUNCTIONS = _functions_of_ds()


def test_the_functions_of_data_are_found():
    assert {"validate", "stats", "bootstrap", "simulate", "summary", "local", "make_bins",
            "roles", "scan_dependence", "describe", "pit"} <= set(FUNCTIONS)
    assert len(FUNCTIONS) >= 30


@pytest.mark.parametrize("label", list(NOT_DATA))
@pytest.mark.parametrize("name", FUNCTIONS)
def test_what_is_not_a_dataset_is_refused_by_name(name, label):
    value = NOT_DATA[label]
    kind = type(value).__name__
    with pytest.raises((ValueError, TypeError),
                       match=rf"^ds: expected an xarray\.Dataset.*got {kind}"):
        getattr(xuqcal, name)(value, **REQUIRED.get(name, {}))
