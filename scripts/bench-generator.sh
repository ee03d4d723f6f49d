#!/usr/bin/env bash
# Benchmarks Brigade's load generator against wrk (docs/methodology.md, "Is the generator fast
# enough?"). Target (issue 8): with keep-alive and without, the generator spends no more CPU per
# request than wrk (the steadier figure), and its median requests/s over the alternating rounds is at
# least 1.0x wrk's.
#
#   1. Throughput and CPU per request, twice: with keep-alive, and with a new connection per request
#      (`wrk -H 'Connection: close'` against `brigade load --no-keepalive`). The target is
#      GET /bench/hello on the hyper runtime, one worker, pinned to SERVER_CPU; both tools get one
#      thread on GEN_CPU and the same connection count, and take turns ROUNDS times (the one going
#      first alternates), so drift hits both alike. Each tool runs under its own shell, which reads
#      the CPU time (user + system) its child used: CPU per request = that / requests. On a shared,
#      noisy machine one round's req/s swings with whatever else runs, the CPU per request much less.
#   2. The sweep's hardest step: 316 clients without keep-alive for SWEEP_DURATION seconds; the
#      generator's own CPU share is reported, and whether it was the limit (>= 90% of its CPU).
#   3. Memory: 316 kept-alive connections for MEM_DURATION seconds; the generator's peak RSS.
#   4. The other protocols (issue 23), the same way, each against a server of its own on the same
#      SERVER_CPU (hyper runtime, one worker): h2c and h2-tls against h2load (nghttp2's, one thread,
#      H2_CONNS connections with STREAMS streams each: `--streams` for Brigade, `-m` for h2load),
#      h1-tls against wrk (CONNS kept-alive connections over TLS, resumption irrelevant there).
#      Targets: the generator's CPU per request no more than the peer's, and where the generator is
#      the limit its req/s at least 1.0x the peer's (median of the alternating rounds).
#      h3 against oha (`oha --http-version 3`, one worker thread, H2_CONNS connections with STREAMS
#      requests in flight on each: `-p`; built with `cargo install oha --features http3` where missing).
#      PROTOCOLS=h2c,h2-tls,h1-tls,h3 picks which (PROTOCOLS= skips step 4; ONLY_PROTOCOLS=1 skips 1-3).
#      Flat out the two tools reach different rates, and CPU per request falls as a rate batches
#      more requests per read and write; so h2c and h2-tls also run with both paced at H2_RATE
#      requests/s (default 20000; h2load `--rps` per connection, Brigade `--rate` over the same
#      connections and streams), and h3 at H3_RATE (default 10000, QUIC costs the one server worker
#      more; oha `-q` over the whole run): the CPU per request at the same achieved rate.
#      h2load's `--rps` is not a send per due time: each connection's timer fires every
#      max(10 ms, 1/rps) and sends what came due since, in a burst. So h2c and h2-tls run paced a
#      second time with Brigade on the same kind of tick (`--pace-tick H2_PACE_TICK`, default
#      10ms; H2_PACE_TICK= skips it): like against like, a burst a tick on each.
#
# Usage: scripts/bench-generator.sh            (defaults: 64 connections, 5 rounds of 5 s per mode)
#   CONNS=100 DURATION=10 ROUNDS=7 MEM_DURATION=600 scripts/bench-generator.sh
#   QUICK=1 scripts/bench-generator.sh           (a smoke run: 2 rounds of 1 s, short steps 2 and 3)
#   BIN=target/debug/brigade LOAD=target/release/examples/load scripts/bench-generator.sh
#       (no release build of the whole binary: a debug server, the generator alone built with
#       `cargo build --release -p brigade-load --example load`; LOAD is the command before its flags)
# Installs wrk and h2load (Debian packages wrk, nghttp2-client) when they are missing. Needs 2+ CPUs to separate server and generator.
# Writes every round's output and a summary into OUT (default target/bench-generator).
set -euo pipefail

cd "$(dirname "$0")/.."
if [ -n "${QUICK:-}" ]; then
    : "${DURATION:=1}" "${ROUNDS:=2}" "${SWEEP_DURATION:=2}" "${MEM_DURATION:=2}" "${WARMUP:=1}"
