#!/usr/bin/env bash
# Calibrates the SLO search (`compare --slo`, docs/methodology.md "Capacity at an SLO") on this
# machine. One runtime is searched twice at once (RUNTIME and RUNTIME#2, their steps interleaved),
# each server with a planted cost of HANDICAP µs of CPU per request (`serve --handicap-us`), on the
# bench `hello` scenario and the memory store (no disk in the latency), under a loose SLO. A
# server whose requests cost c µs of CPU each on its one CPU serves at most 1e6 ÷ c requests/s, and
# a loose SLO holds until close to that, so:
#   1. each search's capacity must land within 10% of 1 ÷ (its CPU per request, as measured in
#      the steps within 10% of the capacity, times the server CPUs);
#   2. the two searches of one runtime must agree within 10% (moonshot 5%).
# Prints both checks with their figures and exits 1 when one is missed.
#
#   bash scripts/calibrate-slo.sh                            # HANDICAP=200 µs, p99<100ms, 20 connections
#   HANDICAP=500 SLO='p99<50ms' RUNTIME=axum bash scripts/calibrate-slo.sh
#
# Needs a release build (BIN, default target/release/brigade, built if missing); the generator
# must outrun the handicapped server (at 200 µs, about 5,000 requests/s).
set -euo pipefail
cd "$(dirname "$0")/.."
HANDICAP=${HANDICAP:-200}
SLO=${SLO:-p99<100ms}
USERS=${USERS:-20}
RUNTIME=${RUNTIME:-hyper}
OUT=${OUT:-results/calibrate-slo-$(date -u +%Y%m%d-%H%M%S)}
BIN=${BIN:-target/release/brigade}
[ -x "$BIN" ] || cargo build --release --quiet
mkdir -p "$OUT"
command=("$BIN" compare --runtimes "$RUNTIME,$RUNTIME" --handicap "$RUNTIME=$HANDICAP"
    --handicap "$RUNTIME#2=$HANDICAP" --scenarios hello --store memory --users "$USERS"
    --slo "$SLO" --no-progress --out "$OUT")
echo "calibrate-slo: ${command[*]}"
"${command[@]}" >"$OUT/compare.log" 2>&1 ||
    { echo "calibrate-slo: compare failed, see $OUT/compare.log" >&2; exit 1; }
python3 - "$OUT/report.json" <<'PY'
import json, statistics, sys

report = json.load(open(sys.argv[1]))
searches = report["slo_searches"]
ok = True
capacities = []
for s in searches:
    capacity = s.get("capacity_per_s")
    cpus = s.get("server_cpus") or 1
    if capacity is None:
        print(f"{s['runtime']}: no capacity ({s.get('reason')}): MISSED")
        ok = False
        continue
    near = [p["server_cpu_us_per_request"] for p in s["curve"]
            if p.get("server_cpu_us_per_request") and abs(p["offered_per_s"] / capacity - 1) <= 0.10]
    if not near:
        print(f"{s['runtime']}: no CPU per request measured near the capacity: MISSED")
        ok = False
        continue
    cost = statistics.median(near)
    predicted = 1e6 / cost * cpus
    ratio = capacity / predicted
    met = abs(ratio - 1) <= 0.10
    ok &= met
    capacities.append(capacity)
    print(f"{s['runtime']}: capacity {capacity:,.0f}/s at {', '.join(s['slo'])}; CPU {cost:.1f} µs/request "
          f"near it on {cpus} CPU(s) -> 1/cost {predicted:,.0f}/s; capacity / (1/cost) = {ratio:.3f} "
          f"({'met' if met else 'MISSED'}: within 10%); {s['steps']} steps, {s['seconds']:.0f} s")
if len(capacities) == 2:
    spread = max(capacities) / min(capacities) - 1
    met = spread <= 0.10
    ok &= met
    print(f"two searches of one runtime: {capacities[0]:,.0f}/s and {capacities[1]:,.0f}/s, "
          f"{spread * 100:.1f}% apart ({'met' if met else 'MISSED'}: within 10%; moonshot 5%: "
          f"{'met' if spread <= 0.05 else 'missed'})")
sys.exit(0 if ok else 1)
PY
