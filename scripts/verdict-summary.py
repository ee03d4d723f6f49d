#!/usr/bin/env python3
"""Sums up the verdicts of one or two `brigade compare` reports against issue 31's targets.

    python3 scripts/verdict-summary.py results/compare-A/report.json
    python3 scripts/verdict-summary.py results/compare-A/report.json results/compare-B/report.json

For each report: the wall time; how many side-by-side levels were judged and in how many the
leader was decided; the comparisons with the best counted apart (win, ahead, equivalent,
undecided); the median simultaneous half-width; every level's measured busy share against its
name (and any judged at 90% or more). With two reports (two independent runs of the same
comparison): contradictions (a level where one run's best is ordered behind another runtime by the
other run — the target is none) and the share of levels naming the same leading group.
"""
import json
import statistics
import sys

ORDERED = ("win", "ahead")


def levels(report):
    """(scenario, users, preload, level) -> the level's verdict, leader and comparisons."""
    out = {}
    for cell in report["cells"]:
        for level in cell.get("efficiency_levels", []):
            key = (cell["scenario"], cell["users"], cell["preload"], level["level"])
            comparisons = [
                c
                for c in report["comparisons"]
                if c["measure"] == "efficiency"
                and (c["scenario"], c["users"], c["preload"], c.get("level")) == key
            ]
            out[key] = (level, comparisons)
    return out


def summary(path):
    r = json.load(open(path))
    ls = levels(r)
    judged = {k: v for k, v in ls.items() if v[0].get("leader")}
    decided = sum(1 for level, _ in judged.values() if level["leader"]["decided"])
    counts = {o: 0 for o in ("win", "ahead", "equivalent", "undecided", "not_judged")}
    halves = []
    for _, comparisons in judged.values():
        for c in comparisons:
            counts[c["outcome"]] += 1
            if c["ci_low"] is not None:
                halves.append((c["ci_high"] - c["ci_low"]) / 2 * 100)
    print(f"{path}: {r['wall_s'] / 60:.1f} min wall")
    share = decided / len(judged) * 100 if judged else 0
    print(
        f"  {len(judged)} of {len(ls)} levels judged; leader decided in {decided} ({share:.0f}%); "
        f"comparisons: {counts['win']} win, {counts['ahead']} ahead, {counts['equivalent']} "
        f"equivalent, {counts['undecided']} undecided, {counts['not_judged']} not judged; median "
        f"half-width {statistics.median(halves) if halves else float('nan'):.2f} points"
    )
    off, hot = [], []
    for key, (level, _) in ls.items():
        busy = level.get("busy_pct")
        if busy is None or not level["level"].endswith("%"):
            continue
        aim = float(level["level"].rstrip("%"))
        if abs(busy - aim) > 10:
            off.append(f"{key[0]} {key[1]} users at {level['level']}: {busy:.0f}%")
        if busy >= 90 and level.get("leader"):
            hot.append(f"{key[0]} {key[1]} users at {level['level']}: {busy:.0f}%")
    print(f"  levels more than 10 points off their share: {len(off)}" + (f" ({'; '.join(off)})" if off else ""))
    print(f"  levels judged at >= 90% busy: {len(hot)}" + (f" ({'; '.join(hot)})" if hot else ""))
    for key, (level, comparisons) in sorted(ls.items()):
        leader = level.get("leader")
        who = " ≈ ".join(leader["runtimes"]) + (" (decided)" if leader["decided"] else f" (open: {', '.join(leader.get('open', []))})") if leader else level["verdict"]["outcome"]["kind"]
        print(f"    {key[0]:>10} {key[1]:>3} users {level['level']:>4} {level.get('busy_pct') or 0:3.0f}% busy: {who}")
    return ls


def behind(comparisons, best):
    """The runtimes a level orders ahead of `best` (best is b in an ordered comparison)."""
    return {c["a"] for c in comparisons if c["b"] == best and c["outcome"] in ORDERED}


a = summary(sys.argv[1])
if len(sys.argv) > 2:
    b = summary(sys.argv[2])
    common = [k for k in a if k in b and a[k][0].get("leader") and b[k][0].get("leader")]
    contradictions = []
    same = 0
    for k in common:
        (la, ca), (lb, cb) = a[k], b[k]
        best_a, best_b = la["leader"]["runtimes"][0], lb["leader"]["runtimes"][0]
        if behind(cb, best_a) or behind(ca, best_b):
            contradictions.append(f"{k}: {best_a} / {best_b}")
        same += sorted(la["leader"]["runtimes"]) == sorted(lb["leader"]["runtimes"])
    print(
        f"Two runs: {len(common)} levels judged in both; contradictions {len(contradictions)}"
        + (f" ({'; '.join(contradictions)})" if contradictions else "")
        + f"; the same leading group in {same} ({same / max(1, len(common)) * 100:.0f}%)"
    )
