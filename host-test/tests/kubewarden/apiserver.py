#!/usr/bin/env python3
"""A fixture Kubernetes API server: fixed objects, read-only, on loopback.

    apiserver.py CLUSTER [--port N] [--kubeconfig FILE] [--log FILE | --verbose]

CLUSTER is what `aigov eval --cluster` takes: a file or a directory of
YAML or JSON files, each holding one object, several YAML documents or a
`List`. The objects are served over plain HTTP, with no authentication,
well enough for kube-rs's client as Kubewarden's policy-server uses it
(`kubernetes/get_resource`, `list_resources_by_namespace`,
`list_resources_all`):

- discovery: `/version`, `/api`, `/api/v1`, `/apis` and
  `/apis/GROUP/VERSION`, for the built-in kinds the rules look up (and a
  few more) and every kind of the loaded objects;
- GET of one object, and a `Status` with 404 when there is none;
- LIST of a kind, in a namespace or cluster-wide, as a `<Kind>List` with a
  `metadata.resourceVersion`, filtered by `labelSelector` (`labels.Parse`
  syntax) and `fieldSelector` (`=`, `==`, `!=` on the fields the API server
  indexes); a selector it would refuse gets a 400 `Status`. `limit` pages
  with a `continue` token;
- WATCH (`watch=true` or `watch=1`): a chunked stream of JSON lines that
  stays open, sending a BOOKMARK every `--bookmark-seconds` (when the
  client asked for them), until the client's `timeoutSeconds` or until the
  server stops, which ends every stream with its last chunk. Nothing ever
  changes, so a watch from a resourceVersion sends no other event; one
  from none (or "0") first sends every object as ADDED.

As the API server (and `aigov eval --cluster`) do, every v1 Namespace
carries the label `kubernetes.io/metadata.name` with its name. Objects are
served as loaded (items of a list keep their `apiVersion` and `kind`, as
`aigov eval --cluster` returns them), with no `resourceVersion` of their
own but in watch events.

With `--kubeconfig FILE`, a kubeconfig naming the server is written there
(`KUBECONFIG=FILE` points kube-rs at it). Each request's method, path and
query is logged on a line of its own to `--log FILE`, or to stderr with
`--verbose`. `serve()` runs the same server in a thread of another program
(bench.py).
"""
import argparse
import json
import os
import re
import signal
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

RESOURCE_VERSION = "1"
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
ALL_VERBS = ["get", "list", "watch"]

# (group, version, kind, plural, namespaced): the kinds served even with no
# object of theirs, so that a lookup of them is answered (an empty list, a
# 404) rather than refused by discovery. Every kind aigov's rules declare
# in `contextAwareResources` is here, and the usual others.
KNOWN = [
    ("", "v1", "Namespace", "namespaces", False),
    ("", "v1", "Node", "nodes", False),
    ("", "v1", "PersistentVolume", "persistentvolumes", False),
    ("", "v1", "Pod", "pods", True),
    ("", "v1", "ResourceQuota", "resourcequotas", True),
    ("", "v1", "LimitRange", "limitranges", True),
    ("", "v1", "ReplicationController", "replicationcontrollers", True),
    ("", "v1", "Service", "services", True),
    ("", "v1", "ServiceAccount", "serviceaccounts", True),
    ("", "v1", "ConfigMap", "configmaps", True),
    ("", "v1", "Secret", "secrets", True),
    ("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", True),
    ("", "v1", "Event", "events", True),
    ("apps", "v1", "Deployment", "deployments", True),
    ("apps", "v1", "StatefulSet", "statefulsets", True),
    ("apps", "v1", "ReplicaSet", "replicasets", True),
    ("apps", "v1", "DaemonSet", "daemonsets", True),
    ("batch", "v1", "Job", "jobs", True),
    ("batch", "v1", "CronJob", "cronjobs", True),
    ("node.k8s.io", "v1", "RuntimeClass", "runtimeclasses", False),
    ("scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses", False),
    ("resource.k8s.io", "v1", "ResourceClaim", "resourceclaims", True),
    ("resource.k8s.io", "v1", "ResourceClaimTemplate", "resourceclaimtemplates", True),
    ("resource.k8s.io", "v1", "DeviceClass", "deviceclasses", False),
    ("resource.k8s.io", "v1", "ResourceSlice", "resourceslices", False),
    ("leaderworkerset.x-k8s.io", "v1", "LeaderWorkerSet", "leaderworkersets", True),
    ("kueue.x-k8s.io", "v1beta1", "LocalQueue", "localqueues", True),
    ("kueue.x-k8s.io", "v1beta1", "ClusterQueue", "clusterqueues", False),
    ("kueue.x-k8s.io", "v1beta1", "ResourceFlavor", "resourceflavors", False),
    ("kueue.x-k8s.io", "v1beta1", "Workload", "workloads", True),
    ("ray.io", "v1", "RayCluster", "rayclusters", True),
    ("ray.io", "v1", "RayJob", "rayjobs", True),
    ("ray.io", "v1", "RayService", "rayservices", True),
    ("kubeflow.org", "v1", "PyTorchJob", "pytorchjobs", True),
    ("scheduling.volcano.sh", "v1beta1", "Queue", "queues", False),
    ("scheduling.volcano.sh", "v1beta1", "PodGroup", "podgroups", True),
    ("batch.volcano.sh", "v1alpha1", "Job", "jobs", True),
]

