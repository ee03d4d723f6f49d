#!/usr/bin/env bash
# A real single-node Kubernetes cluster on this machine, built from upstream components, with
# Brigade's services and its sharded load on it (docs/scaling.md, "A real cluster on one machine").
#
#   bash scripts/cluster.sh up                      # the cluster: binaries built once (cached), certificates,
#                                                   # etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
#                                                   # containerd + runc + CNI, kubelet, kube-proxy, CoreDNS,
#                                                   # metrics-server, and the images loaded into containerd
#   bash scripts/cluster.sh deploy RUNTIME...       # each runtime's services in namespace brigade-RUNTIME
#                                                   # (deploy/k8s/overlays/RUNTIME + the component deploy/k8s/local)
#   bash scripts/cluster.sh url RUNTIME SERVICE     # a URL of that service reachable from this machine
#   bash scripts/cluster.sh walkthrough RUNTIME     # scripts/walkthrough.sh against that runtime's services
#   bash scripts/cluster.sh load RUNTIME SHARDS DURATION [--scenario S] [--users N] [--warmup D] [--keep-data]
#                            [--kill-generator I | --kill-server SERVICE | --scale-down SERVICE]
#                                                   # the load Jobs against that runtime's services (on empty
#                                                   # databases), the servers' counters read around them and
#                                                   # tallied, a fault if asked; prints the report's path
#   bash scripts/cluster.sh compare R1,R2 [compare flags]   # compare --external of two deployed runtimes
#   bash scripts/cluster.sh status                  # the components, the node, every pod
#   bash scripts/cluster.sh logs [COMPONENT|RUNTIME] # a component's log (etcd, kubelet, ...), or a runtime's pods'
#   bash scripts/cluster.sh down                    # everything stopped and removed; checks that nothing remains
#   bash scripts/cluster.sh reset RUNTIME           # that runtime's databases emptied (load does it first)
#   bash scripts/cluster.sh build                   # only the binaries (cached under BRIGADE_CACHE)
#   bash scripts/cluster.sh ci                      # what .ci/run runs: up, deploy, walkthrough, load, a fault, down
#
# Environment: BRIGADE_CACHE (default ~/.cache/brigade: the built binaries), BRIGADE_CLUSTER_STATE
# (default /var/lib/brigade-cluster: everything `up` makes; `down` removes it), BRIGADE_ENGINE
# (docker|podman: the engine that builds the images, default whichever containers.sh picks).
# Runs as root: it starts a kubelet.
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${BRIGADE_CACHE:-$HOME/.cache/brigade}"
STATE="${BRIGADE_CLUSTER_STATE:-/var/lib/brigade-cluster}"
RUN_DIR=/run/brigade-cluster

# Pinned versions (docs/scaling.md says why these).
K8S_VERSION=v1.35.4
K8S_STAGING_VERSION=v0.35.4
COREDNS_VERSION=v1.14.7
METRICS_SERVER_VERSION=v0.8.1
PAUSE_VERSION=3.10.1
BIN="$CACHE/cluster/kubernetes-$K8S_VERSION"
ADDONS_BIN="$CACHE/cluster/addons"

# The cluster's addresses.
SERVICE_CIDR=10.96.0.0/16
KUBERNETES_SVC_IP=10.96.0.1
DNS_IP=10.96.0.10
POD_CIDR=10.244.0.0/24
BRIDGE=brigade0
ETCD_PORT=12379
APISERVER_PORT=6443
NODE_NAME=brigade-node
# The services' pods (the kustomization's part-of label stays off pod templates).
SERVICE_PODS='app.kubernetes.io/name in (waiter,tables,kitchen)'

log() { echo "cluster.sh: $*" >&2; }
die() { log "error: $*"; exit 1; }
timed() {
    local what="$1" start=$SECONDS
    shift
    "$@"
    log "$what took $((SECONDS - start)) s"
}

# --- build: every binary from the Go module proxy at a pinned version, once -----------------------

# The module's directory in Go's module cache (downloaded once).
module_dir() {
    GOFLAGS=-mod=mod go mod download -json "$1" | python3 -c 'import json, sys; print(json.load(sys.stdin)["Dir"])'
}

# kube-apiserver, kube-controller-manager, kube-scheduler, kubelet, kube-proxy, kubectl and etcd.
# k8s.io/kubernetes points its staging modules (k8s.io/api, client-go, ...) at ./staging, which its
# module zip does not hold: they are published as modules of their own at v0.MINOR.PATCH, so a copy
# of its go.mod points them there (-modfile; the module cache stays read-only). etcd is the server
# the same go.mod requires (go.etcd.io/etcd/server/v3), built from the same module graph. Without the
# version ldflags (hack/lib/version.sh sets them in a release build) every binary would call itself
# v0.0.0-master, and the kubelet's version skew check would refuse the apiserver.
build_kubernetes() {
    local bins=(kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl etcd) missing=0 b
    for b in "${bins[@]}"; do [[ -x "$BIN/$b" ]] || missing=1; done
    [[ $missing == 0 ]] && return 0
    command -v go >/dev/null || die "the Go toolchain is needed to build Kubernetes"
    local src modfile="$BIN/modfile" minor ld="-s -w" pkg
    src=$(module_dir "k8s.io/kubernetes@$K8S_VERSION")
    mkdir -p "$modfile"
    sed -E "s#^([[:space:]]*)(k8s\.io/[a-z0-9-]+) => \./staging/src/k8s\.io/[a-z0-9-]+\$#\1\2 => \2 $K8S_STAGING_VERSION#" \
        "$src/go.mod" >"$modfile/go.mod"
    ! grep -q '=> ./staging' "$modfile/go.mod" || die "a staging replace line was not rewritten"
    install -m 0644 "$src/go.sum" "$modfile/go.sum"
    minor=$(echo "$K8S_VERSION" | cut -d. -f2)
    for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
        ld+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
        ld+=" -X $pkg.gitTreeState=clean -X $pkg.gitCommit=module-$K8S_VERSION -X $pkg.buildDate=1970-01-01T00:00:00Z"
    done
    log "building Kubernetes $K8S_VERSION and etcd from the Go module proxy (once; about 10 minutes on 2 cores)"
    (cd "$src" && GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0 go build -modfile "$modfile/go.mod" -trimpath \
        -ldflags "$ld" -o "$BIN/" ./cmd/kube-apiserver ./cmd/kube-controller-manager ./cmd/kube-scheduler \
        ./cmd/kubelet ./cmd/kube-proxy ./cmd/kubectl) >"$CACHE/cluster/build-kubernetes.log" 2>&1 \
        || { tail -n 30 "$CACHE/cluster/build-kubernetes.log" >&2; die "the Kubernetes build failed"; }
    (cd "$src" && GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0 go build -modfile "$modfile/go.mod" -trimpath \
        -ldflags "-s -w" -o "$BIN/etcd" go.etcd.io/etcd/server/v3) >>"$CACHE/cluster/build-kubernetes.log" 2>&1 \
        || { tail -n 30 "$CACHE/cluster/build-kubernetes.log" >&2; die "the etcd build failed"; }
    "$BIN/kube-apiserver" --version
}

# CoreDNS (the cluster's DNS: service names), metrics-server (what the HPAs read) and pause (the pod
# sandbox), each a static binary for an image FROM scratch. CoreDNS and metrics-server build in their
# own module directories (go install refuses modules with replace lines); pause is the C program of
# the Kubernetes tree (build/pause/linux/pause.c), as registry.k8s.io/pause is.
build_addons() {
    mkdir -p "$ADDONS_BIN"
    local src
    if [[ ! -x "$ADDONS_BIN/coredns-$COREDNS_VERSION" ]]; then
        src=$(module_dir "github.com/coredns/coredns@$COREDNS_VERSION")
        log "building CoreDNS $COREDNS_VERSION"
        (cd "$src" && GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0 go build -modfile "$(addon_modfile "$src" coredns)" \
            -trimpath -ldflags "-s -w" -o "$ADDONS_BIN/coredns-$COREDNS_VERSION" .) \
            >"$CACHE/cluster/build-coredns.log" 2>&1 \
            || { tail -n 30 "$CACHE/cluster/build-coredns.log" >&2; die "the CoreDNS build failed"; }
    fi
    if [[ ! -x "$ADDONS_BIN/metrics-server-$METRICS_SERVER_VERSION" ]]; then
        src=$(module_dir "sigs.k8s.io/metrics-server@$METRICS_SERVER_VERSION")
        log "building metrics-server $METRICS_SERVER_VERSION"
        (cd "$src" && GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0 go build -modfile "$(addon_modfile "$src" metrics-server)" \
            -trimpath -ldflags "-s -w -X sigs.k8s.io/metrics-server/pkg/version.gitVersion=$METRICS_SERVER_VERSION" \
            -o "$ADDONS_BIN/metrics-server-$METRICS_SERVER_VERSION" ./cmd/metrics-server) \
            >"$CACHE/cluster/build-metrics-server.log" 2>&1 \
            || { tail -n 30 "$CACHE/cluster/build-metrics-server.log" >&2; die "the metrics-server build failed"; }
    fi
    if [[ ! -x "$ADDONS_BIN/pause-$PAUSE_VERSION" ]]; then
        src=$(module_dir "k8s.io/kubernetes@$K8S_VERSION")
        gcc -Os -Wall -Werror -static -DVERSION="v$PAUSE_VERSION-brigade" -o "$ADDONS_BIN/pause-$PAUSE_VERSION" \
            "$src/build/pause/linux/pause.c" || die "building pause failed"
    fi
}

