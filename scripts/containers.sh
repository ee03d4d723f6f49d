#!/usr/bin/env bash
# Brigade's containers on Docker Engine or podman (docs/containers.md): the real Dockerfile and
# docker-compose.yml, with local base images where no registry can be reached.
#
#   bash scripts/containers.sh setup               # the engine (Debian packages) and its compose: docker.io + the
#                                                  # Compose plugin built from the Go module proxy, or podman + runc
#                                                  # + podman-compose (venv); debootstrap
#   bash scripts/containers.sh images              # local base image (debootstrap) and FerretDB image standing in for mongo:7
#   bash scripts/containers.sh brigade-image R     # brigade:R from the Dockerfile, fed a host-built binary (target prebuilt)
#   bash scripts/containers.sh stack R [--store embedded]   # compose up (FerretDB override, or the embedded-store
#                                                  # override), every service healthy, walkthrough, the loadtest
#                                                  # service's report, compose down -v
#   bash scripts/containers.sh testcontainers      # the MongoDB tests through testcontainers on the engine's socket
#   bash scripts/containers.sh compare R1,R2 [--store embedded|mongo] [--loopback] [compare flags...]
#                                                  # one report: every runtime's stack up at once, compare --external
#                                                  # with each service container's cgroup (side by side); --loopback:
#                                                  # a second report, each stack beside the same services at loopback
#   bash scripts/containers.sh compare-check       # a short side-by-side comparison of two stacks (embedded), checked
#   bash scripts/containers.sh clean               # remove every container, volume and network this script made
#   bash scripts/containers.sh ci                  # what .ci/run runs: setup, images, stack axum and actix, testcontainers
#   bash scripts/containers.sh engine              # prints the engine the other subcommands use
#
# Every subcommand takes `--engine docker|podman` (or BRIGADE_ENGINE); the default is podman where it
# is installed, else Docker where its daemon is (dockerd installed or answering), else podman.
# Environment: BRIGADE_CACHE (default ~/.cache/brigade: the root file system tarball, the compose
# tools), BRIGADE_PROFILE (debug|release, default debug: which host build goes into the image),
# PODMAN_COMPOSE (default: the venv's podman-compose).
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${BRIGADE_CACHE:-$HOME/.cache/brigade}"
PROFILE="${BRIGADE_PROFILE:-debug}"
PODMAN_COMPOSE_VERSION=1.6.0
# The Compose plugin for Docker Engine: Debian has only the old Python docker-compose 1.29, so
# docker/compose v5 is built from the Go module proxy (docs/containers.md says why this version).
DOCKER_COMPOSE_VERSION=v5.6.0
BASE_TAG=docker.io/library/debian:bookworm-slim
VENV="$CACHE/podman-compose-$PODMAN_COMPOSE_VERSION"
PODMAN_COMPOSE="${PODMAN_COMPOSE:-$VENV/bin/podman-compose}"
DOCKER_PLUGINS="${DOCKER_CONFIG:-$HOME/.docker}/cli-plugins"
mkdir -p "$CACHE"

log() { echo "containers.sh: $*" >&2; }
die() { log "error: $*"; exit 1; }
# Runs "$@" and says how long it took (CI reads these lines for its step times).
timed() {
    local what="$1" start=$SECONDS
    shift
    "$@"
    log "$what took $((SECONDS - start)) s"
}

# The engine: --engine, else BRIGADE_ENGINE, else podman where installed, else Docker where its
# daemon is installed or answers, else podman (which setup installs).
ENGINE="${BRIGADE_ENGINE:-}"
default_engine() {
    if command -v podman >/dev/null; then echo podman
    elif command -v dockerd >/dev/null || docker info >/dev/null 2>&1; then echo docker
    else echo podman
    fi
}
# The labels compose puts on what it makes, per engine.
project_label() { [[ "$ENGINE" == docker ]] && echo com.docker.compose.project || echo io.podman.compose.project; }
service_label() { [[ "$ENGINE" == docker ]] && echo com.docker.compose.service || echo io.podman.compose.service; }

# Runs the engine's CLI.
E() { "$ENGINE" "$@"; }

# Builds an image with BuildKit on Docker (only BuildKit skips the Dockerfile's stages that are
# not needed, like the Rust builder the prebuilt target replaces): `docker buildx` where the CLI
# has it, else Debian's own docker CLI (/usr/bin/docker, 20.10, whose BuildKit client is built in;
# a newer CLI without buildx falls back to the legacy builder, which builds every stage). podman
# builds with buildah, `--format docker` keeping the image's HEALTHCHECK.
# At most 15 minutes.
engine_build() {
    if [[ "$ENGINE" == podman ]]; then
        timeout 900 podman build --format docker "$@"
    elif docker buildx version >/dev/null 2>&1; then
        timeout 900 docker buildx build --load "$@"
    elif [[ -x /usr/bin/docker ]]; then
        DOCKER_BUILDKIT=1 timeout 900 /usr/bin/docker build "$@"
    else
        die "no BuildKit for docker build: install docker-buildx (or Debian's docker.io, whose CLI has it built in)"
    fi
}

setup() {
    if [[ "$ENGINE" == docker ]]; then setup_docker; else setup_podman; fi
}