fi
CONNS=${CONNS:-64}
DURATION=${DURATION:-5}
ROUNDS=${ROUNDS:-5}
WARMUP=${WARMUP:-5}
SWEEP_CONNS=${SWEEP_CONNS:-316}
SWEEP_DURATION=${SWEEP_DURATION:-10}
MEM_CONNS=${MEM_CONNS:-316}
MEM_DURATION=${MEM_DURATION:-60}
SERVER_CPU=${SERVER_CPU:-0}
GEN_CPU=${GEN_CPU:-1}
PORT=${PORT:-18081}
OUT=${OUT:-target/bench-generator}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
mkdir -p "$OUT"

PROTOCOLS=${PROTOCOLS-h2c,h2-tls,h1-tls,h3}
OHA_VERSION=${OHA_VERSION:-1.16.0}
H2_CONNS=${H2_CONNS:-16}
STREAMS=${STREAMS:-8}
H2_RATE=${H2_RATE-20000}
H2_PACE_TICK=${H2_PACE_TICK-10ms}
H3_RATE=${H3_RATE-10000}
if ! command -v wrk >/dev/null || { [ -n "$PROTOCOLS" ] && ! command -v h2load >/dev/null; }; then
    echo "installing wrk and h2load" >&2
    apt-get update -qq && apt-get install -y -qq wrk nghttp2-client >/dev/null
fi
if [[ ",$PROTOCOLS," == *",h3,"* ]] && ! command -v oha >/dev/null; then
    echo "installing oha $OHA_VERSION with HTTP/3 (cargo install, a few minutes)" >&2
    cargo install --quiet --locked oha --version "$OHA_VERSION" --features http3 >&2
fi

if [ -z "${BIN:-}" ]; then
    cargo build --release --bin brigade >&2
    BIN="$CARGO_TARGET_DIR/release/brigade"
fi
if [ -n "${LOAD:-}" ]; then
    read -r -a LOAD_CMD <<<"$LOAD"
else
    LOAD_CMD=("$BIN" load)
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

{
    echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load average $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "generator: $("${LOAD_CMD[0]}" --version 2>/dev/null || echo "${LOAD_CMD[0]}"); $(wrk --version 2>&1 | head -1 | cut -d' ' -f1-2)"
    echo "server: hyper runtime, 1 worker, CPU $SERVER_CPU; each tool: 1 thread, CPU $GEN_CPU; $CONNS connections; $ROUNDS rounds of ${DURATION}s per mode"
} | tee "$OUT/summary.txt"
echo "warm-up: ${WARMUP}s of wrk"
taskset -c "$GEN_CPU" wrk -t1 -c"$CONNS" -d"${WARMUP}s" "$URL/bench/hello" >/dev/null

TCK=$(getconf CLK_TCK)
# Runs "${@:2}" in a shell of its own, its output into the file $1, and prints the CPU seconds its
# children used (utime + stime of the finished child, as the shell's cutime + cstime).
cpu_of() {
    bash -c '"${@:2}" >"$1"; awk -v t="'"$TCK"'" "{printf \"%.3f\", (\$16 + \$17) / t}" /proc/$$/stat' _ "$@"
}