# A writable copy of module $1's go.mod and go.sum (for -modfile), under $2's name.
addon_modfile() {
    local dir="$CACHE/cluster/modfile-$2"
    mkdir -p "$dir"
    install -m 0644 "$1/go.mod" "$dir/go.mod"
    [[ -f "$1/go.sum" ]] && install -m 0644 "$1/go.sum" "$dir/go.sum"
    echo "$dir/go.mod"
}

build() {
    command -v gcc >/dev/null || die "gcc is needed to build the pause program"
    timed "Kubernetes binaries" build_kubernetes
    timed "CoreDNS, metrics-server, pause" build_addons
}

# --- up: certificates, the control plane, the node, the addons ------------------------------------

NODE_IP=""
node_ip() {
    [[ -n "$NODE_IP" ]] || NODE_IP=$(ip -4 route get 1.1.1.1 2>/dev/null | sed -n 's/.* src \([0-9.]*\).*/\1/p' | head -n 1)
    [[ -n "$NODE_IP" ]] || NODE_IP=$(hostname -I | awk '{print $1}')
    [[ -n "$NODE_IP" ]] || die "no IPv4 address for the node"
    echo "$NODE_IP"
}

# A key and a certificate signed by CA $6 (default ca): name, CN, O (may be empty), subjectAltName
# (may be empty), extendedKeyUsage.
cert() {
    local name="$1" cn="$2" org="$3" san="$4" usage="$5" ca="${6:-ca}" d="$STATE/pki"
    openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$d/$name.key" \
        -out "$d/$name.csr" -subj "/CN=$cn${org:+/O=$org}" 2>/dev/null
    {
        echo "basicConstraints=critical,CA:FALSE"
        echo "keyUsage=critical,digitalSignature,keyEncipherment"
        echo "extendedKeyUsage=$usage"
        [[ -z "$san" ]] || echo "subjectAltName=$san"
    } >"$d/$name.ext"
    openssl x509 -req -in "$d/$name.csr" -CA "$d/$ca.crt" -CAkey "$d/$ca.key" -CAcreateserial \
        -days 365 -extfile "$d/$name.ext" -out "$d/$name.crt" 2>/dev/null
    rm -f "$d/$name.csr" "$d/$name.ext"
}

ca() {
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 3650 \
        -keyout "$STATE/pki/$1.key" -out "$STATE/pki/$1.crt" -subj "/CN=$2" \
        -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" 2>/dev/null
}

# Every certificate the cluster uses, made here, new at every `up`: one CA for the cluster (the
# apiserver, the kubelet's serving certificate, every client), one for the aggregation layer's
# front proxy (metrics-server), and the service accounts' signing key.
pki() {
    local d="$STATE/pki" ip
    ip=$(node_ip)
    mkdir -p "$d"
    chmod 0700 "$d"
    ca ca brigade-cluster-ca
    ca front-proxy-ca brigade-front-proxy-ca
    cert apiserver kube-apiserver "" \
        "DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,DNS:localhost,IP:$KUBERNETES_SVC_IP,IP:127.0.0.1,IP:$ip" serverAuth
    cert apiserver-kubelet-client kube-apiserver-kubelet-client system:masters "" clientAuth
    cert admin brigade-admin system:masters "" clientAuth
    cert controller-manager system:kube-controller-manager "" "" clientAuth
    cert scheduler system:kube-scheduler "" "" clientAuth
    cert kubelet "system:node:$NODE_NAME" system:nodes "" clientAuth
    cert kubelet-serving "system:node:$NODE_NAME" system:nodes "DNS:$NODE_NAME,IP:$ip" serverAuth
    cert kube-proxy system:kube-proxy "" "" clientAuth
    cert front-proxy-client front-proxy-client "" "" clientAuth front-proxy-ca
    openssl genrsa -out "$d/sa.key" 2048 2>/dev/null
    openssl rsa -in "$d/sa.key" -pubout -out "$d/sa.pub" 2>/dev/null
    local who
    for who in admin controller-manager scheduler kubelet kube-proxy; do
        kubeconfig "$who"
    done
}

# $STATE/NAME.kubeconfig: the apiserver with NAME's client certificate.
kubeconfig() {
    local name="$1" file="$STATE/$1.kubeconfig" k="$BIN/kubectl"
    "$k" config set-cluster brigade --server="https://127.0.0.1:$APISERVER_PORT" \
        --certificate-authority="$STATE/pki/ca.crt" --embed-certs --kubeconfig "$file" >/dev/null
    "$k" config set-credentials "$name" --client-certificate="$STATE/pki/$name.crt" \
        --client-key="$STATE/pki/$name.key" --embed-certs --kubeconfig "$file" >/dev/null
    "$k" config set-context brigade --cluster brigade --user "$name" --kubeconfig "$file" >/dev/null
    "$k" config use-context brigade --kubeconfig "$file" >/dev/null
    chmod 0600 "$file"
}

# kubectl as the cluster's administrator.
kc() { "$BIN/kubectl" --kubeconfig "$STATE/admin.kubeconfig" "$@"; }

# Starts component $1 in the background ($2... its command line), its log in $STATE/logs/$1.log and
# its pid in $RUN_DIR/$1.pid. setsid: a component outlives the shell that started it, and `down`
# stops it by its pid file.
start() {
    local name="$1"
    shift
    mkdir -p "$STATE/logs" "$RUN_DIR"
    setsid "$@" >"$STATE/logs/$name.log" 2>&1 < /dev/null &
    echo $! >"$RUN_DIR/$name.pid"
}

running() { [[ -f "$RUN_DIR/$1.pid" ]] && kill -0 "$(cat "$RUN_DIR/$1.pid")" 2>/dev/null; }

# Waits up to $2 seconds for command $3... to succeed; names $1 and shows its log if it does not.
wait_for() {
    local what="$1" limit="$2" start=$SECONDS
    shift 2
    until "$@" >/dev/null 2>&1; do
        if (( SECONDS - start > limit )); then
            [[ -f "$STATE/logs/$what.log" ]] && tail -n 25 "$STATE/logs/$what.log" >&2
            die "$what: not ready after $limit s"
        fi
        if [[ -f "$RUN_DIR/$what.pid" ]] && ! running "$what"; then
            tail -n 25 "$STATE/logs/$what.log" >&2
            die "$what exited"
        fi
        sleep 1
    done
}

start_etcd() {
    start etcd "$BIN/etcd" --name brigade --data-dir "$STATE/etcd" \
        --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
        --listen-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" --initial-advertise-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" \
        --initial-cluster "brigade=http://127.0.0.1:$((ETCD_PORT + 1))" --listen-metrics-urls "http://127.0.0.1:$((ETCD_PORT + 2))"
    wait_for etcd 60 curl -sf "http://127.0.0.1:$((ETCD_PORT + 2))/health"
}

