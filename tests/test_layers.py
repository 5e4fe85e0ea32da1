"""The analysis layer as a whole (issue 12): every analysis lazy through the accessor, variables
by role, one vocabulary, defaults and metadata in one place, layers that import one way."""

from __future__ import annotations

import ast
import inspect
import pkgutil
import re
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import xuqcal
from xuqcal.core import defaults
from xuqcal.testing import assert_lazy_until_compute, assert_results_identical, count_computes

PACKAGE = Path(xuqcal.__file__).parent

#: Every accessor analysis with small arguments: name -> keyword arguments.
ACCESSOR_CALLS = {
    "stats": dict(statistics=["zms", "rce", "ence"], n_bins=5),
    "bootstrap": dict(statistics=["zms", "ence"], n_boot=60, n_bins=5, chunks=30),
    "simulate": dict(statistics=["cc", "ence"], n_mc=20, n_bins=5),
    "validate": dict(statistics=["zms", "ence"], n_boot=60, n_mc=20, n_bins=5),
    "local": dict(statistic="zms", n_bins=5, n_boot=60),
    "reliability": dict(n_bins=5, n_boot=60),
    "adversarial_groups": dict(min_count=50, n_groups=5, n_boot=60),
    "confidence_curve": dict(k=[0, 10, 50], n_mc=20),
    "ablation": dict(k=[0, 5], n_boot=60),
    "calibration_curve": dict(coverage_levels=[0.5, 0.9]),
    "local_coverage": dict(n_bins=5),
    "running_statistics": dict(window=51),
    "describe": dict(),
    "rank_correlation": dict(),
    "recalibration_scores": dict(features=["X1"], n_bins=5, n_boot=60),
    "order_sensitivity": dict(by="X1", n_orders=3, n_bins=5, n_boot=60),
    "bins": dict(n_bins=5),
    "zero_bins_extrapolation": dict(n_bins=[2, 4, 6, 8], min_points=10, fit_above=1),
}


@pytest.fixture(scope="module")
def data() -> xr.Dataset:
    ds = xuqcal.synthetic.nig(400, nu=6, seed=3)
    ds["X1"] = ("sample", np.random.default_rng(0).standard_normal(400))
    return ds


@pytest.mark.parametrize("name", sorted(ACCESSOR_CALLS))
def test_every_accessor_analysis_is_lazy_on_dask_data(data, name):
    """Built on a Dask-backed Dataset, each analysis computes nothing until ``.compute()`` and
    then gives exactly the result of the NumPy-backed data."""
    kwargs = ACCESSOR_CALLS[name]
    lazy_data = data.chunk({"sample": 100})
    computed = assert_lazy_until_compute(getattr(lazy_data.uqcal, name), **kwargs)
    eager = getattr(data.uqcal, name)(**kwargs)
    assert_results_identical(computed, eager.compute(), attrs=False)


@pytest.mark.parametrize("name", ["stats", "bootstrap", "validate", "local"])
def test_bad_values_in_dask_data_raise_the_clear_error_at_compute(data, name):
    bad = data.copy(deep=True)
    bad["uE"][7] = -1.0
    lazy = bad.chunk({"sample": 100})
    with count_computes() as computes:
        result = getattr(lazy.uqcal, name)(**ACCESSOR_CALLS[name])
    assert computes.count == 0
    with pytest.raises(ValueError, match=r"uE"):
        result.compute()


@pytest.mark.parametrize("name", sorted(ACCESSOR_CALLS))
def test_variables_by_role_err_and_sigma(data, name):
    """A Dataset whose variables are named ``err`` and ``sigma`` runs through every accessor
    method with ``E="err", uE="sigma"`` and gives the numbers of the same data named E, uE."""
    renamed = data.rename(E="err", uE="sigma")
    kwargs = ACCESSOR_CALLS[name]
    method = getattr(renamed.uqcal, name)
    roles = {k: v for k, v in (("E", "err"), ("uE", "sigma"))  # bins use only uE
             if k in inspect.signature(method).parameters}
    by_role = method(**kwargs, **roles).compute()
    plain = getattr(data.uqcal, name)(**kwargs).compute()
    for key in ("E", "uE", "by"):  # the attributes that name the variables differ, nothing else
        by_role.attrs.pop(key, None)
        plain.attrs.pop(key, None)
    assert_results_identical(_named_e_and_ue(by_role), plain, attrs=False)


def _named_e_and_ue(result):
    """A result of data named err/sigma as if the variables were named E/uE (results name the
    variables they were given, in variables and labels such as |err|)."""
    back = {"err": "E", "sigma": "uE"}
    if isinstance(result, xr.Dataset):
        result = result.rename({k: v for k, v in back.items() if k in result.variables})
    for name, coord in result.coords.items():
        if coord.dtype.kind == "U":
            labels = [str(v) for v in coord.values]
            for old, new in back.items():
                labels = [re.sub(rf"\b{old}\b", new, label) for label in labels]
            result = result.assign_coords({name: coord.copy(data=np.array(labels))})
    return result


