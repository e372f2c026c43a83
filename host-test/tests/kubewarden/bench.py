#!/usr/bin/env python3
"""What the catalogue costs behind Kubewarden's own policy-server.

`make kubewarden-bench POLICY_SERVER=… [POD_PRIVILEGED=…]` runs it:

    bench.py POLICY_SERVER AIGOV ARTIFACTS NULL_WASM OUT [--pod-privileged WASM]
             [--rounds N] [--seconds S] [--rule RULE] [--perf] [--no-cluster]

One standalone policy-server (two workers) serves, from local files:

- `null`: a waPC module that accepts without reading (host-test/bench/null-policy),
  the floor every other figure is divided by;
- `pod-privileged`: Kubewarden's own policy, if its module is given;
- one rule alone (`--rule`, default gpu-runtime-class), with the settings
  `aigov manifests` writes for it;
- `bundle-lookup-free`: aigov-bundle running every rule that reads nothing
  from the cluster;
- `bundle-all`: aigov-bundle running all twenty rules, several of which
  look the cluster up;
- `bundle-all-preinit`: the same module and settings, pre-initialised with
  those settings (`aigov build preinit`), which must answer every request
  as `bundle-all` does.

The cluster is the harness's benchmark cluster (`bench_cluster` in
host-test/src/tools/bench.rs, written to OUT/cluster): the benchmark Pod as
`llm-finetune-worker-0` in `ml-training`, and the Namespaces `ml-training`
and `ml-platform`, labelled `team: ml`. A fixture API server on loopback
(apiserver.py, in a thread of this script) serves it over plain HTTP, and
policy-server finds it through the kubeconfig OUT/kubeconfig (`KUBECONFIG`;
kube-rs infers its client from it, no flag needed). policy-server keeps a
reflector (a list, then a watch that stays open) for each list a rule
makes and caches each get for 5 s, so that once warm `bundle-all`'s
lookups are mostly answered from policy-server's memory, as in a cluster.
Before timing, `bundle-all`'s answer to each request must be the one
`aigov eval aigov-bundle --cluster OUT/cluster` gives with the same
settings (allowed, message, warnings, whether it mutates), and
policy-server must have logged no ERROR; the API server's requests are
shown (OUT/apiserver.log has them all). With `--no-cluster` there is
none: the lookups get policy-server's error at once, logged at ERROR
level, and the rules follow `onLookupError` (gpu-quota and
tenant-node-pools then refuse the admitted Pod): the failing-lookup path
that runs before the API server measured.

Each is sent the benchmark Pods' AdmissionReviews by wrk on loopback: `pod`
(host-test/bench/pod-request.json, a GPU training Pod as the job
controller creates it, which several rules refuse) and `pod-admitted` (the
same Pod changed until every rule admits it), with 1 and with 16
connections, in rounds that take the policies in turn, so that drift in
the machine falls on all alike.
The medians over the rounds of wrk's p50 latency and of its throughput
are printed as a Markdown table, with their ratio to `null`'s, last,
beside what policy-server's process spent per request at 16 connections
(from /proc/PID/stat): CPU time in user space and in the kernel, and
minor page faults, which is where a fresh instance's memory shows.
Before timing, each policy's answer is fetched once and shown, so that a
policy that errors is seen rather than timed.

With `--perf`, one more run per policy (the admitted Pod, 16 connections)
is sampled by `perf record`, and its CPU time per request is split by
where it ran: the guest's compiled code (perf's `[JIT]`), policy-server's
own code (wasmtime, the HTTP server, JSON), libc, and the kernel.
"""
import argparse
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

import yaml

sys.dont_write_bytecode = True  # no __pycache__ in the source tree for apiserver.py
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import apiserver  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.join(HERE, "..", "..", "bench")
REQUESTS = {"pod": "pod-request.json", "pod-admitted": "pod-admitted-request.json"}
LUA = """wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local f = assert(io.open(os.getenv("AIGOV_BENCH_BODY"), "rb"))
wrk.body = f:read("*a")
f:close()
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def manifests(aigov, artifacts, out, enable):
    """policies.yml as `aigov manifests` writes it with `enable` on."""
    subprocess.run(
        [aigov, "manifests", "--artifacts", artifacts, "--output", out, "--registry", "bench.invalid/aigov",
         "--enable", ",".join(enable)],
        check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(out, "policies.yml")) as f:
        return yaml.safe_load(f)


def local(entry, module):
    """A policies.yml entry served from a file instead of the registry."""
    entry = dict(entry)
    entry["module"] = "file://" + os.path.abspath(module)
    return entry


def wait_ready(url, log, proc):
    for _ in range(3000):
        if proc.poll() is not None:
            break
        try:
            urllib.request.urlopen(url, timeout=1)
            return
        except OSError:
            time.sleep(0.2)
    sys.stderr.write("policy-server did not become ready; its log:\n" + open(log).read()[-4000:])
    sys.exit(1)


def answer(url, body):
    """policy-server's AdmissionResponse to `body`."""
    req = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.load(r)["response"]


