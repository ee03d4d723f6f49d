#!/usr/bin/env bash
# Calibrates compare's side-by-side verdicts on this machine: N A/A comparisons (hyper against a
# second hyper), N with a planted cost of about 5% of a `waiter` request's CPU on hyper#2, and N
# with one of about 1% (`serve --handicap-us`), interleaved; then prints the false-win rate, how
# often the A/A interval holds 1.0, the detection rate and the measured size of the 5% handicap,
# whether the 1% one was ever called a win for the handicapped side, and the interval widths.
#
#   bash scripts/calibrate-verdicts.sh                 # N=20, 20 windows at 2,000 requests/s each
#   N=5 WINDOWS=10 bash scripts/calibrate-verdicts.sh  # a shorter look
#
# The planted cost is sized from a probe run (its CPU µs per request side by side at RATE), so the
# percentages are of what this machine and build measure, not a constant. Needs a release build.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-20}
RATE=${RATE:-2000}
WINDOWS=${WINDOWS:-20}
USERS=${USERS:-10}
OUT=${OUT:-results/calibrate-$(date -u +%Y%m%d-%H%M%S)}
BIN=${BIN:-target/release/brigade}
[ -x "$BIN" ] || cargo build --release --quiet
mkdir -p "$OUT"

run() { # NAME [compare flags...]
    local name=$1
    shift
    "$BIN" compare --runtimes hyper,hyper --scenarios waiter --users "$USERS" --no-isolated \
        --side-by-side-rates "$RATE" --windows "$WINDOWS" --count-seconds 0 --budget 0s \
        --no-progress --out "$OUT/$name" "$@" >"$OUT/$name.log" 2>&1 ||
        { echo "calibrate: $name failed, see $OUT/$name.log" >&2; exit 1; }
}

echo "calibrate: probe (hyper,hyper at $RATE/s each) to size the handicaps"
run probe --windows 5
cost=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); c=r["side_by_side"][0]["runtimes"]; print(sum(x["cpu_us_per_request"] for x in c)/len(c))' "$OUT/probe/report.json")
h5=$(python3 -c "print(round($cost*0.05, 3))")
h1=$(python3 -c "print(round($cost*0.01, 3))")
echo "calibrate: a waiter request costs $cost µs of CPU side by side; handicaps $h5 µs (5%) and $h1 µs (1%)"

for i in $(seq 1 "$N"); do
    echo "calibrate: round $i/$N"
    run "aa-$i"
    run "h5-$i" --handicap "hyper#2=$h5"
    run "h1-$i" --handicap "hyper#2=$h1"
done

python3 - "$OUT" "$N" "$cost" "$h5" "$h1" <<'EOF'
import json, statistics, sys
out, n, cost, h5, h1 = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])

def comparison(name):
    r = json.load(open(f"{out}/{name}/report.json"))
    c = [c for c in r["comparisons"] if c["measure"] == "efficiency"][0]
    # As hyper#2's extra cost: hyper#2 ÷ hyper, whichever way round the report put them.
    if c["a"] == "hyper":
        ratio, lo, hi = c["ratio"], c["ci_low"], c["ci_high"]
    else:
        ratio, lo, hi = 1 / c["ratio"], 1 / c["ci_high"], 1 / c["ci_low"]
    return c, ratio, lo, hi

def summary(kind):
    rows = [comparison(f"{kind}-{i}") for i in range(1, n + 1)]
    widths = [(hi - lo) / 2 * 100 for _, _, lo, hi in rows]
    return rows, widths

aa, aa_w = summary("aa")
false_wins = sum(1 for c, *_ in aa if c["outcome"] == "win")
holds = sum(1 for _, _, lo, hi in aa if lo <= 1.0 <= hi)
print(f"A/A (hyper vs hyper#2, {n} comparisons): {false_wins} false win(s); the interval holds 1.0 in {holds}; "
      f"median half-width {statistics.median(aa_w):.2f} points")
five, five_w = summary("h5")
planted = h5 / cost * 100
found = sum(1 for c, r, lo, hi in five if c["outcome"] == "win" and c["b"] == "hyper#2")
sizes = [(r - 1) * 100 for _, r, _, _ in five]
within = sum(1 for s in sizes if abs(s - planted) <= 1.5)
print(f"5% handicap ({h5} µs = {planted:.1}% planted): found as a loss in {found} of {n}; measured "
      f"{statistics.median(sizes):.2f}% median ({min(sizes):.2f}–{max(sizes):.2f}); within ±1.5 points in {within}; "
      f"median half-width {statistics.median(five_w):.2f} points")
one, one_w = summary("h1")
planted1 = h1 / cost * 100
wrong = sum(1 for c, *_ in one if c["outcome"] == "win" and c["a"] == "hyper#2")
found1 = sum(1 for c, *_ in one if c["outcome"] == "win" and c["b"] == "hyper#2")
print(f"1% handicap ({h1} µs = {planted1:.1}% planted): a win for the handicapped side in {wrong} of {n}; "
      f"found as a loss in {found1}; median half-width {statistics.median(one_w):.2f} points")
EOF
echo "calibrate: reports under $OUT"