def test_roles_recorded_by_the_constructors_survive_a_rename():
    ds = xuqcal.from_arrays(E=np.linspace(-1, 1, 200), uE=np.linspace(0.5, 1.5, 200))
    renamed = ds.rename(E="err", uE="sigma")
    assert_results_identical(renamed.uqcal.stats(["zms", "rce"]), ds.uqcal.stats(["zms", "rce"]),
                             attrs=False)


@pytest.mark.parametrize("name", sorted(ACCESSOR_CALLS))
def test_functions_take_recorded_roles_without_the_accessor(name):
    """The roles are resolved by the analyses themselves (xuqcal.io.by_role), not by the
    accessor: a Dataset built by xuqcal and renamed gives the numbers of the original."""
    rng = np.random.default_rng(2)
    ds = xuqcal.from_arrays(E=rng.standard_normal(400) * rng.uniform(0.5, 2, 400),
                            uE=rng.uniform(0.5, 2, 400))
    ds["X1"] = ("sample", rng.random(400))
    function = getattr(xuqcal.UQCalAccessor, name).__doc__.split(":func:`")[1].split("`")[0]
    module, attr = function.rsplit(".", 1)
    call = getattr(__import__(module, fromlist=["_"]), attr)
    renamed = call(ds.rename(E="err", uE="sigma"), **ACCESSOR_CALLS[name])
    original = call(ds, **ACCESSOR_CALLS[name])
    for result in (renamed, original):
        for key in ("E", "uE", "by"):
            result.attrs.pop(key, None)
    assert_results_identical(_named_e_and_ue(renamed.compute()), original.compute(),
                             attrs=False)


def test_recalibrate_finds_the_roles():
    """``recalibrate`` has the parameters of ``recalibration.fit`` and resolves recorded roles."""
    rng = np.random.default_rng(1)
    ds = xuqcal.from_arrays(E=rng.standard_normal(400) * 1.3, uE=np.full(400, 1.0))
    assert "E" in inspect.signature(xuqcal.UQCalAccessor.recalibrate).parameters
    plain = ds.uqcal.recalibrate("temperature", features=[])
    renamed = ds.rename(E="err", uE="sigma").uqcal.recalibrate("temperature", features=[])
    np.testing.assert_array_equal(plain.dataset["scale"].values,
                                  renamed.dataset["scale"].values)


def _public_functions():
    """(qualified name, function) of every public function of the public modules and of the
    accessor."""
    seen = {}
    for info in pkgutil.walk_packages(xuqcal.__path__, "xuqcal."):
        if info.name.endswith("__main__") or ".testing" in info.name:
            continue
        module = __import__(info.name, fromlist=["_"])
        if any(part.startswith("_") for part in info.name.split(".")[1:]):
            continue
        for name, obj in vars(module).items():
            if name.startswith("_") or getattr(obj, "__module__", None) != module.__name__:
                continue
            if inspect.isfunction(obj):
                seen[f"{module.__name__}.{name}"] = obj
            elif inspect.isclass(obj):
                for attr, member in vars(obj).items():
                    if inspect.isfunction(member) and not attr.startswith("_"):
                        seen[f"{module.__name__}.{name}.{attr}"] = member
    return sorted(seen.items())


#: ``reference`` is the word for a reference *value* (ζ of METHODS §4), never for a generator.
REFERENCE_VALUE = {"xuqcal.core.intervals.zeta", "xuqcal.analysis.labelled.zeta"}


def test_no_parameter_named_n_or_reference_and_generator_is_one_generator():
    offenders = []
    for name, function in _public_functions():
        parameters = inspect.signature(function).parameters
        for bad in ("n", "reference", "n_try"):
            if bad in parameters and not (bad == "reference" and name in REFERENCE_VALUE):
                offenders.append(f"{name}({bad}=)")
        if "generator" in parameters:
            annotation = str(parameters["generator"].annotation)
            if any(word in annotation for word in ("Iterable", "Sequence", "list")):
                offenders.append(f"{name}(generator: {annotation}) takes several: generators=")
    assert not offenders, offenders


