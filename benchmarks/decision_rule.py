"""Error rates of the decision rules for statistics without a predefined reference (cc, ence,
zmse): the pass-rate study of tests/test_validation.py (NIG sets of M = 1000, ν = 6, 20 bins,
n_boot = n_mc = 1000) on calibrated sets with normal, t6 and t4 errors and on miscalibrated
sets (uE 20 % too small), validated once per set; three rules read from the same validation:

* ``SimN``: the Sim scheme with the normal generator alone, whatever the other generators;
* ``old``: the rule before issue 22 (generators normal and t6): *not usable* when their
  references differ beyond their combined uncertainty, else SimN decides;
* ``agree Sim``: the agreement rule judged by the Sim ζ of every generator (normal, t6,
  tfit): decided when every generator's Sim decision is the same (the rule first tried);
* ``new``: the verdict of :func:`xuqcal.validate` with its default generators (normal, t6 and
  the data-informed tfit): SimN when their references agree, else decided when every
  generator's exact test (Sim2) leads to the same decision.

A *fail* on calibrated data is a false fail, on miscalibrated data a true fail; a *not usable*
verdict is neither. The rates get Wilson-cc intervals. Run::

    python benchmarks/decision_rule.py --sets 150 --output benchmarks/measured/decision-rule.json
"""

from __future__ import annotations

import argparse
import json
import platform
import time
import warnings
from pathlib import Path

import numpy as np

import xuqcal
from xuqcal.analysis.validation import agreed_decision, scheme_suffix, verdict_outcome
from xuqcal.core.intervals import DegenerateIntervalWarning, wilson_interval
from xuqcal.core.summaries import generator_sensitive

STATISTICS = ("cc", "ence", "zmse")
#: (name, generator of the errors, uE scale, calibrated)
SCENARIOS = (("normal", "normal", 1.0, True), ("t6", "t6", 1.0, True), ("t4", "t4", 1.0, True),
             ("normal, uE -20 %", "normal", 0.8, False))
RULES = ("SimN", "old", "agree Sim", "new")


def rule_outcomes(v) -> dict[str, dict[str, str | None]]:
    """Per rule and statistic: "pass", "fail" or None (not usable / undecided)."""
    out: dict[str, dict[str, str | None]] = {rule: {} for rule in RULES}
    old_generators = ["normal", "t6"]
    mean = v.sim_mean.sel(generator=old_generators).values
    se = v.sim_se.sel(generator=old_generators).values
    old_sensitive = generator_sensitive(mean, se)
    names = v.generator.values.tolist()
    sensitive = v.generator_sensitive.values
    for i, key in enumerate(v.statistic.values.tolist()):
        z = float(v.zeta.sel(statistic=key, scheme="SimN"))
        sim_n = None if np.isnan(z) else ("pass" if abs(z) <= 1.0 else "fail")
        out["SimN"][key] = sim_n
        out["old"][key] = None if old_sensitive[i] else sim_n
        sims = [f"Sim{scheme_suffix(g)}" for g in names]
        agreed = agreed_decision(v.zeta.sel(statistic=key, scheme=sims).values, names)
        out["agree Sim"][key] = (sim_n if not sensitive[i] else
                                 None if agreed is None else verdict_outcome(agreed[0]))
        out["new"][key] = verdict_outcome(str(v.verdict.sel(statistic=key).values))
    return out


def run(n_sets: int, m: int = 1000, n_boot: int = 1000, n_mc: int = 1000) -> dict:
    """The counts and rates of every scenario, rule and statistic."""
    results = {}
    for name, generator, scale, calibrated in SCENARIOS:
        counts = {rule: {k: {"pass": 0, "fail": 0, "not decided": 0} for k in STATISTICS}
                  for rule in RULES}
        start = time.perf_counter()
        for r in range(n_sets):
            ds = xuqcal.synthetic.nig(m, nu=6, generator=generator, seed=77, replicate=r,
                                      uE_scale=scale)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DegenerateIntervalWarning)
                v = xuqcal.validate(ds, list(STATISTICS), n_boot=n_boot, n_mc=n_mc, seed=r)
            for rule, by_statistic in rule_outcomes(v).items():
                for key, outcome in by_statistic.items():
                    counts[rule][key][outcome or "not decided"] += 1
        rates = {}
        for rule in RULES:
            for key in STATISTICS:
                fails = counts[rule][key]["fail"]
                low, high = wilson_interval(fails, n_sets)
                rates.setdefault(rule, {})[key] = {
                    **counts[rule][key], "fail_rate": fails / n_sets,
                    "fail_rate_low": float(low), "fail_rate_high": float(high)}
        results[name] = {"generator": generator, "uE_scale": scale, "calibrated": calibrated,
                         "rates": rates, "seconds": round(time.perf_counter() - start, 1)}
    return results


def table(results: dict) -> str:
    """Markdown table: fail rate per scenario, statistic and rule (false fails on calibrated
    data, true fails on miscalibrated data)."""
    lines = ["| errors | kind | statistic | " + " | ".join(f"{r} fail rate" for r in RULES)
             + " |", "|---|---|---|" + "---|" * len(RULES)]
    for name, one in results.items():
        kind = "false fail" if one["calibrated"] else "true fail"
        for key in STATISTICS:
            cells = [f"{one['rates'][r][key]['fail_rate']:.3f} "
                     f"({one['rates'][r][key]['not decided']} not decided)" for r in RULES]
            lines.append(f"| {name} | {kind} | {key} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", type=int, default=150, help="data sets per scenario")
    parser.add_argument("--output", type=Path, default=Path("decision-rule.json"))
    args = parser.parse_args()
    start = time.perf_counter()
    results = run(args.sets)
    record = {"study": "decision rule error rates (issue 22)", "n_sets": args.sets, "m": 1000,
              "n_boot": 1000, "n_mc": 1000, "n_bins": 20,
              "generators_new": list(xuqcal.core.defaults.VALIDATION_GENERATORS),
              "xuqcal": xuqcal.__version__, "python": platform.python_version(),
              "seconds": round(time.perf_counter() - start, 1), "results": results}
    tmp = args.output.with_name(f".{args.output.name}.tmp")
    tmp.write_text(json.dumps(record, indent=2))
    tmp.replace(args.output)
    print(table(results))


if __name__ == "__main__":
    main()