setup_podman() {
    if ! command -v podman >/dev/null || ! command -v runc >/dev/null || ! command -v debootstrap >/dev/null; then
        [[ $(id -u) == 0 ]] || die "setup installs Debian packages and configures podman: run it as root"
        log "installing podman, runc, debootstrap (Debian packages)"
        timeout 300 apt-get update -q >/dev/null
        DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y -q podman runc debootstrap >/dev/null
    fi
    # crun refuses this kernel's hybrid cgroup layout; runc works. Default ulimits must stay under
    # the machine's hard limits or no container starts. (A fresh Debian has no such file: podman's
    # defaults are under /usr/share/containers.)
    local conf=/etc/containers/containers.conf
    if ! grep -q 'brigade: runc' "$conf" 2>/dev/null; then
        local nofile
        nofile=$(ulimit -Hn)
        [[ "$nofile" == unlimited || "$nofile" -gt 20000 ]] && nofile=20000
        cat >>"$conf" <<CONF
# brigade: runc, and ulimits under this machine's hard limits (scripts/containers.sh)
[containers]
default_ulimits = ["nofile=$nofile:$nofile", "nproc=1000:1000"]
[engine]
runtime = "runc"
CONF
    fi
    if [[ ! -x "$PODMAN_COMPOSE" ]]; then
        log "installing podman-compose $PODMAN_COMPOSE_VERSION into $VENV"
        python3 -m venv "$VENV"
        timeout 300 "$VENV/bin/pip" install -q "podman-compose==$PODMAN_COMPOSE_VERSION"
    fi
    podman --version
    "$PODMAN_COMPOSE" --version | tail -n 1
}

# Docker Engine from Debian (docker.io: dockerd 20.10, containerd, runc), its daemon started where
# nothing runs it (no systemd here: in the background, its log in the cache), and the Compose
# plugin built once from the Go module proxy into the CLI's plugin directory.
setup_docker() {
    if ! command -v dockerd >/dev/null || ! command -v debootstrap >/dev/null; then
        [[ $(id -u) == 0 ]] || die "setup installs Debian packages: run it as root"
        log "installing docker.io, debootstrap (Debian packages)"
        timeout 300 apt-get update -q >/dev/null
        DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y -q docker.io debootstrap >/dev/null
    fi
    if ! docker info >/dev/null 2>&1; then
        log "starting dockerd (log: $CACHE/dockerd.log)"
        setsid dockerd >"$CACHE/dockerd.log" 2>&1 </dev/null &
        local tries=0
        until docker info >/dev/null 2>&1; do
            tries=$((tries + 1))
            (( tries < 60 )) || { tail -n 20 "$CACHE/dockerd.log" >&2; die "dockerd did not answer within 60 s"; }
            sleep 1
        done
    fi
    if ! docker compose version 2>/dev/null | grep -q "${DOCKER_COMPOSE_VERSION#v}"; then
        command -v go >/dev/null || die "the Go toolchain is needed to build the Compose plugin"
        log "building docker compose $DOCKER_COMPOSE_VERSION from the Go module proxy (once)"
        local src
        src=$(cd "$CACHE" && GOFLAGS=-mod=mod go mod download -json "github.com/docker/compose/v5@$DOCKER_COMPOSE_VERSION" \
            | python3 -c 'import json, sys; print(json.load(sys.stdin)["Dir"])')
        # `go install` refuses a module whose go.mod has exclude lines; built in its own directory
        # (a writable copy of its go.mod and go.sum: the module cache is read-only) it builds.
        local modfile="$CACHE/docker-compose-$DOCKER_COMPOSE_VERSION"
        mkdir -p "$modfile" "$DOCKER_PLUGINS"
        install -m 0644 "$src/go.mod" "$modfile/go.mod"
        install -m 0644 "$src/go.sum" "$modfile/go.sum"
        (cd "$src" && GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0 timeout 1200 go build -modfile "$modfile/go.mod" -trimpath \
            -ldflags "-s -w -X github.com/docker/compose/v5/internal.Version=$DOCKER_COMPOSE_VERSION" \
            -o "$DOCKER_PLUGINS/docker-compose" ./cmd) >"$CACHE/docker-compose-build.log" 2>&1 \
            || { tail -n 20 "$CACHE/docker-compose-build.log" >&2; die "building docker compose failed"; }
    fi
    docker version -f 'docker: client {{.Client.Version}}, engine {{.Server.Version}}'
    docker compose version
}

# A Debian bookworm root file system (minbase, with ca-certificates), cached as a tarball, imported
# under the name the Dockerfile's RUNTIME_IMAGE uses, so the runtime stage is the users'.
base_image() {
    if E image inspect "$BASE_TAG" >/dev/null 2>&1; then return 0; fi
    local tarball="$CACHE/bookworm-minbase.tar"
    if [[ ! -s "$tarball" ]]; then
        local root
        root=$(mktemp -d)
        log "debootstrap bookworm (minbase) into $root"
        timeout 900 debootstrap --variant=minbase --include=ca-certificates bookworm "$root" http://deb.debian.org/debian >"$CACHE/debootstrap.log" 2>&1 \
            || die "debootstrap failed (see $CACHE/debootstrap.log)"
        rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
        mkdir -p "$CACHE"
        tar -C "$root" -cf "$tarball.tmp" . && mv "$tarball.tmp" "$tarball"
        rm -rf "$root"
    fi
    E import --change 'CMD ["bash"]' "$tarball" "$BASE_TAG" >/dev/null
    log "imported $BASE_TAG from $tarball"
}

TARGET_DIR="${CARGO_TARGET_DIR:-$REPO_ROOT/target}"
# The build context of the images' prebuilt binaries: prebuilt/<runtime>/brigade under it.
BIN_DIR="$TARGET_DIR/containers-bin"
# The images' one-runtime builds go to a target directory of their own, so the user's
# target/<profile>/brigade (every runtime) is never replaced by one that holds a single runtime.
IMAGES_TARGET_DIR="$TARGET_DIR/images"
FERRETDB_TAG=localhost/brigade-ferretdb:1.24.2

