// The playground page: a manifest editor, the rules and their settings, and
// every rule's answer, recomputed as you type by the aigov bundle
// component running in this tab (see aigov.js). State is kept in this
// browser's localStorage; nothing is sent anywhere.

import {
  Engine,
  NO_CLUSTER,
  buildRequest,
  changes,
  childAt,
  clusterOf,
  documents,
  fieldPath,
  governs,
  locate,
  replay,
  shareOf,
  verbatimKind,
} from "./aigov.js";
import { parse as parseYaml, stringify as toYaml } from "./vendor/yaml/index.js";

const STORAGE_KEY = "aigov-playground/v1";
const DEFAULT_SAMPLE = "02-gpu-training-pod-broken.yaml";
const DEBOUNCE_MS = 120;

const $ = (id) => document.getElementById(id);
const el = (tag, attrs = {}, ...children) => {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") e.className = v;
    else if (k === "style") for (const [prop, value] of Object.entries(v)) e.style.setProperty(prop, value);
    else if (k === "text") e.textContent = v;
    else if (k.startsWith("data-")) e.setAttribute(k, v);
    else if (k in e) e[k] = v;
    else e.setAttribute(k, v);
  }
  for (const c of children.flat()) if (c !== null && c !== undefined && c !== false) e.append(c);
  return e;
};

/** Text with its `backquoted` spans as <code>. */
function richText(text) {
  const span = el("span", { class: "text" });
  text.split("`").forEach((part, i) => span.append(i % 2 === 1 ? el("code", { text: part }) : part));
  return span;
}

