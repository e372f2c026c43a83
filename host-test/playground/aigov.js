// The playground's engine, without the page: the bundle component (the
// artifact `make artifacts` builds and a cluster runs, transpiled by jco
// for the browser), the `cluster` import it calls, the AdmissionRequest a
// manifest amounts to, and where in the manifest a message's field is.
// Nothing here reaches the network but for the page's own files.

import { instantiate } from "./bundle/aigov-bundle.js";
import { LineCounter, isMap, isScalar, isSeq, parseAllDocuments } from "./vendor/yaml/index.js";

const CLUSTER_IMPORT = "aigov:policy/cluster";

// ---- the component ------------------------------------------------------

/**
 * The bundle component, instantiated once and reused for every call (the
 * world allows it: calls are independent). A call that traps leaves the
 * instance unusable; the next call gets a fresh one.
 */
export class Engine {
  /** Compiles the core modules (fetched from `bundle/`) and instantiates. */
  static async load(base = new URL("./bundle/", import.meta.url)) {
    const modules = new Map();
    const getCoreModule = (name) => {
      if (!modules.has(name)) {
        modules.set(
          name,
          fetch(new URL(name, base)).then((r) => {
            if (!r.ok) throw new Error(`fetching ${name}: ${r.status} ${r.statusText}`);
            return WebAssembly.compileStreaming(r);
          }),
        );
      }
      return modules.get(name);
    };
    const engine = new Engine(getCoreModule);
    await engine.fresh();
    return engine;
  }

  constructor(getCoreModule) {
    this.getCoreModule = getCoreModule;
    this.instance = null;
    this.instances = 0;
    this.current = null;
  }

  async fresh() {
    const lookup = (fn) => (...args) => this.lookup(fn, args);
    this.instance = await instantiate(this.getCoreModule, {
      [CLUSTER_IMPORT]: {
        getResource: lookup("get-resource"),
        listResourcesByNamespace: lookup("list-resources-by-namespace"),
        listResourcesAll: lookup("list-resources-all"),
      },
    });
    this.instances += 1;
  }

  /**
   * One lookup of the running call: asks the call's cluster (`serve(fn,
   * args)` answers `{ok}` or `{err: {tag, val}}`, or throws to fail the
   * call), keeps it, and answers as jco expects: the JSON string, or an
   * Error whose `payload` is the `lookup-error` variant.
   */
  lookup(fn, args) {
    const call = { function: fn, args: args.map((a) => (a === undefined ? null : a)) };
    const current = this.current;
    if (!current) throw new Error(`a lookup (${fn}) outside of a call`);
    current.lookups.push(call);
    call.answer = current.serve(call.function, call.args);
    if ("ok" in call.answer) return call.answer.ok;
    const { tag, val } = call.answer.err;
    throw Object.assign(new Error(`${tag}: ${val}`), { payload: { tag, val } });
  }

  /**
   * Calls export `name` (`validate`, `validateSettings`, `metadata`) with
   * `args`, lookups answered by `serve`. Returns `{answer, lookups}`, or
   * `{error, lookups}` when the call trapped or threw.
   */
  async call(name, args, serve) {
    if (!this.instance) await this.fresh();
    const lookups = [];
    this.current = { serve, lookups };
    try {
      return { answer: this.instance[name](...args), lookups };
    } catch (e) {
      this.instance = null;
      return { error: String(e?.message ?? e), lookups };
    } finally {
      this.current = null;
    }
  }
}

/**
 * Serves lookups from `recorded` (what `aigov build export-cases` wrote for a
 * call), in order: a lookup that is not the next recorded one fails the
 * call, as under `make jco-check`.
 */
export function replay(recorded) {
  let next = 0;
  return (fn, args) => {
    const want = recorded[next];
    if (!want || want.function !== fn || JSON.stringify(want.args) !== JSON.stringify(args)) {
      throw new Error(`unrecorded lookup #${next + 1} ${fn}(${JSON.stringify(args)})`);
    }
    next += 1;
    return want.answer;
  };
}

// ---- the cluster --------------------------------------------------------

/** The label the API server puts on every Namespace. */
const NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name";

/** Why a lookup fails when no cluster objects were given. */
export const NO_CLUSTER =
  "the playground has no cluster objects: paste the objects this rule reads (Namespaces, Pods, ResourceQuotas) into Cluster objects";