run_mode() {
    local keepalive=$1 name wrk_extra=() load_extra=()
    if [ "$keepalive" = 1 ]; then
        name=keepalive
    else
        name=close
        wrk_extra=(-H 'Connection: close')
        load_extra=(--no-keepalive)
    fi
    echo | tee -a "$OUT/summary.txt"
    echo "== $name ==" | tee -a "$OUT/summary.txt"
    printf "%-6s %12s %12s %12s %12s %8s\n" round "wrk req/s" "wrk us/req" "load req/s" "load us/req" ratio
    : >"$OUT/rounds-$name.tsv"
    for round in $(seq "$ROUNDS"); do
        local order=(wrk load) wrk_cpu=0 load_cpu=0
        [ $((round % 2)) = 0 ] && order=(load wrk)
        for tool in "${order[@]}"; do
            if [ "$tool" = wrk ]; then
                wrk_cpu=$(cpu_of "$OUT/wrk-$name-$round.txt" taskset -c "$GEN_CPU" wrk -t1 -c"$CONNS" \
                    -d"${DURATION}s" "${wrk_extra[@]}" "$URL/bench/hello")
            else
                load_cpu=$(cpu_of /dev/null "${LOAD_CMD[@]}" --target "$URL" --scenario hello --users "$CONNS" \
                    --threads 1 --cpus "$GEN_CPU" --warmup 0s --duration "${DURATION}s" --no-progress \
                    "${load_extra[@]}" --json "$OUT/brigade-$name-$round.json")
            fi
        done
        python3 - "$round" "$OUT/wrk-$name-$round.txt" "$wrk_cpu" "$OUT/brigade-$name-$round.json" "$load_cpu" \
            <<'PY' | tee -a "$OUT/rounds-$name.tsv"
import json, re, sys
r, wrk_file, wc, load_file, lc = sys.argv[1:]
text = open(wrk_file).read()
wr = float(re.search(r"Requests/sec:\s*([\d.]+)", text).group(1))
wn = int(re.search(r"(\d+) requests in", text).group(1))
errors = re.search(r"Non-2xx or 3xx responses: (\d+)|Socket errors: (.*)", text)
t = json.load(open(load_file))["total"]
lr, ln = t["hits_per_s"], t["requests"]
print(f"{r:<6} {wr:12.0f} {1e6*float(wc)/wn:12.2f} {lr:12.0f} {1e6*float(lc)/ln:12.2f} {100*lr/wr:7.1f}%"
      + (f"  (wrk: {errors.group(0)})" if errors else "")
      + (f"  (load: {t['errors']})" if sum(t['errors'].values()) else ""))
PY
    done
    python3 - "$OUT/rounds-$name.tsv" "$name" <<'PY' | tee -a "$OUT/summary.txt"
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
ratio = statistics.median(float(r[5].rstrip('%')) for r in rows)
wus = statistics.median(float(r[2]) for r in rows)
lus = statistics.median(float(r[4]) for r in rows)
met = lambda ok: "met" if ok else "NOT met"
print(f"{sys.argv[2]}: median over {len(rows)} rounds: brigade load at {ratio:.1f}% of wrk's req/s "
      f"(target >= 100%: {met(ratio >= 100)}); CPU per request wrk {wus:.2f} us, brigade load "
      f"{lus:.2f} us (target <= wrk's: {met(lus <= wus)})")
PY
}

if [ -z "${ONLY_PROTOCOLS:-}" ]; then
run_mode 1
run_mode 0

echo | tee -a "$OUT/summary.txt"
echo "sweep step: $SWEEP_CONNS clients without keep-alive for ${SWEEP_DURATION}s" | tee -a "$OUT/summary.txt"
"${LOAD_CMD[@]}" --target "$URL" --scenario hello --users "$SWEEP_CONNS" --threads 1 --cpus "$GEN_CPU" \
    --warmup 0s --duration "${SWEEP_DURATION}s" --no-progress --no-keepalive \
    --json "$OUT/sweep-close.json" >"$OUT/sweep-close.txt"
python3 - "$OUT/sweep-close.json" <<'PY' | tee -a "$OUT/summary.txt"
import json, sys
r = json.load(open(sys.argv[1]))
t, cpu = r["total"], r["generator_cpu_percent"]
limit = "the generator WAS the limit" if cpu >= 90 else "the generator had headroom"
print(f"  {t['hits_per_s']:.0f} req/s, {sum(t['errors'].values())} errors, p99 {t['latency']['p99_ms']:.2f} ms; "
      f"generator CPU {cpu:.0f}% of its one CPU, {1e4*cpu/t['hits_per_s']:.2f} us/request: {limit}")
PY

echo | tee -a "$OUT/summary.txt"
echo "memory: $MEM_CONNS users (closed loop, one connection each) for ${MEM_DURATION}s" | tee -a "$OUT/summary.txt"
"${LOAD_CMD[@]}" --target "$URL" --scenario hello --users "$MEM_CONNS" --threads 1 --cpus "$GEN_CPU" \
    --warmup 0s --duration "${MEM_DURATION}s" --no-progress --json "$OUT/memory.json" >"$OUT/memory.txt" &
GEN=$!
peak=0
while kill -0 $GEN 2>/dev/null; do
    hwm=$(awk '/VmHWM/ {print $2}' "/proc/$GEN/status" 2>/dev/null || echo 0)
    [ -n "$hwm" ] && [ "$hwm" -gt "$peak" ] && peak=$hwm
    sleep 1
