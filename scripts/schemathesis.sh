#!/usr/bin/env bash
# A hostile client: schemathesis (PyPI, pinned) generates requests from each service's own
# /openapi.json — valid and invalid bodies, queries and path values, stateful sequences — against
# the restaurant's three services on every runtime (memory store), and checks every answer: no 500,
# a status and content type the document lists, a body that fits the document's schema, valid data
# accepted and invalid data refused, and no hang (a request timeout).
#
# Usage: scripts/schemathesis.sh [runtimes...]
#   ST_MAX_EXAMPLES  test cases per operation and phase (default 25)
#   ST_TIMEOUT       wall-clock limit per service and runtime, seconds (default 240)
#   ST_BUDGET        wall-clock limit for all of them together, seconds (default: none); each run
#                    gets at most its share of what is left (and at least 30 s)
#   BRIGADE_BIN      the server binary (default target/debug/brigade, built if missing)
#   ST_VENV          where schemathesis is installed (default ~/.cache/brigade/schemathesis-$VERSION)
# Writes a summary table to target/schemathesis/summary.md and each run's output beside it; exits 1
# if any run found a failure.
#
# Excluded check: `unsupported_method` (ST204) — a method a path does not take answers 405 with the
# JSON error body but no `Allow` header, which RFC 9110 requires; the header is the adapters' to add
# (the server-limits issue), so the check is left out here until it lands (docs/observability.md).
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=4.32.5
MAX_EXAMPLES=${ST_MAX_EXAMPLES:-25}
TIMEOUT=${ST_TIMEOUT:-240}
BUDGET=${ST_BUDGET:-0}
VENV=${ST_VENV:-$HOME/.cache/brigade/schemathesis-$VERSION}
BIN=${BRIGADE_BIN:-target/debug/brigade}
OUT=target/schemathesis
mkdir -p "$OUT"

if [ ! -x "$VENV/bin/st" ]; then
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install --quiet "schemathesis==$VERSION"
fi
[ -x "$BIN" ] || cargo build --quiet --bin brigade
runtimes=("$@")
[ ${#runtimes[@]} -gt 0 ] || mapfile -t runtimes < <($BIN runtimes | awk '$1 !~ /:$/ {print $1}')

summary="$OUT/summary.md"
{
    echo "schemathesis $VERSION, --max-examples $MAX_EXAMPLES, all checks but unsupported_method"
    echo
    echo "| runtime | service | operations | test cases | failures | seconds |"
    echo "| --- | --- | ---: | ---: | ---: | ---: |"
} >"$summary"
status=0
runs_left=$((${#runtimes[@]} * 3))
budget_started=$(date +%s)
for rt in "${runtimes[@]}"; do
    log="$OUT/server-$rt.log"
    "$BIN" serve --runtime "$rt" --store memory --listen 127.0.0.1:0 --workers 2 \
        >"$OUT/listening-$rt" 2>"$log" &
    pid=$!
    for _ in $(seq 1 100); do
        [ "$(grep -c '"listening"' "$OUT/listening-$rt" 2>/dev/null)" -ge 3 ] && break
        sleep 0.1
    done
    while read -r service url; do
        result="$OUT/$rt-$service.txt"
        started=$(date +%s)
        limit=$TIMEOUT
        if [ "$BUDGET" -gt 0 ]; then
            share=$(((BUDGET - (started - budget_started)) / (runs_left > 0 ? runs_left : 1)))
            [ "$share" -lt 30 ] && share=30
            [ "$share" -lt "$limit" ] && limit=$share
        fi
        runs_left=$((runs_left - 1))
        rc=0
        timeout "$limit" "$VENV/bin/st" --config-file scripts/schemathesis.toml run "$url/openapi.json" \
            --checks all --exclude-checks unsupported_method \
            --max-examples "$MAX_EXAMPLES" --seed 1 --workers 1 \
            --request-timeout 10 --suppress-health-check all \
            --no-color >"$result" 2>&1 || rc=$?
        seconds=$(($(date +%s) - started))
        ops=$(sed -n 's/^  Tested: \([0-9]*\).*/\1/p' "$result" | head -1)
        cases=$(sed -n 's/^  \([0-9]*\) generated.*/\1/p' "$result" | head -1)
        failures=$(sed -n 's/.* found \([0-9]*\) unique failures.*/\1/p' "$result" | head -1)
        [ "$rc" = 124 ] && failures="timed out"
        echo "| $rt | $service | ${ops:-?} | ${cases:-?} | ${failures:-0} | $seconds |" >>"$summary"
        if [ "$rc" != 0 ]; then
            status=1
            echo "schemathesis: $service on $rt failed (exit $rc); its report:"
            tail -n 80 "$result"
        fi
    done < <(python3 -c '
import json, sys
for line in open(sys.argv[1]):
    try:
        a = json.loads(line)
    except ValueError:
        continue
    if a.get("brigade") == "listening":
        print(a["service"], a["url"])
' "$OUT/listening-$rt")
    kill -TERM "$pid"
    wait "$pid" || true
    if grep -q '"level":"ERROR"\|ERROR' "$log"; then
        echo "schemathesis: the $rt server logged errors:"
        grep ERROR "$log" | head -20
    fi
done
cat "$summary"
exit $status
