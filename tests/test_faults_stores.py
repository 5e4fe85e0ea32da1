"""Fault catalogue of issue 23, "Zarr chunks missing" and "Corrupted files": Zarr stores whose
chunks were deleted or hold garbage, whose metadata is invalid (also behind a consolidated
copy), and NetCDF files written by xuqcal whose bytes were flipped (their Fletcher-32
checksums no longer match).

The contract: a one-line ``ValueError`` naming the store or file, the variable and the chunk
or points at fault (``xuqcal validate``: one line, exit status 2), before any work where it
can be seen from the metadata; never NaN read for deleted data, a traceback or other numbers
read from damaged bytes. Correct stores and files give bit-identical values.
"""

from __future__ import annotations

import json
import os
import warnings

import netCDF4
import numpy as np
import pytest
import xarray as xr
from faults import one_line_error

import xuqcal
from xuqcal.cli import main
from xuqcal.io.netcdf import DamagedInputError, read_netcdf
from xuqcal.recalibration import Recalibrator
from xuqcal.testing import assert_results_identical

pytest.importorskip("zarr")  # optional: not a dependency of xuqcal

FAST = ["--n-boot", "200", "--n-mc", "50", "--statistics", "zms,rce", "--no-progress"]

#: The chunk (model 1, sample 200..399) of a store over (model, sample) in chunks (1, 200).
CHUNK_KEY = {2: "1.1", 3: "c/1/1"}
METADATA = {2: ".zarray", 3: "zarr.json"}
FORMATS = pytest.mark.parametrize("zarr_format", [2, 3], ids=["zarr2", "zarr3"])


def _data() -> xr.Dataset:
    """Two models' errors and uncertainties over 400 samples."""
    sets = [xuqcal.synthetic.nig(400, nu=6, seed=seed) for seed in (1, 2)]
    return xr.concat(sets, dim="model").assign_coords(model=["a", "b"])


