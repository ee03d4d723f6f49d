#!/usr/bin/env bash
# Installs the suites `brigade study conformance` runs, pinned, so the study fetches nothing at run
# time: h2spec (github.com/summerwind/h2spec) from the Go module proxy, built with the Go on the
# machine. Where: $BRIGADE_TOOLS (default target/conformance-tools), its binaries in bin/; the study
# looks there first. Idempotent: a tool already at its pinned version is kept.
#
#   bash scripts/conformance-tools.sh            # install (or check) the pinned tools
#   bash scripts/conformance-tools.sh --print    # print where they are
set -euo pipefail
cd "$(dirname "$0")/.."

# h2spec's last release on the proxy (2.2.1 calls itself "2.0.0" in --version, as its tag left it).
# It has no go.mod ("+incompatible"), so Go resolves its dependencies (golang.org/x/net's hpack,
# fatih/color, ...) at their newest versions on the day it is built: h2spec's own cases are pinned,
# the HPACK encoder under them is not.
H2SPEC_MODULE=github.com/summerwind/h2spec
H2SPEC_VERSION=v2.2.1+incompatible

tools=${BRIGADE_TOOLS:-$PWD/target/conformance-tools}
bin="$tools/bin"
stamp="$tools/h2spec.version"

if [ "${1:-}" = "--print" ]; then
    echo "$bin/h2spec"
    exit 0
fi

command -v go >/dev/null || { echo "conformance-tools: go is missing (h2spec is built from the Go module proxy)"; exit 1; }
mkdir -p "$bin"
if [ -x "$bin/h2spec" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$H2SPEC_VERSION" ]; then
    echo "conformance-tools: h2spec $H2SPEC_VERSION already at $bin/h2spec"
else
    echo "conformance-tools: building h2spec $H2SPEC_VERSION into $bin"
    GOBIN="$bin" GOFLAGS=-mod=mod go install "$H2SPEC_MODULE/cmd/h2spec@$H2SPEC_VERSION"
    echo "$H2SPEC_VERSION" > "$stamp"
fi
# A wrong binary "passes" by running nothing: check it lists its cases.
cases=$("$bin/h2spec" --dryrun | grep -cE '^ +[0-9]+: ')
[ "$cases" -gt 100 ] || { echo "conformance-tools: h2spec lists only $cases cases"; exit 1; }
echo "conformance-tools: h2spec lists $cases cases"