/**
 * Lookups served from `objects` (plain objects; `List`s flattened), for
 * the kinds in `allowed` (`[{apiVersion, kind}]`, the bundle's
 * context-aware resources). Label selectors are matched with `=`, `==`,
 * `!=`, `in`, `notin`, `key` and `!key`; field selectors with `=`, `==`
 * and `!=` on any field. An `aigov.dev/v1alpha1` `LookupFailure` object
 * makes matching lookups fail, as the harness's fixtures do. With no
 * objects at all, every lookup fails with `unavailable`.
 */
export function clusterOf(objects, allowed, clusterScoped) {
  const items = [];
  const failures = [];
  const add = (o) => {
    if (!o || typeof o !== "object") return;
    if (typeof o.kind === "string" && o.kind.endsWith("List") && Array.isArray(o.items)) {
      o.items.forEach(add);
      return;
    }
    if (o.kind === "LookupFailure") {
      failures.push(o);
      return;
    }
    if (o.apiVersion === "v1" && o.kind === "Namespace") {
      o = structuredClone(o);
      o.metadata ??= {};
      o.metadata.labels = { ...(o.metadata.labels ?? {}), [NAMESPACE_NAME_LABEL]: o.metadata.name };
    }
    items.push(o);
  };
  objects.forEach(add);
  const scoped = new Set(clusterScoped);
  const empty = items.length === 0 && failures.length === 0;
  const ns = (o) => o?.metadata?.namespace ?? null;
  const failure = (apiVersion, kind, name, namespace) => {
    const f = failures.find((f) => {
      const m = f.match ?? {};
      return m.kind === kind && (m.apiVersion ?? apiVersion) === apiVersion && (m.name ?? name) === name && (m.namespace ?? namespace) === namespace;
    });
    if (!f) return null;
    const tag = ["not-found", "forbidden", "invalid", "unavailable"].includes(f.error) ? f.error : "unavailable";
    return { err: { tag, val: f.message ?? "lookup failed" } };
  };
  const check = (apiVersion, kind) => {
    if (empty) return { err: { tag: "unavailable", val: NO_CLUSTER } };
    if (!allowed.some((a) => a.apiVersion === apiVersion && a.kind === kind)) {
      // policy-server's words for a kind the policy's metadata does not declare
      return { err: { tag: "forbidden", val: `Policy has not been granted access to Kubernetes ${apiVersion}/${kind} resources. The violation has been reported.` } };
    }
    return null;
  };
  const list = (apiVersion, kind, namespace, labelSelector, fieldSelector) => {
    const refused = check(apiVersion, kind);
    if (refused) return refused;
    if (namespace !== null && scoped.has(kind)) {
      return { err: { tag: "invalid", val: `resource ${apiVersion}/${kind} is cluster wide. Cannot search for it inside of a namespace` } };
    }
    const failed = failure(apiVersion, kind, null, namespace);
    if (failed) return failed;
    let labels;
    let fields;
    try {
      labels = labelRequirements(labelSelector ?? "");
      fields = fieldRequirements(fieldSelector ?? "");
    } catch (e) {
      return { err: { tag: "invalid", val: e.message } };
    }
    const found = items.filter(
      (o) =>
        o.apiVersion === apiVersion &&
        o.kind === kind &&
        (namespace === null || ns(o) === namespace) &&
        labels.every((r) => r(o.metadata?.labels ?? {})) &&
        fields.every((r) => r(o)),
    );
    return { ok: JSON.stringify({ apiVersion, kind: `${kind}List`, metadata: {}, items: found }) };
  };
  return (fn, args) => {
    if (fn === "get-resource") {
      const [apiVersion, kind, name, namespace] = args;
      const refused = check(apiVersion, kind);
      if (refused) return refused;
      const where = scoped.has(kind) ? null : namespace;
      const failed = failure(apiVersion, kind, name, where);
      if (failed) return failed;
      const o = items.find((o) => o.apiVersion === apiVersion && o.kind === kind && o.metadata?.name === name && ns(o) === where);
      if (o) return { ok: JSON.stringify(o) };
      return { err: { tag: "not-found", val: `${kind} \`${where ? `${where}/` : ""}${name}\` (${apiVersion}) not found` } };
    }
    if (fn === "list-resources-by-namespace") {
      const [apiVersion, kind, namespace, labels, fields] = args;
      return list(apiVersion, kind, namespace, labels, fields);
    }
    const [apiVersion, kind, labels, fields] = args;
    return list(apiVersion, kind, null, labels, fields);
  };
}