# The FerretDB image standing in for mongo:7, from the binary scripts/ferretdb.sh builds (or finds):
# the Containerfile with a build context that holds the binary alone.
ferretdb_image() {
    if E image inspect "$FERRETDB_TAG" >/dev/null 2>&1; then return 0; fi
    local bin dir
    bin="${FERRETDB_BIN:-$(bash "$REPO_ROOT/scripts/ferretdb.sh" build)}"
    [[ -x "$bin" ]] || die "no FerretDB binary (bash scripts/ferretdb.sh build)"
    dir=$(mktemp -d)
    cp "$bin" "$dir/ferretdb"
    engine_build -q -f "$REPO_ROOT/scripts/containers/ferretdb.Containerfile" -t "$FERRETDB_TAG" "$dir" >/dev/null
    rm -rf "$dir"
    log "built $FERRETDB_TAG"
}

images() {
    mkdir -p "$CACHE"
    timed "base image" base_image
    timed "FerretDB image" ferretdb_image
}

# brigade:RUNTIME from the real Dockerfile; the builder stage is fed a host build with the features
# the Dockerfile's own build would use (--no-default-features --features RUNTIME,embedded,mongo),
# through a build context that holds prebuilt/RUNTIME/brigade alone. Tagged brigade:RUNTIME (what
# docker-compose.yml names) and localhost/brigade:RUNTIME (what the cluster's manifests name; on
# podman the two are one).
brigade_image() {
    local runtime="$1" flags=()
    [[ "$PROFILE" == release ]] && flags=(--release)
    timed "cargo build ($runtime, $PROFILE)" \
        env CARGO_TARGET_DIR="$IMAGES_TARGET_DIR" \
        timeout 1500 cargo build --quiet --locked "${flags[@]}" --no-default-features --features "$runtime,embedded,mongo" --bin brigade
    mkdir -p "$BIN_DIR/prebuilt/$runtime"
    strip --strip-debug -o "$BIN_DIR/prebuilt/$runtime/brigade" "$IMAGES_TARGET_DIR/$PROFILE/brigade"
    timed "$ENGINE build brigade:$runtime" \
        engine_build -q -f "$REPO_ROOT/Dockerfile" --build-arg BUILDER=prebuilt --label "brigade.build-profile=$PROFILE" \
        --build-arg RUNTIME="$runtime" -t "brigade:$runtime" -t "localhost/brigade:$runtime" "$BIN_DIR" >/dev/null
    # The image holds that runtime alone: the build argument reached the cargo features.
    local listed
    listed=$(E run --rm "brigade:$runtime" runtimes --json)
    echo "$listed" | python3 -c 'import json,sys; r=[x["name"] for x in json.load(sys.stdin)["runtimes"]]; sys.exit(0 if r==[sys.argv[1]] else f"brigade:{sys.argv[1]} has runtimes {r}")' "$runtime"
    log "brigade:$runtime holds the $runtime runtime alone"
}

# The store the stacks use: mongo (the FerretDB override standing in for mongo:7) or embedded (the
# embedded-store override: no database containers). Set by `--store` of stack and compare.
STORE="${BRIGADE_STORE:-mongo}"
# compare's published ports: PORT_BASE+1..+3 for the first runtime's stack, +11..+13 for the
# second, …; the services at loopback (--loopback) from PORT_BASE+1001.
PORT_BASE="${BRIGADE_PORT_BASE:-18080}"

# The override file for $STORE.
store_override() {
    case "$STORE" in
        mongo) echo "$REPO_ROOT/docker-compose.ferretdb.yml" ;;
        embedded) echo "$REPO_ROOT/docker-compose.embedded.yml" ;;
        *) die "--store $STORE: mongo or embedded" ;;
    esac
}

# The compose command for runtime $1's stack (project brigade-$1): the users' docker-compose.yml with
# the store's override (and COMPOSE_EXTRA, if set), nothing else; at most 5 minutes.
compose() {
    local runtime="$1" override
    shift
    override=$(store_override)
    local tool=("$PODMAN_COMPOSE")
    [[ "$ENGINE" == docker ]] && tool=(docker compose)
    RUNTIME="$runtime" BRIGADE_UID="$(id -u)" BRIGADE_GID="$(id -g)" \
        timeout 300 "${tool[@]}" --project-name "brigade-$runtime" \
        -f "$REPO_ROOT/docker-compose.yml" -f "$override" \
        ${COMPOSE_EXTRA:+-f "$COMPOSE_EXTRA"} "$@"
}