start_control_plane() {
    local d="$STATE/pki" ip
    ip=$(node_ip)
    start kube-apiserver "$BIN/kube-apiserver" --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
        --bind-address 0.0.0.0 --secure-port "$APISERVER_PORT" --advertise-address "$ip" \
        --service-cluster-ip-range "$SERVICE_CIDR" --allow-privileged=true \
        --authorization-mode Node,RBAC --enable-admission-plugins NodeRestriction \
        --tls-cert-file "$d/apiserver.crt" --tls-private-key-file "$d/apiserver.key" --client-ca-file "$d/ca.crt" \
        --kubelet-client-certificate "$d/apiserver-kubelet-client.crt" --kubelet-client-key "$d/apiserver-kubelet-client.key" \
        --kubelet-certificate-authority "$d/ca.crt" --kubelet-preferred-address-types InternalIP \
        --service-account-issuer https://kubernetes.default.svc.cluster.local \
        --service-account-key-file "$d/sa.pub" --service-account-signing-key-file "$d/sa.key" \
        --requestheader-client-ca-file "$d/front-proxy-ca.crt" --requestheader-allowed-names front-proxy-client \
        --requestheader-extra-headers-prefix X-Remote-Extra- --requestheader-group-headers X-Remote-Group \
        --requestheader-username-headers X-Remote-User \
        --proxy-client-cert-file "$d/front-proxy-client.crt" --proxy-client-key-file "$d/front-proxy-client.key" \
        --enable-aggregator-routing=true --profiling=false
    wait_for kube-apiserver 120 kc get --raw /readyz
    start kube-controller-manager "$BIN/kube-controller-manager" --kubeconfig "$STATE/controller-manager.kubeconfig" \
        --authentication-kubeconfig "$STATE/controller-manager.kubeconfig" \
        --authorization-kubeconfig "$STATE/controller-manager.kubeconfig" \
        --bind-address 127.0.0.1 --leader-elect=false --use-service-account-credentials \
        --service-account-private-key-file "$d/sa.key" --root-ca-file "$d/ca.crt" \
        --cluster-signing-cert-file "$d/ca.crt" --cluster-signing-key-file "$d/ca.key" \
        --service-cluster-ip-range "$SERVICE_CIDR" --profiling=false
    start kube-scheduler "$BIN/kube-scheduler" --kubeconfig "$STATE/scheduler.kubeconfig" \
        --authentication-kubeconfig "$STATE/scheduler.kubeconfig" --authorization-kubeconfig "$STATE/scheduler.kubeconfig" \
        --bind-address 127.0.0.1 --leader-elect=false --profiling=false
    wait_for kube-controller-manager 60 curl -skf https://127.0.0.1:10257/healthz
    wait_for kube-scheduler 60 curl -skf https://127.0.0.1:10259/healthz
}

CONTAINERD_SOCK="$RUN_DIR/containerd.sock"
# ctr on the cluster's containerd, in the namespace the kubelet uses.
ctrk() { ctr --address "$CONTAINERD_SOCK" --namespace k8s.io "$@"; }

# The cluster's own containerd (Debian's), apart from any other on the machine (Docker's, podman's
# have theirs): its own root, state, socket and CNI configuration, so that `down` can remove all of
# it. cgroupfs, not systemd: this machine runs no systemd, and the kubelet uses the same driver.
start_containerd() {
    local cni="$STATE/cni" RESTRICT_OOM=false
    # CAP_SYS_RESOURCE is bit 24 of the effective capabilities.
    (( (0x$(awk '/^CapEff/ {print $2}' /proc/self/status) >> 24) & 1 )) || RESTRICT_OOM=true
    mkdir -p "$cni/net.d" "$cni/ipam" "$STATE/containerd"
    cat >"$cni/net.d/10-brigade.conflist" <<JSON
{
  "cniVersion": "1.0.0",
  "name": "brigade",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$BRIDGE",
      "isGateway": true,
      "ipMasq": true,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "$POD_CIDR"}]],
        "routes": [{"dst": "0.0.0.0/0"}],
        "dataDir": "$cni/ipam"
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
JSON
    cat >"$STATE/containerd/config.toml" <<TOML
version = 2
root = "$STATE/containerd/root"
state = "$RUN_DIR/containerd"
[grpc]
  address = "$CONTAINERD_SOCK"
[ttrpc]
  address = "$CONTAINERD_SOCK.ttrpc"
[debug]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = "$STATE/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "localhost/brigade-pause:$PAUSE_VERSION"
  # This machine gives root no CAP_SYS_RESOURCE, so no process may lower an OOM score below its
  # own (0): the kubelet's -998 for a pod's sandbox made runc fail ("failed to update
  # /proc/self/oom_score_adj: Permission denied"). Scores below containerd's are raised to it.
  restrict_oom_score_adj = $RESTRICT_OOM
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$cni/net.d"
TOML
    start containerd containerd --config "$STATE/containerd/config.toml"
    wait_for containerd 60 ctrk version
    forward_pod_traffic
}

# The pods' traffic through the host's FORWARD chain, accepted: with br_netfilter, traffic between
# two pods on the bridge passes it too, and Docker Engine sets its policy to DROP (pod to pod and
# pod to the outside then time out). Two rules, marked with the cluster's comment (down removes them).
forward_pod_traffic() {
    local way
    for way in -s -d; do
        iptables -w -I FORWARD 1 "$way" "$POD_CIDR" -m comment --comment "brigade-cluster: pod traffic" -j ACCEPT
    done
}

# The images the cluster runs, from the engine's store into containerd's: pause, CoreDNS and
# metrics-server (static binaries on scratch, built here), and whatever else is named.
# The engine containers.sh picks (BRIGADE_ENGINE to choose), asked once: call `resolve_engine` in
# this shell (not in a command substitution, which would ask again every time), then read $ENGINE.
ENGINE="${BRIGADE_ENGINE:-}"
resolve_engine() {
    [[ -n "$ENGINE" ]] || ENGINE=$(bash "$REPO_ROOT/scripts/containers.sh" engine)
}

# Builds localhost/NAME:TAG FROM scratch with binary $3 as its entrypoint (args $4...), unless the
# engine has it.
scratch_image() {
    local name="$1" tag="$2" binary="$3" e dir
    shift 3
    resolve_engine
    e=$ENGINE
    "$e" image inspect "localhost/$name:$tag" >/dev/null 2>&1 && return 0
    dir=$(mktemp -d)
    cp "$binary" "$dir/entry"
    {
        echo "FROM scratch"
        echo "COPY entry /$name"
        printf 'ENTRYPOINT ["/%s"' "$name"
        local a
        for a in "$@"; do printf ', "%s"' "$a"; done
        echo "]"
    } >"$dir/Dockerfile"
    "$e" build -q -t "localhost/$name:$tag" "$dir" >/dev/null 2>"$dir.log" || { cat "$dir.log" >&2; die "building localhost/$name:$tag failed"; }
    rm -f "$dir.log"
    rm -rf "$dir"
}

# Copies images $@ from the engine into the cluster's containerd, replacing what it has under
# those names (an image rebuilt since is taken again).
load_images() {
    local e image
    resolve_engine
    e=$ENGINE
    local out try
    for image in "$@"; do
        "$e" image inspect "$image" >/dev/null 2>&1 || die "$e has no image $image"
        # Once (a CI run on a cold machine, images just built) an import succeeded and the name was
        # not listed; rerun on the same machine it was. So: up to three tries, then what
        # containerd said and what it lists.
        for try in 1 2 3; do
            out=$("$e" save "$image" | ctrk images import --all-platforms - 2>&1) \
                || { printf '%s\n' "$out" >&2; die "importing $image into containerd failed"; }
            ctrk images ls -q | grep -qx "$image" && break
            log "containerd did not list $image after import $try: $(printf '%s' "$out" | tr '\n' ' ')"
            (( try < 3 )) || { ctrk images ls -q >&2; die "containerd did not take $image under that name"; }
            sleep 2
        done
        log "loaded $image into the cluster's containerd"
    done
}

addon_images() {
    scratch_image brigade-pause "$PAUSE_VERSION" "$ADDONS_BIN/pause-$PAUSE_VERSION"
    scratch_image brigade-coredns "$COREDNS_VERSION" "$ADDONS_BIN/coredns-$COREDNS_VERSION"
    scratch_image brigade-metrics-server "$METRICS_SERVER_VERSION" "$ADDONS_BIN/metrics-server-$METRICS_SERVER_VERSION"
    load_images "localhost/brigade-pause:$PAUSE_VERSION" "localhost/brigade-coredns:$COREDNS_VERSION" \
        "localhost/brigade-metrics-server:$METRICS_SERVER_VERSION"
}

# The kubelet. cgroup v1 (this machine's hierarchy is v1, hybrid): Kubernetes 1.35 refuses it
# unless failCgroupV1 is false; 1.35 is the last minor that supports containerd 1.x
# (Debian 12's 1.6), so this is the newest pairing that runs here (docs/scaling.md).
start_kubelet() {
    local d="$STATE/pki" ip
    ip=$(node_ip)
    mkdir -p "$STATE/kubelet"
    cat >"$STATE/kubelet/config.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $ip
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: $d/ca.crt
authorization:
  mode: Webhook
tlsCertFile: $d/kubelet-serving.crt
tlsPrivateKeyFile: $d/kubelet-serving.key
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
containerRuntimeEndpoint: unix://$CONTAINERD_SOCK
clusterDNS: [$DNS_IP]
clusterDomain: cluster.local
resolvConf: /etc/resolv.conf
serializeImagePulls: false
# The images are loaded by hand (there is no registry to pull them from again): never collected.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: 200Mi
  nodefs.available: 5%
  imagefs.available: 5%
YAML
    start kubelet "$BIN/kubelet" --config "$STATE/kubelet/config.yaml" --kubeconfig "$STATE/kubelet.kubeconfig" \
        --root-dir "$STATE/kubelet/root" --hostname-override "$NODE_NAME" --node-ip "$ip"
    wait_for kubelet 120 node_ready
}

