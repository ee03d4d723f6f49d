#!/usr/bin/env python3
"""Drift of a `brigade compare` report: for every (runtime, scenario, users, preload) cell, the last
repeat's successful hits/s divided by the first repeat's; prints the median and quartiles over cells.
Usage: python3 scripts/drift.py results/compare-*/report.json"""
import json, statistics, sys

for path in sys.argv[1:]:
    report = json.load(open(path))
    cells = {}
    for run in report["runs"]:
        res = run.get("result")
        if not res or res["elapsed_s"] <= 0:
            continue
        key = (run["runtime"], run["scenario"], run["users"], run.get("preload", 0))
        cells.setdefault(key, {})[run["repeat"]] = res["total"]["ok"] / res["elapsed_s"]
    ratios = []
    for key, by_repeat in sorted(cells.items()):
        first, last = min(by_repeat), max(by_repeat)
        if first != last and by_repeat[first] > 0:
            ratios.append(by_repeat[last] / by_repeat[first])
    if not ratios:
        print(f"{path}: fewer than two repeats per cell")
        continue
    q = statistics.quantiles(ratios, n=4)
    print(f"{path}: {len(ratios)} cells, last/first repeat: median {statistics.median(ratios):.3f} "
          f"(quartiles {q[0]:.3f}-{q[2]:.3f}, min {min(ratios):.3f}, max {max(ratios):.3f})")
