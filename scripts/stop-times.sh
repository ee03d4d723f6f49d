#!/usr/bin/env bash
# How long each runtime takes from SIGTERM to exit (its drain and its own stop), idle and after a
# second of keep-alive load whose connections the generator closed: what every round of compare's
# side-by-side levels waits for when its servers stop. One server at a time on the embedded store.
#
#   bash scripts/stop-times.sh                     # the eight default runtimes, 3 times each
#   RUNTIMES=ntex,hyper TIMES=5 bash scripts/stop-times.sh
#
# Needs a release build. Prints one line per runtime: the seconds of each stop, idle and loaded.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-target/release/brigade}
[ -x "$BIN" ] || cargo build --release --quiet
# compare's default runtimes, as its plan names them.
RUNTIMES=${RUNTIMES:-$("$BIN" compare --plan | python3 -c 'import json, sys; print(",".join(json.load(sys.stdin)["settings"]["runtimes"]))')}
TIMES=${TIMES:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Starts RUNTIME's server, loads it for a second when $2 is "loaded", and prints the seconds from
# SIGTERM to its exit.
stop_time() {
    local dir="$work/$1-$RANDOM" log
    mkdir -p "$dir"
    log="$dir/log"
    "$BIN" serve --runtime "$1" --store embedded --data-dir "$dir" --listen 127.0.0.1:0 >"$log" 2>&1 &
    local pid=$!
    for _ in $(seq 1 200); do
        [ "$(grep -c '"listening"' "$log")" -ge 3 ] && break
        sleep 0.05
    done
    if [ "$2" = loaded ]; then
        local targets
        targets=$(grep '"listening"' "$log" | python3 -c '
import json, sys
for line in sys.stdin:
    j = json.loads(line)
    print("--target %s=%s" % (j["service"], j["url"]), end=" ")')
        # shellcheck disable=SC2086
        "$BIN" load $targets --scenario all --users 4 --duration 1s --no-progress >/dev/null
    fi
    local t0 t1
    t0=$(date +%s.%N)
    kill -TERM "$pid"
    wait "$pid" || true
    t1=$(date +%s.%N)
    python3 -c "print(f'{$t1 - $t0:.3f}')"
}

for rt in ${RUNTIMES//,/ }; do
    idle=() loaded=()
    for _ in $(seq 1 "$TIMES"); do
        idle+=("$(stop_time "$rt" idle)")
        loaded+=("$(stop_time "$rt" loaded)")
    done
    echo "$rt: idle ${idle[*]} s; after load ${loaded[*]} s"
done