node_ready() {
    [[ "$(kc get node "$NODE_NAME" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" == True ]]
}

start_kube_proxy() {
    mkdir -p "$STATE/kube-proxy"
    cat >"$STATE/kube-proxy/config.yaml" <<YAML
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: $STATE/kube-proxy.kubeconfig
hostnameOverride: $NODE_NAME
mode: iptables
clusterCIDR: $POD_CIDR
# The machine's conntrack table is left as it is (kube-proxy would otherwise resize it).
conntrack:
  maxPerCore: 0
metricsBindAddress: 127.0.0.1:10249
healthzBindAddress: 127.0.0.1:10256
YAML
    start kube-proxy "$BIN/kube-proxy" --config "$STATE/kube-proxy/config.yaml"
    wait_for kube-proxy 60 curl -sf http://127.0.0.1:10256/healthz
}

# The kernel settings the cluster changes (ip_forward here; the kubelet and kube-proxy set the rest
# at start), saved at `up` and put back by `down`.
SYSCTLS=(net.ipv4.ip_forward net.ipv4.conf.all.route_localnet net.bridge.bridge-nf-call-iptables
    net.bridge.bridge-nf-call-ip6tables vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops
    kernel.keys.root_maxkeys kernel.keys.root_maxbytes)

save_sysctls() {
    local key
    for key in "${SYSCTLS[@]}"; do
        [[ -e "/proc/sys/${key//.//}" ]] && echo "$key=$(sysctl -n "$key")"
    done >"$STATE/sysctl-before"
}

restore_sysctls() {
    [[ -f "$STATE/sysctl-before" ]] || return 0
    local line
    while read -r line; do sysctl -q -w "$line" >/dev/null 2>&1 || log "could not put back $line"; done <"$STATE/sysctl-before"
}

up() {
    [[ $(id -u) == 0 ]] || die "up starts a kubelet and changes iptables: run it as root"
    local began=$SECONDS
    if running kube-apiserver; then log "the cluster is up already (down first for a new one)"; return 0; fi
    [[ ! -e "$STATE" ]] || die "$STATE is left from an earlier cluster: run down first"
    for tool in containerd runc iptables ip openssl curl /usr/lib/cni/bridge; do
        command -v "$tool" >/dev/null || die "$tool is missing (apt-get install containerd runc iptables containernetworking-plugins)"
    done
    timed "build (cached)" build
    mkdir -p "$STATE" "$RUN_DIR"
    save_sysctls
    sysctl -q -w net.ipv4.ip_forward=1
    sysctl -q -w net.bridge.bridge-nf-call-iptables=1 2>/dev/null || log "br_netfilter is missing: pod-to-service traffic on the bridge may not be routed"
    timed "certificates" pki
    timed "etcd" start_etcd
    timed "control plane" start_control_plane
    timed "containerd" start_containerd
    timed "addon images" addon_images
    timed "kubelet (node Ready)" start_kubelet
    timed "kube-proxy" start_kube_proxy
    timed "addons (CoreDNS, metrics-server)" addons
    log "up in $((SECONDS - began)) s: $(kc get node "$NODE_NAME" --no-headers)"
    log "kubectl: $BIN/kubectl --kubeconfig $STATE/admin.kubeconfig"
}

# CoreDNS from the Kubernetes tree's own addon manifest (cluster/addons/dns/coredns), and
# metrics-server from its release's manifests (manifests/base), each with only its image made the
# local one and its placeholders filled.
addons() {
    local k8s ms
    k8s=$(module_dir "k8s.io/kubernetes@$K8S_VERSION")
    sed -e "s/__DNS__DOMAIN__/cluster.local/g" -e "s/__DNS__SERVER__/$DNS_IP/g" -e "s/__DNS__MEMORY__LIMIT__/170Mi/g" \
        -e "s#image: registry.k8s.io/coredns/coredns:.*#image: localhost/brigade-coredns:$COREDNS_VERSION#" \
        -e "s/imagePullPolicy: IfNotPresent/imagePullPolicy: Never/" \
        "$k8s/cluster/addons/dns/coredns/coredns.yaml.base" | kc apply -f - >/dev/null
    ms=$(module_dir "sigs.k8s.io/metrics-server@$METRICS_SERVER_VERSION")
    metrics_server_manifests "$ms" | kc apply -f - >/dev/null
    wait_for coredns 180 kc -n kube-system wait --for=condition=available deploy/coredns --timeout=5s
    wait_for metrics-server 180 kc get --raw /apis/metrics.k8s.io/v1beta1/nodes
}

# metrics-server's release overlay as its project publishes it, with the local image and the
# kubelet's serving certificate checked against the cluster's CA (the kube-root-ca.crt ConfigMap
# every namespace gets) instead of skipped (--kubelet-insecure-tls, what most local clusters use).
metrics_server_manifests() {
    local dir="$STATE/addons/metrics-server"
    mkdir -p "$dir"
    cat >"$dir/kustomization.yaml" <<YAML
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - $(python3 -c 'import os, sys; print(os.path.relpath(sys.argv[1], sys.argv[2]))' "$1/manifests/overlays/release" "$dir")
images:
  - name: registry.k8s.io/metrics-server/metrics-server
    newName: localhost/brigade-metrics-server
    newTag: $METRICS_SERVER_VERSION
patches:
  - target: {kind: Deployment, name: metrics-server}
    patch: |
      - op: replace
        path: /spec/template/spec/containers/0/imagePullPolicy
        value: Never
      - op: add
        path: /spec/template/spec/containers/0/args/-
        value: --kubelet-certificate-authority=/cluster-ca/ca.crt
      - op: add
        path: /spec/template/spec/volumes/-
        value: {name: cluster-ca, configMap: {name: kube-root-ca.crt}}
      - op: add
        path: /spec/template/spec/containers/0/volumeMounts/-
        value: {name: cluster-ca, mountPath: /cluster-ca, readOnly: true}
YAML
    "$BIN/kubectl" kustomize "$dir"
}

# --- down: nothing of the cluster left behind ------------------------------------------------------

stop_component() {
    local name="$1" pid tries=0
    [[ -f "$RUN_DIR/$name.pid" ]] || return 0
    pid=$(cat "$RUN_DIR/$name.pid")
    if kill -0 "$pid" 2>/dev/null; then
        kill "$pid" 2>/dev/null || true
        while kill -0 "$pid" 2>/dev/null; do
            tries=$((tries + 1))
            if (( tries > 100 )); then kill -9 "$pid" 2>/dev/null || true; fi
            sleep 0.1
        done
    fi
    rm -f "$RUN_DIR/$name.pid"
}

# Every rule and chain of table $1 (iptables command $2) that the cluster made: kube-proxy's and the
# kubelet's KUBE-* chains, and the CNI plugins' rules for the pod network (they carry the network's
# name, `name: "brigade"`, in a comment; the CNI-* chains they jump to are its own).
flush_cluster_rules() {
    local table="$1" ipt="$2" rules
    rules=$("$ipt-save" -t "$table" 2>/dev/null) || return 0
    grep -qE 'KUBE-|brigade-cluster' <<<"$rules" || grep -qF 'name: \"brigade\"' <<<"$rules" || return 0
    python3 -c "$DROP_CLUSTER_RULES" <<<"$rules" | "$ipt-restore" -w -T "$table"
}

# Reads iptables-save output of one table, writes it without the cluster's chains and rules.
DROP_CLUSTER_RULES='
import re, sys
lines = sys.stdin.read().splitlines(True)
ours = {m.group(1) for l in lines if "name: \\\"brigade\\\"" in l for m in [re.search(r" -j (CNI-\S+)", l)] if m}
mine = lambda name: name.startswith("KUBE-") or name in ours
out = []
for line in lines:
    if line.startswith(":") and mine(line[1:].split()[0]):
        continue
    if line.startswith("-A "):
        target = re.search(r" -j (\S+)", line)
        if mine(line.split()[1]) or (target and mine(target.group(1))) or "name: \\\"brigade\\\"" in line or "brigade-cluster" in line:
            continue
    out.append(line)
