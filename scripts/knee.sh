#!/usr/bin/env bash
# The scaling knee on one machine (docs/scaling.md): tables and kitchen scaled out to N replicas,
# the waiter kept at one, every server process capped to a fixed share of a CPU (cgroup), so that
# adding replicas adds CPU the way adding machines would, until the one waiter is the bottleneck.
#
# For each N: one waiter; N tables replicas, all asking that waiter; N kitchen replicas, kitchen i
# asking tables i; the replicas of a service share one database on MONGODB_URI (a fresh one per N).
# The scenario's fixtures are made once (`brigade load --setup-only`), then N generator processes
# run together (`--shard i/N --start-at`), generator i driving tables i and kitchen i (and the one
# waiter): the load is spread over the replicas evenly, as a connection-balancing Service would,
# with no proxy hop on this machine's few cores. `brigade merge` makes one result per N; the
# table gives hits/s, p99, errors and each server's CPU use against its cap.
#
# Usage: MONGODB_URI=mongodb://127.0.0.1:27017/ scripts/knee.sh [options]
#   --replicas "1 2 3 4"   replica counts to try (tables and kitchen each)   default "1 2 3 4"
#   --cap PCT              CPU cap of every tables/kitchen replica, % of one CPU   default 20
#   --waiter-cap PCT       CPU cap of the waiter                              default: --cap
#   --users U              closed-loop users per replica (the load grows with N)  default 8
#   --duration D           measured time per N                                default 20s
#   --warmup D             warm-up per N                                      default 3s
#   --scenario NAME        default all
#   --runtime NAME         default axum
#   --out DIR              default results/knee-<UTC time>
# Environment: BRIGADE_BIN (default target/release/brigade, built if missing), MONGODB_URI (needed:
# the embedded and memory stores cannot be shared between replicas; FerretDB: scripts/ferretdb.sh).
#
# CPU caps: cgroup v1 (`/sys/fs/cgroup/cpu`, cpu.cfs_quota_us over a 100 ms period) or v2
# (`/sys/fs/cgroup/cgroup.controllers` with cpu: cpu.max); root is needed to make the groups. The
# database (FerretDB) and the generators are not capped. Without a writable cgroup the script
# says so and stops (an uncapped run on a few cores shows contention, not a knee).
set -euo pipefail
cd "$(dirname "$0")/.."

REPLICAS="1 2 3 4"
CAP=20
WAITER_CAP=""
USERS=8
DURATION=20s
WARMUP=3s
SCENARIO=all
RUNTIME=axum
OUT="results/knee-$(date -u +%Y%m%dT%H%M%SZ)"
while [ $# -gt 0 ]; do
    case "$1" in
        --replicas) REPLICAS=$2; shift 2 ;;
        --cap) CAP=$2; shift 2 ;;
        --waiter-cap) WAITER_CAP=$2; shift 2 ;;
        --users) USERS=$2; shift 2 ;;
        --duration) DURATION=$2; shift 2 ;;
        --warmup) WARMUP=$2; shift 2 ;;
        --scenario) SCENARIO=$2; shift 2 ;;
        --runtime) RUNTIME=$2; shift 2 ;;
        --out) OUT=$2; shift 2 ;;
        -h|--help) sed -n '2,31p' "$0"; exit 0 ;;
        *) echo "knee.sh: unknown option $1 (--help)"; exit 2 ;;
    esac
done
WAITER_CAP=${WAITER_CAP:-$CAP}
[ -n "${MONGODB_URI:-}" ] || { echo "knee.sh: MONGODB_URI is needed (replicas share a database; e.g. bash scripts/ferretdb.sh start)"; exit 1; }
BIN=${BRIGADE_BIN:-target/release/brigade}
[ -x "$BIN" ] || cargo build --release --quiet --bin brigade
mkdir -p "$OUT"

# --- CPU caps ---------------------------------------------------------------------------------
CG_ROOT=""
if [ -w /sys/fs/cgroup/cpu/cgroup.procs ] && [ -e /sys/fs/cgroup/cpu/cpu.cfs_quota_us ]; then
    CG_ROOT=/sys/fs/cgroup/cpu; CG_KIND=v1
