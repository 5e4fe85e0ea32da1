"""Figures of a model comparison (xuqcal.plot.compare) on results built by hand with the schema
of xuqcal.compare, rendered to PNG (headless)."""

from __future__ import annotations

import matplotlib.colors as mcolors
import numpy as np
import pytest
import xarray as xr
from plotting import render

from xuqcal.plot.compare import (
    VERDICT_STYLE,
    X_LABEL,
    difference_forest,
    rank_heatmap,
    sip_heatmap,
)
from xuqcal.plot.facets import FacetGrid

MINUS = "\N{MINUS SIGN}"


def make_result(models, statistics=("zms", "rce"), distance=None, half=0.03,
                rank_probability=None, sip=None, sip_intervals=True):
    """A comparison result: ``distance`` (model × statistic, default 0.1, 0.2, ...), intervals
    ``difference ± half``, verdicts from them, the diagonal 0 and ""."""
    models, statistics = list(models), list(statistics)
    k, s = len(models), len(statistics)
    if distance is None:
        distance = 0.1 * (np.arange(k)[:, None] + 1) * np.ones((1, s))
    distance = np.asarray(distance, dtype=np.float64).reshape(k, s)
    difference = distance[:, None, :] - distance[None, :, :]
    low, high = difference - half, difference + half
    verdict = np.where(high < 0, "better",
                       np.where(low > 0, "worse", "no significant difference")).astype(object)
    diagonal = (np.arange(k), np.arange(k))
    for array in (difference, low, high):
        array[diagonal] = 0.0
    verdict[diagonal] = ""
    if rank_probability is None:
        rank_probability = np.eye(k)
    rank_probability = np.asarray(rank_probability, dtype=np.float64)
    if rank_probability.ndim == 2:
        rank_probability = np.repeat(rank_probability[:, :, None], s, axis=2)
    triple = ("model", "other", "statistic")
    ds = xr.Dataset(
        {"estimate": (("model", "statistic"), distance + 1.0),
         "distance": (("model", "statistic"), distance),
         "difference": (triple, difference), "ci_low": (triple, low), "ci_high": (triple, high),
         "zeta": (triple, difference / half), "verdict": (triple, verdict.astype(str)),
         "rank_probability": (("model", "rank", "statistic"), rank_probability),
         "p_best": (("model", "statistic"), rank_probability[:, 0, :])},
        coords={"model": models, "other": models, "rank": np.arange(1, k + 1),
                "statistic": statistics},
        attrs={"level": 0.95, "n_boot": 2000, "seed": 0, "pairing": "common",
               "n_samples": 500})
    if sip is not None:
        sip = np.array(sip, dtype=np.float64)
        np.fill_diagonal(sip, np.nan)
        ds["sip"] = (("model", "other"), sip, {"score": "crps"})
        if sip_intervals:
            ds["sip_low"] = (("model", "other"), sip - 0.04)
            ds["sip_high"] = (("model", "other"), sip + 0.04)
    return ds


def tick_texts(labels):
    return [t.get_text() for t in labels]


def points_by_label(ax):
    """{legend label: (colour, y positions, x values, bar segments)} of the forest plot."""
    out = {}
    for container in ax.containers:
        line = container.lines[0]
        segments = container.lines[2][0].get_segments()
        out[container.get_label()] = (mcolors.to_hex(line.get_color()),
                                      line.get_ydata().tolist(), line.get_xdata().tolist(),
                                      [tuple(np.asarray(s)[:, 0]) for s in segments])
    return out


def test_forest_rows_labels_and_line_at_zero(tmp_path):
    result = make_result(["GCN", "RF", "LR"])
    ax = difference_forest(result, "zms")
    assert tick_texts(ax.get_yticklabels()) == [f"GCN {MINUS} RF", f"GCN {MINUS} LR",
                                                f"RF {MINUS} LR"]
    assert ax.get_xlabel() == X_LABEL == (
        "difference of distance to reference (negative: first model better)")
    assert ax.get_ylabel() == "pair"
    assert ax.get_ylim() == (2.5, -0.5)  # the first pair at the top
    assert any(np.allclose(line.get_xdata(), 0.0) for line in ax.get_lines())
    assert "ZMS" in ax.get_title() and "n_boot = 2000" in ax.get_title()
    assert "95 % BCa" in ax.get_title()
    render(ax, tmp_path / "forest.png")


