#!/usr/bin/env bash
# A new user's walk through the API with curl: create a waiter and a table, seat the table, take an
# order, move it to served, and poke a few errors. Needs the three services running, e.g.
#   cargo run --release -- serve --service all
# Usage: scripts/walkthrough.sh [waiter_url] [tables_url] [kitchen_url]
set -euo pipefail
W=${1:-http://127.0.0.1:8081}
T=${2:-http://127.0.0.1:8082}
K=${3:-http://127.0.0.1:8083}
json() { python3 -c "import sys,json; print(json.load(sys.stdin)$1)"; }
show() { echo "\$ $*" >&2; }
post() { show curl -s -X POST "$1" -d "$2"; curl -sS -X POST "$1" -H 'content-type: application/json' -d "$2"; }

curl -sS "$W/health"; echo
waiter=$(post "$W/waiters" '{"name":"Ana","shift":"evening"}'); echo "$waiter"
wid=$(echo "$waiter" | json "['id']")
number=$(( (RANDOM % 100000) + 1 ))
table=$(post "$T/tables" "{\"number\":$number,\"seats\":4}"); echo "$table"
tid=$(echo "$table" | json "['id']")
post "$T/tables/$tid/seat" "{\"party_size\":3,\"waiter_id\":\"$wid\"}"; echo
order=$(post "$K/orders" "{\"table_id\":\"$tid\",\"items\":[{\"dish\":\"soup\",\"qty\":2}]}"); echo "$order"
oid=$(echo "$order" | json "['id']")
post "$K/orders/$oid/items" '{"items":[{"dish":"bread","qty":1,"notes":"warm"}]}'; echo
for s in cooking ready served; do post "$K/orders/$oid/status" "{\"status\":\"$s\"}"; echo; done
echo "-- errors --"
post "$K/orders/$oid/status" '{"status":"cooking"}'; echo
post "$T/tables/$tid/seat" "{\"party_size\":2,\"waiter_id\":\"$wid\"}"; echo
post "$T/tables" '{"number":0,"seats":4}'; echo
post "$W/waiters" '{"name":'; echo
curl -sS -X DELETE "$W/health"; echo
curl -sS "$W/nowhere"; echo
curl -sS -X POST "$T/tables/$tid/release"; echo
curl -sS "$K/orders?table_id=$tid" | json "['total']"
