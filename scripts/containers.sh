#!/usr/bin/env bash
# Brigade's containers on podman, for CI and for anyone without Docker (docs/containers.md):
# the real Dockerfile and docker-compose.yml, with local base images where no registry can be reached.
#
#   bash scripts/containers.sh setup               # podman + runc + debootstrap, containers.conf, podman-compose (venv)
#   bash scripts/containers.sh images              # local base image (debootstrap) and FerretDB image standing in for mongo:7
#   bash scripts/containers.sh brigade-image R     # brigade:R from the Dockerfile, fed a host-built binary (target prebuilt)
#   bash scripts/containers.sh stack R             # compose up (FerretDB override), every service healthy, walkthrough,
#                                                  # the loadtest service's report, compose down -v
#   bash scripts/containers.sh testcontainers      # the MongoDB tests through testcontainers on podman's socket
#   bash scripts/containers.sh compare R1,R2 [compare flags...]   # one report: every runtime's stack, compare --external
#   bash scripts/containers.sh clean               # remove every container, pod and network this script made
#
# Environment: BRIGADE_CACHE (default ~/.cache/brigade: the root file system tarball, podman-compose's venv),
# BRIGADE_PROFILE (debug|release, default debug: which host build goes into the image),
# PODMAN_COMPOSE (default: the venv's podman-compose).
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${BRIGADE_CACHE:-$HOME/.cache/brigade}"
PROFILE="${BRIGADE_PROFILE:-debug}"
COMPOSE_VERSION=1.6.0
BASE_TAG=docker.io/library/debian:bookworm-slim
MONGO_TAG=docker.io/library/mongo:7
VENV="$CACHE/podman-compose-$COMPOSE_VERSION"
PODMAN_COMPOSE="${PODMAN_COMPOSE:-$VENV/bin/podman-compose}"

log() { echo "containers.sh: $*" >&2; }
die() { log "error: $*"; exit 1; }
# Runs "$@" and says how long it took (CI reads these lines for its step times).
timed() {
    local what="$1" start=$SECONDS
    shift
    "$@"
    log "$what took $((SECONDS - start)) s"
}

setup() {
    if ! command -v podman >/dev/null || ! command -v runc >/dev/null || ! command -v debootstrap >/dev/null; then
        log "installing podman, runc, debootstrap (Debian packages)"
        DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y -q podman runc debootstrap >/dev/null
    fi
    # crun refuses this kernel's hybrid cgroup layout; runc works. Default ulimits must stay under
    # the machine's hard limits or no container starts.
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
        log "installing podman-compose $COMPOSE_VERSION into $VENV"
        python3 -m venv "$VENV"
        timeout 300 "$VENV/bin/pip" install -q "podman-compose==$COMPOSE_VERSION"
    fi
    podman --version
    "$PODMAN_COMPOSE" --version | tail -n 1
}

# A Debian bookworm root file system (minbase, with ca-certificates), cached as a tarball, imported
# under the name the Dockerfile's RUNTIME_IMAGE uses, so the runtime stage is the users'.
base_image() {
    if podman image exists "$BASE_TAG"; then return 0; fi
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
    podman import --change 'CMD ["bash"]' "$tarball" "$BASE_TAG" >/dev/null
    log "imported $BASE_TAG from $tarball"
}

case "${1:-}" in
    setup) setup ;;
    base-image) base_image ;;
    *) sed -n '2,20p' "$0"; exit 2 ;;
esac