def test_defaults_come_from_one_place():
    """The vocabulary's parameters default to a value of :mod:`xuqcal.core.defaults` in every
    public function and accessor method."""
    allowed = {
        "n_boot": {defaults.N_BOOT, defaults.N_BOOT_LOCAL, defaults.N_BOOT_GROUPS,
                   defaults.N_BOOT_ABLATION, defaults.N_BOOT_SCORES,
                   defaults.N_BOOT_RELIABILITY, defaults.N_BOOT_VALIDATION},
        "n_mc": {defaults.N_MC, defaults.N_MC_VALIDATION, defaults.N_MC_CURVE,
                 defaults.N_MC_SCORES, defaults.N_MC_STUDY, defaults.N_MC_CUBE,
                 defaults.N_MC_CALIBRATION_SCORES},
        "level": {defaults.LEVEL},
        "seed": {defaults.SEED},
        "E": {defaults.E},
        "uE": {defaults.UE},
        "generators": {defaults.GENERATORS, defaults.VALIDATION_GENERATORS},
    }
    offenders = []
    for name, function in _public_functions():
        for parameter in inspect.signature(function).parameters.values():
            values = allowed.get(parameter.name)
            if values is None or parameter.default is inspect.Parameter.empty:
                continue
            default = parameter.default
            if default is not None and default not in values:
                offenders.append(f"{name}({parameter.name}={default!r})")
    assert not offenders, offenders


def test_accessor_methods_keep_the_function_signatures():
    for name in ACCESSOR_CALLS:
        method = getattr(xuqcal.UQCalAccessor, name)
        target = inspect.unwrap(method) if hasattr(method, "__wrapped__") else None
        assert target is None  # generated wrappers expose the signature, not __wrapped__
        parameters = list(inspect.signature(method).parameters)
        assert parameters[0] == "self"
        assert ({"uE"} if name == "bins" else {"E", "uE"}) <= set(parameters), name


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


@pytest.mark.parametrize("layer, forbidden", [
    ("core", ("xarray", "xuqcal.analysis", "xuqcal.io", "xuqcal.recalibration", "xuqcal.plot",
              "xuqcal.report", "xuqcal.cli", "xuqcal.studies", "xuqcal.accessor")),
    ("analysis", ("xuqcal.accessor", "xuqcal.plot", "xuqcal.report", "xuqcal.cli",
                  "xuqcal.studies", "xuqcal.recalibration")),
    ("io", ("xuqcal.accessor", "xuqcal.analysis", "xuqcal.plot", "xuqcal.report",
            "xuqcal.cli", "xuqcal.studies", "xuqcal.recalibration")),
    ("studies", ("xuqcal.accessor", "xuqcal.report", "xuqcal.cli")),
    ("recalibration", ("xuqcal.accessor", "xuqcal.report", "xuqcal.cli")),
    ("report", ("xuqcal.accessor", "xuqcal.cli")),
])
def test_layers_import_one_way(layer, forbidden):
    offenders = []
    for path in sorted((PACKAGE / layer).rglob("*.py")):
        for imported in _imports(path):
            if any(imported == f or imported.startswith(f + ".") for f in forbidden):
                offenders.append(f"{path.relative_to(PACKAGE)} imports {imported}")
    assert not offenders, offenders


def test_version_and_creation_time_are_attached_in_one_place():
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = str(path.relative_to(PACKAGE))
        if relative in ("_version.py", "__init__.py", "core/provenance.py"):
            continue
        allowed = {"cli/commands.py": ("__version__",)}.get(relative, ())  # xuqcal --version
        text = path.read_text(encoding="utf-8")
        for needle in ("__version__", "datetime.now("):
            if needle in text and needle not in allowed:
                offenders.append(f"{relative}: {needle}")
    assert not offenders, offenders


def test_results_record_version_and_creation_time(data):
    for result in (data.uqcal.stats(["zms"]), data.uqcal.bootstrap(["zms"], n_boot=60),
                   data.uqcal.local(n_bins=5, n_boot=60)):
        assert result.attrs["xuqcal_version"] == xuqcal.__version__
        assert result.attrs["created"].endswith("+00:00")


def test_set_options_is_validated_and_scoped():
    before = xuqcal.get_options()
    with xuqcal.set_options(replicate_chunk=7, progress=True):
        assert xuqcal.get_options()["replicate_chunk"] == 7
        assert xuqcal.get_options()["progress"] is True
    assert xuqcal.get_options() == before
    with pytest.raises(ValueError, match=r"^replicate_chunk: expected"):
        xuqcal.set_options(replicate_chunk=0)
    with pytest.raises(ValueError, match=r"^chunk_size: not an option"):
        xuqcal.set_options(chunk_size=10)
    assert xuqcal.get_options() == before


def test_replicate_chunk_option_changes_the_tasks_not_the_numbers(data):
    reference = xuqcal.bootstrap(data, ["zms", "ence"], n_boot=90, n_bins=5)
    with xuqcal.set_options(replicate_chunk=7):
        chunked = xuqcal.bootstrap(data, ["zms", "ence"], n_boot=90, n_bins=5,
                                   keep_replicates=True)
        assert chunked.replicates.chunks[-1][0] == 7
    assert_results_identical(chunked.drop_vars("replicates"), reference, attrs=False)
