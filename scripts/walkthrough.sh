#!/usr/bin/env bash
# A new user's walk through the API with curl: create a waiter and a table, seat the table, take an
# order, move it to served, and poke a few errors. Every step's status is checked against the one
# the API promises (shared/DESIGN.md); the last line counts the failures, and any failure exits 1.
# Needs the three services running, e.g.
#   cargo run --release -- serve --service all
# Usage: scripts/walkthrough.sh [waiter_url] [tables_url] [kitchen_url]
set -euo pipefail
W=${1:-http://127.0.0.1:8081}
T=${2:-http://127.0.0.1:8082}
K=${3:-http://127.0.0.1:8083}
json() { python3 -c "import sys,json; print(json.load(sys.stdin)$1)"; }
steps=0
failures=0
BODY=""

# call EXPECTED METHOD URL [JSON]: prints the answer's body, keeps it in BODY, and counts a failure
# when the status is not EXPECTED (or nothing answered).
call() {
    local expected="$1" method="$2" url="$3" data="${4:-}" out status
    echo "\$ curl -X $method $url${data:+ -d '$data'}" >&2
    steps=$((steps + 1))
    out=$(curl -sS --max-time 10 -X "$method" "$url" ${data:+-H 'content-type: application/json' -d "$data"} \
        -w '\n%{http_code}') || out=$'\n000'
    status=${out##*$'\n'}
    BODY=${out%$'\n'*}
    echo "$BODY"
    if [[ "$status" != "$expected" ]]; then
        failures=$((failures + 1))
        echo "walkthrough: FAILED $method $url: $status, expected $expected" >&2
    fi
}

call 200 GET "$W/health"
call 201 POST "$W/waiters" '{"name":"Ana","shift":"evening"}'
wid=$(echo "$BODY" | json "['id']")
number=$(( (RANDOM * 32768 + RANDOM) % 1000000 + 1 ))
call 201 POST "$T/tables" "{\"number\":$number,\"seats\":4}"
tid=$(echo "$BODY" | json "['id']")
call 200 POST "$T/tables/$tid/seat" "{\"party_size\":3,\"waiter_id\":\"$wid\"}"
call 201 POST "$K/orders" "{\"table_id\":\"$tid\",\"items\":[{\"dish\":\"soup\",\"qty\":2}]}"
oid=$(echo "$BODY" | json "['id']")
call 200 POST "$K/orders/$oid/items" '{"items":[{"dish":"bread","qty":1,"notes":"warm"}]}'
for s in cooking ready served; do call 200 POST "$K/orders/$oid/status" "{\"status\":\"$s\"}"; done
echo "-- errors --"
call 409 POST "$K/orders/$oid/status" '{"status":"cooking"}'
call 409 POST "$T/tables/$tid/seat" "{\"party_size\":2,\"waiter_id\":\"$wid\"}"
call 422 POST "$T/tables" '{"number":0,"seats":4}'
call 400 POST "$W/waiters" '{"name":'
call 405 DELETE "$W/health"
call 404 GET "$W/nowhere"
call 200 POST "$T/tables/$tid/release"
call 200 GET "$K/orders?table_id=$tid"
total=$(echo "$BODY" | json "['total']")
echo "$total"
[[ "$total" == 1 ]] || { failures=$((failures + 1)); echo "walkthrough: FAILED the table's orders: $total, expected 1" >&2; }
echo "walkthrough: $steps steps, $failures failures" >&2
[[ $failures == 0 ]]
