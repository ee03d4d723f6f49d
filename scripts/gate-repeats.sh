#!/usr/bin/env bash
# Repeats compare's regression gate (`--baseline … --fail-on-regression`) the way a CI job uses
# it, keeping the reports of its last K unplanted runs as the baseline (K=2 by default): two
# `--quick` runs A1, A2, then N runs without a plant and N with a planted cost on one runtime
# (`--handicap RUNTIME=US`), interleaved, each a fresh `--quick` run judged against the K unplanted
# runs before it (never against itself; planted runs are never a baseline). A run without a plant
# should exit 0; a planted one should exit non-zero and name the planted runtime. It resumes: run
# it again with the same OUT and it skips every run with a line in OUT/gate.tsv.
#
#   bash scripts/gate-repeats.sh                       # N=10: 22 quick runs, about 75 min here
#   K=1 bash scripts/gate-repeats.sh                   # against the one run before
#   N=3 bash scripts/gate-repeats.sh                   # a shorter look
#   OUT=results/gate-X bash scripts/gate-repeats.sh    # resume that run
#
# Needs a release build. Prints, and writes to OUT/gate.tsv, one line per run: its kind, exit
# code, and the runtimes the gate says fell behind.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-10}
K=${K:-2}
PLANT=${PLANT:-warp=20}
OUT=${OUT:-results/gate-$(date -u +%Y%m%d-%H%M%S)}
BIN=${BIN:-target/release/brigade}
[ -x "$BIN" ] || cargo build --release --quiet
mkdir -p "$OUT"
planted=${PLANT%%=*}
ledger="$OUT/gate.tsv"
[ -s "$ledger" ] || printf 'run\tkind\texit\tfell_behind\n' >"$ledger"

# The unplanted runs so far, oldest first: the baselines of the next run are the last K.
unplanted=()
for i in $(seq 1 "$K"); do
    if [ ! -s "$OUT/A$i/report.json" ]; then
        echo "gate: the baseline run A$i"
        "$BIN" compare --quick --no-progress --out "$OUT/A$i" >"$OUT/A$i.log" 2>&1
    fi
    unplanted+=("$OUT/A$i")
done

for i in $(seq 1 "$N"); do
    baselines=()
    for b in "${unplanted[@]: -$K}"; do baselines+=(--baseline "$b"); done
    for kind in plain planted; do
        name="$kind-$i"
        if grep -q "^$name	" "$ledger"; then
            echo "gate: $name done before, kept"
            [ "$kind" = plain ] && [ -s "$OUT/$name/report.json" ] && unplanted+=("$OUT/$name")
            continue
        fi
        flags=()
        [ "$kind" = planted ] && flags=(--handicap "$PLANT")
        code=0
        "$BIN" compare --quick --no-progress "${baselines[@]}" --fail-on-regression \
            --out "$OUT/$name" "${flags[@]}" >"$OUT/$name.log" 2>&1 || code=$?
        [ "$kind" = plain ] && [ -s "$OUT/$name/report.json" ] && unplanted+=("$OUT/$name")
        # The gate's own words ("N regression(s) against the baseline: X fell behind Y …; …"):
        # who fell behind, each regressed cell's runtime once.
        behind=$(python3 -c '
import re, sys
line = next((l for l in open(sys.argv[1]) if "against the baseline:" in l), "")
print(",".join(sorted(set(re.findall(r"(?:: |; )(\S+) fell behind", line)))) or "-")
' "$OUT/$name.log")
        printf '%s\t%s\t%s\t%s\n' "$name" "$kind" "$code" "$behind" | tee -a "$ledger"
    done
done

python3 - "$ledger" "$planted" <<'EOF'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
plain = [r for r in rows if r["kind"] == "plain"]
planted = [r for r in rows if r["kind"] == "planted"]
ok_plain = sum(r["exit"] == "0" for r in plain)
named = [r for r in planted if r["exit"] != "0" and sys.argv[2] in r["fell_behind"].split(",")]
alone = sum(r["fell_behind"] == sys.argv[2] for r in named)
print(f"gate: no plant, exit 0 in {ok_plain} of {len(plain)}")
print(f"gate: {sys.argv[2]} planted, non-zero naming it in {len(named)} of {len(planted)}, "
      f"it alone in {alone}")
EOF
