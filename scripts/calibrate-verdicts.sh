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

run() { # NAME WINDOWS [compare flags...]
    local name=$1 windows=$2
    shift 2
    "$BIN" compare --runtimes hyper,hyper --scenarios waiter --users "$USERS" --no-isolated \
        --side-by-side-rates "$RATE" --windows "$windows" --count-seconds 0 --budget 0s \
        --no-progress --out "$OUT/$name" "$@" >"$OUT/$name.log" 2>&1 ||
        { echo "calibrate: $name failed, see $OUT/$name.log" >&2; exit 1; }
}

echo "calibrate: probe (hyper,hyper at $RATE/s each) to size the handicaps"
run probe 5
cost=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); c=r["side_by_side"][0]["runtimes"]; print(sum(x["cpu_us_per_request"] for x in c)/len(c))' "$OUT/probe/report.json")
h5=$(python3 -c "print(round($cost*0.05, 3))")
h1=$(python3 -c "print(round($cost*0.01, 3))")
echo "calibrate: a waiter request costs $cost µs of CPU side by side; handicaps $h5 µs (5%) and $h1 µs (1%)"

for i in $(seq 1 "$N"); do
    echo "calibrate: round $i/$N"
    run "aa-$i" "$WINDOWS"
    run "h5-$i" "$WINDOWS" --handicap "hyper#2=$h5"
    run "h1-$i" "$WINDOWS" --handicap "hyper#2=$h1"
done

python3 scripts/calibrate-summary.py "$OUT" "$N" "$cost" "$h5" "$h1" | tee "$OUT/summary.txt"
echo "calibrate: reports under $OUT"