const plural = (n, one, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;
const listOf = (names) => (names.length <= 1 ? names.join("") : `${names.slice(0, -1).join(", ")} and ${names.at(-1)}`);

// ---- state --------------------------------------------------------------

let data;
let engine;
let allowedKinds = [];
const state = {
  manifest: "",
  cluster: "",
  enabled: new Set(),
  settings: {},
  open: new Set(),
  user: "",
  groups: "",
  namespace: "",
  operation: "",
  sample: "",
};

function save() {
  try {
    localStorage.setItem(
      STORAGE_KEY,
      JSON.stringify({ ...state, enabled: [...state.enabled], open: [...state.open] }),
    );
  } catch {
    // Storage may be off (private windows): the page works without it.
  }
}

function restore() {
  try {
    const saved = JSON.parse(localStorage.getItem(STORAGE_KEY) ?? "null");
    if (!saved || typeof saved !== "object") return false;
    Object.assign(state, saved, { enabled: new Set(saved.enabled ?? []), open: new Set(saved.open ?? []) });
    return true;
  } catch {
    return false;
  }
}

function defaultSettingsText(rule) {
  return toYaml(rule.settings, { lineWidth: 0 });
}

function reset() {
  state.enabled = new Set(data.rules.map((r) => r.name));
  state.settings = Object.fromEntries(data.rules.map((r) => [r.name, defaultSettingsText(r)]));
  state.open = new Set();
  state.user = data.submission.user;
  state.groups = data.submission.groups.join(", ");
  state.namespace = "";
  state.operation = "";
  // The samples' namespaces, pods and quotas, as `make demo` scans them.
  state.cluster = data.sampleCluster;
  loadSample(DEFAULT_SAMPLE, false);
}

// ---- the editor ---------------------------------------------------------

const editor = {
  marks: [],
  active: null,

  init() {
    const ta = $("manifest");
    ta.addEventListener("scroll", () => this.sync());
    ta.addEventListener("input", () => {
      state.manifest = ta.value;
      // Once the text is no longer the sample's, its summary no longer
      // describes it.
      showSample();
      this.gutter();
      schedule();
    });
    ta.addEventListener("keydown", (e) => {
      if (e.key === "Tab" && !e.shiftKey && !e.ctrlKey && !e.metaKey && !e.altKey) {
        e.preventDefault();
        document.execCommand("insertText", false, "  ");
      }
    });
    new ResizeObserver(() => this.sync()).observe(ta);
  },

  set(text) {
    $("manifest").value = text;
    state.manifest = text;
    this.gutter();
    this.sync();
  },

  lineCount() {
    return $("manifest").value.split("\n").length;
  },

  gutter() {
    const g = $("gutter");
    const n = this.lineCount();
    const kinds = new Map();
    for (const m of this.marks) if (!kinds.has(m.line) || m.kind === "error") kinds.set(m.line, m.kind);
    g.replaceChildren(
      ...Array.from({ length: n }, (_, i) => el("div", { class: kinds.get(i + 1) === "parse" ? "error" : kinds.get(i + 1), text: String(i + 1) })),
    );
  },

  show(marks) {
    this.marks = marks;
    const layer = $("marks");
    const seen = new Map();
    for (const m of marks) {
      const prev = seen.get(m.line);
      if (!prev || (prev.kind === "warning" && m.kind !== "warning")) seen.set(m.line, m);
    }
    layer.replaceChildren(
      ...[...seen.values()].map((m) =>
        el("div", {
          class: `mark-line ${m.kind}${this.active === m.line ? " active" : ""}`,
          "data-line": m.line,
          style: { top: `calc(var(--code-pad) + ${m.line - 1} * var(--code-line))` },
          title: m.title,
        }),
      ),
    );
    this.gutter();
    this.sync();
  },

  sync() {
    const ta = $("manifest");
    $("marks").style.transform = `translate(${-ta.scrollLeft}px, ${-ta.scrollTop}px)`;
    $("gutter").style.transform = `translateY(${-ta.scrollTop}px)`;
  },

  /** Puts the caret at the start of `line`, scrolled into the middle, and marks it. */
  reveal(line) {
    const ta = $("manifest");
    const lines = ta.value.split("\n");
    const start = lines.slice(0, line - 1).reduce((n, l) => n + l.length + 1, 0);
    const indent = (lines[line - 1] ?? "").match(/^\s*/)[0].length;
    this.active = line;
    ta.focus({ preventScroll: true });
    ta.setSelectionRange(start + indent, start + (lines[line - 1] ?? "").length);
    const lineHeight = 20;
    ta.scrollTop = Math.max(0, (line - 1) * lineHeight - ta.clientHeight / 3);
    for (const m of document.querySelectorAll(".mark-line")) m.classList.toggle("active", Number(m.dataset.line) === line);
    for (const li of document.querySelectorAll(".messages li")) li.classList.toggle("active", Number(li.dataset.line) === line);
    this.sync();
  },
};

// ---- rules and settings -------------------------------------------------

function parseSettings(text) {
  if (!text.trim()) return { value: {} };
  try {
    const value = parseYaml(text, { prettyErrors: false });
    if (value === null || value === undefined) return { value: {} };
    if (typeof value !== "object" || Array.isArray(value)) return { error: "settings are an object (key: value lines)" };
    return { value };
  } catch (e) {
    return { error: e.message.split("\n")[0] };
  }
}

function renderRules() {
  const list = $("rules");
  list.replaceChildren(
    ...data.rules.map((rule) => {
      const on = state.enabled.has(rule.name);
      const open = state.open.has(rule.name);
      const checkbox = el("input", { type: "checkbox", checked: on, "aria-label": `run ${rule.name}` });
      checkbox.addEventListener("change", () => {
        if (checkbox.checked) state.enabled.add(rule.name);
        else state.enabled.delete(rule.name);
        li.classList.toggle("off", !checkbox.checked);
        countRules();
        schedule(0);
      });
      const area = el("textarea", { class: "plain", spellcheck: false, wrap: "off", rows: 8, "aria-label": `settings of ${rule.name}` });
      area.value = state.settings[rule.name] ?? defaultSettingsText(rule);
      area.addEventListener("input", () => {
        state.settings[rule.name] = area.value;
        schedule();
      });
      const resetButton = el("button", { type: "button", class: "link", text: "Reset to defaults" });
      resetButton.addEventListener("click", () => {
        area.value = defaultSettingsText(rule);
        state.settings[rule.name] = area.value;
        schedule(0);
      });
      const settings = el(
        "div",
        { class: "settings", hidden: !open },
        area,
        el("p", { class: "error-text settings-error", hidden: true }),
        el(
          "p",
          { class: "from" },
          rule.settingsFrom === "defaults" ? "Prefilled with the rule's defaults. " : `Prefilled from ${rule.settingsFrom} (the rule has no usable defaults). `,
          resetButton,
        ),
      );
      const toggle = el("button", { type: "button", class: "link", text: open ? "Hide settings" : "Settings", "aria-expanded": String(open) });
      toggle.addEventListener("click", () => {
        const nowOpen = settings.hidden;
        settings.hidden = !nowOpen;
        toggle.textContent = nowOpen ? "Hide settings" : "Settings";
        toggle.setAttribute("aria-expanded", String(nowOpen));
        if (nowOpen) state.open.add(rule.name);
        else state.open.delete(rule.name);
        save();
      });
      const docs = rule.url ? el("a", { href: `${rule.url.replace(/\/$/, "")}/tree/main/policies/${rule.name}`, target: "_blank", rel: "noreferrer noopener", class: "muted", text: "docs" }) : null;
      const li = el(
        "li",
        { class: `rule${on ? "" : " off"}`, "data-rule": rule.name },
        el(
          "label",
          { class: "head" },
          checkbox,
          el("span", { class: "name", text: rule.name }),
          rule.mutating ? el("span", { class: "tag mut", text: "mutating", title: "may change the object" }) : null,
          rule.contextAwareResources.length
            ? el("span", { class: "tag ctx", text: "cluster", title: `looks up ${rule.contextAwareResources.map((k) => k.kind).join(", ")}` })
            : null,
          el("span", { class: "tag bad settings-flag", text: "settings refused", hidden: true }),
        ),
        el("p", { class: "desc", text: rule.description, title: rule.description }),
        el("div", { class: "row" }, toggle, docs),
        settings,
      );
      return li;
    }),
  );
  countRules();
}

function countRules() {
  $("rules-count").textContent = `${state.enabled.size} of ${data.rules.length} on`;
}

function setAll(on) {
  state.enabled = new Set(on ? data.rules.map((r) => r.name) : []);
  for (const li of document.querySelectorAll(".rule")) {
    li.classList.toggle("off", !on);
    li.querySelector("input[type=checkbox]").checked = on;
  }
  countRules();
  schedule(0);
}

// ---- the cluster box ----------------------------------------------------

let clusterCache = { text: null, objects: [], error: null };

function clusterObjects() {
  const text = $("cluster").value;
  if (clusterCache.text === text) return clusterCache;
  const { docs, errors } = documents(text);
  clusterCache = {
    text,
    objects: docs.map((d) => d.value),
    error: errors.length ? `line ${errors[0].line}: ${errors[0].message}` : null,
  };
  return clusterCache;
}

function liveCluster() {
  return clusterOf(clusterObjects().objects, allowedKinds, data.submission.clusterScopedKinds);
}

// ---- evaluation ---------------------------------------------------------

let generation = 0;
/** The bundle's answer to each rule's settings, by settings text (settings need no lookups). */
const settingsChecked = new Map();
let timer = null;
let settledResolve = null;
let settled = Promise.resolve();

function schedule(delay = DEBOUNCE_MS) {
  clearTimeout(timer);
  if (!settledResolve) settled = new Promise((r) => (settledResolve = r));
  timer = setTimeout(() => {
    run().catch((e) => showFatal(e));
  }, delay);
}

function how() {
  const groups = state.groups.split(",").map((g) => g.trim()).filter(Boolean);
  return {
    user: state.user.trim() || null,
    groups: state.groups.trim() ? groups : null,
    namespace: state.namespace.trim() || null,
    operation: state.operation || null,
  };
}

async function run() {
  const gen = ++generation;
  const started = performance.now();
  let calls = 0;
  const call = async (fn, args, serve) => {
    calls += 1;
    return engine.call(fn, args, serve);
  };
  save();

  // Settings: each enabled rule's, checked by the bundle itself.
  const rules = data.rules.filter((r) => state.enabled.has(r.name));
  const accepted = {};
  const refused = new Map();
  for (const rule of rules) {
    const parsed = parseSettings(state.settings[rule.name] ?? "");
    if (parsed.error) {
      refused.set(rule.name, `not YAML: ${parsed.error}`);
      continue;
    }
    const text = JSON.stringify({ rules: { [rule.name]: parsed.value } });
    let verdict = settingsChecked.get(text);
    if (!verdict) {
      const checked = await call("validateSettings", [text], liveCluster());
      verdict = checked.error ? { valid: false, message: checked.error } : checked.answer;
      if (!checked.error) settingsChecked.set(text, verdict);
    }
    if (!verdict.valid) refused.set(rule.name, (verdict.message ?? "refused").replace(`rules.${rule.name}: `, ""));
    else accepted[rule.name] = parsed.value;
  }
  if (gen !== generation) return;
  showSettingsErrors(refused);
  const cluster = clusterObjects();
  $("cluster-error").hidden = !cluster.error;
  $("cluster-error").textContent = cluster.error ? `Not YAML: ${cluster.error}` : "";
  $("cluster-summary").textContent = cluster.objects.length
    ? `(${plural(cluster.objects.length, "object")})`
    : "(empty: lookups fail as unavailable)";

  // The manifest.
  const parsed = documents(state.manifest);
  const how_ = how();
  const settingsJson = JSON.stringify({ rules: accepted });
  const mutating = rules.filter((r) => r.mutating && r.name in accepted);
  const results = [];
  for (const doc of parsed.docs) {
    const v = doc.value;
    const items =
      v && typeof v === "object" && typeof v.kind === "string" && v.kind.endsWith("List") && Array.isArray(v.items)
        ? v.items.map((item, i) => ({ value: item, node: childAt(doc.node, ["items", i]), label: `document ${doc.index}, item ${i + 1}` }))
        : [{ value: v, node: doc.node, label: `document ${doc.index}` }];
    for (const item of items) {
      const result = { ...item, lineCounter: parsed.lineCounter };
      try {
        result.request = buildRequest(item.value, how_, data.submission);
      } catch (e) {
        result.error = e.message;
        results.push(result);
        continue;
      }
      result.verbatim = verbatimKind(item.value);
      // Messages name fields of the object: in a pasted request, under `object`.
      result.objectNode = result.verbatim === null ? item.node : childAt(item.node, result.verbatim === "an AdmissionReview" ? ["request", "object"] : ["object"]);
      result.merged = await call("validate", [JSON.stringify(result.request), settingsJson], liveCluster());
      // What each mutating rule changes, in the bundle's order (mutating
      // rules first, by name, each on the object the one before left).
      result.mutations = new Map();
      let current = result.request.object;
      if (current && typeof current === "object") {
        for (const rule of mutating) {
          if (!governs(rule.webhookRules, result.request)) continue;
          const one = await call(
            "validate",
            [JSON.stringify({ ...result.request, object: current }), JSON.stringify({ rules: { [rule.name]: accepted[rule.name] } })],
            liveCluster(),
          );
          if (one.answer?.mutatedObject) {
            const next = JSON.parse(one.answer.mutatedObject);
            const diff = changes(current, next);
            if (diff.length) result.mutations.set(rule.name, diff);
            current = next;
          }
        }
      }
      result.patched = current;
      results.push(result);
    }
  }
  if (gen !== generation) return;
  render(parsed, results, rules, refused);
  const ms = performance.now() - started;
  $("timing").textContent = `${ms < 10 ? ms.toFixed(1) : Math.round(ms)} ms · ${plural(calls, "call")} of the bundle component`;
  $("results").dataset.generation = String(gen);
  if (settledResolve) {
    settledResolve(gen);
    settledResolve = null;
  }
}

function showSettingsErrors(refused) {
  for (const li of document.querySelectorAll(".rule")) {
    const message = refused.get(li.dataset.rule);
    const p = li.querySelector(".settings-error");
    p.hidden = !message;
    p.textContent = message ?? "";
    li.querySelector(".settings-flag").hidden = !message;
    li.querySelector(".settings textarea").classList.toggle("invalid", Boolean(message));
  }
}

// ---- rendering ----------------------------------------------------------

function describeObject(request) {
  const kind = request?.kind?.kind ?? "object";
  const name = request?.name ?? request?.object?.metadata?.name ?? request?.oldObject?.metadata?.name;
  const where = request?.namespace ? `${request.namespace}/` : "";
  return name ? `${kind} \`${where}${name}\`` : `${kind}`;
}

function render(parsed, results, rules, refused) {
  const out = [];
  const marks = [];
  for (const e of parsed.errors) {
    marks.push({ line: e.line, kind: "parse", title: e.message });
  }
  if (parsed.errors.length) {
    out.push(
      el(
        "div",
        { class: "doc" },
        verdictBox("error", "The manifest is not valid YAML", "Fix the marked line; the rules run again as you type."),
        el(
          "ul",
          { class: "messages" },
          parsed.errors.map((e) => messageItem({ text: e.message, line: e.line, kind: "error", where: `line ${e.line}` })),
        ),
      ),
    );
  }
  if (!parsed.errors.length && results.length === 0) {
    out.push(el("div", { class: "loading", text: "Paste a manifest on the left, or pick a sample." }));
  }
  const many = results.length > 1;
  for (const r of results) out.push(renderResult(r, rules, refused, many, marks));
  $("results").replaceChildren(...out);
  editor.show(marks);
  const first = results.find((r) => r.request)?.request;
  $("request-summary").textContent = first
    ? first.userInfo?.username
      ? `${first.operation} by ${first.userInfo.username}`
      : first.operation
    : "";
}

function verdictBox(status, title, text) {
  const icon = { denied: "✕", warned: "!", changed: "✎", admitted: "✓", error: "?" }[status];
  return el(
    "div",
    { class: `verdict ${status}`, "data-verdict": status, role: "status" },
    el("div", { class: "icon", text: icon, "aria-hidden": "true" }),
    el("div", {}, el("h2", { text: title }), el("p", {}, richText(text))),
  );
}

function messageItem({ text, line, kind, where, title }) {
  const li = el(
    "li",
    { class: kind, "data-line": line ?? null, title: title ?? null },
    where ? el("span", { class: "where", text: where }) : null,
    kind === "warning" ? el("span", {}, el("span", { class: "kind", text: "warning" }), richText(text)) : richText(text),
  );
  if (line) li.addEventListener("click", () => editor.reveal(line));
  return li;
}

/** A message, located in the manifest: the field it names, or its nearest parent. */
function located(text, kind, r, marks) {
  const path = fieldPath(text);
  if (!path || !r.objectNode) return { text, kind, where: null, title: "the message names no field of the manifest" };
  const at = locate(r.objectNode, path, r.lineCounter);
  const field = path.reduce((s, p) => (typeof p === "number" ? `${s}[${p}]` : s ? `${s}.${p}` : p), "");
  const title = at.found ? `${field}: line ${at.line}` : `${field} is not in the manifest: shown at its nearest parent, line ${at.line}`;
  marks.push({ line: at.line, kind, title });
  return { text, kind, line: at.line, where: `line ${at.line}`, title };
}

function renderResult(r, rules, refused, many, marks) {
  const box = el("div", { class: "doc" });
  if (many) box.append(el("p", { class: "doc-title", text: r.request ? `${r.label} · ${describeObject(r.request).replaceAll("`", "")}` : r.label }));
  if (r.error) {
    box.append(verdictBox("error", "Not something the rules can read", r.error));
    return box;
  }
  const merged = r.merged;
  if (merged.error) {
    box.append(verdictBox("error", "The bundle failed", `The component trapped: ${merged.error}`));
    return box;
  }
  const v = merged.answer;
  const what = describeObject(r.request);
  const cards = [];
  const passed = [];
  const notGoverned = [];
  const byStatus = { denied: [], warned: [], changed: [] };
  for (const rule of rules) {
    if (refused.has(rule.name)) continue;
    const share = shareOf(rule.name, v);
    const diff = r.mutations.get(rule.name) ?? [];
    const governed = governs(rule.webhookRules, r.request);
    const status = share.messages.length && !v.accepted ? "denied" : share.warnings.length ? "warned" : diff.length ? "changed" : null;
    if (!status) {
      (governed ? passed : notGoverned).push(rule.name);
      continue;
    }
    byStatus[status].push(rule.name);
    cards.push({ status, el: ruleCard(rule, status, share, diff, r, marks) });
  }
  const order = { denied: 0, warned: 1, changed: 2 };
  cards.sort((a, b) => order[a.status] - order[b.status]);
  // Lines of the answer that no rule prefixed (a malformed request, settings).
  const known = rules.map((rule) => `${rule.name}: `);
  const general = (v.message ?? "").split("\n").filter((l) => l && !known.some((k) => l.startsWith(k)));

  let verdict;
  if (!v.accepted && v.code === 400 && byStatus.denied.length === 0) {
    verdict = verdictBox("error", "Rejected: the request cannot be read", general.join(" ") || "The API server would answer 400 Bad Request.");
  } else if (!v.accepted) {
    const n = byStatus.denied.length;
    verdict = verdictBox(
      "denied",
      "Denied",
      `${n === 1 ? "One rule refuses" : `${n} rules refuse`} this ${what}: ${listOf(byStatus.denied)}. Each message names the field; click it to see the line.`,
    );
  } else if (byStatus.warned.length) {
    verdict = verdictBox("warned", "Admitted, with warnings", `kubectl would print the warnings of ${listOf(byStatus.warned)}; nothing is refused.`);
  } else if (byStatus.changed.length) {
    verdict = verdictBox("changed", "Admitted, with changes", `${listOf(byStatus.changed)} ${byStatus.changed.length === 1 ? "changes" : "change"} this ${what} before it is stored: see the diff.`);
  } else if (passed.length) {
    verdict = verdictBox("admitted", "Admitted", `${plural(passed.length, "rule")} ${passed.length === 1 ? "governs" : "govern"} this ${what} and ${passed.length === 1 ? "admits" : "all admit"} it.`);
  } else {
    verdict = verdictBox("admitted", "Admitted", `No rule that is on governs this ${what}, so the API server would not even ask.`);
  }
  box.append(verdict);
  if (merged.lookups.some((l) => l.answer?.err?.val === NO_CLUSTER)) {
    const load = el("button", { type: "button", class: "link", text: "Load the sample cluster" });
    load.addEventListener("click", () => $("cluster-sample").click());
    box.append(
      el(
        "p",
        { class: "note callout" },
        richText("Some rules looked up cluster state, and the Cluster objects box is empty: their lookups failed as `unavailable`, and each rule's `onLookupError` decided. "),
        load,
      ),
    );
  }
  if (r.verbatim) box.append(el("p", { class: "note", text: `Used as it is: the manifest is ${r.verbatim} (the request fields below the editor do not apply).` }));
  if (general.length && byStatus.denied.length) {
    box.append(el("ul", { class: "messages" }, general.map((g) => messageItem({ text: g, kind: "error", where: null }))));
  }
  box.append(...cards.map((c) => c.el));
  if (r.mutations.size) {
    box.append(
      el(
        "p",
        { class: "note" },
        v.accepted
          ? "Mutating rules run first, as Kubernetes runs mutating webhooks before validating ones: the other rules judged the changed object."
          : "Mutating rules run first, as Kubernetes runs mutating webhooks before validating ones: the other rules judged the changed object. A denied request is not changed: the diffs show what will be added once the rest is fixed.",
      ),
    );
  }

  const quiet = el("div", { class: "quiet" });
  if (passed.length) quiet.append(el("div", { class: "group" }, el("span", { class: "label", text: "Admit it:" }), passed.map((n) => el("span", { class: "chip pass", text: n }))));
  if (notGoverned.length) {
    quiet.append(
      el(
        "div",
        { class: "group" },
        el("span", { class: "label", text: `Do not govern a ${r.request.kind?.kind ?? "request like this"}${r.request.subResource ? ` ${r.request.subResource}` : ""}:` }),
        notGoverned.map((n) => el("span", { class: "chip na", text: n })),
      ),
    );
  }
  if (refused.size) {
    quiet.append(
      el(
        "div",
        { class: "group" },
        el("span", { class: "label", text: "Not run, their settings are refused (see the rules list):" }),
        [...refused.keys()].map((n) => el("span", { class: "chip off", text: n })),
      ),
    );
  }
  box.append(quiet);
  const lookups = merged.lookups;
  if (lookups.length) box.append(lookupsBox(lookups));
  if (v.auditAnnotations?.length) {
    box.append(
      el(
        "details",
        { class: "more" },
        el("summary", { text: `Audit annotations (${v.auditAnnotations.length})` }),
        el("pre", { text: v.auditAnnotations.map(([k, val]) => `${k}: ${val}`).join("\n") }),
      ),
    );
  }
  if (r.mutations.size) {
    box.append(el("details", { class: "more" }, el("summary", { text: "The object after the mutating rules (YAML)" }), el("pre", { text: toYaml(r.patched, { lineWidth: 0 }) })));
  }
  box.append(el("details", { class: "more" }, el("summary", { text: "The AdmissionRequest sent to the rules (JSON)" }), el("pre", { text: JSON.stringify(r.request, null, 2) })));
  return box;
}

function ruleCard(rule, status, share, diff, r, marks) {
  const label = { denied: "denied", warned: "warning", changed: "changed" }[status];
  const items = [
    ...share.messages.map((m) => located(m, "error", r, marks)),
    ...share.warnings.map((w) => located(w, "warning", r, marks)),
  ];
  return el(
    "article",
    { class: `card ${status}`, "data-rule": rule.name, "data-status": status },
    el(
      "header",
      {},
      el("span", { class: `pill ${status}`, text: label }),
      el("span", { class: "rule-name", text: rule.name }),
      el("span", { class: "about", text: rule.description }),
    ),
    items.length ? el("ul", { class: "messages" }, items.map(messageItem)) : null,
    diff.length
      ? el(
          "div",
          { class: "diff", "data-diff": rule.name },
          diff.map((c) => el("div", { class: { "+": "add", "~": "rep", "-": "del" }[c.op], text: c.op === "-" ? c.path : `${c.path}: ${JSON.stringify(c.value)}` })),
        )
      : null,
  );
}

function lookupsBox(lookups) {
  const describe = (l) => {
    const [apiVersion, kind, third, fourth] = l.args;
    const what =
      l.function === "get-resource"
        ? `get ${kind} \`${fourth ? `${fourth}/` : ""}${third}\``
        : l.function === "list-resources-by-namespace"
          ? `list ${kind} in \`${third}\`${l.args[3] ? ` (labels \`${l.args[3]}\`)` : ""}`
          : `list ${kind} in the whole cluster${third ? ` (labels \`${third}\`)` : ""}`;
    let answer = "";
    if (l.answer && "ok" in l.answer) {
      try {
        const got = JSON.parse(l.answer.ok);
        answer = Array.isArray(got.items) ? plural(got.items.length, "object") : "found";
      } catch {
        answer = "answered";
      }
    } else if (l.answer) answer = `\`${l.answer.err.tag}\``;
    return `${what} (${apiVersion}) → ${answer}`;
  };
  const unavailable = lookups.some((l) => l.answer?.err?.val === NO_CLUSTER);
  return el(
    "div",
    { class: "lookups" },
    el("strong", { text: `${plural(lookups.length, "cluster lookup")}` }),
    el("ul", {}, lookups.map((l) => el("li", {}, richText(describe(l))))),
    unavailable
      ? el(
          "p",
          { class: "note" },
          richText(
            "The Cluster objects box is empty, so every lookup failed as `unavailable`, as when the API server cannot be reached; each rule's `onLookupError` setting decided what that means. Paste the objects below the editor, or load the sample cluster.",
          ),
        )
      : null,
  );
}

function showFatal(e) {
  document.body.dataset.state = "failed";
  $("results").replaceChildren(verdictBox("error", "The playground could not start", String(e?.message ?? e)));
  console.error(e);
}

// ---- samples --------------------------------------------------------------

function loadSample(file, run = true) {
  const sample = data.samples.find((s) => s.file === file);
  if (!sample) return;
  state.sample = file;
  editor.set(sample.text);
  $("samples").value = file;
  $("sample-summary").textContent = sample.summary;
  editor.active = null;
  $("manifest").scrollTop = 0;
  if (run) schedule(0);
}

function renderSamples() {
  const select = $("samples");
  for (const s of data.samples) {
    const label = `${s.file.replace(/\.ya?ml$/, "")}`;
    select.append(el("option", { value: s.file, text: label, title: s.summary }));
  }
  select.addEventListener("change", () => loadSample(select.value));
}

// ---- start ------------------------------------------------------------------

/** Binds the fields to the state, once. */
function bindFields() {
  for (const id of ["user", "groups", "namespace", "operation"]) {
    const field = $(id);
    field.addEventListener(field.tagName === "SELECT" ? "change" : "input", () => {
      state[id] = field.value;
      schedule();
    });
  }
  const cluster = $("cluster");
  cluster.addEventListener("input", () => {
    state.cluster = cluster.value;
    schedule();
  });
  $("cluster-sample").addEventListener("click", () => {
    cluster.value = data.sampleCluster;
    state.cluster = cluster.value;
    schedule(0);
  });
  $("cluster-clear").addEventListener("click", () => {
    cluster.value = "";
    state.cluster = "";
    schedule(0);
  });
  $("rules-all").addEventListener("click", () => setAll(true));
  $("rules-none").addEventListener("click", () => setAll(false));
  $("reset").addEventListener("click", () => {
    try {
      localStorage.removeItem(STORAGE_KEY);
    } catch {
      // nothing kept
    }
    reset();
    start();
  });
  $("context-rules").textContent = data.rules.filter((r) => r.contextAwareResources.length).map((r) => r.name).join(", ");
}

/** Shows the state: rules, fields, manifest; then evaluates. */
function start() {
  renderRules();
  for (const id of ["user", "groups", "namespace", "operation", "cluster"]) $(id).value = state[id];
  editor.set(state.manifest);
  showSample();
  schedule(0);
}

/** Names the sample in the editor and shows its summary, or neither once
 *  the text is not the sample's (the user pasted or edited a manifest). */
function showSample() {
  const sample = data.samples.find((s) => s.file === state.sample && s.text === state.manifest);
  $("samples").value = sample ? sample.file : "";
  $("sample-summary").textContent = sample ? sample.summary : "";
}

async function main() {
  const response = await fetch(new URL("data.json", import.meta.url));
  if (!response.ok) throw new Error(`data.json: ${response.status} ${response.statusText}`);
  data = await response.json();
  engine = await Engine.load();
  const meta = await engine.call("metadata", [], () => {
    throw new Error("metadata made a lookup");
  });
  if (meta.error) throw new Error(`the bundle's metadata failed: ${meta.error}`);
  allowedKinds = meta.answer.contextAwareResources;
  $("version").textContent = data.aigov;
  editor.init();
  renderSamples();
  if (!restore()) reset();
  for (const rule of data.rules) state.settings[rule.name] ??= defaultSettingsText(rule);
  bindFields();
  start();
  window.aigov = {
    data,
    engine,
    /** `validate` of the bundle, as the page calls it; lookups replayed from `lookups` when given. */
    evaluate: (requestJson, settingsJson, lookups) => engine.call("validate", [requestJson, settingsJson], lookups ? replay(lookups) : liveCluster()),
    validateSettings: (settingsJson, lookups) => engine.call("validateSettings", [settingsJson], lookups ? replay(lookups) : liveCluster()),
    metadata: (lookups) => engine.call("metadata", [], lookups ? replay(lookups) : liveCluster()),
    buildRequest: (doc, h = {}) => buildRequest(doc, { user: null, groups: null, namespace: null, operation: null, name: null, ...h }, data.submission),
    documents,
    fieldPath,
    locate,
    /** Resolves once the page has shown the answer to the latest edit. */
    settled: () => settled,
  };
  await settled;
  document.body.dataset.state = "ready";
}

main().catch(showFatal);