# Field labels the API server indexes beyond metadata.name and
# metadata.namespace, as (group, kind) -> {label: default when absent}.
FIELDS = {
    ("", "Pod"): {"spec.nodeName": "", "spec.restartPolicy": "", "spec.schedulerName": "",
                  "spec.serviceAccountName": "", "status.phase": "", "status.podIP": "",
                  "status.nominatedNodeName": "", "spec.hostNetwork": "false"},
    ("", "Namespace"): {"status.phase": ""},
    ("", "Node"): {"spec.unschedulable": "false"},
    ("", "Secret"): {"type": ""},
    ("", "ReplicationController"): {"status.replicas": "0"},
    ("apps", "ReplicaSet"): {"status.replicas": "0"},
}
FIELD_PATHS = {"status.successful": "status.succeeded"}


def plural_of(kind):
    k = kind.lower()
    if k.endswith(("s", "x", "ch", "sh")):
        return k + "es"
    if k.endswith("y") and k[-2:-1] not in "aeiou":
        return k[:-1] + "ies"
    return k + "s"


def load_objects(path):
    """Every object under `path` (a file or a directory, read in name order),
    `List`s flattened, as `aigov eval --cluster` reads them."""
    files = []
    if os.path.isfile(path):
        files = [path]
    else:
        for root, _, names in os.walk(path):
            files += [os.path.join(root, n) for n in names if n.endswith((".yaml", ".yml", ".json"))]
    objects = []

    def add(o):
        if not o:
            return
        kind = o.get("kind", "")
        if kind == "List" or kind.endswith("List") and "items" in o:
            for item in o.get("items") or []:
                add(item)
            return
        if not o.get("apiVersion") or not kind:
            raise ValueError("a fixture object needs `apiVersion` and `kind`")
        if kind == "LookupFailure":
            return  # aigov's own fixture kind: nothing an API server serves
        if kind == "Namespace" and o["apiVersion"] == "v1":
            meta = o.setdefault("metadata", {})
            if not meta.get("labels"):
                meta["labels"] = {}
            meta["labels"][NAMESPACE_NAME_LABEL] = meta.get("name", "")
        objects.append(o)

    for f in sorted(files):
        with open(f) as fh:
            if f.endswith(".json"):
                add(json.load(fh))
                continue
            import yaml  # only for YAML fixtures: JSON ones need the standard library alone

            for doc in yaml.safe_load_all(fh):
                add(doc)
    return objects


class BadRequest(Exception):
    pass


def split_terms(s):
    """Splits a selector on the commas outside parentheses."""
    out, cur, depth = [], "", 0
    for c in s:
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        if c == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += c
    out.append(cur)
    return [t.strip() for t in out if t.strip()]


LABEL_TERM = re.compile(
    r"^(?:(?P<not>!)\s*(?P<nkey>[\w./-]+)"
    r"|(?P<key>[\w./-]+)\s*(?:(?P<op>==|!=|=|>|<)\s*(?P<value>[\w.-]*)"
    r"|\s+(?P<set>in|notin)\s*\((?P<values>[^()]*)\))?)$")


