#!/usr/bin/env bash
# What a platform team deploys, served by Kubewarden itself: a registry on
# loopback (Debian's docker-registry); every rule's module and the bundle's
# pushed to it and signed with `aigov sign`; each signature checked by
# `kwctl verify` (and a key that did not sign refused); `policies.yml` from
# `aigov manifests` with every rule on, pinned by digest; policy-server
# pulling the modules, verifying them against a Kubewarden verification
# config naming the signing key (and refusing to start with another key's),
# and answering every recorded case request
# whose settings are the ones policies.yml gives its rule (check.py).
#
# usage: served.sh KWCTL POLICY_SERVER AIGOV ARTIFACTS RECORDS OUT
set -euo pipefail
kwctl=$1 server=$2 aigov=$3 artifacts=$4 records=$5 out=$6
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$out" && mkdir -p "$out/registry" "$out/downloads"
out=$(cd "$out" && pwd) # policy-server cannot download into a relative directory
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true' EXIT
export RUST_BACKTRACE=0 COSIGN_PASSWORD=

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_for() { # URL WHAT LOG
  for _ in $(seq 1 600); do
    curl -fsS -o /dev/null "$1" 2>/dev/null && return 0
    sleep 0.2
  done
  echo "$2 did not answer at $1; its log:" >&2; tail -40 "$3" >&2; exit 1
}

registry_port=$(free_port)
cat > "$out/registry.yml" <<YAML
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $out/registry
http:
  addr: 127.0.0.1:$registry_port
YAML
docker-registry serve "$out/registry.yml" > "$out/registry.log" 2>&1 &
pids+=($!)
wait_for "http://127.0.0.1:$registry_port/v2/" "the registry" "$out/registry.log"
printf 'insecure_sources:\n  - "127.0.0.1:%s"\n' "$registry_port" > "$out/sources.yml"

# Key-based verification needs no Sigstore service, but sigstore-rs, which
# kwctl and policy-server verify with, reads a trust root first and will not
# go on without a Fulcio CA and a Rekor key in it: a throwaway one, trusted
# for nothing this check relies on, keeps them off the network.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$out/unused-ca.key" \
  -out "$out/unused-ca.pem" -days 2 -subj "/CN=unused" 2> /dev/null
ca=$(openssl x509 -in "$out/unused-ca.pem" -outform DER | base64 -w0)
pub=$(openssl ec -in "$out/unused-ca.key" -pubout -outform DER 2> /dev/null | base64 -w0)
log="{\"baseUrl\": \"https://unused.invalid\", \"hashAlgorithm\": \"SHA2_256\", \"logId\": {\"keyId\": \"AAAA\"},
      \"publicKey\": {\"rawBytes\": \"$pub\", \"keyDetails\": \"PKIX_ECDSA_P256_SHA_256\", \"validFor\": {\"start\": \"2020-01-01T00:00:00Z\"}}}"
cat > "$out/trust-config.json" <<JSON
{"mediaType": "application/vnd.dev.sigstore.clienttrustconfig.v0.1+json",
 "trustedRoot": {"mediaType": "application/vnd.dev.sigstore.trustedroot+json;version=0.1",
   "tlogs": [$log], "ctlogs": [$log], "timestampAuthorities": [],
   "certificateAuthorities": [{"subject": {"organization": "unused", "commonName": "unused"}, "uri": "https://unused.invalid",
     "certChain": {"certificates": [{"rawBytes": "$ca"}]}, "validFor": {"start": "2020-01-01T00:00:00Z"}}]},
 "signingConfig": {"mediaType": "application/vnd.dev.sigstore.signingconfig.v0.2+json", "caUrls": [], "oidcUrls": [],
   "rekorTlogUrls": [], "tsaUrls": [], "rekorTlogConfig": {"selector": "ANY"}, "tsaConfig": {"selector": "ANY"}}}
JSON

"$aigov" generate-key-pair --output-key-prefix "$out/signer" > /dev/null
"$aigov" generate-key-pair --output-key-prefix "$out/stranger" > /dev/null
verify() { "$kwctl" verify --sources-path "$out/sources.yml" \
  --sigstore-trust-config "$out/trust-config.json" "$@" > "$out/kwctl-verify.log" 2>&1; }

