#!/usr/bin/env bash
# Sanity check of the side-by-side efficiency figure against the old way of measuring it: for each
# scenario, the ratios of CPU per request between runtimes measured side by side (every server at
# once, RATE requests/s each) against ROUNDS interleaved isolated rounds (one server at a time, open
# loop at the same RATE, the runtime order rotating), whose paired per-round ratios give a t
# interval. A side-by-side ratio inside the isolated rounds' interval agrees.
#
#   bash scripts/sanity-side-by-side.sh                         # waiter, read-heavy, all; 20 rounds
#   SCENARIOS=waiter ROUNDS=8 bash scripts/sanity-side-by-side.sh
#
# Both sides offer each server the same rate; side by side the CPU is shared by all of them, so a
# request may batch differently: that is what this checks. Needs a release build.
set -euo pipefail
cd "$(dirname "$0")/.."
SCENARIOS=${SCENARIOS:-waiter,read-heavy,all}
ROUNDS=${ROUNDS:-20}
RATE=${RATE:-1000}
USERS=${USERS:-10}
OUT=${OUT:-results/sanity-$(date -u +%Y%m%d-%H%M%S)}
BIN=${BIN:-target/release/brigade}
[ -x "$BIN" ] || cargo build --release --quiet
mkdir -p "$OUT"
IFS=, read -r -a scenarios <<<"$SCENARIOS"
for s in "${scenarios[@]}"; do
    echo "sanity: $s side by side at $RATE/s each"
    "$BIN" compare --scenarios "$s" --users "$USERS" --no-isolated --side-by-side-rates "$RATE" \
        --windows 20 --budget 0s --count-seconds 0 --no-progress --out "$OUT/$s-side" >"$OUT/$s-side.log" 2>&1
    echo "sanity: $s, $ROUNDS isolated rounds at $RATE/s"
    "$BIN" compare --scenarios "$s" --users "$USERS" --no-side-by-side --rate "$RATE" \
        --repeat "$ROUNDS" --duration 2s --warmup 500ms --no-progress --out "$OUT/$s-isolated" >"$OUT/$s-isolated.log" 2>&1
done
python3 - "$OUT" "$SCENARIOS" <<'EOF'
import json, math, statistics, sys
out, scenarios = sys.argv[1], sys.argv[2].split(",")
# Student t quantiles, 97.5%, by degrees of freedom (the rounds' paired ratios).
T = {1: 12.71, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262,
     10: 2.228, 12: 2.179, 15: 2.131, 19: 2.093, 24: 2.064, 29: 2.045}
def t(df):
    return T.get(df) or T[max(k for k in T if k <= df)] if df >= 1 else float("nan")
agree = total = 0
print("| scenario | pair | side by side | isolated rounds (95% CI) | agrees |")
print("| --- | --- | ---: | ---: | --- |")
for s in scenarios:
    side = json.load(open(f"{out}/{s}-side/report.json"))
    iso = json.load(open(f"{out}/{s}-isolated/report.json"))
    cost = {}
    for run in iso["runs"]:
        r = run.get("result")
        if not r or not r["total"]["requests"]:
            continue
        us = run["server"]["cpu_percent"] / 100 * r["elapsed_s"] * 1e6 / r["total"]["requests"]
        cost.setdefault(run["runtime"], {})[run["repeat"]] = us
    for c in side["comparisons"]:
        if c["measure"] != "efficiency" or c["ratio"] is None:
            continue
        a, b = c["a"], c["b"]
        logs = [math.log(cost[b][k] / cost[a][k]) for k in cost.get(a, {}) if k in cost.get(b, {})]
        if len(logs) < 3:
            continue
        m, sd = statistics.mean(logs), statistics.stdev(logs)
        h = t(len(logs) - 1) * sd / math.sqrt(len(logs))
        lo, hi = math.exp(m - h), math.exp(m + h)
        ok = lo <= c["ratio"] <= hi
        agree += ok
        total += 1
        print(f"| {s} | {b} ÷ {a} | {(c['ratio']-1)*100:+.1f}% (±{(c['ci_high']-c['ci_low'])/2*100:.1f}) | "
              f"{(math.exp(m)-1)*100:+.1f}% ({(lo-1)*100:+.1f}…{(hi-1)*100:+.1f}%, {len(logs)} rounds) | {'yes' if ok else 'no'} |")
print(f"\n{agree} of {total} side-by-side ratios lie inside the isolated rounds' interval")
EOF
echo "sanity: reports under $OUT"
