#!/usr/bin/env bash
# Calibrates compare's side-by-side verdicts: every experiment a whole `brigade compare` on fresh
# servers, in rounds and with the budget exactly as the default compare has them (only the rate is
# given, so that every experiment measures the same load). Four kinds, interleaved:
#   aa    hyper against a second hyper (A/A): the interval should hold 1.0 (no order named);
#   h5    a planted cost of about 5% of a `waiter` request's CPU on hyper#2 (`--handicap`): found
#         in the right direction, its size measured;
#   h1    one of about 1%: never found in the wrong direction;
#   seven seven copies of hyper: the cell names all seven as its leading group or leaves them
#         undecided, never an order.
# Then scripts/calibrate-summary.py prints the figures against the targets of docs/methodology.md.
#
#   bash scripts/calibrate-verdicts.sh                    # 60 A/A, 20 of each other kind
#   N_AA=10 N5=5 N1=5 N7=5 bash scripts/calibrate-verdicts.sh   # a shorter look
#   WORKERS=7 bash scripts/calibrate-verdicts.sh          # on a machine with 14+ CPUs: seven
#                                                         # experiments at once, each on its own
#                                                         # pair of CPUs (server 2w, generator 2w+1)
#
# The planted cost is sized from a probe (CPU µs per request side by side at RATE), so the
# percentages are of what this machine and build measure, not a constant. Needs a release build.
set -euo pipefail
cd "$(dirname "$0")/.."
N_AA=${N_AA:-60}
N5=${N5:-20}
N1=${N1:-20}
N7=${N7:-20}
RATE=${RATE:-2000}
# Seven servers share one CPU: each gets a seventh of the pair's rate, so the CPU is as busy.
RATE7=${RATE7:-$((RATE * 2 / 7))}
USERS=${USERS:-10}
WORKERS=${WORKERS:-1}
OUT=${OUT:-results/calibrate-$(date -u +%Y%m%d-%H%M%S)}
BIN=${BIN:-target/release/brigade}
[ -x "$BIN" ] || cargo build --release --quiet
mkdir -p "$OUT"

run() { # WORKER NAME RUNTIMES RATE [compare flags...]
    local worker=$1 name=$2 runtimes=$3 rate=$4
    shift 4
    local cpus=()
    if [ "$WORKERS" -gt 1 ]; then
        cpus=(--server-cpus "$((2 * worker))" --generator-cpus "$((2 * worker + 1))")
    fi
    "$BIN" compare --runtimes "$runtimes" --scenarios waiter --users "$USERS" --no-isolated \
        --side-by-side-rates "$rate" --count-seconds 0 --no-progress --out "$OUT/$name" \
        "${cpus[@]}" "$@" >"$OUT/$name.log" 2>&1 ||
        echo "calibrate: $name failed, see $OUT/$name.log" >&2
}

echo "calibrate: probe (hyper,hyper at $RATE/s each) to size the handicaps"
run 0 probe hyper,hyper "$RATE" --rounds 1 --windows 5 --budget 0s
cost=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); c=r["side_by_side"][0]["runtimes"]; print(sum(x["cpu_us_per_request"] for x in c)/len(c))' "$OUT/probe/report.json")
h5=$(python3 -c "print(round($cost*0.05, 3))")
h1=$(python3 -c "print(round($cost*0.01, 3))")
echo "calibrate: a waiter request costs $cost µs of CPU side by side; handicaps $h5 µs (5%) and $h1 µs (1%)"
seven=hyper,hyper,hyper,hyper,hyper,hyper,hyper

# The experiments, interleaved by kind, one per line: NAME RUNTIMES RATE [flags].
jobs=$OUT/jobs.txt
: >"$jobs"
most=$(printf '%s\n' "$N_AA" "$N5" "$N1" "$N7" | sort -n | tail -1)
for i in $(seq 1 "$most"); do
    [ "$i" -le "$N_AA" ] && echo "aa-$i hyper,hyper $RATE" >>"$jobs"
    [ "$i" -le "$N5" ] && echo "h5-$i hyper,hyper $RATE --handicap hyper#2=$h5" >>"$jobs"
    [ "$i" -le "$N1" ] && echo "h1-$i hyper,hyper $RATE --handicap hyper#2=$h1" >>"$jobs"
    [ "$i" -le "$N7" ] && echo "seven-$i $seven $RATE7" >>"$jobs"
done
total=$(wc -l <"$jobs")
echo "calibrate: $total experiments on $WORKERS worker(s)"
for w in $(seq 0 $((WORKERS - 1))); do
    (
        line=0
        while read -r name runtimes rate flags; do
            line=$((line + 1))
            [ $(((line - 1) % WORKERS)) -eq "$w" ] || continue
            echo "calibrate: [$line/$total] $name"
            # shellcheck disable=SC2086
            run "$w" "$name" "$runtimes" "$rate" $flags
        done <"$jobs"
    ) &
done
wait

python3 scripts/calibrate-summary.py "$OUT" "$cost" "$h5" "$h1" | tee "$OUT/summary.txt"
echo "calibrate: reports under $OUT"