sys.stdout.write("".join(out))
'

down() {
    [[ $(id -u) == 0 ]] || die "down stops the kubelet and changes iptables: run it as root"
    local start=$SECONDS
    # The pods first, through the API while the kubelet runs: it stops each sandbox, and the CNI
    # plugins take back its address, its veth and its network namespace. The scheduler and the
    # controllers stop before, so that no pod comes in place of a deleted one.
    stop_component kube-scheduler
    stop_component kube-controller-manager
    if running kube-apiserver && running kubelet; then
        kc delete pods --all --all-namespaces --grace-period=2 --wait=false >/dev/null 2>&1 || true
        local waited=0
        while [[ -n "$(kc get pods --all-namespaces --no-headers 2>/dev/null)" \
            || -n "$(ls /var/run/netns 2>/dev/null | grep '^cni-' || true)" ]]; do
            waited=$((waited + 1))
            (( waited < 60 )) || { log "pods still up after 60 s: stopping them directly"; break; }
            sleep 1
        done
    fi
    stop_component kube-proxy
    stop_component kubelet
    # What the kubelet did not stop: every task killed and removed while containerd still runs.
    if running containerd; then
        local task
        for task in $(ctrk tasks ls -q 2>/dev/null); do ctrk tasks kill -s SIGKILL "$task" >/dev/null 2>&1 || true; done
        sleep 1
        for task in $(ctrk tasks ls -q 2>/dev/null); do ctrk tasks rm -f "$task" >/dev/null 2>&1 || true; done
        for task in $(ctrk containers ls -q 2>/dev/null); do ctrk containers rm "$task" >/dev/null 2>&1 || true; done
    fi
    stop_component containerd
    stop_component kube-apiserver
    stop_component etcd
    # Shims whose containerd is gone.
    pkill -9 -f "containerd-shim-runc-v2 .*-address $CONTAINERD_SOCK" 2>/dev/null || true
    # The network: namespaces, the bridge (its veths go with it), iptables.
    local ns
    for ns in $(ls /var/run/netns 2>/dev/null | grep '^cni-' || true); do ip netns delete "$ns" 2>/dev/null || true; done
    ip link delete "$BRIDGE" 2>/dev/null || true
    local table ipt
    for ipt in iptables ip6tables; do
        for table in filter nat mangle raw; do flush_cluster_rules "$table" "$ipt"; done
    done
    # Mounts (the pods' volumes, containerd's snapshots) deepest first, then cgroups.
    local mnt
    for mnt in $(awk '{print $2}' /proc/mounts | grep -E "^($STATE|$RUN_DIR)(/|$)" | sort -r); do
        umount "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null || true
    done
    local dir
    for dir in $(find /sys/fs/cgroup -mindepth 2 -maxdepth 2 -type d -name 'kubepods*' 2>/dev/null) \
        $(find /sys/fs/cgroup -maxdepth 1 -type d -name 'kubepods*' 2>/dev/null); do
        find "$dir" -depth -type d -exec rmdir {} + 2>/dev/null || true
    done
    restore_sysctls
    rm -rf "$STATE" "$RUN_DIR"
    log "down in $((SECONDS - start)) s"
    check_clean
}