done
wait $GEN
echo "  generator peak RSS with $MEM_CONNS connections over ${MEM_DURATION}s: $((peak / 1024)) MiB ($peak KiB)" \
    | tee -a "$OUT/summary.txt"
fi

# Step 4: one server per protocol, the same runtime, worker count and CPU as above.
start_server() {
    local port=$1
    shift
    taskset -c "$SERVER_CPU" "$BIN" serve --runtime hyper --service waiter --workers 1 --store memory \
        --listen "127.0.0.1:$port" "$@" >"$OUT/server-$port.log" 2>&1 &
    echo $!
}

# Runs one protocol's alternating rounds: $1 the protocol, $2 its URL, $3 the peer (h2load, wrk),
# $4 a fixed rate in requests/s (h2load: `--rps` per connection, oha: `-q` in all, against Brigade's
# open loop `--rate` over the same connections and streams), or nothing for both tools flat out.
run_protocol() {
    local proto=$1 url=$2 peer=$3 rate=${4:-} tick=${5:-} peer_cmd load_extra name=$1
    if [ "$peer" = h2load ]; then
        peer_cmd=(h2load -t1 -c"$H2_CONNS" -m"$STREAMS" -D"$DURATION" "$url/bench/hello")
        load_extra=(--users "$H2_CONNS" --streams "$STREAMS")
        if [ -n "$rate" ]; then
            peer_cmd+=(--rps="$((rate / H2_CONNS))")
            load_extra=(--rate "$rate" --connections "$H2_CONNS" --streams "$STREAMS")
            name="$proto-at-$rate"
            if [ -n "$tick" ]; then
                load_extra+=(--pace-tick "$tick")
                name="$name-tick-$tick"
            fi
        fi
    elif [ "$peer" = oha ]; then
        peer_cmd=(oha --no-tui --output-format json --http-version 3 --insecure --worker-threads 1
            -c "$H2_CONNS" -p "$STREAMS" -z "${DURATION}s" "$url/bench/hello")
        load_extra=(--users "$H2_CONNS" --streams "$STREAMS")
        if [ -n "$rate" ]; then
            peer_cmd+=(-q "$rate")
            load_extra=(--rate "$rate" --connections "$H2_CONNS" --streams "$STREAMS")
            name="$proto-at-$rate"
        fi
    else
        peer_cmd=(wrk -t1 -c"$CONNS" -d"${DURATION}s" "$url/bench/hello")
        load_extra=(--users "$CONNS")
    fi
    echo | tee -a "$OUT/summary.txt"
    echo "== $name: brigade load against $peer (${peer_cmd[*]}) ==" | tee -a "$OUT/summary.txt"
    printf "%-6s %12s %12s %12s %12s %8s\n" round "$peer req/s" "$peer us/req" "load req/s" "load us/req" ratio
    : >"$OUT/rounds-$name.tsv"
    for round in $(seq "$ROUNDS"); do
        local order=(peer load) peer_cpu=0 load_cpu=0
        [ $((round % 2)) = 0 ] && order=(load peer)
        for tool in "${order[@]}"; do
            if [ "$tool" = peer ]; then
                peer_cpu=$(cpu_of "$OUT/$peer-$name-$round.txt" taskset -c "$GEN_CPU" "${peer_cmd[@]}")
            else
                load_cpu=$(cpu_of /dev/null "${LOAD_CMD[@]}" --target "$url" --scenario hello \
                    --protocol "$proto" --tls-insecure "${load_extra[@]}" --threads 1 --cpus "$GEN_CPU" \
                    --warmup 0s --duration "${DURATION}s" --no-progress \
                    --json "$OUT/brigade-$name-$round.json")
            fi
        done
        python3 - "$round" "$peer" "$OUT/$peer-$name-$round.txt" "$peer_cpu" \
            "$OUT/brigade-$name-$round.json" "$load_cpu" <<'PY' | tee -a "$OUT/rounds-$name.tsv"
import json, re, sys
r, peer, peer_file, pc, load_file, lc = sys.argv[1:]
text = open(peer_file).read()
if peer == "h2load":
    pr = float(re.search(r"finished in [\d.]+s, ([\d.]+) req/s", text).group(1))
    m = re.search(r"requests: \d+ total, \d+ started, \d+ done, (\d+) succeeded, (\d+) failed, (\d+) errored", text)
    pn, bad = int(m.group(1)), int(m.group(2)) + int(m.group(3))
elif peer == "oha":
    o = json.loads(text)
    pr = o["summary"]["requestsPerSec"]
    codes = {int(k): v for k, v in o.get("statusCodeDistribution", {}).items()}
    pn = sum(codes.values())
    # Requests still in flight when -z ends are "aborted due to deadline": not failures.
    errors = {k: v for k, v in o.get("errorDistribution", {}).items() if k != "aborted due to deadline"}
    bad = sum(v for k, v in codes.items() if k >= 400) + sum(errors.values())
else:
    pr = float(re.search(r"Requests/sec:\s*([\d.]+)", text).group(1))
    pn = int(re.search(r"(\d+) requests in", text).group(1))
    e = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    bad = int(e.group(1)) if e else 0
t = json.load(open(load_file))["total"]
lr, ln = t["hits_per_s"], t["requests"]
print(f"{r:<6} {pr:12.0f} {1e6*float(pc)/pn:12.2f} {lr:12.0f} {1e6*float(lc)/ln:12.2f} {100*lr/pr:7.1f}%"
      + (f"  ({peer}: {bad} failed)" if bad else "")
      + (f"  (load: {t['errors']})" if sum(t['errors'].values()) else ""))
PY
    done
    python3 - "$OUT/rounds-$name.tsv" "$name" "$peer" "$rate" <<'PY' | tee -a "$OUT/summary.txt"
import statistics, sys
path, proto, peer, rate = sys.argv[1:]
rows = [l.split() for l in open(path) if l.strip()]
ratio = statistics.median(float(r[5].rstrip('%')) for r in rows)
pus = statistics.median(float(r[2]) for r in rows)
lus = statistics.median(float(r[4]) for r in rows)
met = lambda ok: "met" if ok else "NOT met"
rate_words = (f"(the same offered rate: not a throughput target)" if rate else
              f"(target >= 100% where the generator is the limit: {met(ratio >= 100)})")
print(f"{proto}: median over {len(rows)} rounds: brigade load at {ratio:.1f}% of {peer}'s req/s "
      f"{rate_words}; CPU per request "
      f"{peer} {pus:.2f} us, brigade load {lus:.2f} us (target <= {peer}'s: {met(lus <= pus)})")
PY
}

