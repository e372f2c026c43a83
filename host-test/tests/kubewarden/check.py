#!/usr/bin/env python3
"""Every case, answered by Kubewarden's own hosts: kwctl and policy-server.

`make kubewarden-check KWCTL=… POLICY_SERVER=…` runs it; neither binary is
built by this project (see the README, "Checked against Kubewarden").

    check.py kwctl KWCTL RECORDS ARTIFACTS [RULE...]
        Replays every case `aigov build export-cases` recorded (RECORDS/<rule>.json,
        RECORDS/bundle.json) through `kwctl run` on the rule's module: the
        request, the case's settings, and each cluster lookup's answer as a
        `--replay-host-capabilities-interactions` session, failed lookups in
        the words policy-evaluator and kube-client use. Settings a rule
        refuses must stop kwctl with the rule's message.

    check.py policy-server URL POLICIES_YML RECORDS
        Sends every recorded request whose settings are what POLICIES_YML
        gives the rule, and that looks nothing up, to a policy-server serving
        POLICIES_YML (as `aigov manifests` wrote it) at URL/validate/<rule>.

Each answer must equal the one the harness recorded: allowed, message, code,
warnings, audit annotations, and the mutated object (kwctl and policy-server
send a JSON Patch, applied here to the request's object). Exit status 1 on
any difference.
"""
import base64
import copy
import json
import os
import subprocess
import sys
import tempfile
import urllib.request

import jsonpatch
import yaml


# A request for cases that only check settings: kwctl needs one to start.
SOME_POD = {
    "uid": "00000000-0000-4000-8000-000000000000", "kind": {"group": "", "version": "v1", "kind": "Pod"},
    "resource": {"group": "", "version": "v1", "resource": "pods"}, "operation": "CREATE",
    "userInfo": {"username": "jane.doe@example.com"},
    "object": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ml"},
               "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}},
}


def kubewarden_words(function, args, tag, message):
    """A failed lookup as policy-evaluator reports it (kwctl puts
    `Callback evaluation failure: ` before a replayed error itself)."""
    if tag == "not-found" and function == "get-resource":
        namespace = 'Some("%s")' % args[3] if args[3] is not None else "None"
        return "Cannot find %s/%s named '%s' inside of namespace '%s'" % (args[0], args[1], args[2], namespace)
    reasons = {"forbidden": ("Forbidden", 403), "not-found": ("NotFound", 404), "invalid": ("BadRequest", 400)}
    if tag in reasons and not message.startswith("Resource ") and not message.startswith("resource "):
        reason, code = reasons[tag]
        return (
            "ApiError: %s: %s (Status { status: Some(Failure), code: %d, message: %s, metadata: None, "
            "reason: %s, details: None })\n\nCaused by:\n    %s: %s"
        ) % (message, reason, code, json.dumps(message, ensure_ascii=False), json.dumps(reason), message, reason)
    return message


def session(lookups):
    """The lookups of one call as kwctl's recorded host interactions."""
    exchanges = []
    for lookup in lookups:
        f, a = lookup["function"], lookup["args"]
        answer = lookup["answer"]
        if "err" in answer and answer["err"]["val"].startswith("Policy has not been granted"):
            continue  # refused by policy-evaluator before any callback: never replayed
        if f == "get-resource":
            tag, request = "KubernetesGetResource", {
                "api_version": a[0], "kind": a[1], "name": a[2], "namespace": a[3], "disable_cache": False}
        elif f == "list-resources-by-namespace":
            tag, request = "KubernetesListResourceNamespace", {
                "api_version": a[0], "kind": a[1], "namespace": a[2], "label_selector": a[3],
                "field_selector": a[4], "field_masks": None}
        elif f == "list-all-resources":
            tag, request = "KubernetesListResourceAll", {
                "api_version": a[0], "kind": a[1], "label_selector": a[2], "field_selector": a[3], "field_masks": None}
        else:
            raise SystemExit("unknown lookup %r" % f)
        if "ok" in answer:
            response = {"type": "Success", "payload": answer["ok"]}
        else:
            response = {"type": "Error", "message": kubewarden_words(f, a, answer["err"]["tag"], answer["err"]["val"])}
        exchanges.append({"type": "Exchange", "request": "!%s\n%s" % (tag, yaml.safe_dump(request, sort_keys=False)),
                          "response": response})
    return exchanges


