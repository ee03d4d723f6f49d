#!/usr/bin/env bash
# Calibrates compare's side-by-side verdicts: every experiment a whole `brigade compare` on fresh
# servers, in rounds and with the budget exactly as the default compare has them (only the rate is
# given, so that every experiment measures the same load). Level verdicts, four kinds, interleaved:
#   aa    hyper against a second hyper (A/A): the interval should hold 1.0 (no order named);
#   h5    a planted cost of about 5% of a `waiter` request's CPU on hyper#2 (`--handicap`): found
#         in the right direction, its size measured;
#   h1    one of about 1%: never found in the wrong direction;
#   seven as many copies of hyper as the default compare has runtimes (eight today; the name is
#         the kind's, kept for older runs): the cell names them all as its leading group or leaves
#         them undecided, never an order.
# And the scenario verdicts (each scenario's levels pooled), on default runs but for their
# runtimes (perf counts off), N_SCEN of each:
#   saa   the default count of copies of hyper: a scenario verdict names no order;
#   s3    the default runtimes with the last replaced by hyper#2, planted about 3% (`--handicap`):
#         each scenario finds hyper ahead of hyper#2 (win or ahead, the right way). The plant is
#         sized from saa-1, the first of the runs above (3% of the median scenario's CPU per
#         request there), not from the probe: a default run's levels offer a few hundred requests
#         a second, where a request costs two to three times the probe's at RATE, so 3% of the
#         probe's request plants about 1%. One fixed cost is a different share of each scenario's
#         request: the summary gives each scenario's.
# Then scripts/calibrate-summary.py prints the figures against the targets of docs/methodology.md.
# It resumes: run it again with the same OUT and it skips every experiment with a report.
#
#   bash scripts/calibrate-verdicts.sh                    # 60 A/A, 20 of each other kind, 3+3 runs
#                                                         # of the scenario verdicts (~3 h here)
#   N_AA=10 N5=5 N1=5 N7=5 N_SCEN=0 bash scripts/calibrate-verdicts.sh   # a shorter look
#   OUT=results/calibrate-X bash scripts/calibrate-verdicts.sh   # resume that run
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
N_SCEN=${N_SCEN:-3}
RATE=${RATE:-2000}
USERS=${USERS:-10}
WORKERS=${WORKERS:-1}
OUT=${OUT:-results/calibrate-$(date -u +%Y%m%d-%H%M%S)}
BIN=${BIN:-target/release/brigade}
[ -x "$BIN" ] || cargo build --release --quiet
mkdir -p "$OUT"
# The default compare's runtimes, as its plan lists them: the copies follow their count.
defaults=$("$BIN" compare --plan | python3 -c 'import json,sys; print(",".join(json.load(sys.stdin)["settings"]["runtimes"]))')
COPIES=$(echo "$defaults" | tr ',' '\n' | wc -l)
# The copies share one CPU: each gets its share of the pair's rate, so the CPU is as busy.
RATE7=${RATE7:-$((RATE * 2 / COPIES))}

run() { # WORKER NAME RUNTIMES RATE [compare flags...]; RATE `default`: a default run but for
    # its runtimes (the isolated runs set the levels' rates), else one `waiter` level at RATE each;
    # perf counts left out either way (no verdict reads them)
    local worker=$1 name=$2 runtimes=$3 rate=$4
    shift 4
    if [ -s "$OUT/$name/report.json" ]; then
        echo "calibrate: $name done before, kept"
        return
    fi
    local shape=(--scenarios waiter --users "$USERS" --no-isolated --side-by-side-rates "$rate")
    [ "$rate" = default ] && shape=()
    local cpus=()
    if [ "$WORKERS" -gt 1 ]; then
        cpus=(--server-cpus "$((2 * worker))" --generator-cpus "$((2 * worker + 1))")
    fi
    "$BIN" compare --runtimes "$runtimes" "${shape[@]}" --count-seconds 0 --no-progress \
        --out "$OUT/$name" "${cpus[@]}" "$@" >"$OUT/$name.log" 2>&1 || {
        echo "calibrate: $name failed, see $OUT/$name.log" >&2
        touch "$OUT/$name.failed"
    }
}

