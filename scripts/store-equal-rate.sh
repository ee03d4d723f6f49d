#!/usr/bin/env bash
# Brigade's own server CPU per request on each store at one open-loop rate (issue 34): the
# closed-loop column of `compare --stores embedded,mongo` sets a server at tens of thousands of
# requests/s against one FerretDB holds to hundreds, and CPU per request falls as a rate batches
# more requests per wake-up; at the same rate the stores' own costs are what differs.
#
#   RATE=300 SCENARIO=waiter ROUNDS=2 bash scripts/store-equal-rate.sh
#
# Per round and store (embedded, then mongo): a fresh data directory, and for mongo a fresh
# FerretDB (scripts/ferretdb.sh on PORT, data under OUT), a `serve --service all` on SERVER_CPU
# (hyper, one worker each), 3 s of warm-up load, then DURATION s at RATE requests/s over 30
# connections from GEN_CPU; the server processes' CPU time (utime + stime from /proc; the
# three services are one process) over the measured load ÷ its requests. Needs FERRETDB_HOME (where ferretdb.sh keeps its
# binary) and the release binary (BIN).
set -euo pipefail
cd "$(dirname "$0")/.."
RATE=${RATE:-300}
SCENARIO=${SCENARIO:-waiter}
ROUNDS=${ROUNDS:-2}
DURATION=${DURATION:-20}
PORT=${PORT:-27117}
SERVE_PORT=${SERVE_PORT:-18210}
SERVER_CPU=${SERVER_CPU:-1}
GEN_CPU=${GEN_CPU:-0}
BIN=${BIN:-target/release/brigade}
OUT=${OUT:-target/store-equal-rate}
mkdir -p "$OUT"
TCK=$(getconf CLK_TCK)
targets=(--target "waiter=http://127.0.0.1:$SERVE_PORT" --target "tables=http://127.0.0.1:$((SERVE_PORT + 1))"
    --target "kitchen=http://127.0.0.1:$((SERVE_PORT + 2))")
server=
trap 'kill $server 2>/dev/null; bash scripts/ferretdb.sh stop >/dev/null 2>&1 || true' EXIT
echo "$SCENARIO at $RATE requests/s, $DURATION s per run, hyper (one worker per service) on CPU $SERVER_CPU"
for round in $(seq "$ROUNDS"); do
    for store in embedded mongo; do
        rm -rf "$OUT/data-$store" "$OUT/$store-$round.json"
        if [ "$store" = mongo ]; then
            bash scripts/ferretdb.sh stop >/dev/null 2>&1 || true
            rm -rf "$OUT/ferretdb"
            bash scripts/ferretdb.sh start --port "$PORT" --dir "$OUT/ferretdb" >/dev/null
        fi
        taskset -c "$SERVER_CPU" "$BIN" serve --runtime hyper --service all --store "$store" \
            --data-dir "$OUT/data-$store" --mongodb-uri "mongodb://127.0.0.1:$PORT/" \
            --listen "127.0.0.1:$SERVE_PORT" >"$OUT/server-$store-$round.log" 2>&1 &
        server=$!
        for _ in $(seq 100); do
            [ "$(grep -c '"listening"' "$OUT/server-$store-$round.log" 2>/dev/null)" -ge 3 ] && break
            sleep 0.1
        done
        # One process serves the three services (a runtime each, threads of it).
        cpu() { awk '{print $14 + $15}' "/proc/$server/stat"; }
        load=("$BIN" load "${targets[@]}" --scenario "$SCENARIO" --rate "$RATE" --connections 30
            --threads 1 --cpus "$GEN_CPU" --no-progress)
        "${load[@]}" --warmup 3s --duration 1s >"$OUT/warmup-$store-$round.txt" 2>&1 || { cat "$OUT/warmup-$store-$round.txt"; exit 1; }
        before=$(cpu)
        "${load[@]}" --warmup 0s --duration "${DURATION}s" --json "$OUT/$store-$round.json" >/dev/null
        after=$(cpu)
        kill "$server"
        wait "$server" 2>/dev/null || true
        python3 - "$OUT/$store-$round.json" "$store" "$round" "$before" "$after" "$TCK" <<'PY'
import json, sys
path, store, rnd, before, after, tck = sys.argv[1:]
t = json.load(open(path))["total"]
errors = sum(t["errors"].values())
us = (int(after) - int(before)) / int(tck) * 1e6 / t["requests"]
print(f"round {rnd} {store:9} {t['requests']:7} requests, {t['hits_per_s']:7.0f}/s, {errors} errors: "
      f"server CPU {us:6.1f} us per request")
PY
    done
done
