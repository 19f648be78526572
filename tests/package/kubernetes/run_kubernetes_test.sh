#!/usr/bin/env bash
# deploy/kubernetes, rendered and validated (ctest label `package`; issue #21): every overlay is
# rendered with kustomize (kubectl's built-in `kubectl kustomize`), and every object of every
# rendering is validated against Kubernetes 1.27.1's OpenAPI schemas (npm's kubernetes-models
# 5.1.0) and cert-manager's (@kubernetes-models/cert-manager 6.0.0) by validate.mjs. A negative
# control (invalid.yaml) must be refused, object by object.
#   tests/package/kubernetes/run_kubernetes_test.sh
# The npm packages (package-lock.json) are installed once into $GDRMESH_PACKAGE_CACHE/npm-k8s
# (default /var/cache/gdrmesh-ci) and work offline after that. Exit 77 (skipped, with the reason)
# without kubectl, node or npm.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
kdir="$(cd "$here/../../../deploy/kubernetes" && pwd)"
skip() {
  echo "SKIPPED: $*"
  exit 77
}
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
t0=$SECONDS
command -v kubectl >/dev/null || skip "kubectl (its built-in kustomize renders the overlays) is not installed"
command -v node >/dev/null || skip "node is not installed (apt-get install nodejs npm)"
command -v npm >/dev/null || skip "npm is not installed (apt-get install npm)"
kubectl kustomize --help >/dev/null 2>&1 || skip "this kubectl has no kustomize"

cache="${GDRMESH_PACKAGE_CACHE:-/var/cache/gdrmesh-ci}/npm-k8s"
mkdir -p "$cache"
if ! cmp -s "$here/package-lock.json" "$cache/package-lock.json" || [[ ! -d $cache/node_modules ]]; then
  cp "$here/package.json" "$here/package-lock.json" "$cache/"
  (cd "$cache" && npm ci --no-audit --no-fund --loglevel=error) ||
    fail "npm ci of the validator (kubernetes-models) failed"
fi
cp "$here/validate.mjs" "$cache/"
work="$(mktemp -d /tmp/gdrmesh-k8s.XXXXXX)"
trap 'rm -rf "$work"' EXIT

echo "kubectl $(kubectl version --client 2>/dev/null | tr '\n' ' ')"
overlays=()
for o in "$kdir"/overlays/*/; do
  name=$(basename "$o")
  kubectl kustomize "$o" >"$work/$name.yaml" 2>"$work/$name.err" || {
    cat "$work/$name.err"
    fail "kubectl kustomize overlays/$name failed"
  }
  overlays+=("$work/$name.yaml")
  echo "overlays/$name: $(grep -c '^kind:' "$work/$name.yaml") objects"
done
[[ ${#overlays[@]} -ge 3 ]] || fail "expected at least 3 overlays under $kdir/overlays"
(cd "$cache" && node validate.mjs "${overlays[@]}") || fail "a rendered manifest is invalid (above)"

# The negative control: each broken object is reported, and the run fails.
rc=0
(cd "$cache" && node validate.mjs "$here/invalid.yaml") >"$work/invalid.log" || rc=$?
cat "$work/invalid.log"
[[ $rc -eq 1 ]] || fail "validate.mjs accepted invalid.yaml (exit $rc)"
for name in no-selector port-as-text no-issuer unknown-kind; do
  grep -q "^INVALID .* $name" "$work/invalid.log" || fail "validate.mjs did not report $name"
done
echo "kubernetes test: $((SECONDS - t0)) s"