# The scenario runs' plant in µs (see s3 above), kept in $OUT/h3 once sized: 3% of the median
# over the scenarios of hyper's median CPU per request in saa-1. Another worker may be running
# saa-1: this waits for it; if it failed, the plant falls back to 3% of the probe's request.
scenario_plant() {
    if [ ! -s "$OUT/h3" ]; then
        until [ -s "$OUT/saa-1/report.json" ] || [ -e "$OUT/saa-1.failed" ]; do sleep 30; done
        if [ -s "$OUT/saa-1/report.json" ]; then
            python3 -c '
import json, statistics, sys
report = json.load(open(sys.argv[1]))
costs = {}
for cell in report["side_by_side"]:
    for r in cell["runtimes"]:
        if r["cpu_us_per_request"] > 0:
            costs.setdefault(cell["scenario"], []).append(r["cpu_us_per_request"])
print(round(statistics.median(statistics.median(c) for c in costs.values()) * 0.03, 3))
' "$OUT/saa-1/report.json" >"$OUT/h3.tmp" && mv "$OUT/h3.tmp" "$OUT/h3"
        else
            echo "$h3_probe" >"$OUT/h3"
        fi
    fi
    cat "$OUT/h3"
}

echo "calibrate: probe (hyper,hyper at $RATE/s each) to size the handicaps"
run 0 probe hyper,hyper "$RATE" --rounds 1 --windows 5 --budget 0s
cost=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); c=r["side_by_side"][0]["runtimes"]; print(sum(x["cpu_us_per_request"] for x in c)/len(c))' "$OUT/probe/report.json")
h5=$(python3 -c "print(round($cost*0.05, 3))")
h1=$(python3 -c "print(round($cost*0.01, 3))")
echo "calibrate: a waiter request costs $cost µs of CPU side by side; handicaps $h5 µs (5%) and $h1 µs (1%)"
seven=$(printf 'hyper%.0s,' $(seq 1 "$COPIES") | sed 's/,$//')
# The scenario runs: the defaults with the last replaced by a planted copy of hyper.
planted=$(echo "$defaults" | tr ',' '\n' | head -n $((COPIES - 1)) | paste -sd, -),hyper#2
h3_probe=$(python3 -c "print(round($cost*0.03, 3))")

# The experiments, interleaved by kind, one per line: NAME RUNTIMES RATE [flags].
jobs=$OUT/jobs.txt
: >"$jobs"
most=$(printf '%s\n' "$N_AA" "$N5" "$N1" "$N7" | sort -n | tail -1)
for i in $(seq 1 "$most"); do
    [ "$i" -le "$N_AA" ] && echo "aa-$i hyper,hyper $RATE" >>"$jobs"
    [ "$i" -le "$N5" ] && echo "h5-$i hyper,hyper $RATE --handicap hyper#2=$h5" >>"$jobs"
    [ "$i" -le "$N1" ] && echo "h1-$i hyper,hyper $RATE --handicap hyper#2=$h1" >>"$jobs"
    [ "$i" -le "$N7" ] && echo "seven-$i $seven $RATE7" >>"$jobs"
    [ "$i" -le "$N_SCEN" ] && echo "saa-$i $seven default" >>"$jobs"
    [ "$i" -le "$N_SCEN" ] && echo "s3-$i $planted default --handicap hyper#2=@h3" >>"$jobs"
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
            [[ $flags == *@h3* ]] && flags=${flags//@h3/$(scenario_plant)}
            # shellcheck disable=SC2086
            run "$w" "$name" "$runtimes" "$rate" $flags
        done <"$jobs"
    ) &
done
wait

h3=$([ -s "$OUT/h3" ] && cat "$OUT/h3" || echo "$h3_probe")
python3 scripts/calibrate-summary.py "$OUT" "$cost" "$h5" "$h1" "$h3" | tee "$OUT/summary.txt"
echo "calibrate: reports under $OUT"