def parse_labels(selector):
    """`labels.Parse`'s syntax, as a list of predicates on a labels map."""
    reqs = []
    for term in split_terms(selector or ""):
        m = LABEL_TERM.match(term)
        if not m:
            raise BadRequest("unable to parse requirement: %r" % term)
        if m.group("not"):
            key = m.group("nkey")
            reqs.append(lambda l, k=key: k not in l)
        elif m.group("op"):
            key, op, value = m.group("key"), m.group("op"), m.group("value")
            if op in ("=", "=="):
                reqs.append(lambda l, k=key, v=value: l.get(k) == v)
            elif op == "!=":
                reqs.append(lambda l, k=key, v=value: l.get(k) != v)
            else:
                try:
                    bound = int(value)
                except ValueError:
                    raise BadRequest("for 'gt', 'lt' operators, the value must be an integer")

                def compare(l, k=key, b=bound, gt=op == ">"):
                    try:
                        n = int(l[k])
                    except (KeyError, ValueError):
                        return False
                    return n > b if gt else n < b
                reqs.append(compare)
        elif m.group("set"):
            key = m.group("key")
            values = {v.strip() for v in m.group("values").split(",") if v.strip()}
            if m.group("set") == "in":
                reqs.append(lambda l, k=key, vs=values: l.get(k) in vs)
            else:
                reqs.append(lambda l, k=key, vs=values: l.get(k) not in vs)
        else:
            key = m.group("key")
            reqs.append(lambda l, k=key: k in l)
    return reqs


def field_value(o, path, default):
    value = o
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    if value is None:
        return default
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def parse_fields(selector, group, kind):
    """`fields.ParseSelector` on the field labels the kind indexes."""
    reqs = []
    indexed = FIELDS.get((group, kind), {})
    custom = "." in group and not group.endswith(".k8s.io")
    for term in split_terms(selector or ""):
        m = re.match(r"^([\w./-]+)\s*(==|!=|=)\s*(.*)$", term)
        if not m:
            raise BadRequest("invalid selector: %r; can't understand %r" % (selector, term))
        label, op, value = m.groups()
        if label in ("metadata.name", "metadata.namespace"):
            default = ""
        elif label in indexed:
            default = indexed[label]
        elif custom:
            default = ""
        else:
            raise BadRequest('field label not supported: %s' % label)
        path = FIELD_PATHS.get(label, label)
        if op == "!=":
            reqs.append(lambda o, p=path, d=default, v=value: field_value(o, p, d) != v)
        else:
            reqs.append(lambda o, p=path, d=default, v=value: field_value(o, p, d) == v)
    return reqs


class Cluster:
    """The objects, indexed by (group, version, plural)."""

    def __init__(self, objects):
        self.resources = {}  # (group, version) -> {plural: (kind, namespaced)}
        for group, version, kind, plural, namespaced in KNOWN:
            self.resources.setdefault((group, version), {})[plural] = (kind, namespaced)
        self.objects = {}  # (group, version, plural) -> [object]
        for o in objects:
            group, _, version = o["apiVersion"].rpartition("/")
            kinds = self.resources.setdefault((group, version), {})
            found = [p for p, (k, _) in kinds.items() if k == o["kind"]]
            if found:
                plural = found[0]
            else:
                plural = plural_of(o["kind"])
                kinds[plural] = (o["kind"], bool(o.get("metadata", {}).get("namespace")))
            self.objects.setdefault((group, version, plural), []).append(o)

    def api_resource_list(self, group, version):
        kinds = self.resources.get((group, version))
        if kinds is None:
            return None
        return {
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": "%s/%s" % (group, version) if group else version,
            "resources": [{"name": plural, "singularName": kind.lower(), "namespaced": namespaced,
                           "kind": kind, "verbs": ALL_VERBS}
                          for plural, (kind, namespaced) in sorted(kinds.items())],
        }

    def api_group_list(self):
        groups = {}
        for group, version in self.resources:
            if group:
                groups.setdefault(group, []).append(version)
        items = []
        for group, versions in sorted(groups.items()):
            gv = [{"groupVersion": "%s/%s" % (group, v), "version": v} for v in sorted(versions)]
            items.append({"name": group, "versions": gv, "preferredVersion": gv[0]})
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": items}