def _store(path, zarr_format: int, **options):
    """``_data()`` written to a Zarr store in chunks of (1 model, 200 samples); ``path``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zarr 3: consolidated metadata is not in the spec
        _data().chunk(model=1, sample=200).to_zarr(path, zarr_format=zarr_format, **options)
    return path


# ------------------------------------------------------------------------ Zarr: missing chunks


@FORMATS
def test_deleted_chunks_are_refused_when_opened(tmp_path, zarr_format, no_compute):
    store = _store(tmp_path / "s.zarr", zarr_format)
    key = CHUNK_KEY[zarr_format]
    for name in ("E", "uE"):
        os.remove(store / name / key)
    with pytest.raises(ValueError) as caught:
        xuqcal.open_dataset(store)
    message = str(caught.value)
    assert message.startswith(f"{store}: variable E lacks 1 of its 4 chunks: E/{key} (model 1, "
                              "sample 200 to 399)")
    assert "also lacking chunks: uE (1 of 4)" in message
    assert "ds.to_zarr(..., write_empty_chunks=True)" in message and "\n" not in message


@FORMATS
def test_deleted_chunks_are_refused_by_validate(tmp_path, capsys, zarr_format, no_compute):
    store = _store(tmp_path / "s.zarr", zarr_format)
    os.remove(store / "E" / CHUNK_KEY[zarr_format])
    line = one_line_error(capsys, main(["validate", str(store), *FAST]), command="validate")
    assert f"variable E lacks 1 of its 4 chunks: E/{CHUNK_KEY[zarr_format]} (model 1, sample " \
           "200 to 399)" in line
    assert "write_empty_chunks=True" in line


def test_many_missing_chunks_are_counted(tmp_path):
    store = _store(tmp_path / "s.zarr", 2)
    data = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        data.chunk(model=1, sample=50).to_zarr(tmp_path / "m.zarr", zarr_format=2)
    for sample in range(8):
        os.remove(tmp_path / "m.zarr" / "uE" / f"0.{sample}")
    with pytest.raises(ValueError, match=r"variable uE lacks 8 of its 16 chunks: uE/0\.0 "
                                         r"\(model 0, sample 0 to 49\), uE/0\.1 .*, uE/0\.2 "
                                         r"\(model 0, sample 100 to 149\) and 5 more; "):
        xuqcal.open_dataset(tmp_path / "m.zarr")
    assert xuqcal.open_dataset(store).E.shape == (2, 400)


def test_chunks_of_fill_values_are_accepted(tmp_path):
    """Chunks that zarr leaves unwritten on purpose: NaN points written with
    write_empty_chunks=True, and an integer feature of zeros (its fill value, not missing)."""
    data = _data().isel(model=0)
    data = data.assign(count=("sample", np.zeros(400, dtype=np.int64)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        data.chunk(sample=200).to_zarr(tmp_path / "z.zarr")
        nan = data.assign(E=data.E.where(data.sample < 200))
        nan.chunk(sample=200).to_zarr(tmp_path / "nan.zarr", write_empty_chunks=True)
    opened = xuqcal.open_dataset(tmp_path / "z.zarr")
    np.testing.assert_array_equal(opened["count"].values, 0)
    assert np.isnan(xr.open_zarr(tmp_path / "nan.zarr").E.values[200:]).all()
    assert not (tmp_path / "z.zarr" / "count" / "c" / "0").exists()  # not written by zarr
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        nan.chunk(sample=200).to_zarr(tmp_path / "lost.zarr")  # the default: not written
    with pytest.raises(ValueError, match=r"variable E lacks 1 of its 2 chunks: E/c/1 \(sample "
                                         r"200 to 399\)"):
        xuqcal.open_dataset(tmp_path / "lost.zarr")


# ----------------------------------------------------------------- Zarr: chunks of garbage bytes


@FORMATS
def test_a_chunk_of_garbage_is_named_when_read(tmp_path, capsys, zarr_format):
    store = _store(tmp_path / "s.zarr", zarr_format)
    key = CHUNK_KEY[zarr_format]
    (store / "E" / key).write_bytes(np.random.default_rng(0).bytes(500))
    opened = xuqcal.open_dataset(store)  # the metadata are right: the bytes are read later
    expected = (f"{store / 'E' / key}: the chunk of variable E at model 1, sample 200 to 399 "
                "cannot be read (")
    with pytest.raises(DamagedInputError) as caught:
        opened.E.compute()
    assert str(caught.value).startswith(expected) and "the Zarr store is damaged" in \
        str(caught.value)
    with pytest.raises(DamagedInputError, match="the chunk of variable E at model 1"):
        xuqcal.reduce_statistics(opened, ["zms"]).compute()
    line = one_line_error(capsys, main(["validate", str(store), *FAST]), command="validate")
    assert expected in line


def test_an_uncompressed_chunk_of_the_wrong_size_is_named(tmp_path):
    store = _store(tmp_path / "raw.zarr", 2, encoding={"uE": {"compressors": None}})
    (store / "uE" / "0.1").write_bytes(b"\0" * 100)  # 100 bytes, not 200 float64
    with pytest.raises(DamagedInputError, match=r"raw\.zarr/uE/0\.1: the chunk of variable uE "
                                                r"at model 0, sample 200 to 399 cannot be read"):
        xuqcal.open_dataset(store).uE.compute()


# ----------------------------------------------------------------------- Zarr: invalid metadata


def _damage_metadata(store, zarr_format: int, how: str) -> None:
    file = store / "E" / METADATA[zarr_format]
    if how == "not JSON":
        file.write_text("{not json")
        return
    metadata = json.loads(file.read_text())
    metadata["shape"] = [2, 401]
    file.write_text(json.dumps(metadata))


@pytest.mark.parametrize("consolidated", [True, False], ids=["consolidated", "per-array"])
@pytest.mark.parametrize("how", ["not JSON", "wrong shape"])
@FORMATS
def test_invalid_array_metadata_is_refused(tmp_path, capsys, zarr_format, how, consolidated,
                                           no_compute):
    """xarray read the consolidated copy and ignored E's own metadata; each array's own file
    is now read and checked, and a consolidated copy that disagrees with it is refused."""
    store = _store(tmp_path / "s.zarr", zarr_format, consolidated=consolidated)
    _damage_metadata(store, zarr_format, how)
    file = store / "E" / METADATA[zarr_format]
    with pytest.raises(ValueError) as caught:
        xuqcal.open_dataset(store)
    message = str(caught.value)
    assert "\n" not in message
    if how == "not JSON":
        assert message.startswith(f"{store}: variable E: its metadata {file} is invalid (")
    elif consolidated:
        assert message.startswith(f"{store}: variable E: its metadata {file} and the store's "
                                  "consolidated copy")
        assert "shape [2, 400] there, [2, 401] in" in message
    else:  # no copy to compare with: the chunk grid of 401 samples has a chunk more
        assert message.startswith(f"{store}: variable E lacks 2 of its 6 chunks: ")
    line = one_line_error(capsys, main(["validate", str(store), *FAST]), command="validate")
    assert str(store) in line


def test_a_correct_store_reads_bit_identical_values(tmp_path):
    data = _data()
    for zarr_format in (2, 3):
        store = _store(tmp_path / f"s{zarr_format}.zarr", zarr_format)
        opened = xuqcal.open_dataset(store)
        again = xuqcal.open_dataset(store)
        assert opened.E.data.name == again.E.data.name  # deterministic
        assert opened.E.chunks == xr.open_zarr(store, chunks="auto").E.chunks
        for name in ("E", "uE"):
            assert opened[name].dtype == data[name].dtype
            np.testing.assert_array_equal(opened[name].values, data[name].values, strict=True)
        lazy = xuqcal.reduce_statistics(opened, ["zms", "rce"]).compute()
        # bit-identical but for the time the results were made (``created``, to the second:
        # the two calls may fall on either side of a second)
        assert_results_identical(lazy, xuqcal.reduce_statistics(data, ["zms", "rce"]))


# ------------------------------------------------------------- NetCDF outputs: flipped bytes


PATTERN = np.tile([1.2345678901234567, -9.87654321012345], 600)


def _damaged_netcdf(tmp_path) -> tuple[os.PathLike, xr.Dataset]:
    """A dataset written by xuqcal.to_netcdf whose variable ``estimate`` (a distinctive float
    pattern) has 200 flipped bytes; the path and the dataset written."""
    data = xuqcal.synthetic.nig(1200, nu=6, seed=3).assign(estimate=("sample", PATTERN))
    path = xuqcal.to_netcdf(data, tmp_path / "out.nc")
    content = bytearray(path.read_bytes())
    start = bytes(content).find(PATTERN[:8].tobytes())
    assert start > 0
    for k in range(start + 800, start + 1000):
        content[k] ^= 0xFF
    damaged = tmp_path / "damaged.nc"
    damaged.write_bytes(bytes(content))
    return damaged, data


def test_outputs_carry_fletcher32_checksums(tmp_path):
    data = xuqcal.synthetic.nig(50, nu=6, seed=3).assign(scalar=3.0, name=("sample", ["x"] * 50))
    path = xuqcal.to_netcdf(data, tmp_path / "out.nc")
    with netCDF4.Dataset(path) as stored:
        filters = {name: variable.filters()["fletcher32"]
                   for name, variable in stored.variables.items()}
    # a scalar is stored unchunked: HDF5 cannot filter it
    assert filters == {"E": True, "uE": True, "sample": True, "name": True, "scalar": False}
    assert "fletcher32" not in data.E.encoding  # the dataset given is unchanged


@pytest.mark.parametrize("reader", ["read_netcdf", "open_dataset", "lazily", "recalibrator"])
def test_flipped_bytes_are_named_when_read(tmp_path, reader):
    damaged, _ = _damaged_netcdf(tmp_path)
    read = {"read_netcdf": lambda: read_netcdf(damaged),
            "open_dataset": lambda: xuqcal.open_dataset(damaged),
            "lazily": lambda: xuqcal.open_dataset(damaged, chunks={"sample": 600}).compute(),
            "recalibrator": lambda: Recalibrator.open(damaged)}[reader]
    with pytest.raises(DamagedInputError) as caught:
        read()
    message = str(caught.value)
    assert message.startswith(f"{damaged}: variable estimate cannot be read")
    assert "its checksum does not match (the file is damaged); write it again" in message
    if reader == "lazily":
        assert "cannot be read (sample " in message


def test_flipped_bytes_in_an_input_end_validate_in_one_line(tmp_path, capsys):
    damaged, _ = _damaged_netcdf(tmp_path)
    line = one_line_error(capsys, main(["validate", str(damaged), *FAST]), command="validate")
    assert line.startswith(f"xuqcal validate: error: {damaged}: variable estimate cannot be "
                           "read: its checksum does not match")


def test_checksummed_files_read_bit_identical_values(tmp_path):
    data = xuqcal.synthetic.nig(1200, nu=6, seed=3).assign(estimate=("sample", PATTERN))
    path = xuqcal.to_netcdf(data, tmp_path / "out.nc")
    for opened in (read_netcdf(path), xuqcal.open_dataset(path),
                   xuqcal.open_dataset(path, chunks={"sample": 500})):
        for name in ("E", "uE", "estimate"):
            np.testing.assert_array_equal(opened[name].values, data[name].values, strict=True)
    lazy = xuqcal.open_dataset(path, chunks={"sample": 500})
    assert lazy.E.chunks == ((500, 500, 200),)
    assert_results_identical(xuqcal.reduce_statistics(lazy, ["zms"]).compute(),
                             xuqcal.reduce_statistics(data, ["zms"]))