# Fails naming whatever of the cluster is still on this machine.
check_clean() {
    local left=()
    pgrep -af "$BIN/|$ADDONS_BIN/|$CONTAINERD_SOCK|brigade-cluster" | grep -v -E "pgrep|cluster.sh" >/tmp/cluster-left-procs.$$ || true
    [[ -s /tmp/cluster-left-procs.$$ ]] && left+=("processes: $(cut -c1-120 /tmp/cluster-left-procs.$$ | tr '\n' ';')")
    rm -f /tmp/cluster-left-procs.$$
    grep -E " ($STATE|$RUN_DIR)(/| )" /proc/mounts >/dev/null && left+=("mounts under $STATE or $RUN_DIR")
    ls /var/run/netns 2>/dev/null | grep -q '^cni-' && left+=("network namespaces: $(ls /var/run/netns | grep '^cni-' | xargs)")
    ip link show "$BRIDGE" >/dev/null 2>&1 && left+=("the bridge $BRIDGE")
    local table ipt
    for ipt in iptables ip6tables; do
        for table in filter nat mangle raw; do
            { "$ipt-save" -t "$table" 2>/dev/null | grep -qE 'KUBE-|brigade-cluster|name: \\"brigade\\"'; } && left+=("$ipt $table rules or chains (KUBE-* or the pod network's)")
        done
    done
    [[ -n "$(find /sys/fs/cgroup -maxdepth 2 -type d -name 'kubepods*' 2>/dev/null)" ]] && left+=("cgroups: $(find /sys/fs/cgroup -maxdepth 2 -type d -name 'kubepods*' | xargs)")
    [[ -e "$STATE" || -e "$RUN_DIR" ]] && left+=("$STATE or $RUN_DIR")
    if [[ ${#left[@]} -gt 0 ]]; then
        printf 'cluster.sh: left behind: %s\n' "${left[@]}" >&2
        die "down left something of the cluster behind"
    fi
    log "nothing of the cluster remains: no process, mount, network namespace, bridge, veth, iptables rule or chain, cgroup or state directory"
}

# --- status, logs ---------------------------------------------------------------------------------

status() {
    local name
    for name in etcd kube-apiserver kube-controller-manager kube-scheduler containerd kubelet kube-proxy; do
        if running "$name"; then echo "$name: running (pid $(cat "$RUN_DIR/$name.pid"))"; else echo "$name: not running"; fi
    done
    running kube-apiserver || return 0
    kc get nodes -o wide
    kc get pods --all-namespaces -o wide
}

logs() {
    local what="${1:-}"
    if [[ -z "$what" ]]; then ls "$STATE/logs"; return 0; fi
    if [[ -f "$STATE/logs/$what.log" ]]; then tail -n "${LINES:-100}" "$STATE/logs/$what.log"; return 0; fi
    kc -n "brigade-$what" logs --all-containers --prefix --tail "${LINES:-100}" -l "$SERVICE_PODS"
}

# --- deploy, url, walkthrough ---------------------------------------------------------------------

# The path of $1 relative to directory $2 (kustomize resolves resources relative to its file).
relpath() { python3 -c 'import os, sys; print(os.path.relpath(sys.argv[1], sys.argv[2]))' "$1" "$2"; }

# brigade:RUNTIME and the FerretDB image, made by containers.sh where the engine lacks them, then
# loaded into the node's containerd.
brigade_images() {
    local runtime="$1" e
    resolve_engine
    e=$ENGINE
    "$e" image inspect "localhost/brigade:$runtime" >/dev/null 2>&1 \
        || bash "$REPO_ROOT/scripts/containers.sh" --engine "$e" brigade-image "$runtime"
    "$e" image inspect localhost/brigade-ferretdb:1.24.2 >/dev/null 2>&1 \
        || bash "$REPO_ROOT/scripts/containers.sh" --engine "$e" images
    load_images "localhost/brigade:$runtime" localhost/brigade-ferretdb:1.24.2
}

# A volume for claim $2 of namespace $1, bound to it alone (claimRef): a directory on the node
# (hostPath). There is no dynamic provisioner on this cluster; a StatefulSet's volumeClaimTemplate
# and the load's results claim bind to these. A volume whose claim was deleted (Released) is made
# Available to the same claim name again, its data kept (the claim of the results survives runs
# that way, as on a cluster with a retained volume).
volume() {
    local ns="$1" claim="$2" name="$1-$2" dir="$STATE/volumes/$1/$2" phase
    mkdir -p "$dir"
    # uid 10001 (the image's user) writes the results; FerretDB runs as root.
    chmod 0777 "$dir"
    phase=$(kc get pv "$name" -o jsonpath='{.status.phase}' 2>/dev/null || true)
    if [[ "$phase" == Released ]]; then
        kc patch pv "$name" --type json -p '[{"op": "remove", "path": "/spec/claimRef/uid"}, {"op": "remove", "path": "/spec/claimRef/resourceVersion"}]' >/dev/null
        return 0
    fi
    [[ -n "$phase" ]] && return 0
    kc apply -f - >/dev/null <<YAML
apiVersion: v1
kind: PersistentVolume
metadata:
  name: $name
  labels:
    app.kubernetes.io/part-of: brigade
spec:
  capacity:
    storage: 1Gi
  accessModes: [ReadWriteOnce, ReadWriteMany]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: ""
  claimRef:
    namespace: $ns
    name: $claim
  hostPath:
    path: $dir
    type: Directory
YAML
}

# Each runtime's services in namespace brigade-RUNTIME: the runtime's overlay as it is, with the
# local component (deploy/k8s/local); waits until every pod is Ready and says how long that took.
deploy() {
    [[ $# -gt 0 ]] || die "deploy RUNTIME...: which runtimes (deploy/k8s/overlays)"
    running kube-apiserver || die "the cluster is not up (bash scripts/cluster.sh up)"
    local runtime
    for runtime in "$@"; do
        [[ -d "$REPO_ROOT/deploy/k8s/overlays/$runtime" ]] || die "no overlay deploy/k8s/overlays/$runtime"
        timed "images of $runtime" brigade_images "$runtime"
    done
    for runtime in "$@"; do
        local ns="brigade-$runtime" dir="$STATE/deploy/$runtime" applied
        mkdir -p "$dir"
        kc create namespace "$ns" --dry-run=client -o yaml | kc label -f - --local -o yaml app.kubernetes.io/part-of=brigade \
            | kc apply -f - >/dev/null
        local claim
        for claim in data-waiter-db-0 data-tables-db-0 data-kitchen-db-0 brigade-load-results; do volume "$ns" "$claim"; done
        cat >"$dir/kustomization.yaml" <<YAML
# Written by scripts/cluster.sh deploy: the $runtime overlay as it is, with the local component.
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: $ns
resources:
  - $(relpath "$REPO_ROOT/deploy/k8s/overlays/$runtime" "$dir")
components:
  - $(relpath "$REPO_ROOT/deploy/k8s/local" "$dir")
YAML
        applied=$SECONDS
        kc apply -k "$dir" >/dev/null
        local kind
        for kind in statefulset/waiter-db statefulset/tables-db statefulset/kitchen-db deploy/waiter deploy/tables deploy/kitchen; do
            kc -n "$ns" rollout status "$kind" --timeout=300s >/dev/null \
                || { kc -n "$ns" get pods -o wide >&2; die "$runtime: $kind not ready"; }
        done
        # Ready pods are not yet reachable through their Service until kube-proxy has written its
        # rules for them (a walkthrough right after a deploy once found tables refused): wait
        # until each Service answers /ready through its cluster IP.
        local service tries
        for service in waiter tables kitchen; do
            tries=0
            until curl -sf --max-time 2 "$(url "$runtime" "$service")/ready" >/dev/null; do
                tries=$((tries + 1))
                (( tries < 60 )) || die "$runtime: the $service Service does not answer through its cluster IP"
                sleep 1
            done
        done
        log "$runtime: every pod Ready $((SECONDS - applied)) s after apply ($(kc -n "$ns" get pods -l "app.kubernetes.io/name in (waiter,tables,kitchen,waiter-db,tables-db,kitchen-db)" --no-headers 2>/dev/null | wc -l) pods)"
    done
}

# http://CLUSTER-IP:8080 of service $2 of runtime $1: kube-proxy routes the Service's address from
# this machine (the node) as from any pod.
url() {
    local ip
    ip=$(kc -n "brigade-$1" get service "$2" -o jsonpath='{.spec.clusterIP}' 2>/dev/null) \
        || die "no service $2 for runtime $1 (bash scripts/cluster.sh deploy $1)"
    echo "http://$ip:8080"
}

walkthrough() {
    bash "$REPO_ROOT/scripts/walkthrough.sh" "$(url "$1" waiter)" "$(url "$1" tables)" "$(url "$1" kitchen)"
}

# Runtime $1's databases emptied, its services and databases started again and Ready: every
# Deployment and StatefulSet scaled to nothing, the databases' volumes emptied, all scaled back
# (the services create their collections and indexes anew). A measured run starts here, from a
# known, identical data state.
reset() {
    local ns="brigade-$1" kind dir
    kc get namespace "$ns" >/dev/null 2>&1 || die "runtime $1 is not deployed (bash scripts/cluster.sh deploy $1)"
    kc -n "$ns" delete job -l app.kubernetes.io/component=load --wait=true >/dev/null 2>&1 || true
    kc -n "$ns" scale deploy --all --replicas 0 >/dev/null
    kc -n "$ns" scale statefulset --all --replicas 0 >/dev/null
    kc -n "$ns" wait --for=delete pod -l 'app.kubernetes.io/name in (waiter,tables,kitchen,waiter-db,tables-db,kitchen-db)' --timeout=120s >/dev/null 2>&1 || true
    for dir in "$STATE/volumes/$ns"/data-*; do
        [[ -d "$dir" ]] && find "$dir" -mindepth 1 -delete
    done
    kc -n "$ns" scale statefulset --all --replicas 1 >/dev/null
    kc -n "$ns" scale deploy --all --replicas 1 >/dev/null
    for kind in statefulset/waiter-db statefulset/tables-db statefulset/kitchen-db deploy/waiter deploy/tables deploy/kitchen; do
        kc -n "$ns" rollout status "$kind" --timeout=300s >/dev/null || die "$1: $kind not ready after the reset"
    done
}

# --- load: the load Jobs, the servers' counters read around them ---------------------------------

# Every brigade pod of namespace $1's /metrics into directory $2/SERVICE/POD.prom (pod IPs are
# reachable from the node).
read_counters() {
    local ns="$1" out="$2" line pod service ip
    mkdir -p "$out"
    while read -r pod service ip; do
        [[ -n "$ip" && "$ip" != "<none>" ]] || continue
        mkdir -p "$out/$service"
        curl -sf --max-time 5 "http://$ip:8080/metrics" >"$out/$service/$pod.prom" \
            || die "could not read $service pod $pod's /metrics"
    done < <(kc -n "$ns" get pods -l "$SERVICE_PODS" --field-selector status.phase=Running \
        -o jsonpath='{range .items[*]}{.metadata.name} {.metadata.labels.app\.kubernetes\.io/name} {.status.podIP}{"\n"}{end}')
}

# Waits up to $3 seconds for Job $2 of namespace $1 to complete; fails if it failed.
wait_job() {
    local ns="$1" job="$2" limit="$3" start=$SECONDS state
    while true; do
        state=$(kc -n "$ns" get job "$job" -o jsonpath='{range .status.conditions[?(@.status=="True")]}{.type} {end}' 2>/dev/null || true)
        [[ "$state" == *Complete* ]] && return 0
        if [[ "$state" == *Failed* ]]; then
            kc -n "$ns" logs "job/$job" --tail 20 >&2 || true
            die "job $job failed"
        fi
        (( SECONDS - start < limit )) || die "job $job did not complete within $limit s"
        sleep 2
    done
}

# The load Jobs (deploy/k8s/load, with the local component) against runtime $1's services: SHARDS
# generators for DURATION, scenario `all` unless --scenario, USERS (the whole run's, default 2 per
# shard). The servers' counters are read after the fixtures are made and after every generator
# ended; `brigade tally` checks them against every shard's result. With --kill-generator I, shard
# I's pod is deleted halfway through its run (the fault the Job's retry covers). Everything lands in
# results/cluster-RUNTIME-RUN/ (report.md, merged.json, each shard's result, the readings); its
# report's path is printed last.
load() {
    local runtime="${1:?load RUNTIME SHARDS DURATION}" shards="${2:?load RUNTIME SHARDS DURATION}" duration="${3:?load RUNTIME SHARDS DURATION}"
    shift 3
    local scenario=all users="" kill_shard="" warmup=2s fault="" fault_service="" fresh=1
    while [[ $# -gt 0 ]]; do
        case "$1" in
            --keep-data) fresh=0; shift ;;
            --scenario) scenario="$2"; shift 2 ;;
            --users) users="$2"; shift 2 ;;
            --warmup) warmup="$2"; shift 2 ;;
            --kill-generator) kill_shard="$2"; shift 2 ;;
            --kill-server) fault=kill; fault_service="$2"; shift 2 ;;
            --scale-down) fault=scale-down; fault_service="$2"; shift 2 ;;
            *) die "load: unknown flag $1" ;;
        esac
    done
    [[ -n "$users" ]] || users=$((2 * shards))
    # A seed of its own per run: the databases keep the last run's tables, and the same seed would
    # draw the same table numbers in the setup (every one a 409).
    local seed=$(( $(date +%s) % 1000000 ))
    running kube-apiserver || die "the cluster is not up (bash scripts/cluster.sh up)"
    local ns="brigade-$runtime" run="run-$(date -u +%Y%m%dT%H%M%SZ)" dir out
    kc get namespace "$ns" >/dev/null 2>&1 || die "runtime $runtime is not deployed (bash scripts/cluster.sh deploy $runtime)"
    dir="$STATE/load/$runtime"
    out="$REPO_ROOT/results/cluster-$runtime-$run"
    mkdir -p "$dir" "$out"
    # The Jobs of an earlier run go (a Job's template cannot change); the results' claim stays.
    kc -n "$ns" delete job -l app.kubernetes.io/component=load --wait=true >/dev/null 2>&1 || true
    [[ $fresh == 0 ]] || timed "empty databases ($runtime)" reset "$runtime"
    volume "$ns" brigade-load-results
    load_kustomization "$dir" "$ns" "$runtime" "RUN=$run" "SHARDS=$shards" "SCENARIO=$scenario" "USERS=$users" \
        "DURATION=$duration" "WARMUP=$warmup" "SEED=$seed" START_DELAY_S=20
    kc apply -k "$dir" >/dev/null
    timed "setup Job ($run)" wait_job "$ns" brigade-load-setup 300
    read_counters "$ns" "$out/metrics-before"
    local results="$STATE/volumes/$ns/brigade-load-results/$run" seconds
    seconds=$(seconds_of "$duration")
    if [[ -n "$kill_shard" ]]; then
        kill_generator "$ns" "$kill_shard" "$results" "$seconds"
    fi
    local writer="" failed=0
    if [[ -n "$fault" ]]; then
        # Writes of their own beside the load, each acknowledged one logged, looked for afterwards.
        python3 "$REPO_ROOT/scripts/cluster/writes.py" write "$(url "$runtime" "$fault_service")" \
            "$(( $(cat "$results/start-at") + seconds ))" "$out/writes.log" >"$out/writes.txt" 2>&1 &
        writer=$!
        server_fault "$ns" "$fault" "$fault_service" "$results" "$seconds" >"$out/fault.txt"
    fi
    timed "generators Job ($shards shards, $duration)" wait_job "$ns" brigade-load-generators $((seconds + 600))
    if [[ -n "$writer" ]]; then
        wait "$writer" || die "the writer failed: $(cat "$out/writes.txt")"
        python3 "$REPO_ROOT/scripts/cluster/writes.py" check "$(url "$runtime" "$fault_service")" "$out/writes.log" \
            >>"$out/writes.txt" || { failed=1; log "acknowledged writes lost: $out/writes.txt"; }
    fi
    read_counters "$ns" "$out/metrics-after"
    timed "merge Job" wait_job "$ns" brigade-merge 300
    cp "$results"/*.json "$out/"
    cp "$results"/shard-*.attempts "$out/" 2>/dev/null || true
    kc -n "$ns" logs job/brigade-merge | sed '/^--- merged.json$/,$d' >"$out/merge.txt"
    # A pod gone between the readings (the faults on servers) leaves the tally short by design:
    # it says so, and only runs without one must agree.
    local tallied=0
    "$(host_brigade)" tally --before "$out/metrics-before" --after "$out/metrics-after" \
        --markdown "$out/tally.md" $(ls "$out"/shard-*.json) >/dev/null || tallied=1
    fresh=$fresh load_report "$runtime" "$run" "$out" "$shards" "$duration" "$scenario" "$users" "$kill_shard" "${fault:+--$fault $fault_service}"
    [[ $tallied == 0 ]] || log "the servers' counters do not agree with the generators: $out/tally.md"
    echo "$out/report.md"
    [[ -n "$fault" ]] || failed=$((failed + tallied))
    return "$failed"
}

# $1/kustomization.yaml for a run of the load Jobs in namespace $2 against runtime $3's image:
# deploy/k8s/load as it is, the local component, the load's settings ($4...: KEY=VALUE, SHARDS
# among them, which the generators Job's completions and parallelism follow).
load_kustomization() {
    local dir="$1" ns="$2" runtime="$3" shards literal
    shift 3
    {
        cat <<YAML
# Written by scripts/cluster.sh load: deploy/k8s/load as it is, with the local component and this
# run's settings.
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: $ns
resources:
  - $(relpath "$REPO_ROOT/deploy/k8s/load" "$dir")
components:
  - $(relpath "$REPO_ROOT/deploy/k8s/local" "$dir")
images:
  - name: localhost/brigade
    newTag: $runtime
configMapGenerator:
  - name: brigade-load
    behavior: merge
    literals:
YAML
        for literal in "$@"; do
            echo "      - $literal"
            [[ "$literal" == SHARDS=* ]] && shards="${literal#SHARDS=}"
        done
        cat <<YAML
patches:
  - target: {kind: Job, name: brigade-load-generators}
    patch: |-
      - {op: replace, path: /spec/completions, value: ${shards:?SHARDS}}
      - {op: replace, path: /spec/parallelism, value: $shards}
YAML
    } >"$dir/kustomization.yaml"
}

# Whole seconds of a duration as brigade reads it (30s, 2m, 1500ms).
seconds_of() {
    python3 -c 'import re, sys; m = re.fullmatch(r"(\d+)(ms|s|m)?", sys.argv[1]) or sys.exit(f"duration {sys.argv[1]}: 30s, 2m or 1500ms"); n = int(m[1]); print({"ms": n // 1000, "m": 60 * n}.get(m[2], n))' "$1"
}

# The host's brigade binary (the tally runs here): BRIGADE_BIN, else a built one.
host_brigade() {
    local b
    for b in "${BRIGADE_BIN:-}" "$REPO_ROOT/target/release/brigade" "$REPO_ROOT/target/debug/brigade"; do
        [[ -n "$b" && -x "$b" ]] && { echo "$b"; return 0; }
    done
    die "no brigade binary here (cargo build, or set BRIGADE_BIN)"
}

# Deletes shard $2's generator pod of namespace $1 once it has run half of its $4 s (its start
# read from $3/start-at).
kill_generator() {
    local ns="$1" shard="$2" results="$3" seconds="$4" start pod
    until [[ -f "$results/start-at" ]]; do sleep 1; done
    start=$(cat "$results/start-at")
    sleep $(( start + seconds / 2 - $(date +%s) > 0 ? start + seconds / 2 - $(date +%s) : 0 ))
    pod=$(kc -n "$ns" get pods -l "batch.kubernetes.io/job-completion-index=$shard,job-name=brigade-load-generators" \
        -o jsonpath='{.items[0].metadata.name}')
    [[ -n "$pod" ]] || die "no generator pod for shard $shard"
    log "deleting generator pod $pod (shard $shard) halfway through its run"
    kc -n "$ns" delete pod "$pod" --wait=false >/dev/null
}

# A fault on service $3's pods of namespace $1 halfway through the run ($4/start-at, $5 s): `kill`
# deletes one of its two pods (the HPA held at two replicas first), `scale-down` takes it from two
# replicas to one. The HPA is put back afterwards. Says what it did on stdout.
server_fault() {
    local ns="$1" fault="$2" service="$3" results="$4" seconds="$5" start pod hpa
    # Every autoscaler held where it is (the faulted service at two replicas), so that the only
    # pods to come or go are the fault's.
    for hpa in $(kc -n "$ns" get hpa -o name); do
        local n=2
        [[ "$hpa" == "horizontalpodautoscaler.autoscaling/$service" ]] || n=$(kc -n "$ns" get "deploy/${hpa##*/}" -o jsonpath='{.spec.replicas}')
        kc -n "$ns" patch "$hpa" --type merge -p "{\"spec\":{\"minReplicas\":$n,\"maxReplicas\":$n}}" >/dev/null
    done
    kc -n "$ns" scale deploy "$service" --replicas 2 >/dev/null
    kc -n "$ns" rollout status deploy "$service" --timeout=120s >/dev/null
    start=$(cat "$results/start-at")
    sleep $(( start + seconds / 2 - $(date +%s) > 0 ? start + seconds / 2 - $(date +%s) : 0 ))
    if [[ "$fault" == kill ]]; then
        pod=$(kc -n "$ns" get pods -l "app.kubernetes.io/name=$service" -o jsonpath='{.items[0].metadata.name}')
        echo "$(date -u +%T) deleted $service pod $pod (one of two replicas) halfway through the run"
        kc -n "$ns" delete pod "$pod" --wait=false >/dev/null
    else
        echo "$(date -u +%T) scaled $service from two replicas to one halfway through the run"
        kc -n "$ns" patch hpa "$service" --type merge -p '{"spec":{"minReplicas":1,"maxReplicas":1}}' >/dev/null
        kc -n "$ns" scale deploy "$service" --replicas 1 >/dev/null
    fi
    # The base's autoscaling again once the run is over.
    ( sleep $(( start + seconds + 5 - $(date +%s) > 0 ? start + seconds + 5 - $(date +%s) : 0 ))
      for hpa in $(kc -n "$ns" get hpa -o name); do
          kc -n "$ns" patch "$hpa" --type merge -p '{"spec":{"minReplicas":1,"maxReplicas":6}}' >/dev/null
      done ) &
}