def verdict(response):
    message = (response.get("status") or {}).get("message", "")
    verdict = "accepted" if response.get("allowed") else "rejected"
    if response.get("patch"):
        verdict += ", mutated"
    return verdict + (": " + message.split("\n")[0][:110] + "…" if message else "")


def bench_cluster(out):
    """The harness's benchmark cluster (`bench_cluster` in
    host-test/src/tools/bench.rs, without its crowd of CPU pods), written to
    OUT/cluster as `aigov eval --cluster` reads it: the benchmark Pod as
    `llm-finetune-worker-0` in `ml-training`, and the Namespaces
    `ml-training` and `ml-platform`, each labelled `team: ml`."""
    with open(os.path.join(BENCH, REQUESTS["pod"])) as f:
        pod = json.load(f)["object"]
    pod["metadata"]["name"] = "llm-finetune-worker-0"
    pod["metadata"]["namespace"] = "ml-training"
    objects = [pod] + [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": {"team": "ml"}}}
                       for name in ("ml-training", "ml-platform")]
    directory = os.path.join(out, "cluster")
    os.makedirs(directory, exist_ok=True)
    for stale in os.listdir(directory):
        os.remove(os.path.join(directory, stale))
    with open(os.path.join(directory, "bench-cluster.yaml"), "w") as f:
        yaml.safe_dump_all(objects, f, sort_keys=False)
    return directory


def essentials(allowed, message, warnings, mutated):
    return {"allowed": bool(allowed), "message": message or "", "warnings": list(warnings or []), "mutated": bool(mutated)}


def harness_answer(aigov, artifacts, review, cluster, settings):
    """What aigov's own harness answers for aigov-bundle with these
    settings and this cluster (`aigov eval --format json`)."""
    run = subprocess.run([aigov, "eval", "aigov-bundle", review, "--cluster", cluster, "--settings", settings,
                          "--artifacts", artifacts, "--format", "json"], capture_output=True, text=True)
    if run.returncode not in (0, 1):
        sys.stderr.write("aigov eval failed (%d):\n%s" % (run.returncode, run.stderr))
        sys.exit(1)
    r = json.loads(run.stdout)
    return essentials(r.get("accepted"), r.get("message"), r.get("warnings"), r.get("mutated_object"))


def error_lines(log):
    """policy-server's ERROR lines (its colours taken out: it writes them
    even with --log-no-color)."""
    with open(log, errors="replace") as f:
        lines = [re.sub(r"\x1b\[[0-9;]*m", "", line).rstrip() for line in f]
    return [line for line in lines if re.search(r"\bERROR\b", line)]


# What a kube-rs watcher logs when a watch it had open ends badly and it
# starts another (kube-runtime's `watcher::Error` variants): the reflector
# lists or watches again and its cache stays whole. Any other ERROR line is
# a lookup a policy asked for that failed, a wrong answer.
RECONNECT = re.compile(r"WatchStartFailed|WatchFailed|WatchError|InitialListFailed|watcher error", re.I)


# What policy-server logs when a guest runs past its deadline (2 s): the
# request is answered with an error, a wrong answer too, but not a lookup's.
INTERRUPTED = re.compile(r"execution deadline exceeded|policy execution time exceeded")


def split_errors(lines):
    """ERROR lines as (failed lookups and other errors, watcher reconnects)."""
    failed = [line for line in lines if not RECONNECT.search(line)]
    return failed, [line for line in lines if RECONNECT.search(line)]


def describe_failures(failed):
    """What the failed ERROR lines were: guests interrupted at the deadline,
    or lookups (and anything else) that failed."""
    if failed and all(INTERRUPTED.search(line) or "Failure invoking guest module handler" in line for line in failed):
        return "policy-server interrupted requests at its execution deadline (a machine too loaded to time on?)"
    return "policy-server logged failed lookups with a cluster to ask"


def requests_made(log, since=0):
    """The API server's requests from line `since` of its log, counted."""
    with open(log) as f:
        lines = [line.split(" ", 1)[1].rstrip() for line in f][since:]
    counts = {}
    for line in lines:
        counts[line] = counts.get(line, 0) + 1
    return len(lines), counts


