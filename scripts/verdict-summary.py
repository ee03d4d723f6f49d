#!/usr/bin/env python3
"""Sums up the verdicts of one or two `brigade compare` reports.

    python3 scripts/verdict-summary.py results/compare-A/report.json
    python3 scripts/verdict-summary.py results/compare-A/report.json results/compare-B/report.json

For each report: the wall time, how many efficiency cell levels were decided (win or equivalent),
the median interval half-width of the efficiency comparisons, and each level's verdict. With two
reports (two independent runs of the same comparison), the agreement between them: cells where they
name different winners (the target is none) and the share of cells with the same outcome.
"""
import json
import statistics
import sys


def levels(report):
    """(scenario, users, preload, level) -> (outcome kind, winner or leaders)."""
    out = {}
    for cell in report["cells"]:
        for level in cell.get("efficiency_levels", []):
            o = level["verdict"]["outcome"]
            key = (cell["scenario"], cell["users"], cell["preload"], level["level"])
            who = o.get("runtime") or ",".join(sorted(o.get("leaders", [])))
            out[key] = (o["kind"], who)
    return out


def summary(path):
    r = json.load(open(path))
    cells = levels(r)
    decided = sum(1 for kind, _ in cells.values() if kind in ("winner", "equivalent"))
    widths = [
        (c["ci_high"] - c["ci_low"]) / 2 * 100
        for c in r["comparisons"]
        if c["measure"] == "efficiency" and c["ci_low"] is not None
    ]
    throughput = [c for c in r["comparisons"] if c["measure"] == "throughput"]
    t_decided = sum(1 for c in throughput if c["outcome"] in ("win", "equivalent"))
    print(f"{path}: took {r['wall_s'] / 60:.1f} min")
    print(
        f"  efficiency: {decided} of {len(cells)} cell levels decided "
        f"({decided / max(len(cells), 1) * 100:.0f}%); median interval half-width "
        f"{statistics.median(widths) if widths else float('nan'):.2f} points over {len(widths)} comparisons"
    )
    print(f"  throughput: {t_decided} of {len(throughput)} comparisons decided")
    for key, (kind, who) in sorted(cells.items()):
        print(f"    {key[0]:<11} {key[1]:>3} users {key[3]:>8}: {kind} {who}")
    return cells


def main():
    a = summary(sys.argv[1])
    if len(sys.argv) < 3:
        return
    b = summary(sys.argv[2])
    common = sorted(set(a) & set(b))
    # The same outcome: the same kind, and for a win the same winner (the runtimes an undecided
    # cell could not separate are detail).
    def outcome(v):
        return v if v[0] == "winner" else (v[0], "")

    same = sum(1 for k in common if outcome(a[k]) == outcome(b[k]))
    conflicts = [
        k for k in common if a[k][0] == b[k][0] == "winner" and a[k][1] != b[k][1]
    ]
    print(
        f"agreement: {same} of {len(common)} cell levels with the same outcome "
        f"({same / max(len(common), 1) * 100:.0f}%); {len(conflicts)} naming different winners"
    )
    for k in conflicts:
        print(f"  different winners at {k}: {a[k][1]} vs {b[k][1]}")


if __name__ == "__main__":
    main()