# results/cluster-RUNTIME-RUN/report.md: what ran where, the merge's table and the tally.
load_report() {
    local runtime="$1" run="$2" out="$3" shards="$4" duration="$5" scenario="$6" users="$7" kill_shard="$8" fault="$9"
    {
        echo "# Load on the cluster: $runtime, $run"
        echo
        echo "\`bash scripts/cluster.sh load $runtime $shards $duration --scenario $scenario --users $users${kill_shard:+ --kill-generator $kill_shard}${fault:+ ${fault/--kill/--kill-server}}\` (seed $(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["settings"]["seed"])' "$out/merged.json"))"
        echo
        echo "- **Cluster**: $(cluster_words)"
        echo "- **Pods** (namespace brigade-$runtime): $(kc -n "brigade-$runtime" get pods --no-headers -o custom-columns=N:.metadata.name,S:.status.phase | awk '{printf "%s%s (%s)", sep, $1, $2; sep=", "}')"
        echo "- **Images**: $(kc -n "brigade-$runtime" get pods -o jsonpath='{range .items[*]}{.spec.containers[0].image}{"\n"}{end}' | sort -u | xargs | sed 's/ /, /g')"
        if [[ $fresh == 1 ]]; then
            echo "- **Data**: the run started on empty databases (\`cluster.sh reset\`: every service and database scaled to nothing, the databases' volumes emptied, all started again)"
        else
            echo "- **Data**: the databases as the last run left them (--keep-data)"
        fi
        echo "- **Load**: the Jobs of deploy/k8s/load with the local component: $shards generator pods (an Indexed Job), scenario $scenario, $users users in all, $duration after a warm-up; the servers' counters read after the setup Job and after the last generator"
        if [[ -n "$kill_shard" ]]; then
            echo "- **Fault**: shard $kill_shard's generator pod deleted halfway through its run; its attempts: $(tr '\n' ';' <"$out/shard-$kill_shard.attempts" 2>/dev/null)"
        fi
        if [[ -f "$out/fault.txt" ]]; then
            echo "- **Fault**: $(cat "$out/fault.txt"); beside the load, writes of their own: $(tr '\n' ' ' <"$out/writes.txt")"
        fi
        echo
        echo "## The merged result (brigade merge)"
        echo
        echo '```'
        cat "$out/merge.txt"
        echo '```'
        echo
        echo "## What the servers counted against what the generators sent (brigade tally)"
        echo
        cat "$out/tally.md"
    } >"$out/report.md"
}