elif [ -e /sys/fs/cgroup/cgroup.controllers ] && grep -qw cpu /sys/fs/cgroup/cgroup.controllers \
    && [ -w /sys/fs/cgroup/cgroup.procs ]; then
    CG_ROOT=/sys/fs/cgroup; CG_KIND=v2
else
    echo "knee.sh: no writable CPU cgroup (neither /sys/fs/cgroup/cpu, v1, nor a v2 hierarchy with the cpu"
    echo "controller): cannot cap the servers. Run as root on a machine with cgroups, or on a cluster (docs/scaling.md)."
    exit 1
fi
GROUPS_MADE=()
PIDS=()

# make_group NAME PCT: a cgroup limiting its processes to PCT % of one CPU, its path in GROUP.
make_group() {
    local dir="$CG_ROOT/brigade-knee-$$-$1" quota=$(( $2 * 1000 ))
    mkdir -p "$dir"
    if [ "$CG_KIND" = v1 ]; then
        echo 100000 >"$dir/cpu.cfs_period_us"
        echo "$quota" >"$dir/cpu.cfs_quota_us"
    else
        echo "$quota 100000" >"$dir/cpu.max"
    fi
    GROUPS_MADE+=("$dir")
    GROUP=$dir
}

cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
    PIDS=()
    for dir in "${GROUPS_MADE[@]}"; do rmdir "$dir" 2>/dev/null || true; done
    GROUPS_MADE=()
}
trap cleanup EXIT

# serve NAME PCT ARGS...: starts `brigade serve ARGS` inside a new capped group (the shell joins the
# group, then execs, so the server is capped from its first instruction); sets SERVED_PID and
# SERVED_URL (no subshell: the pid and the group are remembered for the cleanup).
serve() {
    local name=$1 pct=$2; shift 2
    make_group "$name" "$pct"
    local group=$GROUP
    local listening="$OUT/$name.listening"
    sh -c 'echo $$ >"$1/cgroup.procs"; shift; exec "$@"' sh "$group" \
        "$BIN" serve --runtime "$RUNTIME" --store mongo --listen 127.0.0.1:0 --workers 1 "$@" \
        >"$listening" 2>"$OUT/$name.log" &
    local pid=$!
    PIDS+=("$pid")
    for _ in $(seq 1 300); do
        grep -q '"listening"' "$listening" 2>/dev/null && break
        kill -0 "$pid" 2>/dev/null || { echo "knee.sh: $name exited: $(tail -3 "$OUT/$name.log")"; exit 1; }
        sleep 0.1
    done
    local url; url=$(grep -o '"url":"[^"]*"' "$listening" | head -1 | cut -d'"' -f4)
    [ -n "$url" ] || { echo "knee.sh: $name announced no URL"; exit 1; }
    SERVED_PID=$pid
    SERVED_URL=$url
}

# cpu_ticks PID: user + system clock ticks the process has used.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

