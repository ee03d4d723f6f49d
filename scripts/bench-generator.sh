#!/usr/bin/env bash
# Benchmarks Brigade's load generator (docs/methodology.md, "Is the generator fast enough?").
#
#   1. Throughput: `brigade load` against wrk on the same target (GET /bench/hello on the hyper
#      runtime, one worker, pinned to SERVER_CPU), same connection count, generator pinned to
#      GEN_CPU; alternated ROUNDS times so drift hits both tools alike.
#   2. Memory: `brigade load` with 316 connections for MEM_DURATION seconds; the generator's peak
#      RSS (VmHWM) is reported.
#
# Usage: scripts/bench-generator.sh            (defaults: 64 connections, 6 x 10 s each, memory run 60 s)
#   CONNS=100 DURATION=30 ROUNDS=10 MEM_DURATION=600 scripts/bench-generator.sh
# Installs wrk (Debian package) when it is missing. Needs 2+ CPUs to separate server and generator.
set -euo pipefail

cd "$(dirname "$0")/.."
CONNS=${CONNS:-64}
DURATION=${DURATION:-10}
ROUNDS=${ROUNDS:-6}
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
    cargo build --release -p brigade-load --example load >&2
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

# Each tool runs under its own shell, which reports the CPU time (user+system) its child used, so
# we also get the generator's CPU cost per request: on a shared, noisy machine the req/s of a single
# round swing with whatever else runs, the CPU per request much less.
TCK=$(getconf CLK_TCK)
child_cpu() { awk -v t="$TCK" '{printf "%.3f", ($16 + $17) / t}' "/proc/$1/stat"; }
printf "%-6s %12s %14s %12s %14s %8s\n" round "wrk req/s" "wrk us/req" "load req/s" "load us/req" ratio
: >"$OUT/rounds.tsv"
for round in $(seq "$ROUNDS"); do
    wrk_cpu=$(bash -c 'taskset -c "$0" wrk -t1 -c"$1" -d"$2s" "$3/bench/hello" >"$4"; awk -v t="$5" "{printf \"%.3f\", (\$16 + \$17) / t}" /proc/$$/stat' \
        "$GEN_CPU" "$CONNS" "$DURATION" "$URL" "$OUT/wrk-$round.txt" "$TCK")
    wrk_rps=$(awk '/Requests\/sec/ {print $2}' "$OUT/wrk-$round.txt")
    wrk_n=$(awk '/requests in/ {print $1}' "$OUT/wrk-$round.txt")
    load_cpu=$(bash -c '"${@:6}" --target "$0" --scenario hello --users "$1" --threads 1 --cpus "$2" --warmup 0s \
        --duration "$3s" --no-progress --json "$4" >/dev/null; awk -v t="$5" "{printf \"%.3f\", (\$16 + \$17) / t}" /proc/$$/stat' \
        "$URL" "$CONNS" "$GEN_CPU" "$DURATION" "$OUT/brigade-$round.json" "$TCK" "${LOAD[@]}")
    read -r load_rps load_n < <(python3 -c "import json,sys; t=json.load(open(sys.argv[1]))['total']; print(round(t['hits_per_s'], 1), t['requests'])" \
        "$OUT/brigade-$round.json")
    python3 - "$round" "$wrk_rps" "$wrk_n" "$wrk_cpu" "$load_rps" "$load_n" "$load_cpu" <<'PY' | tee -a "$OUT/rounds.tsv"
import sys
r, wr, wn, wc, lr, ln, lc = sys.argv[1:]
wr, wn, wc, lr, ln, lc = float(wr), int(wn), float(wc), float(lr), int(ln), float(lc)
print(f"{r:<6} {wr:12.0f} {1e6*wc/wn:14.2f} {lr:12.0f} {1e6*lc/ln:14.2f} {100*lr/wr:7.1f}%")
PY
done
python3 - "$OUT/rounds.tsv" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
ratio = statistics.median(float(r[5].rstrip('%')) for r in rows)
wus = statistics.median(float(r[2]) for r in rows)
lus = statistics.median(float(r[4]) for r in rows)
print(f"median over {len(rows)} rounds: brigade load at {ratio:.1f}% of wrk's req/s; CPU per request "
      f"wrk {wus:.2f} us, brigade load {lus:.2f} us (wrk/brigade = {100*wus/lus:.1f}%)")
PY

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
