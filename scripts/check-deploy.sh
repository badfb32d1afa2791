#!/usr/bin/env bash
# Checks the deployment files under deploy/ without a cluster or a running node:
#   deploy/haproxy.cfg                 haproxy -c
#   deploy/k8s/haproxy.yaml's config   haproxy -c (the ConfigMap's haproxy.cfg, POD_NAMESPACE=default)
#   deploy/nginx.conf                  nginx -t
#   the write-routing regex            the same method list in all three balancer configs
#   deploy/k8s/*.yaml                  kubernetes-validate --strict (see below)
# then breaks a copy of each (in a temp dir) and makes sure its validator rejects it.
#
# Kubernetes validator: kubernetes-validate (PyPI), which bundles the Kubernetes OpenAPI schemas
# and works offline; --strict also rejects unknown fields (a misspelt key), and a kind it has no
# schema for (only a warning there) is counted as a failure here. `kubectl apply --dry-run=client`
# is tried too but is not the check: even with --validate=false it needs a reachable API server
# for discovery (it fails with "couldn't get current server API group list" without one), and
# with --validate=false it does not check the schema anyway.
#
# Installs what is missing: haproxy and nginx (Debian packages), kubernetes-validate (pip).
#   bash scripts/check-deploy.sh
set -euo pipefail
cd "$(dirname "$0")/.."

K8S_VALIDATE_VERSION=1.37.0

if ! command -v haproxy >/dev/null || ! command -v nginx >/dev/null; then
  echo "== installing haproxy and nginx (apt)"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq haproxy nginx >/dev/null
fi
if ! python3 -c 'import kubernetes_validate, yaml' 2>/dev/null; then
  echo "== installing kubernetes-validate $K8S_VALIDATE_VERSION (pip)"
  python3 -m pip install --quiet --disable-pip-version-check \
    "kubernetes-validate==$K8S_VALIDATE_VERSION"
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

# The ConfigMap's haproxy.cfg of deploy/k8s/haproxy.yaml, written to $1.
k8s_haproxy_cfg() {
  python3 - "$1" <<'EOF'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open("deploy/k8s/haproxy.yaml")) if d]
cfg = next(d for d in docs if d["kind"] == "ConfigMap")["data"]["haproxy.cfg"]
open(sys.argv[1], "w").write(cfg)
EOF
}

# Prints HAProxy's messages only when the check fails (warnings alone are not shown).
check_haproxy() {
  local out
  out=$(haproxy -c -f "$1" 2>&1) || { echo "$out" >&2; return 1; }
}
# nginx -t opens the error log named in the conf (stderr) and the pid/temp paths under /tmp.
check_nginx() { nginx -q -t -e stderr -c "$1"; }
# kubernetes-validate exits 0 on a kind it has no schema for (a WARN line): count that too.
check_k8s() {
  local out
  out=$(python3 -m kubernetes_validate --strict "$@" 2>&1) || { echo "$out"; return 1; }
  echo "$out"
  ! grep -q '^WARN' <<<"$out"
}

echo "== haproxy $(haproxy -v | head -1 | awk '{print $3}'): haproxy -c -f deploy/haproxy.cfg"
check_haproxy deploy/haproxy.cfg && echo "configuration valid" || fail "deploy/haproxy.cfg"

echo "== haproxy -c on the ConfigMap of deploy/k8s/haproxy.yaml"
k8s_haproxy_cfg "$work/k8s-haproxy.cfg"
# Cluster DNS names do not resolve here: HAProxy warns and starts those servers disabled
# (init-addr ...,none) until its resolvers find them.
POD_NAMESPACE=default check_haproxy "$work/k8s-haproxy.cfg" && echo "configuration valid" || fail "deploy/k8s/haproxy.yaml (haproxy.cfg)"

echo "== $(nginx -v 2>&1 | sed 's/^nginx version: //'): nginx -t -c \$PWD/deploy/nginx.conf"
check_nginx "$PWD/deploy/nginx.conf" && echo "syntax ok, test successful" || fail "deploy/nginx.conf"

echo "== the write-routing method list is the same in the three balancer configs"
routes=$(grep -ho '"method"\\s\*:\\s\*"([^)]*)' deploy/haproxy.cfg deploy/nginx.conf "$work/k8s-haproxy.cfg" | sort | uniq -c)
echo "$routes"
if [ "$(wc -l <<<"$routes")" -ne 1 ] || [ "$(awk '{print $1}' <<<"$routes")" -ne 3 ]; then
  fail "the method regex differs between deploy/haproxy.cfg, deploy/nginx.conf and deploy/k8s/haproxy.yaml"
fi

echo "== kubectl apply --dry-run=client --validate=false -f deploy/k8s/ -o name (informational)"
if ! command -v kubectl >/dev/null; then
  echo "kubectl not installed: skipped"
elif out=$(kubectl apply --dry-run=client --validate=false --request-timeout=5s -f deploy/k8s/ -o name 2>&1); then
  echo "$out"
else
  echo "not available: $(grep -m1 -o 'unable to recognize.*\|couldn.t get.*' <<<"$out" | cut -c1-150)"
  echo "(kubectl's client dry-run needs an API server for discovery; kubernetes-validate is the check)"
fi

echo "== kubernetes-validate --strict deploy/k8s/*.yaml"
check_k8s deploy/k8s/*.yaml || fail "deploy/k8s manifests"

echo "== each validator rejects a broken copy"
sed 's/^    balance leastconn/    balance leastconnn/' deploy/haproxy.cfg >"$work/bad-haproxy.cfg"
sed 's/^        least_conn;/        least_conn/' deploy/nginx.conf >"$work/bad-nginx.conf"
sed 's/^  replicas: 2$/  replicas: "two"/' deploy/k8s/replicas.yaml >"$work/bad-type.yaml"
sed 's/^          readinessProbe:/          readinessprobe:/' deploy/k8s/replicas.yaml >"$work/bad-field.yaml"
printf 'apiVersion: apps/v1\nkind: Deploymnet\nmetadata: {name: x}\n' >"$work/bad-kind.yaml"
for pair in haproxy.cfg:bad-haproxy.cfg nginx.conf:bad-nginx.conf k8s/replicas.yaml:bad-type.yaml \
  k8s/replicas.yaml:bad-field.yaml; do
  if cmp -s "deploy/${pair%%:*}" "$work/${pair#*:}"; then
    fail "${pair#*:}: the sabotage did not change deploy/${pair%%:*}"
  fi
done
if check_haproxy "$work/bad-haproxy.cfg" >/dev/null 2>&1; then
  fail "haproxy -c accepted an unknown balance algorithm"
else echo "haproxy -c rejects 'balance leastconnn'"; fi
if check_nginx "$work/bad-nginx.conf" >/dev/null 2>&1; then
  fail "nginx -t accepted a missing semicolon"
else echo "nginx -t rejects a missing semicolon"; fi
for bad in bad-type bad-field bad-kind; do
  if check_k8s "$work/$bad.yaml" >/dev/null 2>&1; then
    fail "kubernetes-validate accepted $bad.yaml"
  else echo "kubernetes-validate rejects $bad.yaml"; fi
done

if [ "$failures" -ne 0 ]; then
  echo "check-deploy: $failures check(s) failed" >&2
  exit 1
fi
echo "check-deploy: all checks passed"