IFS=, read -r -a WANTED <<<"$PROTOCOLS"
for proto in "${WANTED[@]}"; do
    case "$proto" in
    h2c) pport=$((PORT + 1)); pid=$(start_server "$pport" --protocol h2c); scheme=http; peer=h2load ;;
    h2-tls) pport=$((PORT + 2)); pid=$(start_server "$pport" --tls-self-signed); scheme=https; peer=h2load ;;
    h1-tls) pport=$((PORT + 3)); pid=$(start_server "$pport" --tls-self-signed); scheme=https; peer=wrk ;;
    h3) pport=$((PORT + 4)); pid=$(start_server "$pport" --tls-self-signed --protocol h3); scheme=https; peer=oha ;;
    *) echo "unknown protocol $proto (h2c, h2-tls, h1-tls, h3)" >&2; exit 2 ;;
    esac
    for _ in $(seq 100); do
        grep -q '"listening"' "$OUT/server-$pport.log" 2>/dev/null && break
        sleep 0.1
    done
    run_protocol "$proto" "$scheme://127.0.0.1:$pport" "$peer"
    # The issue's own condition, the same achieved rate: both tools paced at H2_RATE (h2load and oha;
    # Debian's wrk has no fixed rate). H2_RATE= (H3_RATE= for h3) skips it.
    rate=$H2_RATE
    [ "$proto" = h3 ] && rate=$H3_RATE
    if [ "$peer" != wrk ] && [ -n "$rate" ]; then
        run_protocol "$proto" "$scheme://127.0.0.1:$pport" "$peer" "$rate"
    fi
    if [ "$peer" = h2load ] && [ -n "$rate" ] && [ -n "$H2_PACE_TICK" ]; then
        run_protocol "$proto" "$scheme://127.0.0.1:$pport" "$peer" "$rate" "$H2_PACE_TICK"
    fi
    kill "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null || true
done
echo
echo "summary: $OUT/summary.txt"
