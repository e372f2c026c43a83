#!/usr/bin/env bash
# The rollout path of a platform engineer adopting three rules, as the
# README tells it, run as written and checked at each step (issue 44's
# acceptance; `make walkthrough-check`, part of `make test`; a few seconds):
#
#   1. `aigov manifests --enable gpu-runtime-class,ray-cluster-limits,idle-gpu-pods
#      --settings RULE=audit.yaml ...`: the three rules on, in audit;
#   2. `aigov settings check` of what it wrote;
#   3. `aigov scan` of the sample workloads with that deployment: only the
#      three rules speak, in warnings (audit), and nothing is denied;
#   4. `aigov simulate` against what runs (host-test/tests/walkthrough/running):
#      the audited findings are would-be denials, kube-system is left out,
#      the Deployment is judged through its controller;
#   5. enforce: regenerate with `mode: enforce`; a second run writes nothing
#      and exits 0;
#   6. the final `simulate` and `scan`: the same would-be denials, none audited
#      any more; the scan now denies.
#
# Uses $AIGOV (default target/release/aigov) and artifacts/ as `make
# artifacts` left them.
set -euo pipefail
cd "$(dirname "$0")/../../.."
AIGOV=${AIGOV:-target/release/aigov}
RUNNING=host-test/tests/walkthrough/running
OUT=target/walkthrough
RULES=gpu-runtime-class,ray-cluster-limits,idle-gpu-pods
OTHER_RULES=$("$AIGOV" rules | cut -d' ' -f1 | grep -vxE 'gpu-runtime-class|ray-cluster-limits|idle-gpu-pods')
rm -rf "$OUT"
mkdir -p "$OUT"
DEPLOY=$OUT/deploy

fail() { echo "walkthrough: $*" >&2; exit 1; }
step() { echo "walkthrough: $*"; }
# run NAME CMD...: runs CMD, its stdout and stderr in $OUT/NAME.{out,err},
# its exit status in $status.
run() {
  local name=$1; shift
  set +e
  "$@" >"$OUT/$name.out" 2>"$OUT/$name.err"
  status=$?
  set -e
}
expect_status() { [ "$status" = "$2" ] || { cat "$OUT/$1.out" "$OUT/$1.err" >&2; fail "$1: exit status $status, not $2"; }; }
has() { grep -qF -- "$2" "$OUT/$1" || { cat "$OUT/$1" >&2; fail "$1 does not say: $2"; }; }
# Only the three rules: no other rule's name in the output (but in the
# samples' file names, some of which name a rule).
only_three() {
  for rule in $OTHER_RULES; do
    if grep -v '\.yaml' "$OUT/$1" | grep -qw -- "$rule"; then fail "$1 names $rule, a rule the team did not turn on"; fi
  done
}