# Waits until every container of project $1 is healthy, or fails after $2 seconds naming those that
# are not. Docker runs each container's health check itself (its state says healthy); podman runs
# them from systemd timers, and without systemd (this CI) nothing runs them, nor does podman-compose
# before podman 4.6 wait for `service_healthy`, so on podman each container's own check
# (`podman healthcheck run`, the image's HEALTHCHECK or compose's) is run here. What compose left
# stopped is started first (start_left_stopped).
wait_healthy() {
    local project="$1" limit="$2" start=$SECONDS ids id sick
    start_left_stopped "$project"
    while true; do
        sick=()
        mapfile -t ids < <(E ps -a -q --filter "label=$(project_label)=$project")
        [[ ${#ids[@]} -gt 0 ]] || die "no containers in project $project"
        for id in "${ids[@]}"; do
            healthy "$id" || sick+=("$(E inspect -f '{{.Name}}' "$id")")
        done
        [[ ${#sick[@]} -eq 0 ]] && return 0
        if (( SECONDS - start > limit )); then
            E ps -a --filter "label=$(project_label)=$project" >&2
            for name in "${sick[@]}"; do E logs --tail 20 "${name#/}" >&2 || true; done
            die "not healthy after ${limit} s: ${sick[*]}"
        fi
        sleep 2
    done
}

# Whether container $1 is healthy: its health check passes (podman: run here; Docker: the state
# the daemon's own runs left), or it runs where it has none.
healthy() {
    if [[ "$ENGINE" == podman ]]; then
        podman healthcheck run "$1" >/dev/null 2>&1
    else
        [[ "$(docker inspect -f '{{if .State.Health}}{{.State.Health.Status}}{{else}}{{.State.Status}}{{end}}' "$1")" =~ ^(healthy|running)$ ]]
    fi
}

# Asserts that $1's /health answers 200 naming runtime $2 and the store $STORE.
check_health() {
    local body
    body=$(curl -sS --fail --max-time 5 "$1/health") || die "$1/health did not answer 200"
    echo "$body" | python3 -c 'import json,sys; h=json.load(sys.stdin); sys.exit(0 if h["runtime"]==sys.argv[1] and h["store"]==sys.argv[3] else f"{sys.argv[2]}/health: {h}")' "$2" "$1" "$STORE"
}

# The cgroup of compose service $2 of project $1: its main process's, from /proc (the cpuacct
# hierarchy's path on cgroup v1, the unified one on v2), the same on either engine.
container_cgroup() {
    local id pid
    id=$(E ps -q --filter "label=$(project_label)=$1" --filter "label=$(service_label)=$2")
    [[ -n "$id" ]] || die "no container for $2 in $1"
    pid=$(E inspect -f '{{.State.Pid}}' "$id")
    awk -F: '$2 ~ /(^|,)cpuacct(,|$)/ {print $3; found=1} END {if (!found) exit 1}' "/proc/$pid/cgroup" 2>/dev/null \
        || awk -F: '$1 == "0" {print $3}' "/proc/$pid/cgroup"
}

# Starts whatever of project $1 is still stopped after `compose up` or `start`, a few tries each. podman 4.3
# (Debian 12) at times refuses to start a container whose dependency has dependencies of its own
# (the kitchen: tables, then waiter, then waiter-db): "generating dependency graph for container ...:
# container ... depends on container ... not found in input list" (its graph is built in map order,
# so a second try usually passes), and podman-compose still exits 0. It left a CI run's kitchen
# stopped after a reset until the health wait gave up.
start_left_stopped() {
    local project="$1" tries=0 ids id
    while true; do
        mapfile -t ids < <(E ps -a -q --filter "label=$(project_label)=$project" \
            --filter status=created --filter status=exited)
        [[ ${#ids[@]} -eq 0 ]] && return 0
        tries=$((tries + 1))
        if [[ $tries -gt 5 ]]; then
            for id in "${ids[@]}"; do E start "$id" >&2 || true; done
            die "still stopped after 5 tries to start them: $(E inspect -f '{{.Name}}' "${ids[@]}" | xargs)"
        fi
        for id in "${ids[@]}"; do
            log "starting $(E inspect -f '{{.Name}}' "$id") again (try $tries): compose left it stopped"
            E start "$id" >/dev/null 2>&1 || true
        done
        sleep 1
    done
}

# Empties runtime $1's stack's data and brings it back healthy and serving, in the same containers:
# every service and database stopped, every volume of the project emptied (through a throwaway
# container of the brigade image, as root), everything started again; the databases (FerretDB's
# or mongod's files, or the embedded store's) start empty and the services create their
# collections and indexes anew, then the walkthrough's few writes. Not `down -v` and `up`: that
# left whole cells of store timeouts here on stacks that passed their health checks (new
# containers, new addresses; docs/containers.md).
reset_stack() {
    local runtime="$1" project="brigade-$1" volume tries=0
    compose "$runtime" stop >/dev/null 2>&1 || die "compose stop failed"
    for volume in $(E volume ls -q --filter "label=$(project_label)=$project"); do
        E run --rm --user 0 --entrypoint /bin/sh -v "$volume:/data" "localhost/brigade:$runtime" \
            -c 'rm -rf /data/* /data/.[!.]*' || die "emptying volume $volume failed"
    done
    compose "$runtime" start >"$CACHE/compose-up-$runtime.log" 2>&1 \
        || { tail -n 30 "$CACHE/compose-up-$runtime.log" >&2; die "compose start failed"; }
    wait_healthy "$project" 180
    # Healthy is not yet serving: the walkthrough's writes through all three services must succeed.
    # (Its output is read whole: `grep -q` on a pipe would end the walkthrough early, and
    # pipefail would count that as a failure.)
    until grep -q '"status":"served"' <<<"$(bash "$REPO_ROOT/scripts/walkthrough.sh" 2>/dev/null)"; do
        tries=$((tries + 1))
        [[ $tries -lt 30 ]] || die "the stack did not serve the walkthrough within 30 tries after a reset"
        sleep 2
    done
}

# Item 1 and 2 of the CI check: runtime $1's stack up, every service healthy, each /health naming the
# runtime, the walkthrough through the published ports, the loadtest service's report (one run per
# cell of SCENARIOS x USERS, each on fresh databases), down -v clean.
stack() {
    local runtime="$1" project="brigade-$1" results out
    E image inspect "brigade:$runtime" >/dev/null 2>&1 || brigade_image "$runtime"
    # On any failure (die exits), the stack goes down with its volumes.
    trap "compose $runtime down -v >/dev/null 2>&1 || true" EXIT
    # (podman-compose warns that podman < 4.6 cannot wait for `service_healthy`: wait_healthy does.
    # On Docker, `up -d` does not wait either; wait_healthy reads each container's own state.)
    timed "compose up ($runtime)" compose "$runtime" up -d >"$CACHE/compose-up-$runtime.log" 2>&1 \
        || { tail -n 30 "$CACHE/compose-up-$runtime.log" >&2; die "compose up failed"; }
    timed "every service healthy ($runtime)" wait_healthy "$project" 180
    for port in 8081 8082 8083; do check_health "http://127.0.0.1:$port" "$runtime"; done
    out=$(bash "$REPO_ROOT/scripts/walkthrough.sh" 2>/dev/null)
    grep -q '"status":"served"' <<<"$out" || die "the walkthrough did not reach served: $out"
    log "walkthrough on $runtime: waiter, table, seat, order, served"
    results="$REPO_ROOT/results"
    out="$results/containers-$runtime-$(date -u +%Y%m%dT%H%M%SZ)"
    mkdir -p "$out"
    # One loadtest run per cell, each on fresh data as on loopback: before every cell (the first
    # too, after the walkthrough's writes) the stack's volumes are emptied and it starts again, so
    # no cell reads what another wrote.
    local scenario users cells=0
    : >"$CACHE/loadtest-$runtime.log"
    for scenario in ${SCENARIOS:-all}; do
        for users in ${USERS:-2}; do
            timed "fresh databases for $scenario, $users users ($runtime)" reset_stack "$runtime"
            cells=$((cells + 1))
            SCENARIOS="$scenario" USERS="$users" DURATION="${DURATION:-2s}" WARMUP="${WARMUP:-1s}" \
                REPORT_DIR="/results/${out##*/}" \
                CELL_DATA="every cell starts on fresh databases: before each one every service and database stopped, every volume was emptied, all started again and served the walkthrough (scripts/containers.sh stack)" \
                timed "loadtest $scenario, $users users ($runtime)" \
                compose "$runtime" --profile load run --rm loadtest >>"$CACHE/loadtest-$runtime.log" 2>&1 \
                || { tail -n 30 "$CACHE/loadtest-$runtime.log" >&2; die "the loadtest service failed"; }
        done
    done
    [[ -s "$out/report.md" ]] || die "the loadtest service wrote no report"
    [[ $(grep -c "hits/s" "$out/report.md") -ge $cells ]] \
        || die "$out/report.md has not one table per cell ($cells)"
    log "loadtest report ($cells cells, each on fresh databases): $out/report.md"
    timed "compose down -v ($runtime)" compose "$runtime" down -v >/dev/null 2>&1
    trap - EXIT
    [[ -z "$(E ps -a -q --filter "label=$(project_label)=$project")" ]] || die "containers left after down -v"
    [[ -z "$(E volume ls -q --filter "label=$(project_label)=$project")" ]] || die "volumes left after down -v"
    log "stack $runtime ($STORE store): up, healthy, walked through, loaded, down -v clean"
}

# Every runtime's stack up at once (project brigade-R, its own published ports), the services (and
# their databases, on mongo) pinned to BRIGADE_SERVER_CPUS (compose's cpuset), then one
# `brigade compare --external` over all of them, its generator pinned to BRIGADE_GENERATOR_CPUS:
# isolated runs rotated and paired, then the side-by-side levels, every service container's CPU
# read from its cgroup in nanoseconds (--external-cgroup), the databases' apart (--external-companion).
# With --loopback, a second comparison follows in which each runtime's stack runs beside the same
# three services started here at loopback (`R#loopback`, one process per service as in the
# containers, pinned to the same CPUs, each in a cgroup of its own so both sides are read alike):
# its side-by-side verdicts are what the containers cost each runtime. Every stack goes down -v at
# the end, whatever happened.
compare_containers() {
    local runtimes="$1" nproc server_cpus generator_cpus brigade externals=() runtime i=0 stacks=()
    local loopback=0 args=()
    shift
    while [[ $# -gt 0 ]]; do
        case "$1" in
            --store) STORE="${2:?--store mongo|embedded}"; shift 2 ;;
            --store=*) STORE="${1#--store=}"; shift ;;
            --loopback) loopback=1; shift ;;
            *) args+=("$1"); shift ;;
        esac
    done
    store_override >/dev/null
    nproc=$(nproc)
    server_cpus="${BRIGADE_SERVER_CPUS:-0-$(( nproc / 2 - 1 ))}"
    generator_cpus="${BRIGADE_GENERATOR_CPUS:-$(( nproc / 2 ))-$(( nproc - 1 ))}"
    brigade="${BRIGADE_BIN:-$TARGET_DIR/$PROFILE/brigade}"
    [[ -x "$brigade" ]] || die "no brigade binary at $brigade (cargo build, or set BRIGADE_BIN)"
    local pin="$CACHE/compose.pin.yml" pinned=(waiter tables kitchen)
    [[ "$STORE" == mongo ]] && pinned+=(waiter-db tables-db kitchen-db)
    {
        echo "# Written by scripts/containers.sh compare: the servers (and databases) on the server CPUs."
        echo "services:"
        for service in "${pinned[@]}"; do
            printf '  %s:\n    cpuset: "%s"\n' "$service" "$server_cpus"
        done
    } >"$pin"
    # shellcheck disable=SC2064
    trap "for r in ${runtimes//,/ }; do COMPOSE_EXTRA=$pin compose \$r down -v >/dev/null 2>&1 || true; done; stop_loopback" EXIT
    for runtime in ${runtimes//,/ }; do
        E image inspect "brigade:$runtime" >/dev/null 2>&1 || brigade_image "$runtime"
        local base=$(( PORT_BASE + 10 * i ))
        BRIGADE_WAITER_PORT=$((base + 1)) BRIGADE_TABLES_PORT=$((base + 2)) BRIGADE_KITCHEN_PORT=$((base + 3)) \
            COMPOSE_EXTRA="$pin" timed "compose up ($runtime, $STORE)" compose "$runtime" up -d >"$CACHE/compose-up-$runtime.log" 2>&1 \
            || { tail -n 30 "$CACHE/compose-up-$runtime.log" >&2; die "compose up failed"; }
        timed "every service healthy ($runtime)" wait_healthy "brigade-$runtime" 180
        mapfile -t -O "${#externals[@]}" externals < <(stack_externals "$runtime" "$base")
        stacks+=("brigade-$runtime on 127.0.0.1:$((base + 1))-$((base + 3))")
        i=$((i + 1))
    done
    local note databases
    if [[ "$STORE" == mongo ]]; then
        databases="the databases are FerretDB 1.24.2 on SQLite standing in for mongo:7 (function, not speed), their CPU read from their cgroups and kept out of the server figures"
    else
        databases="the embedded store (docker-compose.embedded.yml): each service its own database file on its own volume, no database container"
    fi
    note="$(engine_words); docker-compose.yml + $(basename "$(store_override)"), one stack per runtime up at once \
(${stacks[*]}), image brigade:RUNTIME from the Dockerfile (BUILDER=prebuilt, a host build with that runtime's features alone: \
$(for r in ${runtimes//,/ }; do printf '%s %s; ' "$r" "$(E image inspect -f '{{index .Config.Labels "brigade.build-profile"}}' "brigade:$r")"; done)); each service container pinned to CPUs $server_cpus (cpuset), the generator to $generator_cpus; \
every service in its own container and network namespace, reached through the engine's published ports; \
side by side, each runtime's CPU is its three service containers' cgroups (cpuacct) summed, in nanoseconds; $databases"
    timed "compare --external ($runtimes, $STORE)" "$brigade" compare "${externals[@]}" \
        --server-cpus "$server_cpus" --generator-cpus "$generator_cpus" \
        --setup-note "Containers=$note" "${args[@]}"
    [[ $loopback == 1 ]] || return 0
    # The same stacks again, each beside its own services at loopback.
    local both=() labels=()
    i=0
    for runtime in ${runtimes//,/ }; do
        mapfile -t -O "${#both[@]}" both < <(stack_externals "$runtime" $(( PORT_BASE + 10 * i )))
        # The very binary the image holds, where it was built here; else the one compare runs.
        local host_bin="$BIN_DIR/$runtime/brigade"
        [[ -x "$host_bin" ]] || host_bin="$brigade"
        start_loopback "$host_bin" "$runtime" $(( PORT_BASE + 1000 + 10 * i )) "$server_cpus"
        both+=("${LOOPBACK_EXTERNALS[@]}")
        labels+=("$runtime" "$runtime#loopback")
        i=$((i + 1))
    done
    # Its report beside the first one's: OUT/beside-loopback when --out OUT was given.
    local second=() skip=0 a
    for a in "${args[@]}"; do
        if [[ $skip == 1 ]]; then second+=("$a/beside-loopback"); skip=0; continue; fi
        case "$a" in
            --out) second+=("$a"); skip=1 ;;
            --out=*) second+=("$a/beside-loopback") ;;
            *) second+=("$a") ;;
        esac
    done
    local lnote="$note; beside each stack, the same three services as host processes at loopback (\`R#loopback\`: \
brigade serve --service S --store $STORE, one process per service as in the containers, taskset to CPUs $server_cpus, \
each moved into a cgroup of its own under brigade-loopback so that both sides' CPU is read from cgroups alike): \
each pair's side-by-side ratio is what the containers cost that runtime"
    timed "compare --external, containers beside loopback ($runtimes)" "$brigade" compare "${both[@]}" \
        --runtimes "$(IFS=,; echo "${labels[*]}")" \
        --server-cpus "$server_cpus" --generator-cpus "$generator_cpus" \
        --setup-note "Containers=$lnote" "${second[@]}"
}

# The compare flags for runtime $1's stack published from port $2+1: each service's URL and cgroup,
# and on mongo its databases' cgroups as companions; one per line.
stack_externals() {
    local runtime="$1" port=$(( $2 + 1 )) service db
    for service in waiter tables kitchen; do
        printf '%s\n' --external "$runtime:$service=http://127.0.0.1:$port" \
            --external-cgroup "$runtime:$service=$(container_cgroup "brigade-$runtime" "$service")"
        port=$((port + 1))
    done
    if [[ "$STORE" == mongo ]]; then
        # The databases share the server CPUs: their cgroups' CPU is the server side's own use.
        for db in waiter-db tables-db kitchen-db; do
            printf '%s\n' --external-companion "$runtime:$db=$(container_cgroup "brigade-$runtime" "$db")"
        done
    fi
}

LOOPBACK_PIDS=()
LOOPBACK_DIRS=()
LOOPBACK_CGROUPS=()
LOOPBACK_EXTERNALS=()

# Starts runtime $2's three services at loopback from binary $1 on ports $3+1..$3+3, pinned to CPUs
# $4, each in a cgroup of its own; sets LOOPBACK_EXTERNALS to their --external/--external-cgroup.
start_loopback() {
    local brigade="$1" runtime="$2" base="$3" cpus="$4" port peer="" service data pid cgroup
    LOOPBACK_EXTERNALS=()
    data=$(mktemp -d)
    LOOPBACK_DIRS+=("$data")
    port=$((base + 1))
    for service in waiter tables kitchen; do
        # shellcheck disable=SC2086
        taskset -c "$cpus" "$brigade" serve --runtime "$runtime" --service "$service" --store "$STORE" \
            --data-dir "$data/$service" --listen "127.0.0.1:$port" ${peer:+--peer "$peer"} \
            --mongodb-uri "${MONGODB_URI:-mongodb://127.0.0.1:1/}" \
            >"$CACHE/loopback-$runtime-$service.log" 2>&1 &
        pid=$!
        LOOPBACK_PIDS+=("$pid")
        cgroup="/brigade-loopback/$runtime-$service"
        # CPU (cpuacct) and memory accounting, as a container has; v2 has one hierarchy for both.
        local dir controller
        if [[ -e /sys/fs/cgroup/cgroup.controllers ]]; then
            dir="/sys/fs/cgroup$cgroup"
            mkdir -p "$dir"
            echo "$pid" >"$dir/cgroup.procs"
            LOOPBACK_CGROUPS+=("$dir")
        else
            for controller in cpuacct memory; do
                dir="/sys/fs/cgroup/$controller$cgroup"
                mkdir -p "$dir"
                echo "$pid" >"$dir/cgroup.procs"
                LOOPBACK_CGROUPS+=("$dir")
            done
        fi
        local tries=0
        until "$brigade" probe "http://127.0.0.1:$port/ready" >/dev/null 2>&1; do
            tries=$((tries + 1))
            (( tries < 150 )) || { tail -n 20 "$CACHE/loopback-$runtime-$service.log" >&2; die "$runtime $service at loopback not ready"; }
            sleep 0.2
        done
        LOOPBACK_EXTERNALS+=(--external "$runtime#loopback:$service=http://127.0.0.1:$port"
            --external-cgroup "$runtime#loopback:$service=$cgroup")
        peer="$service=http://127.0.0.1:$port"
        port=$((port + 1))
    done
}

# Stops what start_loopback started and removes its cgroups and data.
stop_loopback() {
    local pid dir
    for pid in "${LOOPBACK_PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${LOOPBACK_PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
    # (A cgroup whose process has exited is empty and can go.)
    for dir in "${LOOPBACK_CGROUPS[@]}"; do rmdir "$dir" 2>/dev/null || true; done
    for dir in "${LOOPBACK_CGROUPS[@]}"; do rmdir "$(dirname "$dir")" 2>/dev/null || true; done
    for dir in "${LOOPBACK_DIRS[@]}"; do rm -rf "$dir"; done
    LOOPBACK_PIDS=()
}

# Item 3: the MongoDB tests through testcontainers, not MONGODB_URI: the engine's Docker API on a
# socket (DOCKER_HOST: Docker's own, or `podman system service`), the local FerretDB image as a
# generic image (BRIGADE_MONGO_IMAGE, ready at its "Listening on" line). Only the MongoDB tests
# (each crate's `suite` binary, filtered by name), on the test build CI already made
# (--workspace --all-features: the same features, so nothing is rebuilt).
testcontainers() {
    local socket=/var/run/docker.sock service=""
    ferretdb_image
    if [[ "$ENGINE" == podman ]]; then
        socket=/run/podman/podman.sock
        mkdir -p "$(dirname "$socket")"
        podman system service --time=0 "unix://$socket" >"$CACHE/podman-service.log" 2>&1 &
        service=$!
    fi
    # shellcheck disable=SC2064
    trap "${service:+kill $service 2>/dev/null || true; }remove_test_containers" EXIT
    for _ in $(seq 50); do [[ -S "$socket" ]] && break; sleep 0.2; done
    [[ -S "$socket" ]] || die "no Docker API socket at $socket"
    local run=(env -u MONGODB_URI DOCKER_HOST="unix://$socket" BRIGADE_MONGO_IMAGE="$FERRETDB_TAG"
        BRIGADE_REQUIRE_MONGO=1 timeout 900 cargo test --quiet --workspace --all-features)
    timed "testcontainers: store tests" "${run[@]}" --test suite mongo_store::
    timed "testcontainers: model and conformance on mongo" "${run[@]}" --test suite -- the_mongo_store_agrees passes_on_the_mongo_store
    if [[ -n "$service" ]]; then
        kill "$service" 2>/dev/null || true
        wait "$service" 2>/dev/null || true
    fi
    remove_test_containers
    trap - EXIT
}

# testcontainers keeps its container for the whole test process and does not remove it at exit.
remove_test_containers() {
    local ids
    ids=$(E ps -a -q --filter label=org.testcontainers.managed-by=testcontainers)
    [[ -z "$ids" ]] || E rm -f $ids >/dev/null 2>&1 || true
}

# Every container, volume and network of this script's projects and of testcontainers.
clean() {
    local project format='{{index .Labels "io.podman.compose.project"}}'
    [[ "$ENGINE" == docker ]] && format='{{.Label "com.docker.compose.project"}}'
    for project in $(E ps -a --filter "label=$(project_label)" --format "$format" | sort -u); do
        [[ "$project" == brigade-* ]] || continue
        E ps -a -q --filter "label=$(project_label)=$project" | xargs -r "$ENGINE" rm -f >/dev/null 2>&1 || true
    done
    # Volumes and networks outlive their containers: by their own labels.
    for project in $(E volume ls -q --filter "label=$(project_label)" | xargs -r "$ENGINE" volume inspect -f "{{index .Labels \"$(project_label)\"}}" | sort -u) \
        $(E network ls -q --filter "label=$(project_label)" | xargs -r "$ENGINE" network inspect -f "{{index .Labels \"$(project_label)\"}}" | sort -u); do
        [[ "$project" == brigade-* ]] || continue
        E volume ls -q --filter "label=$(project_label)=$project" | xargs -r "$ENGINE" volume rm -f >/dev/null 2>&1 || true
        E network ls -q --filter "label=$(project_label)=$project" | xargs -r "$ENGINE" network rm >/dev/null 2>&1 || true
    done
    remove_test_containers
}

# The engine in words, for reports: its version, runtime, network and cgroups, and its compose.
engine_words() {
    if [[ "$ENGINE" == docker ]]; then
        echo "Docker Engine $(docker version -f '{{.Server.Version}}') ($(docker info -f '{{.DefaultRuntime}}, storage {{.Driver}}, cgroups v{{.CgroupVersion}} ({{.CgroupDriver}})'), \
bridge network), Docker Compose $(docker compose version --short)"
    else
        echo "podman $(podman version -f '{{.Client.Version}}') ($(podman info -f '{{.Host.OCIRuntime.Name}}'), \
network $(podman info -f '{{.Host.NetworkBackend}}'), cgroups $(podman info -f '{{.Host.CgroupsVersion}}')), \
podman-compose $PODMAN_COMPOSE_VERSION"
    fi
}

# A short containerised side-by-side comparison (both stacks on the embedded store, one level at a
# given rate): every runtime's windows read from its containers' cgroups, checked in report.json.
compare_check() {
    local out="$CACHE/compare-check"
    rm -rf "$out"
    (compare_containers axum,actix --store embedded --quick --scenarios waiter --users 2 \
        --duration 1s --warmup 300ms --side-by-side-rates 100 --windows 4 --count-seconds 0 \
        --no-progress --out "$out" >"$CACHE/compare-check.log" 2>&1) \
        || { tail -n 30 "$CACHE/compare-check.log" >&2; die "the containerised comparison failed"; }
    python3 - "$out/report.json" <<'PY' || die "the containerised side-by-side report is not what it should be"
import json, sys
report = json.load(open(sys.argv[1]))
cells = report["side_by_side"]
assert len(cells) == 1, cells
rows = {r["runtime"]: r for r in cells[0]["runtimes"]}
assert sorted(rows) == ["actix", "axum"], rows.keys()
for name, row in rows.items():
    assert row["window_cpu_ns"] and all(ns > 0 for ns in row["window_cpu_ns"]), (name, row["window_cpu_ns"])
    assert row["requests"] > 0 and row["errors"] == 0, (name, row["requests"], row["errors"])
for server in report["servers"]:
    assert server["source"].startswith("the cgroups of"), server["source"]
print("side by side in containers:", ", ".join(f'{n} {r["cpu_us_per_request"]:.0f} µs/request' for n, r in rows.items()))
PY
}

# What CI runs (.ci/run), each step timed. On podman: setup, images, testcontainers, the mongo stack
# of axum and of actix, the embedded stack of axum, the side-by-side check. On Docker Engine (the
# second engine CI runs): setup, images, the mongo stack of axum, the embedded stack of actix and
# the side-by-side check, on the images' host builds the podman pass made (cargo does not build
# them again). testcontainers first: it reuses the test build as it is; each image's one-runtime
# build goes to target/images and leaves target/<profile>/brigade as it was.
ci() {
    local began=$SECONDS runtime
    timed "setup ($ENGINE)" setup
    timed "images ($ENGINE)" images
    if [[ "$ENGINE" == podman ]]; then
        timed "testcontainers" testcontainers
        for runtime in axum actix; do
            timed "brigade image $runtime" brigade_image "$runtime"
            timed "stack $runtime" stack "$runtime"
        done
        STORE=embedded timed "stack axum (embedded store)" stack axum
    else
        for runtime in axum actix; do timed "brigade image $runtime ($ENGINE)" brigade_image "$runtime"; done
        timed "stack axum ($ENGINE)" stack axum
        STORE=embedded timed "stack actix (embedded store, $ENGINE)" stack actix
    fi
    timed "side by side in containers (embedded store, $ENGINE)" compare_check
    clean
    log "containers on $ENGINE took $((SECONDS - began)) s in all"
    [[ -z "$(E ps -a -q)" ]] || { E ps -a >&2; die "containers left behind"; }
}

# --engine anywhere among the arguments; what is left is the subcommand and its own.
args=()
while [[ $# -gt 0 ]]; do
    case "$1" in
        --engine) ENGINE="${2:?--engine docker|podman}"; shift 2 ;;
        --engine=*) ENGINE="${1#--engine=}"; shift ;;
        *) args+=("$1"); shift ;;
    esac
done
set -- "${args[@]}"
[[ -n "$ENGINE" ]] || ENGINE=$(default_engine)
[[ "$ENGINE" == docker || "$ENGINE" == podman ]] || die "--engine $ENGINE: docker or podman"

case "${1:-}" in
    ci) ci ;;
    clean) clean ;;
    engine) echo "$ENGINE" ;;
    testcontainers) testcontainers ;;
    stack)
        [[ "${3:-}" == --store ]] && STORE="${4:?--store mongo|embedded}"
        stack "${2:?runtime}" ;;
    compare-check) compare_check ;;
    compare) shift; compare_containers "${1:?runtimes, e.g. axum,actix}" "${@:2}" ;;
    setup) setup ;;
    base-image) base_image ;;
    images) images ;;
    brigade-image) brigade_image "${2:?runtime}" ;;
    *) sed -n '2,27p' "$0"; exit 2 ;;
esac
