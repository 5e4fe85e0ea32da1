"""The subprocesses of the GPU tests (``tests/test_gpu.py``, ``tests/test_gpu_simulation.py``).

Numba's CUDA simulator must be switched on (``NUMBA_ENABLE_CUDASIM=1``) before ``numba.cuda``
is first imported, which another test of this process may have done already: each check runs a
script in a fresh Python (``PYTHONPATH`` starting at the repository) that prints its result as
JSON on its last line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: The start of a script for the simulator: ``json``, ``warnings``, ``np`` and ``cuda`` imported,
#: the overflow warnings of the uint64 streams off, and a JSON ``"skip"`` (and exit) when
#: ``numba.cuda`` cannot be imported.
SIMULATOR_PREAMBLE = """import json
import warnings

import numpy as np

warnings.simplefilter("ignore", RuntimeWarning)  # uint64 wraparound of the simulated streams
try:
    from numba import cuda
except Exception as error:
    print(json.dumps({"skip": f"numba.cuda cannot be imported: {error}"}))
    raise SystemExit(0)

"""


def start(script: str, *, simulator: bool) -> subprocess.Popen:
    """Start ``python -c script`` in the repository, with the simulator on or off."""
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    if simulator:
        env["NUMBA_ENABLE_CUDASIM"] = "1"
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(script)], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(process: subprocess.Popen, timeout: float = 120) -> tuple[int, str, str]:
    """Wait for ``process`` (killed after ``timeout`` seconds): ``(returncode, stdout,
    stderr)``."""
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        stdout, stderr = process.communicate()
    return process.returncode, stdout, stderr


def json_result(process: subprocess.Popen, timeout: float = 120) -> dict:
    """The JSON of the last line ``process`` printed; it must have succeeded; a result with
    ``"skip"`` skips the test."""
    returncode, stdout, stderr = finish(process, timeout)
    assert returncode == 0, stdout[-3000:] + stderr[-3000:]
    found = json.loads(stdout.strip().splitlines()[-1])
    if "skip" in found:
        pytest.skip(found["skip"])
    return found
