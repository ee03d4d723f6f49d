#!/usr/bin/env bash
# Benchmarks Brigade's load generator (docs/methodology.md, "Is the generator fast enough?").
#
#   1. Throughput: `brigade load` against wrk on the same target (GET /bench/hello on the hyper
#      runtime, one worker, pinned to SERVER_CPU), same connection count, generator pinned to
#      GEN_CPU; alternated ROUNDS times so drift hits both tools alike.
#   2. Memory: `brigade load` with 316 connections for MEM_DURATION seconds; the generator's peak
#      RSS (VmHWM) is reported.
#
# Usage: scripts/bench-generator.sh            (defaults: 64 connections, 3 x 20 s, memory run 60 s)
#   CONNS=100 DURATION=30 ROUNDS=3 MEM_DURATION=600 scripts/bench-generator.sh
# Installs wrk (Debian package) when it is missing. Needs 2+ CPUs to separate server and generator.
set -euo pipefail

cd "$(dirname "$0")/.."
CONNS=${CONNS:-64}
DURATION=${DURATION:-20}
ROUNDS=${ROUNDS:-3}
MEM_CONNS=${MEM_CONNS:-316}
MEM_DURATION=${MEM_DURATION:-60}
SERVER_CPU=${SERVER_CPU:-0}
GEN_CPU=${GEN_CPU:-1}
PORT=${PORT:-18081}
OUT=${OUT:-target/bench-generator}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
mkdir -p "$OUT"

if ! command -v wrk >/dev/null; then
    echo "installing wrk" >&2
    apt-get update -qq && apt-get install -y -qq wrk >/dev/null
fi

cargo build --release --bin brigade >&2
BIN="$CARGO_TARGET_DIR/release/brigade"
if "$BIN" load --help >/dev/null 2>&1; then
    LOAD=("$BIN" load)
else
    # The binary does not carry `load` yet: use the generator's stand-alone example.
    cargo build --release -p brigade-loadtests --example load >&2
    LOAD=("$CARGO_TARGET_DIR/release/examples/load")
fi

taskset -c "$SERVER_CPU" "$BIN" serve --runtime hyper --service waiter --workers 1 --store memory \
    --listen "127.0.0.1:$PORT" >"$OUT/server.log" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null; wait $SERVER 2>/dev/null' EXIT
for _ in $(seq 100); do
    "$BIN" probe "http://127.0.0.1:$PORT/ready" >/dev/null 2>&1 && break
    sleep 0.1
done
URL="http://127.0.0.1:$PORT"

echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "server: hyper runtime, 1 worker, CPU $SERVER_CPU; generators: 1 thread, CPU $GEN_CPU; $CONNS connections"
echo "warm-up: 5 s of wrk"
taskset -c "$GEN_CPU" wrk -t1 -c"$CONNS" -d5s "$URL/bench/hello" >/dev/null

for round in $(seq "$ROUNDS"); do
    wrk_rps=$(taskset -c "$GEN_CPU" wrk -t1 -c"$CONNS" -d"${DURATION}s" "$URL/bench/hello" \
        | tee "$OUT/wrk-$round.txt" | awk '/Requests\/sec/ {print $2}')
    "${LOAD[@]}" --target "$URL" --scenario hello --users "$CONNS" --threads 1 --cpus "$GEN_CPU" \
        --warmup 1s --duration "${DURATION}s" --no-progress --json "$OUT/brigade-$round.json" \
        >"$OUT/brigade-$round.txt"
    brigade_rps=$(python3 -c "import json,sys; print(round(json.load(open(sys.argv[1]))['total']['hits_per_s'], 1))" \
        "$OUT/brigade-$round.json")
    ratio=$(python3 -c "print(f'{100*$brigade_rps/$wrk_rps:.1f}')")
    echo "round $round: wrk $wrk_rps req/s, brigade load $brigade_rps req/s ($ratio% of wrk)"
done

echo "memory: $MEM_CONNS users (closed loop, one connection each) for ${MEM_DURATION}s"
"${LOAD[@]}" --target "$URL" --scenario hello --users "$MEM_CONNS" --threads 1 --cpus "$GEN_CPU" \
    --warmup 0s --duration "${MEM_DURATION}s" --no-progress --json "$OUT/memory.json" >"$OUT/memory.txt" &
GEN=$!
peak=0
while kill -0 $GEN 2>/dev/null; do
    hwm=$(awk '/VmHWM/ {print $2}' "/proc/$GEN/status" 2>/dev/null || echo 0)
    [ -n "$hwm" ] && [ "$hwm" -gt "$peak" ] && peak=$hwm
    sleep 1
done
wait $GEN
echo "generator peak RSS with $MEM_CONNS connections over ${MEM_DURATION}s: $((peak / 1024)) MiB ($peak KiB)"
grep -E "^GET|^errors" "$OUT/memory.txt" || true