/** Splits a selector at commas outside parentheses. */
function requirements(selector) {
  const out = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i <= selector.length; i += 1) {
    const c = selector[i];
    if (c === "(") depth += 1;
    if (c === ")") depth -= 1;
    if ((c === "," && depth === 0) || i === selector.length) {
      const r = selector.slice(start, i).trim();
      if (r) out.push(r);
      start = i + 1;
    }
  }
  return out;
}

function labelRequirements(selector) {
  return requirements(selector).map((r) => {
    let m;
    if ((m = r.match(/^!\s*([^\s=!,()]+)$/))) return (l) => !(m[1] in l);
    if ((m = r.match(/^([^\s=!,()]+)$/))) return (l) => m[1] in l;
    if ((m = r.match(/^([^\s=!,()]+)\s*(==|=|!=)\s*([^\s=!,()]*)$/))) {
      const [, k, op, v] = m;
      return op === "!=" ? (l) => l[k] !== v : (l) => l[k] === v;
    }
    if ((m = r.match(/^([^\s=!,()]+)\s+(in|notin)\s*\(([^()]*)\)$/))) {
      const [, k, op, vs] = m;
      const values = vs.split(",").map((v) => v.trim());
      return op === "in" ? (l) => k in l && values.includes(l[k]) : (l) => !(k in l) || !values.includes(l[k]);
    }
    throw new Error(`label selector requirement \`${r}\`: the playground matches only key=value, key!=value, key in (...), key notin (...), key and !key`);
  });
}

function fieldRequirements(selector) {
  return requirements(selector).map((r) => {
    const m = r.match(/^([A-Za-z0-9_.-]+)\s*(==|=|!=)\s*(.*)$/);
    if (!m) throw new Error(`field selector requirement \`${r}\`: the playground matches only field=value and field!=value`);
    const [, path, op, v] = m;
    const read = (o) => {
      const x = path.split(".").reduce((a, k) => (a && typeof a === "object" ? a[k] : undefined), o);
      return x === undefined || x === null ? "" : String(x);
    };
    return op === "!=" ? (o) => read(o) !== v : (o) => read(o) === v;
  });
}

// ---- the request --------------------------------------------------------

const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);

/** Whether a document is an AdmissionReview or an AdmissionRequest (used verbatim). */
export function verbatimKind(doc) {
  if (!isObject(doc)) return null;
  if (doc.kind === "AdmissionReview") return "an AdmissionReview";
  if ("operation" in doc && isObject(doc.kind)) return "an AdmissionRequest";
  return null;
}

/** The plural resource of a kind, as `aigov` names it. */
export function plural(group, kind, submission) {
  const known = submission.workloadKinds.find((k) => k.group === group && k.kind === kind);
  if (known) return known.resource;
  const lower = kind.toLowerCase();
  if (lower.endsWith("y") && !/[aeiou]$/.test(lower.slice(0, -1))) return `${lower.slice(0, -1)}ies`;
  if (/(s|x|ch|sh)$/.test(lower)) return `${lower}es`;
  return `${lower}s`;
}

/**
 * The AdmissionRequest a document amounts to, as `aigov eval` builds it: an
 * AdmissionReview's request, an AdmissionRequest as it is, or a plain
 * object submitted as `how.operation` (CREATE by default; CONNECT for exec
 * and attach options) by `how.user` with `how.groups`, in `how.namespace`
 * (else the object's, else `default`). `submission` is the data `aigov
 * playground-data` wrote. Throws with aigov's message when it cannot.
 */