def test_forest_colours_intervals_and_legend_by_verdict(tmp_path):
    # A − B = −0.10 (A better), A − C = −0.02 (no significant difference), B − C = +0.08 (worse)
    result = make_result(["A", "B", "C"], ["zms"], distance=[0.10, 0.20, 0.12])
    ax = difference_forest(result)
    drawn = points_by_label(ax)
    better, worse, none = (VERDICT_STYLE[v] for v in ("better", "worse",
                                                      "no significant difference"))
    assert drawn[better[0]][0] == mcolors.to_hex(better[1])
    assert drawn[worse[0]][0] == mcolors.to_hex(worse[1])
    assert drawn[none[0]][0] == mcolors.to_hex(none[1])
    assert len({c for c, *_ in drawn.values()}) == 3
    assert list(drawn[better[0]][1:3]) == [[0.0], [pytest.approx(-0.10)]]
    assert list(drawn[none[0]][1:3]) == [[1.0], [pytest.approx(-0.02)]]
    assert list(drawn[worse[0]][1:3]) == [[2.0], [pytest.approx(0.08)]]
    np.testing.assert_allclose(drawn[worse[0]][3][0], (0.05, 0.11))  # the BCa interval
    assert tick_texts(ax.get_legend().get_texts()) == [
        "first model better", "second model better", "no significant difference"]
    render(ax, tmp_path / "verdicts.png")


def test_forest_baseline_mode():
    models = ["GCN", "RF", "LR", "GPR", "MPNN"]
    result = make_result(models, ["zms"], distance=[0.05, 0.15, 0.16, 0.30, 0.14])
    ax = difference_forest(result, baseline="RF")
    assert tick_texts(ax.get_yticklabels()) == [f"{m} {MINUS} RF" for m in models if m != "RF"]
    drawn = points_by_label(ax)
    assert drawn["first model better"][1] == [0.0]  # GCN − RF = −0.10
    assert drawn["second model better"][1] == [2.0]  # GPR − RF = +0.15
    assert drawn["no significant difference"][1] == [1.0, 3.0]
    assert "against RF" in ax.get_title()
    plt_close(ax)


def plt_close(obj):
    import matplotlib.pyplot as plt

    plt.close(obj.figure)


def test_forest_one_panel_per_statistic(tmp_path):
    result = make_result(["GCN", "RF", "LR"], ["zms", "rce", "ence"])
    grid = difference_forest(result)
    assert isinstance(grid, FacetGrid) and grid.axes.shape == (1, 3) and grid.col == "statistic"
    assert [a.get_title() for a in grid.axes.ravel()] == [
        "statistic = zms", "statistic = rce", "statistic = ence"]
    assert all(X_LABEL.replace(" (", "\n(") == a.get_xlabel() for a in grid.axes.ravel())
    assert tick_texts(grid.axes[0, 0].get_yticklabels())[0] == f"GCN {MINUS} RF"
    legends = grid.fig.legends
    assert len(legends) == 1 and tick_texts(legends[0].get_texts()) == ["first model better"]
    assert "Paired differences" in grid.fig.get_suptitle()
    render(grid, tmp_path / "grid.png")
    chosen = difference_forest(result, ["rce", "zms"], row="statistic")
    assert chosen.axes.shape == (2, 1)
    assert [a.get_title() for a in chosen.axes.ravel()] == ["statistic = rce", "statistic = zms"]
    plt_close(chosen)


@pytest.mark.parametrize("k", [2, 5, 10])
def test_forest_any_number_of_models(k, tmp_path):
    models = [f"model_{i}" for i in range(k)]
    ax = difference_forest(make_result(models), "rce")
    assert len(ax.get_yticklabels()) == k * (k - 1) // 2
    assert sum(len(c.lines[0].get_xdata()) for c in ax.containers) == k * (k - 1) // 2
    render(ax, tmp_path / f"forest_{k}.png")


def test_forest_on_given_axes_and_refusals():
    import matplotlib.pyplot as plt

    result = make_result(["GCN", "RF"], ["zms", "rce"])
    _, ax = plt.subplots()
    assert difference_forest(result, "zms", ax=ax) is ax
    with pytest.raises(ValueError, match=r"^ax: a grid of panels \(col='statistic'\)"):
        difference_forest(result, ax=ax)
    plt.close(ax.figure)
    with pytest.raises(ValueError) as error:
        difference_forest(result, "x")
    assert str(error.value) == "statistic: 'x' is not in the result (its statistics: zms, rce)"
    with pytest.raises(ValueError) as error:
        difference_forest(result, baseline="X")
    assert str(error.value) == "baseline: 'X' is not a model of the result (its models: GCN, RF)"
    with pytest.raises(ValueError, match=r"^result: expected the output of xuqcal.compare .* "
                                         r"without verdict$"):
        difference_forest(result.drop_vars("verdict"))
    with pytest.raises(ValueError, match="two models at least"):
        difference_forest(make_result(["GCN"]))
    with pytest.raises(ValueError, match=r"^result: expected the output of xuqcal\.compare"):
        difference_forest(result["difference"])