# The cluster in words: Kubernetes, the node, its runtime.
cluster_words() {
    local node
    node=$(kc get node "$NODE_NAME" -o jsonpath='{.status.nodeInfo.containerRuntimeVersion}, kernel {.status.nodeInfo.kernelVersion}, {.status.capacity.cpu} CPUs')
    echo "single-node Kubernetes $K8S_VERSION built here from the Go module proxy (scripts/cluster.sh), node $NODE_NAME \
($node; etcd 3.6.5, kube-proxy iptables, CNI bridge), CoreDNS $COREDNS_VERSION, metrics-server $METRICS_SERVER_VERSION"
}

# --- compare: runtimes deployed side by side, compared from this machine ------------------------

# The cgroup (cpuacct's path, or v2's) of pod $2's first container in namespace $1, from its main
# process on this node.
pod_cgroup() {
    local id pid
    id=$(kc -n "$1" get pod "$2" -o jsonpath='{.status.containerStatuses[0].containerID}')
    id=${id#containerd://}
    pid=$(ctrk tasks ls | awk -v id="$id" '$1 == id {print $2}')
    [[ -n "$pid" ]] || die "no process for pod $2's container"
    awk -F: '$2 ~ /(^|,)cpuacct(,|$)/ {print $3; found=1} END {if (!found) exit 1}' "/proc/$pid/cgroup" 2>/dev/null \
        || awk -F: '$1 == "0" {print $3}' "/proc/$pid/cgroup"
}

# `brigade compare --external` over runtimes $1 (comma-separated, each deployed), the rest of the
# arguments compare's own: every service by its Service's address, its CPU from its pod's cgroup
# (side by side), the databases' as companions. Each service is held at one replica while it runs
# (its CPU is one pod's; the HPAs are put back after), on fresh databases. The report's setup
# names the cluster, node, pods and images.
compare() {
    local runtimes="${1:?compare R1,R2 [compare flags]}" runtime service pod ns externals=() pods=() images=()
    shift
    running kube-apiserver || die "the cluster is not up (bash scripts/cluster.sh up)"
    # shellcheck disable=SC2064
    trap "for r in ${runtimes//,/ }; do kc -n brigade-\$r patch hpa tables kitchen --type merge -p '{\"spec\":{\"minReplicas\":1,\"maxReplicas\":6}}' >/dev/null 2>&1 || true; done" EXIT
    for runtime in ${runtimes//,/ }; do
        ns="brigade-$runtime"
        kc -n "$ns" patch hpa tables kitchen --type merge -p '{"spec":{"minReplicas":1,"maxReplicas":1}}' >/dev/null
        timed "empty databases ($runtime)" reset "$runtime"
        for service in waiter tables kitchen waiter-db tables-db kitchen-db; do
            pod=$(kc -n "$ns" get pods -l "app.kubernetes.io/name=$service" -o jsonpath='{.items[0].metadata.name}')
            pods+=("$ns/$pod")
            case "$service" in
                *-db) externals+=(--external-companion "$runtime:$service=$(pod_cgroup "$ns" "$pod")") ;;
                *) externals+=(--external "$runtime:$service=$(url "$runtime" "$service")"
                    --external-cgroup "$runtime:$service=$(pod_cgroup "$ns" "$pod")") ;;
            esac
        done
        images+=("$(kc -n "$ns" get deploy waiter -o jsonpath='{.spec.template.spec.containers[0].image}')")
    done
    local note
    note="$(cluster_words); each runtime in its namespace from its overlay with the local component (deploy/k8s/local), \
one replica per service (the HPAs held at one), on empty databases (FerretDB 1.24 standing in for mongo:7), \
images ${images[*]}, pods ${pods[*]}; reached through each Service's cluster IP (kube-proxy) from the node; \
side by side, each runtime's CPU is its three service pods' cgroups (cpuacct) summed, the databases' apart; \
nothing pinned: pods and the generator share the node's CPUs"
    "$(host_brigade)" compare "${externals[@]}" --no-pin --setup-note "Cluster=$note" "$@"
}

# --- ci: what .ci/run runs ------------------------------------------------------------------------

# The cluster from nothing to nothing, each step timed: up (the builds included where the cache is
# empty), the axum and actix overlays deployed, the walkthrough through each, the load Jobs (4
# generators × 30 s, the tally exact), the same with a generator pod deleted halfway (retried,
# named, the tally exact over every attempt), down (nothing left, checked).
ci() {
    local began=$SECONDS report
    trap 'down >/dev/null 2>&1 || true' EXIT
    timed "cluster up" up
    timed "deploy axum actix" deploy axum actix
    timed "walkthrough axum" walkthrough axum >/dev/null
    timed "walkthrough actix" walkthrough actix >/dev/null
    report=$(timed "load axum 4 30s" load axum 4 30s)
    grep -q "agree with the generators exactly" "$report" || die "the tally did not agree: $report"
    report=$(timed "load axum 4 30s, a generator pod deleted" load axum 4 30s --kill-generator 1)
    grep -q "attempt 1 LOST, not counted" "$report" || die "the lost attempt is not named: $report"
    grep -q "attempt 2 (retried)" "$report" || die "the retry is not named: $report"
    trap - EXIT
    timed "cluster down" down
    log "the cluster in CI took $((SECONDS - began)) s in all"
}

# --- main -----------------------------------------------------------------------------------------

# (Sourced, it only defines its functions.)
[[ "${BASH_SOURCE[0]}" == "$0" ]] || return 0
case "${1:-}" in
    up) up ;;
    down) down ;;
    build) build ;;
    check-clean) check_clean ;;
    status) status ;;
    logs) logs "${2:-}" ;;
    deploy) shift; deploy "$@" ;;
    url) url "${2:?runtime}" "${3:?service}" ;;
    reset) reset "${2:?runtime}" ;;
    walkthrough) walkthrough "${2:?runtime}" ;;
    load) shift; load "$@" ;;
    compare) shift; compare "$@" ;;
    ci) ci ;;
    *) sed -n '2,29p' "$0"; exit 2 ;;
esac