export function buildRequest(doc, how, submission) {
  if (isObject(doc) && doc.kind === "AdmissionReview") {
    if (!isObject(doc.request)) throw new Error("the AdmissionReview has no `request` object");
    return doc.request;
  }
  if (verbatimKind(doc)) return doc;
  if (!isObject(doc)) throw new Error(`expected a Kubernetes object, an AdmissionRequest or an AdmissionReview, got ${JSON.stringify(doc)}`);
  if (typeof doc.apiVersion !== "string") throw new Error("the object has no `apiVersion`");
  if (typeof doc.kind !== "string") throw new Error("the object has no `kind`");
  const kind = doc.kind;
  const slash = doc.apiVersion.indexOf("/");
  const [group, version] = slash < 0 ? ["", doc.apiVersion] : [doc.apiVersion.slice(0, slash), doc.apiVersion.slice(slash + 1)];
  const meta = (f) => (isObject(doc.metadata) && typeof doc.metadata[f] === "string" ? doc.metadata[f] : null);
  const connect = submission.connectKinds[kind] ?? null;
  const resource = connect ? "pods" : plural(group, kind, submission);
  const operation = how.operation ?? (connect ? "CONNECT" : "CREATE");
  if (!["CREATE", "UPDATE", "DELETE", "CONNECT"].includes(operation)) {
    throw new Error(`unknown operation \`${operation}\`: use CREATE, UPDATE, DELETE or CONNECT`);
  }
  const name = how.name ?? meta("name");
  if (connect && name === null) throw new Error(`a ${kind} request needs the pod's name`);
  const namespace = submission.clusterScopedKinds.includes(kind) ? null : (how.namespace ?? meta("namespace") ?? submission.namespace);
  const gvk = { group, version, kind };
  const gvr = { group, version, resource };
  const req = { uid: submission.uid, kind: gvk, resource: gvr, requestKind: { ...gvk }, requestResource: { ...gvr } };
  if (connect) {
    req.subResource = connect;
    req.requestSubResource = connect;
  }
  if (name !== null) req.name = name;
  if (namespace !== null) req.namespace = namespace;
  req.operation = operation;
  req.userInfo = { username: how.user ?? submission.user, groups: how.groups ?? [...submission.groups] };
  if (operation === "DELETE") {
    req.object = null;
    req.oldObject = doc;
  } else {
    req.object = doc;
    if (operation === "UPDATE") req.oldObject = doc;
  }
  req.dryRun = false;
  return req;
}

/**
 * Whether a rule's webhook rules send it this request (Kubernetes'
 * matching, as the bundle routes): group, version, resource and
 * subresource, operation.
 */
export function governs(webhookRules, request) {
  const r = request.resource ?? {};
  const sub = request.subResource || null;
  const listed = (list, v) => list.some((x) => x === "*" || x === v);
  return webhookRules.some(
    (w) =>
      listed(w.apiGroups, r.group ?? "") &&
      listed(w.apiVersions, r.version ?? "") &&
      listed(w.operations, request.operation) &&
      w.resources.some((p) => {
        const [res, psub] = p.includes("/") ? [p.slice(0, p.indexOf("/")), p.slice(p.indexOf("/") + 1)] : [p, null];
        const resOk = res === "*" || res === r.resource;
        const subOk = psub === null ? sub === null : sub !== null && (psub === "*" || psub === sub);
        return resOk && subOk;
      }),
  );
}

// ---- the manifest -------------------------------------------------------

/**
 * The documents of a manifest (YAML or JSON), with their nodes: `[{value,
 * node, index}]` (empty documents skipped, as aigov skips them), the
 * `LineCounter`, and the parse errors (`[{message, line, col}]`).
 */
export function documents(text) {
  const lineCounter = new LineCounter();
  const docs = parseAllDocuments(text, { lineCounter, prettyErrors: false });
  const list = Array.isArray(docs) ? docs : [];
  const errors = [];
  const out = [];
  list.forEach((d, i) => {
    for (const e of d.errors) {
      const at = lineCounter.linePos(e.pos?.[0] ?? 0);
      errors.push({ message: e.message.split("\n")[0], line: at.line, col: at.col, document: i + 1 });
    }
    if (d.errors.length > 0) return;
    let value;
    try {
      value = d.toJS({ maxAliasCount: 100 });
    } catch (e) {
      errors.push({ message: e.message, line: lineCounter.linePos(d.range?.[0] ?? 0).line, col: 1, document: i + 1 });
      return;
    }
    if (value === null || value === undefined) return;
    out.push({ value, node: d.contents, index: out.length + 1 });
  });
  return { docs: out, lineCounter, errors };
}

/**
 * The field path a message names: its first backquoted span that reads as
 * one, rooted at `metadata`, `spec`, `data` or `status` (as `aigov scan
 * --format sarif` reads it). Steps are keys (strings) and indices
 * (numbers); null when the message names no field.
 */
export function fieldPath(message) {
  const spans = message.split("`").filter((_, i) => i % 2 === 1);
  for (const s of spans) {
    const p = parsePath(s);
    if (p) return p;
  }
  return null;
}

