"""Helpers of the fault catalogue (tests/test_faults_*.py): small input files and the one-line
error check (the guard that no computation starts before an error is the fixture
``no_compute`` of conftest.py)."""

from __future__ import annotations

import pandas as pd

import xuqcal


def write_csv(path, m=300, seed=1):
    """A CSV file of ``m`` synthetic NIG points with columns E and uE; returns ``path``."""
    ds = xuqcal.synthetic.nig(m, nu=6, seed=seed)
    pd.DataFrame({"E": ds.E.values, "uE": ds.uE.values}).to_csv(path, index=False)
    return path


def one_line_error(capsys, status, expected_status=2, command=None):
    """The one line that a refused command printed (asserting its exit status, no traceback,
    and, with ``command``, its ``xuqcal COMMAND:`` prefix)."""
    err = capsys.readouterr().err
    assert status == expected_status, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    if command is not None:
        assert lines[0].startswith(f"xuqcal {command}: ")
    return lines[0]
