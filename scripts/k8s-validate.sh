#!/usr/bin/env bash
# Validates deploy/k8s offline (no cluster): builds every runtime overlay and the load Jobs with
# kustomize (and both again with the local component, deploy/k8s/local), then checks every resource against the Kubernetes JSON schemas, strictly (an unknown
# field fails), with kubernetes-validate (PyPI, pinned; it ships the schemas).
#
# kustomize: `kustomize` on PATH, else kubectl's built-in (`kubectl kustomize`), else built once
# with `go install` (pinned, from the Go module registry) into ~/.cache/brigade.
#
#   K8S_VERSIONS  Kubernetes versions to validate against (default "1.30.0 1.37.0")
#   KV_VENV       where kubernetes-validate is installed (default ~/.cache/brigade/kubernetes-validate-$VERSION)
# Exits 1 if a build or a resource fails.
set -euo pipefail
cd "$(dirname "$0")/.."
KV_VERSION=1.37.0
KUSTOMIZE_VERSION=v5.5.0
K8S_VERSIONS=${K8S_VERSIONS:-"1.30.0 1.37.0"}
CACHE=$HOME/.cache/brigade
VENV=${KV_VENV:-$CACHE/kubernetes-validate-$KV_VERSION}

if [ ! -x "$VENV/bin/kubernetes-validate" ]; then
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install --quiet "kubernetes-validate==$KV_VERSION"
fi

if command -v kustomize >/dev/null; then
    build() { kustomize build "$1"; }
elif command -v kubectl >/dev/null; then
    build() { kubectl kustomize "$1"; }
else
    bin=$CACHE/kustomize-$KUSTOMIZE_VERSION
    if [ ! -x "$bin/kustomize" ]; then
        command -v go >/dev/null || { echo "k8s-validate: no kustomize, kubectl or go"; exit 1; }
        GOBIN="$bin" go install "sigs.k8s.io/kustomize/kustomize/v5@$KUSTOMIZE_VERSION"
    fi
    build() { "$bin/kustomize" build "$1"; }
fi

out=target/k8s
mkdir -p "$out"
# The local component (deploy/k8s/local, what scripts/cluster.sh applies on its one-node cluster)
# over one runtime's overlay and over the load, as cluster.sh combines them.
for base in overlays/axum load; do
    wrapper="$out/with-local-${base//\//-}"
    mkdir -p "$wrapper"
    printf 'apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ../../../deploy/k8s/%s\ncomponents:\n  - ../../../deploy/k8s/local\n' \
        "$base" >"$wrapper/kustomization.yaml"
done
status=0
for dir in deploy/k8s/overlays/* deploy/k8s/load "$out"/with-local-*; do
    name=$(echo "$dir" | tr / -)
    if ! build "$dir" >"$out/$name.yaml"; then
        echo "k8s-validate: kustomize build $dir failed"
        status=1
        continue
    fi
    resources=$(grep -c '^kind:' "$out/$name.yaml" || true)
    for v in $K8S_VERSIONS; do
        if "$VENV/bin/kubernetes-validate" --strict --quiet -k "$v" "$out/$name.yaml"; then
            echo "k8s-validate: $dir: $resources resources valid against Kubernetes $v"
        else
            status=1
        fi
    done
done
exit $status
