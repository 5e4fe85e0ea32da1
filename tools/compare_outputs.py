"""Compare the NetCDF outputs of two runs (e.g. the example scripts before and after a change).

Refactoring keeps the numbers: every data variable of a file of the first folder must be
identical (values, dims, coordinates; ``xarray.testing.assert_identical`` without the
attributes, which hold creation times) in the file of the same relative path in the second
folder. Variables only in the second folder are listed (a change may add variables). Exits with
status 1 when any file differs or is missing.

Usage::

    python examples/average_calibration.py --output /tmp/before/average_calibration
    # ... change the code ...
    python examples/average_calibration.py --output /tmp/after/average_calibration
    python tools/compare_outputs.py /tmp/before /tmp/after
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import xarray as xr


def _apply_renames(ds: xr.Dataset, renames: dict[str, str]) -> xr.Dataset:
    """``ds`` (a "before" result) with variables renamed and, where the new name is a
    coordinate of the "after" result, turned into coordinates (a documented rename)."""
    present = {old: new for old, new in renames.items() if old in ds.variables}
    return ds.rename(present) if present else ds


def _largest_differences(a: xr.Dataset, b: xr.Dataset) -> dict[str, float]:
    """The largest ``|after - before| / |before|`` of every float variable present in both
    (same shape) that is not identical: how far a documented change moved the numbers."""
    out = {}
    for name in a.data_vars:
        if name not in b.data_vars or a[name].dtype.kind != "f" or a[name].shape != b[name].shape:
            continue
        x, y = a[name].values, b[name].values
        if np.array_equal(x, y, equal_nan=True):
            continue
        with np.errstate(all="ignore"):
            ratio = np.abs(y - x) / np.maximum(np.abs(x), np.finfo(np.float64).tiny)
        out[str(name)] = float(np.nanmax(ratio))
    return out


def compare(before: Path, after: Path, renames: dict[str, str] | None = None) -> int:
    """Print one line per file of ``before`` and return the number of files that differ.

    ``renames`` maps variable names of ``before`` to their names in ``after`` (documented
    renames); a renamed variable that became a coordinate is compared as a coordinate."""
    renames = renames or {}
    different = 0
    for first in sorted(before.rglob("*.nc")):
        relative = first.relative_to(before)
        second = after / relative
        if not second.is_file():
            print(f"MISSING   {relative}")
            different += 1
            continue
        with xr.open_dataset(first) as a, xr.open_dataset(second) as b:
            a, b = _apply_renames(a.load(), renames), b.load()
            moved = [name for name in a.data_vars if name in b.coords]
            a = a.set_coords(moved)
        new = sorted(set(map(str, b.data_vars)) - set(map(str, a.data_vars)))
        missing = sorted(set(map(str, a.data_vars)) - set(map(str, b.data_vars)))
        try:
            if missing:
                raise AssertionError(f"variables missing after: {missing}")
            xr.testing.assert_identical(a.drop_attrs(), b[list(a.data_vars)].drop_attrs())
        except AssertionError as error:
            different += 1
            print(f"DIFFERENT {relative}: {str(error)[:2000]}")
            for name, relative_difference in _largest_differences(a, b).items():
                print(f"  {name}: largest relative difference {relative_difference:.1e}")
            continue
        print(f"identical {relative}" + (f" (new variables: {', '.join(new)})" if new else ""))
    print(f"{different} file(s) differ")
    return different


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path, help="folder of the first run")
    parser.add_argument("after", type=Path, help="folder of the second run")
    parser.add_argument("--rename", nargs="*", default=[], metavar="OLD=NEW",
                        help="variables renamed between the runs (documented renames)")
    args = parser.parse_args(argv)
    renames = dict(item.split("=", 1) for item in args.rename)
    return 1 if compare(args.before, args.after, renames) else 0


if __name__ == "__main__":
    sys.exit(main())