def test_rank_heatmap_sorted_by_expected_rank(tmp_path):
    probability = [[0.10, 0.30, 0.60],   # GCN: expected rank 2.5
                   [0.85, 0.15, 0.00],   # RF: 1.15
                   [0.05, 0.55, 0.40]]   # LR: 2.35
    result = make_result(["GCN", "RF", "LR"], ["zms", "rce"], rank_probability=probability)
    ax = rank_heatmap(result, "zms")
    assert tick_texts(ax.get_yticklabels()) == ["RF", "LR", "GCN"]
    assert tick_texts(ax.get_xticklabels()) == ["1", "2", "3"]
    assert ax.get_xlabel() == "rank (1 = best)" and ax.get_ylabel() == "model (by expected rank)"
    assert [t.get_text() for t in ax.texts] == ["0.85", "0.15", "0.00", "0.05", "0.55", "0.40",
                                                "0.10", "0.30", "0.60"]
    colorbar = [a for a in ax.figure.axes if a is not ax]
    assert len(colorbar) == 1 and colorbar[0].get_ylabel() == "probability"
    assert "ZMS" in ax.get_title() and "n_boot = 2000" in ax.get_title()
    render(ax, tmp_path / "rank.png")


@pytest.mark.parametrize("k", [2, 5, 10])
def test_rank_heatmap_any_number_of_models(k, tmp_path):
    ax = rank_heatmap(make_result([f"m{i}" for i in range(k)]), "rce")
    assert len(ax.texts) == k * k and len(ax.get_yticklabels()) == k
    render(ax, tmp_path / f"rank_{k}.png")


def test_rank_heatmap_refusals_and_extra_dimension(tmp_path):
    result = make_result(["GCN", "RF"], ["zms", "rce"])
    with pytest.raises(ValueError) as error:
        rank_heatmap(result, "x")
    assert str(error.value) == "statistic: 'x' is not in the result (its statistics: zms, rce)"
    with pytest.raises(ValueError) as error:
        rank_heatmap(result.drop_vars(["rank_probability", "p_best"]), "zms")
    message = str(error.value)
    assert "rank_probability" in message and "xuqcal.compare" in message
    assert "\n" not in message
    tasks = xr.concat([result, result], dim="task").assign_coords(task=["logP", "PAL"])
    grid = rank_heatmap(tasks, "zms")
    assert isinstance(grid, FacetGrid) and grid.axes.shape == (1, 2)
    assert grid.axes[0, 1].get_title() == "task = PAL"
    render(grid, tmp_path / "rank_tasks.png")


def test_sip_heatmap_cells_and_labels(tmp_path):
    sip = [[0, 0.62, 0.70], [0.38, 0, 0.55], [0.30, 0.45, 0]]
    result = make_result(["GCN", "RF", "LR"], sip=sip)
    ax = sip_heatmap(result)
    texts = [t.get_text() for t in ax.texts]
    assert len(texts) == 6  # the diagonal blank
    assert texts[0] == "0.62\n[0.58, 0.66]" and texts[-1] == "0.45\n[0.41, 0.49]"
    image = ax.get_images()[0]
    assert np.ma.getmaskarray(image.get_array()).diagonal().all()
    assert ax.get_xlabel() == "B" and ax.get_ylabel() == "A (better than B in the fraction shown)"
    assert tick_texts(ax.get_xticklabels()) == ["GCN", "RF", "LR"]
    assert tick_texts(ax.get_yticklabels()) == ["GCN", "RF", "LR"]
    colorbar = [a for a in ax.figure.axes if a is not ax]
    assert len(colorbar) == 1 and colorbar[0].get_ylabel() == "SIP"
    assert "crps" in ax.get_title()
    render(ax, tmp_path / "sip.png")
    plain = sip_heatmap(make_result(["GCN", "RF", "LR"], sip=sip, sip_intervals=False))
    assert [t.get_text() for t in plain.texts][:2] == ["0.62", "0.70"]
    plt_close(plain)


@pytest.mark.parametrize("k", [2, 5, 10])
def test_sip_heatmap_any_number_of_models(k, tmp_path):
    models = [f"a_long_model_name_{i}" for i in range(k)]
    sip = np.full((k, k), 0.5)
    ax = sip_heatmap(make_result(models, sip=sip))
    assert len(ax.texts) == k * (k - 1)
    assert {t.get_rotation() for t in ax.get_xticklabels()} == {45.0}  # long labels
    assert {t.get_rotation() for t in ax.get_yticklabels()} == {0.0}
    render(ax, tmp_path / f"sip_{k}.png")


def test_short_labels_are_not_rotated_and_sip_refusals():
    ax = sip_heatmap(make_result(["GCN", "RF"], sip=[[0, 0.6], [0.4, 0]]))
    assert {t.get_rotation() for t in ax.get_xticklabels()} == {0.0}
    plt_close(ax)
    with pytest.raises(ValueError) as error:
        sip_heatmap(make_result(["GCN", "RF"]))
    assert str(error.value).startswith("result: expected the output of xuqcal.compare with the "
                                       "SIP matrix")
    assert str(error.value).endswith("without sip")