def to_ms(text):
    value, unit = re.fullmatch(r"([\d.]+)(us|ms|s)", text).groups()
    return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]


def process_counters(pid):
    """(minor faults, user seconds, system seconds) of a process so far."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[7]), int(fields[11]) / tick, int(fields[12]) / tick


def wrk(url, connections, seconds, lua, body, pid):
    """wrk's p50 (ms) and requests per second, and the server's minor faults,
    user and system CPU microseconds per request over the run."""
    env = dict(os.environ, AIGOV_BENCH_BODY=body)
    before = process_counters(pid)
    threads = min(connections, 2)
    out = subprocess.run(
        ["wrk", "-t%d" % threads, "-c%d" % connections, "-d%ds" % seconds, "--latency", "-s", lua, url],
        check=True, capture_output=True, text=True, env=env).stdout
    after = process_counters(pid)
    p50 = re.search(r"^\s+50%\s+(\S+)", out, re.M)
    done = re.search(r"^\s+(\d+) requests in", out, re.M)
    rps = re.search(r"^Requests/sec:\s+([\d.]+)", out, re.M)
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)|Socket errors: .*", out)
    if not p50 or not rps or not done or errors:
        sys.stderr.write("wrk on %s:\n%s" % (url, out))
        sys.exit(1)
    n = int(done.group(1))
    faults, user, system = ((a - b) / n for a, b in zip(after, before))
    return to_ms(p50.group(1)), float(rps.group(1)), faults, user * 1e6, system * 1e6


def perf_split(url, lua, body, pid, seconds, out):
    """CPU microseconds per request by where they ran: `perf record`
    samples policy-server through one wrk run at 16 connections."""
    data = os.path.join(out, "perf.data")
    perf = subprocess.Popen(["perf", "record", "-q", "-F", "999", "-p", str(pid), "-o", data],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    _, _, _, user, system = wrk(url, 16, seconds, lua, body, pid)
    perf.send_signal(signal.SIGINT)
    perf.wait()
    report = subprocess.run(["perf", "report", "-i", data, "--sort", "dso", "--stdio"],
                            check=True, capture_output=True, text=True).stdout
    split = {"guest": 0.0, "policy-server": 0.0, "libc": 0.0, "kernel": 0.0}
    for share, dso in re.findall(r"^\s+([\d.]+)%\s+(.+?)\s*$", report, re.M):
        where = ("guest" if dso.startswith("[JIT]") else "kernel" if dso.startswith("[kernel") else
                 "libc" if dso.startswith("lib") else "policy-server")
        split[where] += float(share) / 100 * (user + system)
    return split


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("server")
    ap.add_argument("aigov")
    ap.add_argument("artifacts")
    ap.add_argument("null_wasm")
    ap.add_argument("out")
    ap.add_argument("--pod-privileged")
    ap.add_argument("--rule", default="gpu-runtime-class")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--perf", action="store_true", help="split CPU time by where it ran (perf record)")
    ap.add_argument("--no-cluster", action="store_true",
                    help="no API server: bundle-all's lookups fail (the failing-lookup path)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    out = os.path.abspath(args.out)

    rules = [line.split()[0] for line in subprocess.run(
        [args.aigov, "rules"], check=True, capture_output=True, text=True).stdout.splitlines() if line.strip()]
    every = manifests(args.aigov, args.artifacts, os.path.join(out, "all"), rules)
    lookup_free = [r for r in rules if not every[r].get("contextAwareResources")]
    some = manifests(args.aigov, args.artifacts, os.path.join(out, "lookup-free"), lookup_free)
    bundle_wasm = os.path.join(args.artifacts, "bundle", "policy.wasm")

    policies = {"null": {"module": "file://" + os.path.abspath(args.null_wasm), "settings": {}}}
    if args.pod_privileged:
        policies["pod-privileged"] = {"module": "file://" + os.path.abspath(args.pod_privileged), "settings": {}}
    policies[args.rule] = local(every[args.rule], os.path.join(args.artifacts, args.rule, "policy.wasm"))
    policies["bundle-lookup-free"] = local(some["aigov-bundle"], bundle_wasm)
    policies["bundle-all"] = local(every["aigov-bundle"], bundle_wasm)
    # The same bundle pre-initialised with bundle-all's settings (`aigov
    # build preinit`): a fresh instance starts with them read.
    baked_settings = os.path.join(out, "bundle-all-preinit-settings.json")
    with open(baked_settings, "w") as f:
        json.dump(every["aigov-bundle"].get("settings") or {}, f)
    baked_wasm = os.path.join(out, "bundle-all-preinit.wasm")
    subprocess.run([args.aigov, "build", "preinit", bundle_wasm, "--settings", baked_settings, "--output", baked_wasm],
                   check=True, stdout=subprocess.DEVNULL)
    policies["bundle-all-preinit"] = local(every["aigov-bundle"], baked_wasm)
    config = os.path.join(out, "policies.yml")
    with open(config, "w") as f:
        yaml.safe_dump(policies, f, sort_keys=False)

    bodies = {}
    for label, name in REQUESTS.items():
        with open(os.path.join(BENCH, name)) as f:
            review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": json.load(f)}
        body_file = os.path.join(out, label + ".json")
        with open(body_file, "w") as f:
            json.dump(review, f, separators=(",", ":"))
        with open(body_file, "rb") as f:
            bodies[label] = (body_file, f.read())
    lua = os.path.join(out, "post.lua")
    with open(lua, "w") as f:
        f.write(LUA)

    port, ready = free_port(), free_port()
    log = os.path.join(out, "policy-server.log")
    # No backtraces: anyhow would capture one for every failed lookup. No
    # proxy: kube-rs would send the API server's requests through it. No
    # in-cluster service: kube-rs's only other source of a cluster.
    env = {k: v for k, v in os.environ.items()
           if k.lower() not in ("https_proxy", "http_proxy", "all_proxy") and not k.startswith("KUBERNETES_SERVICE_")}
    env.update(RUST_BACKTRACE="0", RUST_LIB_BACKTRACE="0", KUBECONFIG=os.path.join(out, "kubeconfig"))
    flags = []
    cluster, api = bench_cluster(out), None
    api_log = os.path.join(out, "apiserver.log")
    if args.no_cluster:
        # A kubeconfig that is not there: kube-rs finds no cluster, and
        # policy-server starts without one when told to.
        if os.path.exists(env["KUBECONFIG"]):
            os.remove(env["KUBECONFIG"])
        flags.append("--ignore-kubernetes-connection-failure")
    else:
        api = apiserver.serve(cluster, log=open(api_log, "w"))
        apiserver.write_kubeconfig(api.url, env["KUBECONFIG"])
    with open(log, "w") as logf:
        server = subprocess.Popen(
            [args.server, "--policies", config, "--workers", "2", *flags,
             "--policies-download-dir", os.path.join(out, "downloads"), "--addr", "127.0.0.1", "--port", str(port),
             "--readiness-probe-port", str(ready), "--log-level", "warn", "--log-no-color"],
            stdout=logf, stderr=subprocess.STDOUT, env=env)
    try:
        wait_ready("http://127.0.0.1:%d/readiness" % ready, log, server)
        base = "http://127.0.0.1:%d/validate/" % port
        print("%d rules in bundle-all; %d in bundle-lookup-free (%s)" % (len(rules), len(lookup_free), ", ".join(lookup_free)))
        if api:
            print("policy-server --workers 2, the benchmark cluster served by a fixture API server (%s)" % api.url)
        else:
            print("policy-server --workers 2, no cluster")
        answers = {}
        for label, (_, body) in bodies.items():
            print("%s (%d bytes):" % (label, len(body)))
            for name in policies:
                answers[(label, name)] = answer(base + name, body)
                print("  %-20s %s" % (name, verdict(answers[(label, name)])))
        sys.stdout.flush()
        if api:
            # bundle-all must answer as aigov's harness does with the same
            # cluster, and its lookups must all have been answered.
            settings = os.path.join(out, "bundle-all-settings.json")
            with open(settings, "w") as f:
                json.dump(policies["bundle-all"].get("settings") or {}, f)
            for label, (body_file, _) in bodies.items():
                if answers[(label, "bundle-all-preinit")] != answers[(label, "bundle-all")]:
                    sys.stderr.write("bundle-all-preinit on %s answers\n%s\nbut bundle-all answers\n%s\n" % (
                        label, json.dumps(answers[(label, "bundle-all-preinit")], indent=1),
                        json.dumps(answers[(label, "bundle-all")], indent=1)))
                    sys.exit(1)
                got = answers[(label, "bundle-all")]
                got = essentials(got.get("allowed"), (got.get("status") or {}).get("message"), got.get("warnings"),
                                 got.get("patch"))
                want = harness_answer(args.aigov, args.artifacts, body_file, cluster, settings)
                if got != want:
                    sys.stderr.write("bundle-all on %s: policy-server answers\n%s\nbut aigov eval --cluster answers\n%s\n" % (
                        label, json.dumps(got, indent=1), json.dumps(want, indent=1)))
                    sys.exit(1)
            failed, reconnects = split_errors(error_lines(log))
            if failed:
                sys.stderr.write("%s:\n%s\n" % (describe_failures(failed), "\n".join(failed[:20])))
                sys.exit(1)
            asked, counts = requests_made(api_log)
            print("bundle-all answers as `aigov eval --cluster` does on every request; no lookup errors")
            print("policy-server asked the API server (%d requests):" % asked)
            for line, n in counts.items():
                print("  %3d x %s" % (n, line))
            sys.stdout.flush()
            asked_before = asked
        # Warm each policy's workers before the first timed round.
        for name in policies:
            wrk(base + name, 2, 1, lua, bodies["pod"][0], server.pid)
        samples = {(label, name, c): [] for label in bodies for name in policies for c in (1, 16)}
        for r in range(args.rounds):
            for label, (body_file, _) in bodies.items():
                for name in policies:
                    for c in (1, 16):
                        samples[(label, name, c)].append(wrk(base + name, c, args.seconds, lua, body_file, server.pid))
            print("round %d of %d done" % (r + 1, args.rounds), file=sys.stderr)
        if api:
            # Nothing a reconnect did may change an answer.
            for label, (_, body) in bodies.items():
                for name in policies:
                    again = answer(base + name, body)
                    if verdict(again) != verdict(answers[(label, name)]):
                        sys.stderr.write("%s on %s answered %s before the rounds and %s after them\n" % (
                            name, label, verdict(answers[(label, name)]), verdict(again)))
                        sys.exit(1)
        if args.perf:
            splits = {name: perf_split(base + name, lua, bodies["pod-admitted"][0], server.pid, args.seconds, out)
                      for name in policies}
    finally:
        server.terminate()
        server.wait()
        if api:
            api.stop()
    if not api:
        print("policy-server logged %d ERROR lines (failed lookups)" % len(error_lines(log)), file=sys.stderr)
    else:
        failed, reconnects = split_errors(error_lines(log))
        asked, counts = requests_made(api_log, asked_before)
        print("while timed, policy-server asked the API server %d more times: %s" % (
            asked, ", ".join("%d x %s" % (n, line) for line, n in counts.items()) or "nothing"), file=sys.stderr)
        if failed:
            sys.stderr.write("%s:\n%s\n" % (describe_failures(failed), "\n".join(failed[:20])))
            sys.exit(1)
        if reconnects:
            # A watch that ends and re-opens is ordinary: say so, and show
            # that nothing was lost (the answers after the rounds are the
            # answers before them).
            print("policy-server's reflectors re-opened a watch %d times while timed (first: %s); every answer after the "
                  "rounds is the one before them" % (len(reconnects), reconnects[0][:160]), file=sys.stderr)

    def median(label, name, c, i):
        return statistics.median(s[i] for s in samples[(label, name, c)])

    print()
    print("| request | policy | p50, 1 conn | x null | p50, 16 conns | x null | req/s, 16 conns | x null "
          "| user CPU/req | kernel CPU/req | faults/req |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for label in bodies:
        floor = {c: (median(label, "null", c, 0), median(label, "null", c, 1)) for c in (1, 16)}
        for name in policies:
            p1, p16, t16 = (median(label, name, 1, 0), median(label, name, 16, 0), median(label, name, 16, 1))
            faults, user, system = (median(label, name, 16, i) for i in (2, 3, 4))
            print("| %s | %s | %.3f ms | %.2fx | %.3f ms | %.2fx | %.0f | %.2fx | %.0f µs | %.0f µs | %.1f |" % (
                label, name, p1, p1 / floor[1][0], p16, p16 / floor[16][0], t16, t16 / floor[16][1], user, system, faults))
    if args.perf:
        print("\nCPU per request by where it ran (perf record; pod-admitted, 16 connections):\n")
        print("| policy | guest code | policy-server (wasmtime, HTTP, JSON) | libc | kernel | total |")
        print("| --- | ---: | ---: | ---: | ---: | ---: |")
        for name, split in splits.items():
            print("| %s | %s | %.0f µs |" % (name, " | ".join("%.0f µs" % v for v in split.values()), sum(split.values())))
    print("\nmedians of %d interleaved rounds of %d s per policy and connection count" % (args.rounds, args.seconds))


if __name__ == "__main__":
    main()
