#!/usr/bin/env bash
# Renders `aigov scan` of the bundled samples in every report format and
# validates each against its published schema. Installs what it needs (a
# Python venv with jsonschema, xmlschema and PyYAML, the npm package with the
# PolicyReport CRD validators) under target/tools, once.
set -euo pipefail
cd "$(dirname "$0")/../../.."
AIGOV=${AIGOV:-target/release/aigov}
TOOLS=target/tools
OUT=target/reports-check
SCHEMAS=host-test/tests/data/schemas
mkdir -p "$TOOLS" "$OUT"

if [ ! -x "$TOOLS/py/bin/python" ]; then
  python3 -m venv "$TOOLS/py"
  "$TOOLS/py/bin/pip" install --quiet jsonschema==4.23.0 xmlschema==3.4.3
fi
if ! "$TOOLS/py/bin/python" -c 'import yaml' 2>/dev/null; then
  "$TOOLS/py/bin/pip" install --quiet pyyaml==6.0.2
fi
if [ ! -d "$TOOLS/node/node_modules/@kubernetes-models/kyverno" ] || [ ! -d "$TOOLS/node/node_modules/js-yaml" ]; then
  mkdir -p "$TOOLS/node"
  (cd "$TOOLS/node" && npm install --silent --no-audit --no-fund --prefix . @kubernetes-models/kyverno@2.0.0 js-yaml@4.1.0 >/dev/null)
fi

# And a file that does not parse: a JUnit `<error>` and a PolicyReport
# `error` result, valid too.
printf 'apiVersion: v1\nkind: Pod\nmetadata: [unclosed\n' > "$OUT/unparsable.yaml"
for f in sarif junit policyreport openreports; do
  "$AIGOV" scan --native --cluster host-test/samples/cluster --settings trusted-sources=host-test/settings/trusted-sources.yaml \
    --fail-on none --format "$f" host-test/samples "$OUT/unparsable.yaml" > "$OUT/samples.$f" 2> "$OUT/samples.$f.stderr"
  grep -q 'unparsable.yaml could not be read' "$OUT/samples.$f.stderr"
done

"$TOOLS/py/bin/python" - "$OUT" "$SCHEMAS" <<'PY'
import json, sys, jsonschema, xmlschema
out, schemas = sys.argv[1], sys.argv[2]
sarif = json.load(open(f"{out}/samples.sarif"))
schema = json.load(open(f"{schemas}/sarif-2.1.0-rtm.5.json"))
jsonschema.Draft4Validator(schema).validate(sarif)
results = sarif["runs"][0]["results"]
assert results, "the samples produce SARIF results"
print(f"sarif: valid against SARIF 2.1.0 ({len(results)} results)")
# The validators are not vacuous: a wrong level and a missing attribute fail.
results[0]["level"] = "severe"
assert not jsonschema.Draft4Validator(schema).is_valid(sarif), "a bad SARIF level passed"
xsd = xmlschema.XMLSchema(f"{schemas}/junit-10.xsd")
xsd.validate(f"{out}/samples.junit")
suites = xsd.to_dict(f"{out}/samples.junit")["testsuite"]
assert suites and any(int(s["@failures"]) > 0 for s in suites), "the samples produce JUnit failures"
assert any(s["@name"] == "aigov-scan" and int(s["@errors"]) == 1 for s in suites), "the unparsable file is a JUnit error"
print(f"junit: valid against junit-10.xsd ({len(suites)} suites)")
bad = open(f"{out}/samples.junit").read().replace(' tests="', ' count="', 2)
assert not xsd.is_valid(bad), "a JUnit suite without `tests` passed"

# OpenReports: each document against its CRD's openAPIV3Schema, with the
# API server's strictness (a field the schema does not name is refused,
# as `kubectl apply --validate=strict` refuses it, unless the schema keeps
# unknown fields).
import yaml
def strict(s):
    if isinstance(s, dict):
        if "properties" in s and "additionalProperties" not in s and not s.get("x-kubernetes-preserve-unknown-fields"):
            s["additionalProperties"] = False
        for v in s.values():
            strict(v)
    elif isinstance(s, list):
        for v in s:
            strict(v)
    return s
validators = {k: jsonschema.Draft7Validator(strict(json.load(open(f"{schemas}/openreports-{k.lower()}-v1alpha1.json"))))
              for k in ("Report", "ClusterReport")}
docs = [d for d in yaml.safe_load_all(open(f"{out}/samples.openreports")) if d]
assert docs, "no OpenReports"
for d in docs:
    assert d["apiVersion"] == "openreports.io/v1alpha1", d["apiVersion"]
    validators[d["kind"]].validate(d)
assert any(r["result"] == "fail" for d in docs for r in d.get("results", [])), "the samples produce failing results"
assert any(r["result"] == "error" for d in docs for r in d.get("results", [])), "the unparsable file is an error result"
print(f"openreports: {len(docs)} reports valid against the openreports.io/v1alpha1 CRD schemas "
      f"({sum(len(d.get('results', [])) for d in docs)} results)")
bad = json.loads(json.dumps(docs[0]))
bad["results"][0]["result"] = "bogus"
assert not validators[bad["kind"]].is_valid(bad), "an OpenReports result of `bogus` passed"
bad = json.loads(json.dumps(docs[0]))
bad["results"][0]["unknownField"] = 1
assert not validators[bad["kind"]].is_valid(bad), "a field the CRD does not name passed"
PY

node - "$OUT/samples.policyreport" "$PWD/$TOOLS/node/node_modules" <<'JS'
const fs = require('fs');
const [file, modules] = process.argv.slice(2);
const yaml = require(modules + '/js-yaml');
const { PolicyReport, ClusterPolicyReport } = require(modules + '/@kubernetes-models/kyverno/wgpolicyk8s.io/v1alpha2');
const docs = yaml.loadAll(fs.readFileSync(file, 'utf8')).filter(Boolean);
if (docs.length === 0) throw new Error('no reports');
let results = 0;
for (const d of docs) {
  const Kind = d.kind === 'PolicyReport' ? PolicyReport : d.kind === 'ClusterPolicyReport' ? ClusterPolicyReport : null;
  if (!Kind) throw new Error(`unexpected kind ${d.kind}`);
  new Kind(d).validate();
  results += d.results.length;
}
if (!docs.some(d => d.results.some(r => r.result === 'fail'))) throw new Error('the samples produce failing results');
if (!docs.some(d => d.results.some(r => r.result === 'error' && r.policy === 'aigov-scan'))) throw new Error('the unparsable file is an error result');
let refused = false;
try { const d = structuredClone(docs[0]); d.results[0].result = 'bogus'; new PolicyReport(d).validate(); } catch (e) { refused = true; }
if (!refused) throw new Error('a PolicyReport result of `bogus` passed validation');
console.log(`policyreport: ${docs.length} reports valid against the wgpolicyk8s.io/v1alpha2 CRD schemas (${results} results)`);
JS