def differences(recorded, response, request):
    """How Kubewarden's AdmissionResponse differs from the recorded answer."""
    bad = []
    if response.get("allowed") != recorded["accepted"]:
        bad.append("allowed %r, recorded %r" % (response.get("allowed"), recorded["accepted"]))
    status = response.get("status") or {}
    if status.get("message") != recorded["message"]:
        bad.append("message %r, recorded %r" % (status.get("message"), recorded["message"]))
    if recorded["code"] is not None and status.get("code") != recorded["code"]:
        bad.append("code %r, recorded %r" % (status.get("code"), recorded["code"]))
    if (response.get("warnings") or []) != (recorded["warnings"] or []):
        bad.append("warnings %r, recorded %r" % (response.get("warnings"), recorded["warnings"]))
    if (response.get("auditAnnotations") or {}) != dict(recorded["auditAnnotations"] or []):
        bad.append("audit annotations %r, recorded %r" % (response.get("auditAnnotations"), recorded["auditAnnotations"]))
    patch = json.loads(base64.b64decode(response["patch"])) if response.get("patch") else None
    if recorded["mutatedObject"] is not None:
        mutated = jsonpatch.apply_patch(copy.deepcopy(request["object"]), patch or [])
        if mutated != json.loads(recorded["mutatedObject"]):
            bad.append("the patch %s does not make the recorded object" % json.dumps(patch)[:400])
    elif patch:
        bad.append("a patch where none was recorded: %s" % json.dumps(patch)[:400])
    return bad


def records(directory, only=()):
    for name in sorted(os.listdir(directory)):
        rule = name[: -len(".json")]
        if name.endswith(".json") and (not only or rule in only):
            with open(os.path.join(directory, name)) as f:
                yield rule, json.load(f)


def kwctl(binary, directory, artifacts, only):
    work = tempfile.mkdtemp(prefix="aigov-kwctl-")
    checked = failed = 0

    def run(artifact, request, settings, lookups):
        review = os.path.join(work, "request.json")
        with open(review, "w") as f:
            json.dump({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}, f)
        command = [binary, "run", "--request-path", review, "--settings-json", settings]
        if lookups:
            replay = os.path.join(work, "session.yml")
            with open(replay, "w") as f:
                yaml.safe_dump(session(lookups), f, sort_keys=False)
            command += ["--allow-context-aware", "--replay-host-capabilities-interactions", replay]
        return subprocess.run(command + [artifact], capture_output=True, text=True)

    for rule, record in records(directory, only):
        artifact = os.path.join(artifacts, rule, "policy.wasm")
        for case in record["cases"]:
            name = "%s/%s" % (case.get("rule", rule) if rule == "bundle" else rule, case["case"])
            refused = [c for c in case["calls"] if c["function"] == "validate-settings" and not c["answer"]["valid"]]
            if refused:
                # kwctl, like policy-server, stops at settings the policy refuses.
                checked += 1
                any_request = next((json.loads(c["args"][0]) for c in case["calls"] if c["function"] == "validate"), None)
                p = run(artifact, any_request or SOME_POD, refused[0]["args"][0], [])
                if p.returncode == 0 or refused[0]["answer"]["message"] not in p.stderr + p.stdout:
                    failed += 1
                    print("FAIL %s (%s): kwctl did not refuse the settings with %r: %s" % (
                        name, rule, refused[0]["answer"]["message"], (p.stderr + p.stdout).strip()[-600:]))
                continue
            for call in case["calls"]:
                if call["function"] != "validate":
                    continue
                checked += 1
                request = json.loads(call["args"][0])
                p = run(artifact, request, call["args"][1], call["lookups"])
                if p.returncode != 0:
                    bad = ["kwctl exited with %d: %s" % (p.returncode, p.stderr.strip()[-600:])]
                else:
                    bad = differences(call["answer"], json.loads(p.stdout), request)
                if bad:
                    failed += 1
                    print("FAIL %s (%s): %s" % (name, rule, "; ".join(bad)))
        print("%-24s done: %d checked so far, %d failed" % (rule, checked, failed), flush=True)
    print("kwctl: %d checked, %d failed" % (checked, failed))
    return failed == 0 and checked > 0


def policy_server(url, policies, directory):
    with open(policies) as f:
        served = yaml.safe_load(f)
    checked = failed = skipped = 0
    for rule, record in records(directory):
        if rule not in served:
            continue
        settings = served[rule].get("settings") or {}
        for case in record["cases"]:
            for call in case["calls"]:
                if call["function"] != "validate":
                    continue
                if json.loads(call["args"][1]) != settings or call["lookups"]:
                    skipped += 1
                    continue
                checked += 1
                request = json.loads(call["args"][0])
                body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request})
                post = urllib.request.Request("%s/validate/%s" % (url, rule), data=body.encode(),
                                              headers={"Content-Type": "application/json"})
                with urllib.request.urlopen(post) as answer:
                    response = json.load(answer)["response"]
                bad = differences(call["answer"], response, request)
                if bad:
                    failed += 1
                    print("FAIL %s/%s: %s" % (rule, case["case"], "; ".join(bad)))
    print("policy-server: %d checked, %d failed (%d skipped: other settings, or cluster lookups)" % (checked, failed, skipped))
    return failed == 0 and checked > 0


def main(argv):
    if len(argv) >= 4 and argv[0] == "kwctl":
        return kwctl(argv[1], argv[2], argv[3], set(argv[4:]))
    if len(argv) == 4 and argv[0] == "policy-server":
        return policy_server(argv[1], argv[2], argv[3])
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(0 if main(sys.argv[1:]) else 1)