def status(code, reason, message, details=None):
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}
    if details:
        body["details"] = details
    return code, body


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "aigov-fixture-apiserver"

    def log_message(self, *args):
        pass

    def setup(self):
        super().setup()
        with self.server.lock:
            self.server.connections.add(self.connection)

    def finish(self):
        with self.server.lock:
            self.server.connections.discard(self.connection)
        super().finish()

    def send_json(self, code, body):
        data = json.dumps(body, separators=(",", ":")).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        self.server.log_request_line("GET " + self.path)
        query = dict(urllib.parse.parse_qsl(url.query, keep_blank_values=True))
        parts = [urllib.parse.unquote(p) for p in url.path.strip("/").split("/") if p]
        try:
            answer = self.route(parts, query)
        except BadRequest as e:
            answer = status(400, "BadRequest", str(e))
        if answer is not None:
            self.send_json(*answer)

    def do_POST(self):
        self.server.log_request_line("POST " + self.path)
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        self.send_json(*status(405, "MethodNotAllowed", "the fixture API server is read-only"))

    do_PUT = do_PATCH = do_DELETE = do_POST

    def route(self, parts, query):
        cluster = self.server.cluster
        if parts == ["version"]:
            return 200, {"major": "1", "minor": "34", "gitVersion": "v1.34.0-aigov-fixture",
                         "platform": "linux/amd64"}
        if parts == ["api"]:
            return 200, {"kind": "APIVersions", "versions": ["v1"],
                         "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]}
        if parts == ["apis"]:
            return 200, cluster.api_group_list()
        if parts[:1] == ["api"] and len(parts) >= 2:
            group, version, rest = "", parts[1], parts[2:]
        elif parts[:1] == ["apis"] and len(parts) >= 3:
            group, version, rest = parts[1], parts[2], parts[3:]
        elif parts[:1] == ["apis"] and len(parts) == 2:
            groups = [g for g in cluster.api_group_list()["groups"] if g["name"] == parts[1]]
            if groups:
                return 200, dict(groups[0], kind="APIGroup", apiVersion="v1")
            return status(404, "NotFound", "the server could not find the requested resource")
        else:
            return status(404, "NotFound", "the server could not find the requested resource")
        kinds = cluster.resources.get((group, version))
        if kinds is None:
            return status(404, "NotFound", "the server could not find the requested resource")
        if not rest:
            return 200, cluster.api_resource_list(group, version)
        namespace = None
        if rest[0] == "namespaces" and len(rest) >= 3:
            namespace, rest = rest[1], rest[2:]
        if len(rest) > 2 or rest[0] not in kinds:
            return status(404, "NotFound", "the server could not find the requested resource")
        plural = rest[0]
        kind, namespaced = kinds[plural]
        if namespace is not None and not namespaced:
            return status(404, "NotFound", "the server could not find the requested resource")
        objects = [o for o in cluster.objects.get((group, version, plural), [])
                   if namespace is None or o.get("metadata", {}).get("namespace") == namespace]
        if len(rest) == 2:
            name = rest[1]
            if namespaced and namespace is None:
                return status(404, "NotFound", "the server could not find the requested resource")
            for o in objects:
                if o.get("metadata", {}).get("name") == name:
                    return 200, o
            return status(404, "NotFound", '%s "%s" not found' % (plural if not group else plural + "." + group, name),
                          {"name": name, "group": group, "kind": plural})
        labels = parse_labels(query.get("labelSelector"))
        fields = parse_fields(query.get("fieldSelector"), group, kind)
        selected = [o for o in objects
                    if all(r(o.get("metadata", {}).get("labels") or {}) for r in labels)
                    and all(r(o) for r in fields)]
        api_version = "%s/%s" % (group, version) if group else version
        if query.get("watch") in ("true", "1"):
            self.watch(api_version, kind, selected, query)
            return None
        meta = {"resourceVersion": RESOURCE_VERSION}
        start = int(query.get("continue") or 0) if (query.get("continue") or "0").isdigit() else 0
        limit = int(query["limit"]) if query.get("limit", "").isdigit() and int(query["limit"]) > 0 else None
        page = selected[start:start + limit] if limit else selected[start:]
        if limit and start + limit < len(selected):
            meta["continue"] = str(start + limit)
            meta["remainingItemCount"] = len(selected) - start - limit
        return 200, {"kind": kind + "List", "apiVersion": api_version, "metadata": meta, "items": page}

    def chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def watch(self, api_version, kind, objects, query):
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        # Like the API server, the connection stays open for the next
        # request once the stream has ended: a client that reuses it
        # (hyper does, when a watch ends and its reflector re-opens one)
        # must not find it closed under it (`IncompleteMessage`). Only a
        # client gone, or the server stopping, closes it.
        stop = self.server.stopping
        timeout = int(query["timeoutSeconds"]) if query.get("timeoutSeconds", "").isdigit() else None
        deadline = time.monotonic() + timeout if timeout else None
        bookmarks = query.get("allowWatchBookmarks") == "true"
        try:
            if query.get("resourceVersion", "0") in ("", "0"):
                for o in objects:
                    o = dict(o, metadata=dict(o.get("metadata", {}), resourceVersion=RESOURCE_VERSION))
                    self.chunk(json.dumps({"type": "ADDED", "object": o}, separators=(",", ":")).encode() + b"\n")
            bookmark = json.dumps({"type": "BOOKMARK", "object": {
                "kind": kind, "apiVersion": api_version, "metadata": {"resourceVersion": RESOURCE_VERSION}}},
                separators=(",", ":")).encode() + b"\n"
            while True:
                wait = self.server.bookmark_seconds
                if deadline is not None:
                    wait = min(wait, deadline - time.monotonic())
                if wait <= 0 or stop.wait(wait):
                    break
                if bookmarks and (deadline is None or time.monotonic() < deadline):
                    self.chunk(bookmark)
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
            if stop.is_set():
                self.close_connection = True
        except OSError:
            self.close_connection = True  # the client went away


class FixtureServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, cluster, port=0, log=None, bookmark_seconds=60.0):
        super().__init__(("127.0.0.1", port), Handler)
        self.cluster = cluster
        self.log = log
        self.bookmark_seconds = bookmark_seconds
        self.stopping = threading.Event()
        self.lock = threading.Lock()
        self.connections = set()

    def log_request_line(self, line):
        if self.log:
            with self.lock:
                self.log.write("%.3f %s\n" % (time.time(), line))
                self.log.flush()

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.server_address[1]

    def stop(self):
        """Ends every watch with its last chunk, closes idle connections and
        stops serving."""
        self.stopping.set()
        self.shutdown()
        time.sleep(0.2)  # the watches write their last chunk
        with self.lock:
            connections = list(self.connections)
        for c in connections:
            try:
                c.shutdown(2)  # socket.SHUT_RDWR: unblocks a handler waiting for the next request
            except OSError:
                pass
        self.server_close()


