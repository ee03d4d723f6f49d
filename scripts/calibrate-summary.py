#!/usr/bin/env python3
"""The figures of a `scripts/calibrate-verdicts.sh` run, from its reports:

    python3 scripts/calibrate-summary.py OUT N COST_US H5_US H1_US

A/A: false wins, how often the interval holds 1.0, interval half-widths. The ~5% handicap: how
often it is found as a loss for hyper#2, the size measured against the size planted. The ~1% one:
whether it is ever called a win for the handicapped side. Levels that could not be judged (the
servers fell short of the offered rate) are counted apart, with their reasons.
"""
import json
import statistics
import sys

out, n = sys.argv[1], int(sys.argv[2])
cost, h5, h1 = map(float, sys.argv[3:6])


def runs(kind):
    """(comparison, hyper#2's extra cost as a ratio, low, high) per judged run; reasons of the others."""
    judged, skipped = [], []
    for i in range(1, n + 1):
        try:
            report = json.load(open(f"{out}/{kind}-{i}/report.json"))
        except FileNotFoundError:
            continue
        c = [c for c in report["comparisons"] if c["measure"] == "efficiency"][0]
        if c["ratio"] is None:
            skipped.append(c.get("reason") or "not judged")
            continue
        # As hyper#2's extra cost over hyper, whichever way round the report put them.
        if c["a"] == "hyper":
            judged.append((c, c["ratio"], c["ci_low"], c["ci_high"]))
        else:
            judged.append((c, 1 / c["ratio"], 1 / c["ci_high"], 1 / c["ci_low"]))
    return judged, skipped


def widths(judged):
    return statistics.median([(hi - lo) / 2 * 100 for _, _, lo, hi in judged]) if judged else float("nan")


def skipped_words(skipped):
    if not skipped:
        return ""
    return f"; {len(skipped)} not judged (first: {skipped[0]})"


aa, aa_skip = runs("aa")
false_wins = sum(1 for c, *_ in aa if c["outcome"] == "win")
holds = sum(1 for _, _, lo, hi in aa if lo <= 1.0 <= hi)
equivalent = sum(1 for c, *_ in aa if c["outcome"] == "equivalent")
print(
    f"A/A (hyper vs hyper#2): {len(aa)} judged, {false_wins} false win(s), {equivalent} equivalent; "
    f"the interval holds 1.0 in {holds} of {len(aa)}; median half-width {widths(aa):.2f} points"
    + skipped_words(aa_skip)
)
five, five_skip = runs("h5")
planted = h5 / cost * 100
found = sum(1 for c, *_ in five if c["outcome"] == "win" and c["b"] == "hyper#2")
sizes = [(r - 1) * 100 for _, r, _, _ in five]
within = sum(1 for s in sizes if abs(s - planted) <= 1.5)
if sizes:
    print(
        f"~5% handicap ({h5} µs, {planted:.1f}% of {cost:.1f} µs planted): {len(five)} judged; found as a "
        f"loss in {found}; measured {statistics.median(sizes):.2f}% median ({min(sizes):.2f} to "
        f"{max(sizes):.2f}); within ±1.5 points in {within}; median half-width {widths(five):.2f} points"
        + skipped_words(five_skip)
    )
one, one_skip = runs("h1")
planted1 = h1 / cost * 100
wrong = sum(1 for c, *_ in one if c["outcome"] == "win" and c["a"] == "hyper#2")
found1 = sum(1 for c, *_ in one if c["outcome"] == "win" and c["b"] == "hyper#2")
sizes1 = [(r - 1) * 100 for _, r, _, _ in one]
if sizes1:
    print(
        f"~1% handicap ({h1} µs, {planted1:.1f}% planted): {len(one)} judged; a win for the handicapped "
        f"side in {wrong}; found as a loss in {found1}; measured {statistics.median(sizes1):.2f}% median; "
        f"median half-width {widths(one):.2f} points" + skipped_words(one_skip)
    )
