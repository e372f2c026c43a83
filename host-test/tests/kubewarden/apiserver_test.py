#!/usr/bin/env python3
"""The fixture API server (apiserver.py) answers as the Kubernetes API server
does what policy-server's kube-rs client asks: discovery, get, list with
selectors and paging, and watches that stay open and end. Standard library
only (`make apiserver-check`, part of `make test`)."""
import http.client
import json
import os
import sys
import tempfile
import threading
import time
import unittest
import urllib.error
import urllib.parse
import urllib.request

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import apiserver  # noqa: E402


def pod(name, namespace, phase, labels):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace, "labels": labels},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}, "status": {"phase": phase}}


OBJECTS = {
    "namespaces.json": {"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml", "labels": {"team": "ml"}}},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}},
    ]},
    "p1.json": pod("p1", "ml", "Running", {"app": "a"}),
    "p2.json": pod("p2", "ml", "Succeeded", {"app": "b"}),
    "p3.json": pod("p3", "ml", "Pending", {"app": "b", "tier": "gpu"}),
    "p4.json": pod("p4", "other", "Running", {"app": "a"}),
}


class FixtureApiServer(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        for name, o in OBJECTS.items():
            with open(os.path.join(cls.dir.name, name), "w") as f:
                json.dump(o, f)
        cls.server = apiserver.serve(cls.dir.name, bookmark_seconds=0.1)

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        cls.dir.cleanup()

    def get(self, path, **query):
        url = self.server.url + path + ("?" + urllib.parse.urlencode(query) if query else "")
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                return r.status, json.load(r)
        except urllib.error.HTTPError as e:
            return e.code, json.load(e)

    def names(self, body):
        return [o["metadata"]["name"] for o in body["items"]]

    def test_discovery_names_the_kinds_and_their_scope(self):
        code, version = self.get("/version")
        self.assertEqual(code, 200)
        self.assertIn("gitVersion", version)
        code, core = self.get("/api/v1")
        self.assertEqual((code, core["kind"], core["groupVersion"]), (200, "APIResourceList", "v1"))
        scope = {r["name"]: r["namespaced"] for r in core["resources"]}
        self.assertEqual((scope["pods"], scope["namespaces"], scope["resourcequotas"]), (True, False, True))
        self.assertEqual(next(r for r in core["resources"] if r["name"] == "pods")["kind"], "Pod")
        code, groups = self.get("/apis")
        self.assertEqual(code, 200)
        self.assertIn("resource.k8s.io", [g["name"] for g in groups["groups"]])
        code, dra = self.get("/apis/resource.k8s.io/v1")
        self.assertIn("resourceclaims", [r["name"] for r in dra["resources"]])
        self.assertEqual(self.get("/apis/no.such.group/v1")[0], 404)

    def test_get_answers_the_object_or_not_found(self):
        code, p = self.get("/api/v1/namespaces/ml/pods/p1")
        self.assertEqual((code, p["metadata"]["name"], p["status"]["phase"]), (200, "p1", "Running"))
        code, missing = self.get("/api/v1/namespaces/ml/pods/nope")
        self.assertEqual((code, missing["kind"], missing["reason"], missing["code"]), (404, "Status", "NotFound", 404))
        self.assertEqual(missing["details"]["name"], "nope")
        # A pod of another namespace is not found in this one.
        self.assertEqual(self.get("/api/v1/namespaces/ml/pods/p4")[0], 404)
        # The API server labels every Namespace with its name.
        code, ns = self.get("/api/v1/namespaces/ml")
        self.assertEqual(ns["metadata"]["labels"], {"team": "ml", "kubernetes.io/metadata.name": "ml"})

    def test_lists_filter_by_namespace_and_selectors(self):
        code, body = self.get("/api/v1/namespaces/ml/pods")
        self.assertEqual((code, body["kind"], body["apiVersion"]), (200, "PodList", "v1"))
        self.assertTrue(body["metadata"]["resourceVersion"])
        self.assertEqual(self.names(body), ["p1", "p2", "p3"])
        self.assertEqual(self.names(self.get("/api/v1/pods")[1]), ["p1", "p2", "p3", "p4"])
        # gpu-quota's selector: the pods not finished.
        not_finished = "status.phase!=Succeeded,status.phase!=Failed"
        self.assertEqual(self.names(self.get("/api/v1/namespaces/ml/pods", fieldSelector=not_finished)[1]), ["p1", "p3"])
        self.assertEqual(self.names(self.get("/api/v1/pods", fieldSelector="metadata.namespace=other")[1]), ["p4"])
        self.assertEqual(self.names(self.get("/api/v1/pods", labelSelector="app in (b),tier")[1]), ["p3"])
        self.assertEqual(self.names(self.get("/api/v1/pods", labelSelector="app!=b,!tier")[1]), ["p1", "p4"])
        self.assertEqual(self.names(self.get("/api/v1/namespaces", labelSelector="team=ml")[1]), ["ml"])
        # What the API server refuses, it refuses here.
        self.assertEqual(self.get("/api/v1/pods", labelSelector="app in b")[0], 400)
        self.assertEqual(self.get("/api/v1/pods", fieldSelector="spec.containers=x")[0], 400)

    def test_lists_page_with_continue(self):
        code, first = self.get("/api/v1/pods", limit=3)
        self.assertEqual(self.names(first), ["p1", "p2", "p3"])
        self.assertEqual(first["metadata"]["remainingItemCount"], 1)
        code, rest = self.get("/api/v1/pods", limit=3, **{"continue": first["metadata"]["continue"]})
        self.assertEqual(self.names(rest), ["p4"])
        self.assertNotIn("continue", rest["metadata"])

    def watch(self, query, server=None):
        server = server or self.server
        host, port = server.server_address
        c = http.client.HTTPConnection(host, port, timeout=10)
        c.request("GET", "/api/v1/namespaces/ml/pods?" + urllib.parse.urlencode(dict(query, watch="true")))
        r = c.getresponse()
        self.assertEqual(r.status, 200)
        return c, r

    def test_a_watch_sends_bookmarks_and_ends_at_its_timeout(self):
        started = time.monotonic()
        c, r = self.watch({"resourceVersion": "1", "allowWatchBookmarks": "true", "timeoutSeconds": "1"})
        events = [json.loads(line) for line in r.read().splitlines()]  # returns once the stream ends
        c.close()
        self.assertLess(time.monotonic() - started, 5)
        self.assertTrue(events)
        self.assertEqual({e["type"] for e in events}, {"BOOKMARK"})
        self.assertEqual(events[0]["object"]["kind"], "Pod")

    def test_a_connection_serves_the_next_request_after_a_watch_ends(self):
        # A reflector's client puts the connection back in its pool when a
        # watch ends, and re-opens the watch on it: it must still be open.
        c, r = self.watch({"resourceVersion": "1", "timeoutSeconds": "1"})
        r.read()
        for _ in range(2):
            c.request("GET", "/api/v1/namespaces/ml/pods?" + urllib.parse.urlencode(
                {"watch": "true", "resourceVersion": "1", "timeoutSeconds": "1"}))
            again = c.getresponse()
            self.assertEqual(again.status, 200)
            again.read()
        c.request("GET", "/api/v1/namespaces/ml/pods/p1")
        got = c.getresponse()
        self.assertEqual((got.status, json.loads(got.read())["metadata"]["name"]), (200, "p1"))
        c.close()

    def test_a_watch_from_nothing_starts_with_every_object(self):
        c, r = self.watch({"resourceVersion": "0", "timeoutSeconds": "1"})
        events = [json.loads(line) for line in r.read().splitlines()]
        c.close()
        self.assertEqual([(e["type"], e["object"]["metadata"]["name"]) for e in events], [("ADDED", n) for n in ["p1", "p2", "p3"]])

    def test_stopping_the_server_ends_an_open_watch(self):
        server = apiserver.serve(self.dir.name, bookmark_seconds=60)
        c, r = self.watch({"resourceVersion": "1"}, server)
        body = []
        reader = threading.Thread(target=lambda: body.append(r.read()))
        reader.start()
        time.sleep(0.2)
        server.stop()
        reader.join(5)
        c.close()
        self.assertFalse(reader.is_alive(), "the watch did not end when the server stopped")
        self.assertEqual(body, [b""])

    def test_the_kubeconfig_names_the_server(self):
        path = os.path.join(self.dir.name, "kubeconfig")
        apiserver.write_kubeconfig(self.server.url, path)
        with open(path) as f:
            config = json.load(f)
        self.assertEqual(config["clusters"][0]["cluster"]["server"], self.server.url)
        self.assertEqual(config["current-context"], config["contexts"][0]["name"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
