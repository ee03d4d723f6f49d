#!/usr/bin/env bash
# Coverage-guided fuzzing of what comes from outside (docs/reliability.md, "Fuzzing"): cargo-fuzz
# (libFuzzer) on the stable toolchain with RUSTC_BOOTSTRAP=1, no sanitizer (Brigade forbids unsafe
# code; coverage is what guides), one target per input: each hyper-based runtime's request path
# over an in-memory connection, the kit's rules and dispatch, the scenario compiler, the serve
# announcements, report.json as --rejudge reads it, and the generator's answer parser.
#
#   scripts/fuzz.sh build                   # cargo-fuzz (installed once) and every target
#   scripts/fuzz.sh run TARGET [RUNS] [SECS] # one target for RUNS executions (default 1,000,000),
#                                           # or SECS seconds if that comes first
#   scripts/fuzz.sh campaign [REQ] [OTHER]  # every target: REQ runs per request-path target
#                                           # (default 10,000,000), OTHER per other (1,000,000)
#   scripts/fuzz.sh ci [SECONDS]            # replay the regressions, then SECONDS per target (5)
#   scripts/fuzz.sh keep [TARGET...]        # minimise each corpus grown (libFuzzer -merge=1) into
#                                           # fuzz/corpora/TARGET.tar.gz, kept in git
#
# Each run starts from the seeds in fuzz/seeds/ and the corpus grown before: fuzz/corpus/TARGET/
# (not in git), unpacked from the kept fuzz/corpora/TARGET.tar.gz where it is empty. A crash is
# copied to fuzz/regressions/<target>/, which `ci` replays on every run. A summary line per target
# (executions, executions per second, crashes), and `run` and `campaign` add a line per target to
# fuzz/ledger.tsv (kept in git: date, commit, target, executions, seconds, crashes, the edges and
# features it covered, its corpus), whose sums per target docs/reliability.md states.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
export RUSTC_BOOTSTRAP=1
CARGO_FUZZ_VERSION=0.13.2
# `ci` builds the targets unoptimised (--dev: half the build time of a release build, and speed
# does not matter for a few seconds per target); the others build them optimised.
PROFILE=()
# Whether runs go into ledger.tsv (`run` and `campaign`; not `ci`'s few seconds).
LEDGER=
# The targets are fuzz/Cargo.toml's [[bin]] names, never a list here: `request_<runtime>` for each
# runtime with an in-memory server (tests/suite/registry.rs keeps those equal to the runtime registry's),
# then the others.
TARGETS=$(awk '/^\[\[bin\]\]/ { bin = 1 } bin && /^name = / { gsub(/"/, "", $3); print $3; bin = 0 }' Cargo.toml)
REQUEST_TARGETS=$(grep '^request_' <<<"$TARGETS" | tr '\n' ' ')
OTHER_TARGETS=$(grep -v '^request_' <<<"$TARGETS" | tr '\n' ' ')

# The kept corpus of TARGET, unpacked into corpus/TARGET where that is empty.
unpack() {
    local target=$1 kept="corpora/$1.tar.gz"
    mkdir -p "corpus/$target"
    if [ -e "$kept" ] && [ -z "$(ls -A "corpus/$target")" ]; then
        tar -xzf "$kept" -C "corpus/$target"
        echo "fuzz: $target: $(ls "corpus/$target" | wc -l) kept inputs unpacked"
    fi
}

# The built binary of TARGET (optimised, else unoptimised).
binary_of() {
    local dir
    for dir in release debug; do
        local f="target/x86_64-unknown-linux-gnu/$dir/$1"
        [ -x "$f" ] && { echo "$f"; return; }
    done
    echo "fuzz: $1 is not built (scripts/fuzz.sh build)" >&2
    return 1
}

# keep TARGET: corpus/TARGET minimised (the inputs that keep its coverage) into
# corpora/TARGET.tar.gz, packed reproducibly (sorted names, no times or owners).
keep() {
    local target=$1 bin minimised
    [ -n "$(ls -A "corpus/$target" 2>/dev/null)" ] || return 0
    bin=$(binary_of "$target")
    minimised=$(mktemp -d)
    "$bin" -merge=1 -max_len=65536 -timeout=30 -rss_limit_mb=4096 "$minimised" "corpus/$target" \
        >"artifacts/$target/keep.log" 2>&1 || { tail -n 20 "artifacts/$target/keep.log"; return 1; }
    mkdir -p corpora
    tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$minimised" -cf - . \
        | gzip -n -9 >"corpora/$target.tar.gz"
    echo "fuzz: $target: $(ls "corpus/$target" | wc -l) inputs minimised to $(ls "$minimised" | wc -l), corpora/$target.tar.gz $(du -k "corpora/$target.tar.gz" | cut -f1) KiB"
    rm -rf "$minimised"
}

