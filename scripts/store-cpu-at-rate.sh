#!/usr/bin/env bash
# Brigade's own CPU per request at a fixed open-loop rate, so stores can be compared at the same
# load (a closed loop runs each store at its own rate, and at a few hundred requests a second the
# cost of waking idle threads dominates). The database is another process (FerretDB, mongod), so
# reading the server process's utime + stime leaves its CPU out; Brigade's side of the TCP to it stays.
#
#   bash scripts/store-cpu-at-rate.sh BINARY STORE SCENARIO RATE [SECONDS]
#   e.g. MONGODB_URI=mongodb://127.0.0.1:27217/ bash scripts/store-cpu-at-rate.sh target/release/brigade mongo read-heavy 150
#
# The server (--service all, axum, --workers 1) runs on CPU 0, the generator on CPU 1 (taskset).
# Prints one line: served/s, errors, p99, CPU % and µs per request.
set -euo pipefail
BIN="$1"; STORE="$2"; SCENARIO="$3"; RATE="$4"; SECONDS_="${5:-15}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/brigade-cpu.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
extra=(--data-dir "$WORK/data")
if [[ "$STORE" == mongo ]]; then
    extra=(--mongodb-uri "${MONGODB_URI:?set MONGODB_URI}" --database-prefix "cpu$RANDOM"_ --drop-databases-on-exit)
fi
taskset -c 0 "$BIN" serve --runtime axum --service all --listen 127.0.0.1:19181 --store "$STORE" \
    "${extra[@]}" --workers 1 >"$WORK/serve.out" 2>"$WORK/serve.err" &
server=$!
for _ in $(seq 1 200); do grep -q '"kitchen"' "$WORK/serve.out" 2>/dev/null && break; sleep 0.1; done
targets=(--target waiter=http://127.0.0.1:19181 --target tables=http://127.0.0.1:19182 --target kitchen=http://127.0.0.1:19183)
"$BIN" load "${targets[@]}" --scenario "$SCENARIO" --setup-only --fixtures "$WORK/fx.json" >/dev/null 2>&1
taskset -c 1 "$BIN" load "${targets[@]}" --scenario "$SCENARIO" --fixtures "$WORK/fx.json" --rate "$RATE" \
    --connections 20 --duration "${SECONDS_}s" --warmup 2s --seed 7 --no-progress --json "$WORK/load.json" \
    >"$WORK/load.out" 2>&1 &
load=$!
sleep 2.5
c0=$(awk '{print $14+$15}' "/proc/$server/stat"); t0=$(date +%s.%N)
sleep $((SECONDS_ - 1))
c1=$(awk '{print $14+$15}' "/proc/$server/stat"); t1=$(date +%s.%N)
wait "$load"
kill -TERM "$server"; wait "$server" || true
python3 - "$WORK/load.json" "$c0" "$c1" "$t0" "$t1" "$(getconf CLK_TCK)" "$STORE" "$SCENARIO" "$RATE" <<'PY'
import json, sys
f, c0, c1, t0, t1, tck, store, scenario, rate = sys.argv[1:]
r = json.load(open(f)); t = r['total']
secs = float(t1) - float(t0); hits = t['requests'] / r['elapsed_s']
cpu = (int(c1) - int(c0)) / float(tck)
print(f"{store} {scenario} rate={rate}: served {hits:.1f}/s, errors={sum(t['errors'].values())}, "
      f"p99={t['latency']['p99_ms']:.1f} ms, Brigade CPU {cpu / secs * 100:.1f}% = {cpu / secs / hits * 1e6:.0f} µs/request")
PY