registry=127.0.0.1:$registry_port/aigov
rules=$("$aigov" rules | awk '{print $1}' | paste -sd, -)
signed=0
for pair in $(for r in ${rules//,/ }; do echo "$r:$r"; done) bundle:aigov-bundle; do
  dir=${pair%%:*} repo=${pair#*:}
  pinned=$("$aigov" push "$artifacts/$dir/policy.wasm" "$registry/$repo" --insecure)
  "$aigov" sign "$pinned" --key "$out/signer.key" --annotation aigov.dev/check=kubewarden --insecure > /dev/null 2>> "$out/sign.log"
  verify -k "$out/signer.pub" -a aigov.dev/check=kubewarden "registry://$pinned" ||
    { echo "kwctl verify refused $pinned signed by aigov sign:" >&2; cat "$out/kwctl-verify.log" >&2; exit 1; }
  if verify -k "$out/stranger.pub" "registry://$pinned"; then
    echo "kwctl verify accepted $pinned for a key that did not sign it" >&2; exit 1
  fi
  signed=$((signed + 1))
done
echo "kwctl verify: $signed modules signed by aigov sign verified, and refused for a key that did not sign them"

"$aigov" manifests --artifacts "$artifacts" --output "$out/manifests" --registry "$registry" --enable "$rules" > /dev/null

verification_config() { # OWNER KEY.pub [ANNOTATION VALUE]
  printf 'apiVersion: v1\nallOf:\n  - kind: pubKey\n    owner: %s\n    key: |\n' "$1"
  sed 's/^/      /' "$2"
  [ $# -lt 4 ] || printf '    annotations:\n      %s: %s\n' "$3" "$4"
}
verification_config aigov-check "$out/signer.pub" aigov.dev/check kubewarden > "$out/verification-config.yml"
verification_config stranger "$out/stranger.pub" > "$out/stranger-config.yml"

# policy-server must refuse to start when the modules are not signed by
# the key its verification config names.
if timeout 120 "$server" --policies "$out/manifests/policies.yml" --sources-path "$out/sources.yml" \
  --verification-path "$out/stranger-config.yml" --sigstore-trust-config "$out/trust-config.json" \
  --policies-download-dir "$out/downloads-refused" --ignore-kubernetes-connection-failure \
  --addr 127.0.0.1 --port "$(free_port)" --readiness-probe-port "$(free_port)" --log-no-color > "$out/policy-server-refused.log" 2>&1 ||
  ! grep -q "cannot be verified" "$out/policy-server-refused.log"; then
  echo "policy-server did not refuse modules the stranger's key did not sign; its log:" >&2
  tail -20 "$out/policy-server-refused.log" >&2; exit 1
fi

port=$(free_port) ready=$(free_port)
"$server" --policies "$out/manifests/policies.yml" --sources-path "$out/sources.yml" \
  --verification-path "$out/verification-config.yml" --sigstore-trust-config "$out/trust-config.json" \
  --policies-download-dir "$out/downloads" --ignore-kubernetes-connection-failure \
  --addr 127.0.0.1 --port "$port" --readiness-probe-port "$ready" --log-no-color > "$out/policy-server.log" 2>&1 &
pids+=($!)
wait_for "http://127.0.0.1:$ready/readiness" "policy-server" "$out/policy-server.log"
echo "policy-server: refused the modules for a key that did not sign them; pulled every one by digest and verified it against the signer's key"

python3 "$here/check.py" policy-server "http://127.0.0.1:$port" "$out/manifests/policies.yml" "$records"

# A context-aware rule's lookups reach the host: policies.yml grants
# gpu-quota the host calls its metadata declares, so listing a namespace's
# pods fails only for want of a cluster (policy-server runs without one
# here), never with policy-evaluator's refusal of an ungranted capability.
review='{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"c0ffee00-0000-4000-8000-000000000001",
  "kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},"namespace":"ml","operation":"CREATE",
  "userInfo":{"username":"jane"},"object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"ml"},
  "spec":{"containers":[{"name":"c","image":"i","resources":{"limits":{"nvidia.com/gpu":"1"}}}]}}}}'
answer=$(curl -fsS -H 'Content-Type: application/json' -d "$review" "http://127.0.0.1:$port/validate/gpu-quota")
if grep -q "host capability" <<< "$answer" || grep -q "doesn't have access to" "$out/policy-server.log"; then
  echo "policy-server refused gpu-quota a host call policies.yml should grant: $answer" >&2
  grep "doesn't have access to" "$out/policy-server.log" | tail -5 >&2; exit 1
fi
grep -q "could not be listed" <<< "$answer" ||
  { echo "gpu-quota's lookup through policy-server gave no lookup error: $answer" >&2; exit 1; }
echo "policy-server: a context-aware rule's host calls are granted (its lookup reached the host and failed only for want of a cluster)"
