"""Helpers shared by the example scripts: command line, output folder, shared data sets."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Iterable
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # the scripts only write files

import matplotlib.pyplot as plt
import xarray as xr

import xuqcal

EXAMPLES = Path(__file__).resolve().parent
PAL_FILTER = "uE > 1e-6 * std(E)"
#: The nine shared data sets of ../shared/data/README.md: label, file, E, uE, where (the same
#: table as DATASETS in tests/conftest.py).
SHARED_SETS: dict[int, tuple[str, str, str, str, str | None]] = {
    1: ("1 Diffusion_RF", "PAL2022/Diffusion_RF_Test_cal.csv", "E", "uE", PAL_FILTER),
    2: ("2 Perovskite_RF", "PAL2022/Perovskite_RF_Test_cal.csv", "E", "uE", PAL_FILTER),
    3: ("3 Diffusion_LR", "PAL2022/Diffusion_LR_Test_cal.csv", "E", "uE", PAL_FILTER),
    4: ("4 Perovskite_LR", "PAL2022/Perovskite_LR_Test_cal.csv", "E", "uE", PAL_FILTER),
    5: ("5 Diffusion_GPR", "PAL2022/Diffusion_GPR_Bayesian_Test_cal.csv", "E", "uE",
        PAL_FILTER),
    6: ("6 Perovskite_GPR", "PAL2022/Perovskite_GPR_Bayesian_Test_cal.csv", "E", "uE",
        PAL_FILTER),
    7: ("7 QM9_E", "BUS2022/qm9_qm9_E_calibrated_isotonic_test.csv", "E_ - prediction",
        "sqrt(uncertainty_total)", None),
    8: ("8 logP_10k", "RAS2023/logP_10k_a_LS-GCN_test.csv", "logP - y_pred", "uq", None),
    9: ("9 logP_150k", "RAS2023/logP_150k_LS-GCN_test.csv", "logP - y_pred", "uq", None),
}


def parser(name: str, description: str) -> argparse.ArgumentParser:
    """Command line with ``--output``, ``--overwrite``, ``--quick`` and ``--seed``."""
    p = argparse.ArgumentParser(description=description,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--output", type=Path, default=EXAMPLES / "output" / name,
                   help=f"folder of the results (default: examples/output/{name}/)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace result files that already exist in the output folder")
    p.add_argument("--quick", action="store_true",
                   help="tiny counts, for a smoke test (seconds; the numbers mean nothing)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random streams")
    return p


def prepare_output(folder: Path, files: Iterable[str], overwrite: bool) -> dict[str, Path]:
    """Create the output folder and refuse to replace existing results without ``overwrite``."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = {f: folder / f for f in files}
    existing = [str(p) for p in paths.values() if p.exists()]
    if existing and not overwrite:
        sys.exit("error: result files already exist (pass --overwrite to replace them):\n  "
                 + "\n  ".join(existing))
    return paths


def shared_data_dir() -> Path:
    """``$XUQCAL_SHARED_DATA``, else ``<repository>/../shared/data``."""
    env = os.environ.get("XUQCAL_SHARED_DATA")
    return Path(env) if env else EXAMPLES.parents[1] / "shared" / "data"


def load_sets(numbers: Iterable[int]) -> dict[str, xr.Dataset]:
    """Read shared data sets as ``label -> Dataset``; exit with a clear message when missing."""
    folder = shared_data_dir()
    numbers = list(numbers)
    unknown = [k for k in numbers if k not in SHARED_SETS]
    if unknown:
        sys.exit(f"error: unknown data sets {unknown}; choose among {list(SHARED_SETS)}")
    missing = [str(folder / SHARED_SETS[k][1]) for k in numbers
               if not (folder / SHARED_SETS[k][1]).is_file()]
    if missing:
        sys.exit("error: shared data files not found (set XUQCAL_SHARED_DATA to the folder of "
                 "../shared/data):\n  " + "\n  ".join(missing))
    sets = {}
    for k in numbers:
        label, path, E, uE, where = SHARED_SETS[k]
        sets[label] = xuqcal.read_csv(folder / path, E=E, uE=uE, where=where, name=label)
    return sets


def save_figure(ax_or_figure, path: Path) -> None:
    """Write a figure as PNG and close it."""
    figure = getattr(ax_or_figure, "figure", ax_or_figure)
    figure.savefig(path, dpi=120)
    plt.close(figure)
    print(f"wrote {path}")


def save_netcdf(ds: xr.Dataset, path: Path) -> None:
    """Write a result (overwriting is decided by :func:`prepare_output`)."""
    xuqcal.to_netcdf(ds, path, overwrite=True)
    print(f"wrote {path}")


class Timer:
    """Print the elapsed time of a block."""

    def __init__(self, what: str):
        self.what = what

    def __enter__(self):
        self.start = time.perf_counter()
        print(f"{self.what} ...", flush=True)
        return self

    def __exit__(self, *exc):
        print(f"{self.what}: {time.perf_counter() - self.start:.1f} s", flush=True)


def format_table(rows: list[list[str]], left: tuple[int, ...] = (0,)) -> str:
    """Align a text table: columns in ``left`` (negative indices allowed) to the left, the
    others to the right; the first row is the header."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lefts = {i % len(widths) for i in left}
    return "\n".join("  ".join(c.ljust(w) if i in lefts else c.rjust(w)
                               for i, (c, w) in enumerate(zip(row, widths, strict=True))).rstrip()
                      for row in rows)