function parsePath(text) {
  const root = text.split(/[.[]/)[0];
  if (!["metadata", "spec", "data", "status"].includes(root)) return null;
  const steps = [];
  for (const part of text.split(".")) {
    const b = part.indexOf("[");
    const name = b < 0 ? part : part.slice(0, b);
    if (!/^[A-Za-z0-9_-]+$/.test(name)) return null;
    steps.push(name);
    if (b >= 0) {
      for (const index of part.slice(b).split("[").slice(1)) {
        if (!/^\+?[0-9]+\]$/.test(index)) return null;
        steps.push(Number(index.slice(0, -1)));
      }
    }
  }
  return steps;
}

/**
 * Where `steps` is in a document node: the line and column of the deepest
 * step that exists (a missing field is shown at its parent, as in SARIF
 * reports), and whether the whole path was found.
 */
export function locate(node, steps, lineCounter) {
  let at = node?.range?.[0] ?? 0;
  let found = true;
  for (const step of steps) {
    let next = null;
    if (typeof step === "string" && isMap(node)) {
      const pair = node.items.find((p) => isScalar(p.key) && String(p.key.value) === step);
      if (pair) next = { at: pair.key.range?.[0] ?? at, node: pair.value };
    } else if (typeof step === "number" && isSeq(node)) {
      const item = node.items[step];
      if (item) next = { at: item.range?.[0] ?? at, node: item };
    }
    if (!next) {
      found = false;
      break;
    }
    at = next.at;
    node = next.node;
  }
  const { line, col } = lineCounter.linePos(at);
  return { line, col, found };
}

/** The node at `steps` (keys and indices) under `node`, or null. */
export function childAt(node, steps) {
  for (const step of steps) {
    if (typeof step === "string" && isMap(node)) node = node.items.find((p) => isScalar(p.key) && String(p.key.value) === step)?.value ?? null;
    else if (typeof step === "number" && isSeq(node)) node = node.items[step] ?? null;
    else return null;
  }
  return node;
}

// ---- what a mutation changed --------------------------------------------

/** A path as the rules write it: `spec.containers[0].name`. */
function dotted(steps) {
  let out = "";
  for (const s of steps) out += typeof s === "number" ? `[${s}]` : out ? `.${s}` : s;
  return out || "(the whole object)";
}

/**
 * What turned `before` into `after`, as `aigov eval` prints a patch: `{op:
 * "+", path, value}` (added), `"~"` (replaced), `"-"` (removed).
 */
export function changes(before, after, steps = []) {
  if (JSON.stringify(before) === JSON.stringify(after)) return [];
  if (isObject(before) && isObject(after)) {
    const out = [];
    for (const k of Object.keys(before)) if (!(k in after)) out.push({ op: "-", path: dotted([...steps, k]) });
    for (const k of Object.keys(after)) {
      if (k in before) out.push(...changes(before[k], after[k], [...steps, k]));
      else out.push({ op: "+", path: dotted([...steps, k]), value: after[k] });
    }
    return out;
  }
  if (Array.isArray(before) && Array.isArray(after)) {
    const out = [];
    const common = Math.min(before.length, after.length);
    for (let i = 0; i < common; i += 1) out.push(...changes(before[i], after[i], [...steps, i]));
    for (let i = common; i < after.length; i += 1) out.push({ op: "+", path: dotted([...steps, i]), value: after[i] });
    for (let i = before.length - 1; i >= common; i -= 1) out.push({ op: "-", path: dotted([...steps, i]) });
    return out;
  }
  return [{ op: "~", path: dotted(steps), value: after }];
}

/** A rule's share of the bundle's merged answer: its message lines, warnings and audit annotations. */
export function shareOf(name, verdict) {
  const prefix = `${name}: `;
  const lines = (verdict.message ?? "").split("\n").filter((l) => l.startsWith(prefix)).map((l) => l.slice(prefix.length));
  const warnings = (verdict.warnings ?? [])
    .filter((w) => w.startsWith(prefix) || w.startsWith(`${name} `))
    .map((w) => (w.startsWith(prefix) ? w.slice(prefix.length) : w));
  const annotations = (verdict.auditAnnotations ?? []).filter(([k]) => k.startsWith(`${name}.`)).map(([k, v]) => [k.slice(name.length + 1), v]);
  return { messages: lines, warnings, annotations };
}