TCK=$(getconf CLK_TCK)
table="$OUT/knee.md"
{
    echo "# The knee: tables and kitchen × N, one waiter ($RUNTIME, scenario $SCENARIO)"
    echo
    echo "Caps: each tables/kitchen replica ${CAP}% of a CPU, the waiter ${WAITER_CAP}% (cgroup $CG_KIND); $USERS users per"
    echo "replica; $DURATION measured after $WARMUP warm-up; store mongo at a fresh database per N. Machine: $(nproc) CPUs."
    echo
    echo "| N | users | hits/s | × N=1 | p99 ms | errors | waiter CPU % (cap) | tables CPU % each | kitchen CPU % each |"
    echo "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
} >"$table"
first_hits=""
for n in $REPLICAS; do
    echo "knee.sh: N=$n"
    prefix="knee$$-n$n-"
    serve "waiter-$n" "$WAITER_CAP" --service waiter --database-prefix "$prefix"
    waiter_pid=$SERVED_PID; waiter_url=$SERVED_URL
    tables_pids=(); tables_urls=(); kitchen_pids=(); kitchen_urls=()
    for i in $(seq 0 $((n - 1))); do
        serve "tables-$n-$i" "$CAP" --service tables --database-prefix "$prefix" --peer "waiter=$waiter_url"
        tables_pids+=("$SERVED_PID"); tables_urls+=("$SERVED_URL")
        serve "kitchen-$n-$i" "$CAP" --service kitchen --database-prefix "$prefix" --peer "tables=$SERVED_URL"
        kitchen_pids+=("$SERVED_PID"); kitchen_urls+=("$SERVED_URL")
    done
    targets() { echo "--target waiter=$waiter_url --target tables=${tables_urls[$1]} --target kitchen=${kitchen_urls[$1]}"; }
    # shellcheck disable=SC2046
    "$BIN" load --scenario "$SCENARIO" $(targets 0) --seed 1 --setup-only --fixtures "$OUT/fixtures-$n.json" >/dev/null
    start_at=$(( $(date +%s) + 3 ))
    gens=()
    for i in $(seq 0 $((n - 1))); do
        # shellcheck disable=SC2046
        "$BIN" load --scenario "$SCENARIO" $(targets "$i") --seed 1 --users $((USERS * n)) \
            --duration "$DURATION" --warmup "$WARMUP" --no-progress --threads 1 \
            --fixtures "$OUT/fixtures-$n.json" --shard "$i/$n" --start-at "$start_at" \
            --json "$OUT/n$n-shard$i.json" >"$OUT/n$n-shard$i.txt" 2>&1 &
        gens+=("$!"); PIDS+=("$!")
    done
    # The servers' CPU from the generators' start (warm-up included: the same load) to their end.
    while [ "$(date +%s)" -lt "$start_at" ]; do sleep 0.1; done
    before_w=$(cpu_ticks "$waiter_pid")
    before_t=0; for p in "${tables_pids[@]}"; do before_t=$((before_t + $(cpu_ticks "$p"))); done
    before_k=0; for p in "${kitchen_pids[@]}"; do before_k=$((before_k + $(cpu_ticks "$p"))); done
    for g in "${gens[@]}"; do wait "$g" || { echo "knee.sh: a generator failed (see $OUT/n$n-shard*.txt)"; exit 1; }; done
    ended=$(date +%s.%N)
    after_w=$(cpu_ticks "$waiter_pid")
    after_t=0; for p in "${tables_pids[@]}"; do after_t=$((after_t + $(cpu_ticks "$p"))); done
    after_k=0; for p in "${kitchen_pids[@]}"; do after_k=$((after_k + $(cpu_ticks "$p"))); done
    shards=(); for i in $(seq 0 $((n - 1))); do shards+=("$OUT/n$n-shard$i.json"); done
    "$BIN" merge "${shards[@]}" --json "$OUT/n$n.json" >"$OUT/n$n.txt"
    row=$(python3 - "$OUT/n$n.json" "$n" "$((USERS * n))" "$start_at:$ended" "$TCK" "$((after_w - before_w))" \
        "$((after_t - before_t))" "$((after_k - before_k))" "$WAITER_CAP" "${first_hits:-0}" <<'PY'
import json, sys
path, n, users, span, tck, w, t, k, wcap, first = sys.argv[1:]
r = json.load(open(path))
started, ended = span.split(":")
n, span, tck = int(n), max(float(ended) - float(started), 1e-3), float(tck)
pct = lambda ticks, procs: 100.0 * int(ticks) / tck / span / procs
hits = r["total"]["hits_per_s"]
ratio = hits / float(first) if float(first) > 0 else 1.0
errors = sum(r["total"]["errors"].values())
print(f"| {n} | {users} | {hits:.0f} | {ratio:.2f} | {r['total']['latency']['p99_ms']:.1f} | {errors} "
      f"| {pct(w, 1):.0f} ({wcap}) | {pct(t, n):.0f} | {pct(k, n):.0f} |")
print(f"{hits}")
PY
)
    echo "$row" | head -1 >>"$table"
    [ -n "$first_hits" ] || first_hits=$(echo "$row" | tail -1)
    cleanup
done
cat "$table"
echo "knee.sh: table in $table; each N's merged result in $OUT/n<N>.json"
