"""``xuqcal.STATISTIC_KEYS`` (issue 27, part 3): every statistic key that :func:`xuqcal.stats`
(and :func:`xuqcal.validate`) accept is listed by one public object, and no other key: the
keys of ``STATISTICS`` and the coverage keys (``picp``, ``picpt``, ``picp<percent>``,
``picpt<percent>``)."""

from __future__ import annotations

import pytest
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st

import xuqcal
from xuqcal.core.statistics import STATISTIC_KEYS, STATISTICS, StatisticKeys


def _accepted_by_stats(key: object, ds: xr.Dataset) -> bool:
    try:
        xuqcal.stats(ds, [key])
    except ValueError:
        return False
    return True


@pytest.fixture(scope="module")
def small() -> xr.Dataset:
    return xuqcal.synthetic.nig(200, nu=6, seed=3)


def test_every_listed_key_is_accepted_by_stats_and_validate(small):
    keys = list(STATISTIC_KEYS)
    assert isinstance(xuqcal.STATISTIC_KEYS, StatisticKeys) and len(keys) == len(STATISTIC_KEYS)
    assert set(STATISTICS) <= set(keys) and {"picp", "picpt", "picp95", "picpt68.3"} <= set(keys)
    for key in keys:
        assert key in STATISTIC_KEYS
        assert STATISTIC_KEYS[key]
        assert _accepted_by_stats(key, small), key
    # the families, at a few percents
    for template in STATISTIC_KEYS.patterns:
        for percent in ("1", "50", "90", "99.9", "68.27"):
            key = template.replace("<percent>", percent)
            assert key in STATISTIC_KEYS and _accepted_by_stats(key, small), key
    computed = xuqcal.stats(small, ["zms", "picp", "picpt90"])
    assert computed.statistic.values.tolist() == ["zms", "picp68.3", "picp95", "picpt90"]
    result = xuqcal.validate(small, [*STATISTICS, "picp", "picpt90"], n_boot=40, n_mc=40)
    assert result.statistic.values.tolist() == [*STATISTICS, "picp68.3", "picp95", "picpt90"]


@pytest.mark.parametrize("key", [
    "picp0", "picp100", "picp150", "picpt0", "PICP95", "picp 95", "picp-5", "picpx", "picp95.",
    "picptt95", "zms ", "ZMS", "", "nllx", "picp.5", "mean", "picp95%", 95, None,
])
def test_keys_that_stats_refuses_are_not_listed(key, small):
    assert (key in STATISTIC_KEYS) is False
    with pytest.raises(ValueError):
        xuqcal.stats(small, [key])
    with pytest.raises(ValueError):
        xuqcal.validate(small, [key], n_boot=40, n_mc=40)


@settings(max_examples=60, deadline=None)
@given(key=st.text(alphabet="picpt0123456789.zmsrcenl", min_size=0, max_size=9))
def test_a_key_is_listed_exactly_when_stats_accepts_it(key):
    ds = xuqcal.synthetic.nig(60, nu=6, seed=1)
    assert (key in STATISTIC_KEYS) == _accepted_by_stats(key, ds), key


def test_the_listed_names_describe_the_keys():
    assert STATISTIC_KEYS["zms"] == STATISTICS["zms"].long_name
    assert STATISTIC_KEYS["picp95"] == "prediction interval coverage probability at 0.95"
    assert STATISTIC_KEYS["picp"] == "prediction interval coverage probability at 0.683, 0.95"
    with pytest.raises(KeyError):
        STATISTIC_KEYS["picp100"]
    assert "picpt<percent>" in repr(STATISTIC_KEYS)
