#!/usr/bin/env python3
"""The figures of a `scripts/calibrate-verdicts.sh` run, from its reports, against its targets:

    python3 scripts/calibrate-summary.py OUT COST_US H5_US H1_US [H3_US]

A/A: how often the interval holds 1.0 and how often an order is named. The ~5% handicap: how often
it is found in the right direction (win or ahead for hyper over hyper#2), and its measured size
against the size planted. The ~1% one: whether it is ever found in the wrong direction. Copies of
hyper (as many as the default runtimes): whether the cell names all of them as its leading group
or leaves them open, never an order. The scenario verdicts (each scenario's levels pooled): with copies only, how many name an
order; with a ~3% plant on hyper#2, how many find hyper ahead of it the right way. Levels that could
not be judged are counted apart, with their reasons.
"""
import glob
import json
import re
import statistics
import sys

out = sys.argv[1]
cost, h5, h1 = map(float, sys.argv[2:5])
h3 = float(sys.argv[5]) if len(sys.argv) > 5 else float("nan")
ORDERED = ("win", "ahead")


def reports(kind):
    paths = glob.glob(f"{out}/{kind}-*/report.json")
    return [json.load(open(p)) for p in sorted(paths, key=lambda p: int(re.findall(r"-(\d+)/", p)[-1]))]


def pair_runs(kind):
    """(comparison, hyper#2's extra cost as a ratio, low, high) per judged run; reasons of the others."""
    judged, skipped = [], []
    for report in reports(kind):
        c = [c for c in report["comparisons"] if c["measure"] == "efficiency"][0]
        if c["ratio"] is None:
            skipped.append(c.get("reason") or "not judged")
            continue
        if c["a"] == "hyper":
            judged.append((c, c["ratio"], c["ci_low"], c["ci_high"]))
        else:
            judged.append((c, 1 / c["ratio"], 1 / c["ci_high"], 1 / c["ci_low"]))
    return judged, skipped


def widths(judged):
    return statistics.median([(hi - lo) / 2 * 100 for _, _, lo, hi in judged]) if judged else float("nan")


def skipped_words(skipped):
    return f"; {len(skipped)} not judged (first: {skipped[0]})" if skipped else ""


def verdict(ok):
    return "met" if ok else "MISSED"


aa, aa_skip = pair_runs("aa")
holds = sum(1 for _, _, lo, hi in aa if lo <= 1.0 <= hi)
ordered = sum(1 for c, *_ in aa if c["outcome"] in ORDERED)
print(
    f"A/A (hyper vs hyper#2): {len(aa)} judged; the interval holds 1.0 in {holds} of {len(aa)} "
    f"(target ≥ 90%: {verdict(len(aa) > 0 and holds >= 0.9 * len(aa))}); an order named in {ordered} "
    f"(target ≤ 5%: {verdict(ordered <= 0.05 * len(aa))}); median half-width {widths(aa):.2f} points"
    + skipped_words(aa_skip)
)
five, five_skip = pair_runs("h5")
planted = h5 / cost * 100
found = sum(1 for c, *_ in five if c["outcome"] in ORDERED and c["b"] == "hyper#2")
sizes = [(r - 1) * 100 for _, r, _, _ in five]
within = sum(1 for s in sizes if abs(s - planted) <= 1.5)
if sizes:
    print(
        f"~5% handicap ({h5} µs, {planted:.1f}% of {cost:.1f} µs planted): {len(five)} judged; found "
        f"in the right direction in {found} (target ≥ 95%: {verdict(found >= 0.95 * len(five))}); "
        f"measured {statistics.median(sizes):.2f}% median ({min(sizes):.2f} to {max(sizes):.2f}); "
        f"within ±1.5 points in {within} (target ≥ 90%: {verdict(within >= 0.9 * len(five))}); "
        f"median half-width {widths(five):.2f} points" + skipped_words(five_skip)
    )