def kubeconfig(url):
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "aigov-fixture", "cluster": {"server": url}}],
        "users": [{"name": "aigov-fixture", "user": {}}],
        "contexts": [{"name": "aigov-fixture", "context": {"cluster": "aigov-fixture", "user": "aigov-fixture"}}],
        "current-context": "aigov-fixture",
    }


def write_kubeconfig(url, path):
    """As JSON, which kubeconfig readers take as the YAML it is."""
    with open(path, "w") as f:
        json.dump(kubeconfig(url), f, indent=2)


def serve(cluster_path, port=0, log=None, bookmark_seconds=60.0):
    """Starts the server on a thread; returns it (`.url`, `.stop()`)."""
    server = FixtureServer(Cluster(load_objects(cluster_path)), port, log, bookmark_seconds)
    threading.Thread(target=server.serve_forever, name="fixture-apiserver", daemon=True).start()
    return server


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("cluster", help="file or directory of YAML/JSON objects (as `aigov eval --cluster`)")
    ap.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: any free one)")
    ap.add_argument("--kubeconfig", help="write a kubeconfig naming the server here")
    ap.add_argument("--log", help="log each request (method, path and query) to this file")
    ap.add_argument("--verbose", action="store_true", help="log each request to stderr")
    ap.add_argument("--bookmark-seconds", type=float, default=60.0)
    args = ap.parse_args()
    log = open(args.log, "a") if args.log else sys.stderr if args.verbose else None
    server = serve(args.cluster, args.port, log, args.bookmark_seconds)
    if args.kubeconfig:
        write_kubeconfig(server.url, args.kubeconfig)
    print("serving %s on %s" % (args.cluster, server.url), file=sys.stderr, flush=True)
    done = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: done.set())
    done.wait()
    server.stop()


if __name__ == "__main__":
    main()