# ledger TARGET LOG SECONDS CRASHES: a line in ledger.tsv for the run that LOG records.
ledger() {
    local target=$1 log=$2 secs=$3 crashes=$4 runs last
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    last=$(grep -E ' cov: [0-9]+ ft: [0-9]+ corp: ' "$log" | tail -n 1)
    [ -e ledger.tsv ] || printf 'date\tcommit\ttarget\texecutions\tseconds\tcrashes\tedges\tfeatures\tcorpus\n' >ledger.tsv
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" \
        "$(git rev-parse --short HEAD)" "$target" "${runs:-0}" "$secs" "$crashes" \
        "$(sed -E 's/.* cov: ([0-9]+) .*/\1/' <<<"$last")" \
        "$(sed -E 's/.* ft: ([0-9]+) .*/\1/' <<<"$last")" \
        "$(sed -E 's/.* corp: ([0-9]+)\/.*/\1/' <<<"$last")" >>ledger.tsv
}

seeds_of() {
    case "$1" in
        request_*) echo seeds/request ;;
        *) echo "seeds/$1" ;;
    esac
}

ensure_cargo_fuzz() {
    if ! cargo fuzz --version 2>/dev/null | grep -q "$CARGO_FUZZ_VERSION"; then
        cargo install cargo-fuzz --version "$CARGO_FUZZ_VERSION" --locked --quiet
    fi
}

build() {
    ensure_cargo_fuzz
    cargo fuzz build -s none "${PROFILE[@]}"
}

# run TARGET RUNS [extra libFuzzer flags...]
run() {
    local target=$1 runs=$2
    shift 2
    mkdir -p "corpus/$target" "regressions/$target" "artifacts/$target"
    unpack "$target"
    local log="artifacts/$target/last.log" started=$SECONDS
    local status=0
    cargo fuzz run -s none "${PROFILE[@]}" "$target" "corpus/$target" "$(seeds_of "$target")" -- \
        -runs="$runs" -max_len=65536 -timeout=30 -rss_limit_mb=4096 -print_final_stats=1 \
        -artifact_prefix="artifacts/$target/" "$@" >"$log" 2>&1 || status=$?
    local done_runs
    done_runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    local crashes=0
    for f in artifacts/"$target"/crash-* artifacts/"$target"/timeout-* artifacts/"$target"/oom-*; do
        [ -e "$f" ] || continue
        cp "$f" "regressions/$target/"
        crashes=$((crashes + 1))
    done
    local secs=$((SECONDS - started))
    [ -n "$LEDGER" ] && ledger "$target" "$log" "$secs" "$crashes"
    echo "fuzz: $target: ${done_runs:-0} executions in ${secs} s ($(( ${done_runs:-0} / (secs > 0 ? secs : 1) ))/s), $crashes crashes, exit $status"
    [ "$status" -eq 0 ] || { tail -n 40 "$log"; return 1; }
}

replay() {
    local target=$1 dir="regressions/$1"
    [ -n "$(ls -A "$dir" 2>/dev/null)" ] || return 0
    cargo fuzz run -s none "${PROFILE[@]}" "$target" "$dir" -- -runs=0 >/dev/null 2>&1 \
        || { echo "fuzz: $target: a regression input fails again"; return 1; }
    echo "fuzz: $target: $(ls "$dir" | wc -l) regression inputs pass"
}

case "${1:-}" in
    build) build ;;
    run) LEDGER=1; build; run "$2" "${3:-1000000}" ${4:+-max_total_time=$4} ;;
    campaign)
        LEDGER=1
        build
        for t in $REQUEST_TARGETS; do run "$t" "${2:-10000000}"; done
        for t in $OTHER_TARGETS; do run "$t" "${3:-1000000}"; done
        ;;
    ci)
        PROFILE=(--dev)
        build
        for t in $REQUEST_TARGETS $OTHER_TARGETS; do mkdir -p "regressions/$t"; replay "$t"; done
        for t in $REQUEST_TARGETS $OTHER_TARGETS; do run "$t" -1 -max_total_time="${2:-5}"; done
        ;;
    keep)
        shift
        for t in ${@:-$TARGETS}; do mkdir -p "artifacts/$t"; keep "$t"; done
        ;;
    *) sed -n '2,25p' "$0"; exit 2 ;;
esac
