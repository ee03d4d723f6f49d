#!/usr/bin/env bash
# Instructions per `GET /bench/hello`, Brigade's route table against each runtime's hand-written
# hello, counted by valgrind's callgrind: deterministic, so the ratio does not depend on how noisy
# the machine is. Each server runs under callgrind twice, answering N1 and then N2 requests on 4
# keep-alive connections; (instructions(N2) - instructions(N1)) / (N2 - N1) is the cost of one
# request with start-up and shutdown cancelled out.
#
# Usage: scripts/overhead-callgrind.sh [runtimes...]   (needs valgrind; builds the release binary)
#
# With --metrics first (`scripts/overhead-callgrind.sh --metrics [runtimes...]`) it measures what
# metrics cost instead: the waiter service (memory store) answering `GET /waiters/{id}`
# (scripts/overhead-waiter.toml: one request, the same every time, so the count is deterministic)
# with metrics on against the same with `--no-metrics` (docs/observability.md; target: at most 3%
# more instructions per request).
set -euo pipefail
cd "$(dirname "$0")/.."
N1=${N1:-500}
N2=${N2:-2500}
mode=baseline
if [ "${1:-}" = --metrics ]; then
    mode=metrics
    shift
fi
[ -n "${NO_BUILD:-}" ] || cargo build --release --quiet
BIN=${BRIGADE_BIN:-target/release/brigade}
runtimes=("$@")
[ ${#runtimes[@]} -gt 0 ] || mapfile -t runtimes < <($BIN runtimes | awk '$1 !~ /:$/ {print $1}')
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

count() { # variant runtime requests -> instructions
    local variant=$1 rt=$2 n=$3 out="$work/$1-$2-$3" port
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    local args=(serve --runtime "$rt" --service waiter --store memory --workers 1 --listen "127.0.0.1:$port")
    local scenario=hello
    [ "$variant" = baseline ] && args=(serve-baseline --runtime "$rt" --workers 1 --listen "127.0.0.1:$port")
    [ "$variant" = metrics-off ] && args+=(--no-metrics)
    [ "$variant" = metrics-on ] || [ "$variant" = metrics-off ] && scenario=scripts/overhead-waiter.toml
    # The metrics clock's one-off calibration (quanta, at start-up) runs a variable number of loops;
    # it is left out of the count so that it cannot leak into the per-request difference.
    RUST_LOG=warn valgrind --tool=callgrind --toggle-collect='*Calibration*calibrate*' --collect-atstart=yes \
        --callgrind-out-file="$out.cg" "$BIN" "${args[@]}" >"$out.log" 2>&1 &
    local pid=$!
    for _ in $(seq 1 200); do grep -q listening "$out.log" 2>/dev/null && break; sleep 0.1; done
    $BIN load --target "http://127.0.0.1:$port" --scenario "$scenario" --users 4 --threads 1 --warmup 0s \
        --requests "$n" --timeout 30s --no-progress >"$out.load" 2>&1
    kill -TERM $pid; wait $pid || true
    awk '/^summary:|^totals:/ {print $2; exit}' "$out.cg"
}

if [ "$mode" = metrics ]; then
    printf '| runtime | --no-metrics instr/req | metrics instr/req | metrics ÷ no metrics | verdict (≤ 1.03) |\n'
    printf '| --- | ---: | ---: | ---: | --- |\n'
    for rt in "${runtimes[@]}"; do
        o1=$(count metrics-off "$rt" $N1); o2=$(count metrics-off "$rt" $N2)
        m1=$(count metrics-on "$rt" $N1); m2=$(count metrics-on "$rt" $N2)
        python3 - "$rt" "$o1" "$o2" "$m1" "$m2" "$N1" "$N2" <<'PY'
import sys
rt, o1, o2, m1, m2, n1, n2 = sys.argv[1], *map(int, sys.argv[2:])
off = (o2 - o1) / (n2 - n1)
on = (m2 - m1) / (n2 - n1)
r = on / off
print(f"| {rt} | {off:,.0f} | {on:,.0f} | {r:.4f} | {'met' if r <= 1.03 else 'missed'} |")
PY
    done
    exit 0
fi

printf '| runtime | baseline instr/req | Brigade instr/req | Brigade ÷ baseline | baseline ÷ Brigade |\n'
printf '| --- | ---: | ---: | ---: | ---: |\n'
for rt in "${runtimes[@]}"; do
    b1=$(count baseline "$rt" $N1); b2=$(count baseline "$rt" $N2)
    g1=$(count brigade "$rt" $N1); g2=$(count brigade "$rt" $N2)
    python3 - "$rt" "$b1" "$b2" "$g1" "$g2" "$N1" "$N2" <<'PY'
import sys
rt, b1, b2, g1, g2, n1, n2 = sys.argv[1], *map(int, sys.argv[2:])
b = (b2 - b1) / (n2 - n1)
g = (g2 - g1) / (n2 - n1)
print(f"| {rt} | {b:,.0f} | {g:,.0f} | {g / b:.3f} | {b / g:.3f} |")
PY
done