step "1. generate the manifests: three rules, in audit"
printf 'mode: audit\n' >"$OUT/audit.yaml"
printf 'mode: enforce\n' >"$OUT/enforce.yaml"
settings() { for rule in ${RULES//,/ }; do printf -- '--settings %s=%s ' "$rule" "$OUT/$1.yaml"; done; }
# shellcheck disable=SC2046
run manifests "$AIGOV" manifests --artifacts artifacts -o "$DEPLOY" --enable "$RULES" $(settings audit)
expect_status manifests 0
has manifests.out "file(s) written, 0 unchanged, 0 left alone"
for rule in ${RULES//,/ }; do
  grep -q "^- \.\./$rule " "$DEPLOY/overlay/kustomization.yaml" || fail "the overlay does not turn $rule on"
  grep -q "^    mode: audit$" "$DEPLOY/$rule/cluster-admission-policy.yaml" || fail "$rule's policy is not in audit"
  grep -A1 "^      $rule:" "$DEPLOY/bundle/cluster-admission-policy.yaml" | grep -q "mode: audit" || fail "the bundle does not audit $rule"
done
[ "$(grep -c '^- \.\./' "$DEPLOY/overlay/kustomization.yaml")" = 3 ] || fail "the overlay turns on more than the three rules"

step "2. check the settings written"
run check "$AIGOV" settings check "$DEPLOY/bundle/cluster-admission-policy.yaml" "$DEPLOY/policies.yml" \
  "$DEPLOY/gpu-runtime-class/cluster-admission-policy.yaml" "$DEPLOY/ray-cluster-limits/cluster-admission-policy.yaml" \
  "$DEPLOY/idle-gpu-pods/cluster-admission-policy.yaml"
expect_status check 0
has check.out "the settings of \`aigov-bundle\` are valid"
[ ! -s "$OUT/check.err" ] || { cat "$OUT/check.err" >&2; fail "settings check complained"; }

step "3. scan the sample workloads with the deployment, in audit"
run scan-audit "$AIGOV" scan host-test/samples --settings "$DEPLOY"
expect_status scan-audit 0
has scan-audit.err "checking the 3 rule(s) $DEPLOY turns on: gpu-runtime-class, idle-gpu-pods, ray-cluster-limits"
has scan-audit.out "3 rule(s)"
has scan-audit.out "0 denied, 5 admitted with warnings"
has scan-audit.out "warning: gpu-runtime-class (audit mode, not enforced)"
has scan-audit.out "warning: ray-cluster-limits (audit mode, not enforced)"
has scan-audit.out "warning: idle-gpu-pods (audit mode, not enforced)"
only_three scan-audit.out

step "4. simulate against what runs: what breaks if we enforce"
run simulate-audit "$AIGOV" simulate --cluster "$RUNNING" --settings "$DEPLOY"
expect_status simulate-audit 0
has simulate-audit.out "7 objects in 4 namespaces; if every rule were enforced, 3 would be denied"
has simulate-audit.out "3 of the would-be denials are only audited today"
has simulate-audit.out "3 objects were judged through their controller"
has simulate-audit.out "2 objects left out: in namespaces the policies never see"
for rule in ${RULES//,/ }; do
  grep -qE "^  $rule +[0-9]+ +1 +1 " "$OUT/simulate-audit.out" || { cat "$OUT/simulate-audit.out" >&2; fail "$rule: not 1 would-be denial, 1 audited"; }
done
grep -q "nvidia-smi-probe\|kube-system" "$OUT/simulate-audit.out" && fail "kube-system was judged"
only_three simulate-audit.out

step "5. switch to enforce; regenerating again writes nothing"
# shellcheck disable=SC2046
run enforce "$AIGOV" manifests --artifacts artifacts -o "$DEPLOY" $(settings enforce)
expect_status enforce 0
has enforce.out "0 left alone"
for rule in ${RULES//,/ }; do
  grep -q "^    mode: audit$" "$DEPLOY/$rule/cluster-admission-policy.yaml" && fail "$rule's policy still audits"
  grep -q "^- \.\./$rule " "$DEPLOY/overlay/kustomization.yaml" || fail "the overlay no longer turns $rule on"
done
grep -q "mode: audit" "$DEPLOY/bundle/cluster-admission-policy.yaml" && fail "the bundle still audits"
# shellcheck disable=SC2046
run again "$AIGOV" manifests --artifacts artifacts -o "$DEPLOY" $(settings enforce)
expect_status again 0
grep -qE "0 file\(s\) written, [0-9]+ unchanged, 0 left alone" "$OUT/again.out" || fail "regenerating wrote: $(tail -1 "$OUT/again.out")"
run plain "$AIGOV" manifests --artifacts artifacts -o "$DEPLOY"
expect_status plain 0
grep -qE "0 file\(s\) written, [0-9]+ unchanged, 0 left alone" "$OUT/plain.out" || fail "regenerating wrote: $(tail -1 "$OUT/plain.out")"

step "6. the final simulate and scan, enforced"
run simulate-enforce "$AIGOV" simulate --cluster "$RUNNING" --settings "$DEPLOY"
expect_status simulate-enforce 0
has simulate-enforce.out "if every rule were enforced, 3 would be denied"
grep -q "only audited today" "$OUT/simulate-enforce.out" && fail "simulate still sees audited rules"
for rule in ${RULES//,/ }; do
  grep -qE "^  $rule +[0-9]+ +1 +0 " "$OUT/simulate-enforce.out" || { cat "$OUT/simulate-enforce.out" >&2; fail "$rule: not 1 would-be denial, 0 audited"; }
done
only_three simulate-enforce.out
run scan-enforce "$AIGOV" scan host-test/samples --settings "$DEPLOY"
expect_status scan-enforce 1
has scan-enforce.out "5 denied"
only_three scan-enforce.out
step "ok: adopted three rules in audit, simulated, enforced"