one, one_skip = pair_runs("h1")
wrong = sum(1 for c, *_ in one if c["outcome"] in ORDERED and c["a"] == "hyper#2")
found1 = sum(1 for c, *_ in one if c["outcome"] in ORDERED and c["b"] == "hyper#2")
sizes1 = [(r - 1) * 100 for _, r, _, _ in one]
if sizes1:
    print(
        f"~1% handicap ({h1} µs, {h1 / cost * 100:.1f}% planted): {len(one)} judged; the wrong direction "
        f"in {wrong} (target 0: {verdict(wrong == 0)}); the right one in {found1}; measured "
        f"{statistics.median(sizes1):.2f}% median; median half-width {widths(one):.2f} points"
        + skipped_words(one_skip)
    )
seven = reports("seven")
if seven:
    fine, orders, unjudged = 0, 0, 0
    for report in seven:
        level = report["cells"][0]["efficiency_levels"][0]
        leader = level.get("leader")
        if leader is None:
            unjudged += 1
            continue
        comparisons = [c for c in report["comparisons"] if c["measure"] == "efficiency"]
        named = sum(1 for c in comparisons if c["outcome"] in ORDERED)
        orders += named > 0
        fine += named == 0
    copies = len(seven[0]["side_by_side"][0]["runtimes"])
    print(
        f"{copies} copies of hyper: {len(seven) - unjudged} judged; all leading or undecided, no "
        f"order, in {fine} (target ≥ 95%: {verdict(fine >= 0.95 * max(1, len(seven) - unjudged))}); an "
        f"order named in {orders}" + (f"; {unjudged} not judged" if unjudged else "")
    )


def pooled(report):
    """Every scenario's pooled verdict of a report (reports before it have none)."""
    return [(s["scenario"], s["pooled"]) for s in report["scenarios"] if s.get("pooled")]


saa = reports("saa")
if saa:
    verdicts = [p for r in saa for _, p in pooled(r) if p["comparisons"]]
    named = sum(1 for p in verdicts if any(c["outcome"] in ORDERED for c in p["comparisons"]))
    print(
        f"Scenario verdicts, copies of hyper only: {len(verdicts)} pooled over {len(saa)} runs; an "
        f"order named in {named} (target ≤ 1 of 15: {verdict(named <= max(1, len(verdicts) // 15))})"
    )
s3 = reports("s3")
if s3:
    verdicts = [p for r in s3 for _, p in pooled(r) if p["comparisons"]]
    rows = []  # (scenario, planted %, measured %, outcome the right way, the wrong way)
    for report in s3:
        hyper = {}
        for cell in report["side_by_side"]:
            hyper.setdefault(cell["scenario"], []).extend(
                r["cpu_us_per_request"] for r in cell["runtimes"] if r["runtime"] == "hyper" and r["cpu_us_per_request"] > 0
            )
        for scenario, p in pooled(report):
            for c in p.get("pairs", []):
                if {c["a"], c["b"]} != {"hyper", "hyper#2"}:
                    continue
                size = (c["ratio"] - 1) * 100 if c["a"] == "hyper" else (1 / c["ratio"] - 1) * 100
                planted = h3 / statistics.median(hyper[scenario]) * 100 if hyper.get(scenario) else float("nan")
                ordered = c["outcome"] in ORDERED
                rows.append((scenario, planted, size, ordered and c["a"] == "hyper", ordered and c["a"] == "hyper#2"))
    found = sum(1 for r in rows if r[3])
    wrong = sum(1 for r in rows if r[4])
    print(
        f"Scenario verdicts, about 3% planted on hyper#2 ({h3} µs): {len(verdicts)} pooled over "
        f"{len(s3)} runs; hyper found ahead of hyper#2 the right way in {found} (target ≥ 14 of 15: "
        f"{verdict(found >= 14 * len(verdicts) / 15)}), the wrong way in {wrong}"
    )
    for scenario in sorted({r[0] for r in rows}):
        mine = [r for r in rows if r[0] == scenario]
        print(
            f"  {scenario}: planted {statistics.median(r[1] for r in mine):.1f}% of hyper's request; "
            f"measured {', '.join(f'{r[2]:+.2f}%' for r in mine)}; found in {sum(r[3] for r in mine)} of {len(mine)}"
        )
