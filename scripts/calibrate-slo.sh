#!/usr/bin/env bash
# Calibrates the SLO search (`compare --slo`, docs/methodology.md "Capacity at an SLO") on this
# machine, at the SLO users write. One runtime is searched three times over at once — RUNTIME,
# RUNTIME#2 and RUNTIME#3, their steps interleaved, every step on a fresh server, SEARCHES
# independent searches each — and the third carries a planted cost of HANDICAP µs of CPU per
# request (`serve --handicap-us`). So:
#   1. the two copies without a cost are the same server: their capacities (geometric mean over
#      the searches) must agree within 10% (moonshot 5%);
#   2. a server whose requests cost c µs of CPU each on its one CPU serves at most 1e6 ÷ c
#      requests/s, and a correct search lands somewhat below that: every search of the planted
#      copy must land between 0.80 and 1.02 of 1 ÷ (its CPU per request, as measured in the steps
#      within 10% of its capacity, times the server CPUs).
# Prints every check with its figures and exits 1 when one is missed.
#
#   bash scripts/calibrate-slo.sh              # hyper ×3, hyper#3 +100 µs, waiter, p99<10ms, 20 users
#   HANDICAP=200 SLO='p99<100ms' SCENARIO=hello STORE=memory bash scripts/calibrate-slo.sh
#
# Needs a release build (BIN, default target/release/brigade, built if missing).
set -euo pipefail
cd "$(dirname "$0")/.."
HANDICAP=${HANDICAP:-100}
SLO=${SLO:-p99<10ms}
USERS=${USERS:-20}
RUNTIME=${RUNTIME:-hyper}
SCENARIO=${SCENARIO:-waiter}
STORE=${STORE:-embedded}
SEARCHES=${SEARCHES:-3}
OUT=${OUT:-results/calibrate-slo-$(date -u +%Y%m%d-%H%M%S)}
BIN=${BIN:-target/release/brigade}
[ -x "$BIN" ] || cargo build --release --quiet
mkdir -p "$OUT"
command=("$BIN" compare --runtimes "$RUNTIME,$RUNTIME,$RUNTIME" --handicap "$RUNTIME#3=$HANDICAP"
    --scenarios "$SCENARIO" --store "$STORE" --users "$USERS" --slo "$SLO"
    --slo-searches "$SEARCHES" --no-progress --out "$OUT")
echo "calibrate-slo: ${command[*]}"
"${command[@]}" >"$OUT/compare.log" 2>&1 ||
    { echo "calibrate-slo: compare failed, see $OUT/compare.log" >&2; exit 1; }
python3 - "$OUT/report.json" "$RUNTIME" <<'PY'
import json, math, statistics, sys

report = json.load(open(sys.argv[1]))
runtime = sys.argv[2]
ok = True

def capacities(label):
    return [s.get("capacity_per_s") for s in report["slo_searches"] if s["runtime"] == label]

def geometric(values):
    return math.exp(statistics.mean(math.log(v) for v in values))

copies = {}
for label in (runtime, f"{runtime}#2"):
    found = capacities(label)
    words = ", ".join("none" if c is None else f"{c:,.0f}/s" for c in found)
    print(f"{label}: searches {words}")
    if None in found or not found:
        print(f"{label}: a search found no capacity: MISSED")
        ok = False
    else:
        copies[label] = geometric(found)
if len(copies) == 2:
    a, b = copies.values()
    spread = max(a, b) / min(a, b) - 1
    met = spread <= 0.10
    ok &= met
    print(f"two copies of one server: {a:,.0f}/s and {b:,.0f}/s (geometric means), {spread * 100:.1f}% "
          f"apart ({'met' if met else 'MISSED'}: within 10%; moonshot 5%: "
          f"{'met' if spread <= 0.05 else 'missed'})")
for s in report["slo_searches"]:
    if s["runtime"] != f"{runtime}#3":
        continue
    capacity = s.get("capacity_per_s")
    cpus = s.get("server_cpus") or 1
    if capacity is None:
        print(f"{s['runtime']} search {s['search'] + 1}: no capacity ({s.get('reason')}): MISSED")
        ok = False
        continue
    near = [p["server_cpu_us_per_request"] for p in s["curve"]
            if p.get("server_cpu_us_per_request") and abs(p["offered_per_s"] / capacity - 1) <= 0.10]
    if not near:
        print(f"{s['runtime']} search {s['search'] + 1}: no CPU per request measured near it: MISSED")
        ok = False
        continue
    cost = statistics.median(near)
    predicted = 1e6 / cost * cpus
    ratio = capacity / predicted
    met = 0.80 <= ratio <= 1.02
    ok &= met
    print(f"{s['runtime']} search {s['search'] + 1}: capacity {capacity:,.0f}/s at {', '.join(s['slo'])}; "
          f"CPU {cost:.1f} µs/request near it on {cpus} CPU(s) -> 1/cost {predicted:,.0f}/s; "
          f"capacity / (1/cost) = {ratio:.3f} ({'met' if met else 'MISSED'}: 0.80-1.02); "
          f"{s['steps']} steps, {s['seconds']:.0f} s")
sys.exit(0 if ok else 1)
PY
