// Every aigov component under Node.js, through jco: each component is
// transpiled by jco's `transpile` (the API behind `jco transpile
// --instantiation sync --no-typescript`), then every call the
// harness made of it (`aigov build export-cases`: metadata, validate-settings and
// validate over the whole case corpus) is made again here, on a fresh
// instance, with a JavaScript `cluster` import that replays the lookups the
// fixture cluster answered. Every answer must equal the harness's, field by
// field, and every lookup must be the one the harness saw, in order.
//
//   node run.mjs --jco DIR --policies DIR --artifacts DIR --records DIR --out DIR
//
// --jco is where `make jco-deps` installed package.json/package-lock.json
// of this directory (the jco version must be the one pinned); --records is what `aigov build export-cases -o` wrote; --out gets
// the transpiled components, one directory each. Exit status 1 on any
// difference, missing record or failed self-check; 2 on bad usage.

import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { basename, dirname, join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

const BUNDLE = "bundle";
const CLUSTER_IMPORT = "aigov:policy/cluster";
const TRANSPILE_OPTIONS = { name: "policy", instantiation: "sync", noTypescript: true, quiet: true };

// ---- arguments ------------------------------------------------------------

function parseArgs(argv) {
  const wanted = ["jco", "policies", "artifacts", "records", "out"];
  const args = {};
  for (let i = 0; i < argv.length; i += 2) {
    const key = argv[i]?.replace(/^--/, "");
    if (!wanted.includes(key) || argv[i + 1] === undefined) {
      usage(`unexpected argument ${JSON.stringify(argv[i])}`);
    }
    args[key] = resolve(argv[i + 1]);
  }
  for (const key of wanted) {
    if (!args[key]) usage(`--${key} is required`);
  }
  return args;
}

function usage(why) {
  console.error(`jco: ${why}\nusage: node run.mjs --jco DIR --policies DIR --artifacts DIR --records DIR --out DIR`);
  process.exit(2);
}

// ---- the corpus -----------------------------------------------------------

/** Every rule: each directory under policies/ with a metadata.yml (as the Makefile's RULES). */
export function rules(policies) {
  return readdirSync(policies, { withFileTypes: true })
    .filter((d) => d.isDirectory() && existsSync(join(policies, d.name, "metadata.yml")))
    .map((d) => d.name)
    .sort();
}

/** The case names of a rule: its tests/cases/*.yaml and *.yml, without extension. */
export function caseNames(policies, rule) {
  const dir = join(policies, rule, "tests", "cases");
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith(".yaml") || f.endsWith(".yml"))
    .map((f) => f.replace(/\.ya?ml$/, ""))
    .sort();
}

/**
 * The records a component's file must hold: `rule/case` for every case of
 * the rule (or, for the bundle, of every rule). Problems for each missing,
 * extra or repeated one.
 */
export function coverage(expected, record) {
  const problems = [];
  const seen = new Map();
  for (const c of record.cases ?? []) {
    const id = `${c.rule}/${c.case}`;
    seen.set(id, (seen.get(id) ?? 0) + 1);
  }
  for (const id of expected) {
    if (!seen.has(id)) problems.push(`${record.component}: no record of case ${id}`);
  }
  const wanted = new Set(expected);
  for (const [id, n] of seen) {
    if (!wanted.has(id)) problems.push(`${record.component}: a record of ${id}, which is not in the case corpus`);
    if (n > 1) problems.push(`${record.component}: ${n} records of ${id}`);
  }
  return problems;
}

// ---- transpiling ----------------------------------------------------------

/** jco's `transpile`, and its version, from the npm prefix `--jco`. */
async function loadJco(prefix) {
  const require = createRequire(join(prefix, "package.json"));
  let api;
  try {
    api = require.resolve("@bytecodealliance/jco");
  } catch {
    console.error(`jco: @bytecodealliance/jco is not installed under ${prefix}: run \`npm ci --prefix ${prefix}\``);
    process.exit(2);
  }
  const pkg = JSON.parse(readFileSync(join(dirname(api), "..", "package.json"), "utf8"));
  const pinned = JSON.parse(readFileSync(new URL("package.json", import.meta.url), "utf8")).dependencies["@bytecodealliance/jco"];
  if (pkg.version !== pinned) {
    console.error(`jco: ${prefix} holds jco ${pkg.version}, but package.json pins ${pinned}: reinstall it`);
    process.exit(2);
  }
  const { transpile } = await import(pathToFileURL(api).href);
  return { transpile, version: pkg.version };
}

/**
 * Transpiles `artifact` into `dir` (skipped when `dir` already holds this
 * component transpiled by this jco with these options), and returns the
 * component's `instantiate` with its core modules compiled once.
 */
async function transpiled(jco, artifact, dir) {
  const bytes = readFileSync(artifact);
  const stamp = createHash("sha256")
    .update(bytes)
    .update(`\0jco ${jco.version}\0${JSON.stringify(TRANSPILE_OPTIONS)}`)
    .digest("hex");
  const stampFile = join(dir, "transpiled-from.sha256");
  if (!existsSync(stampFile) || readFileSync(stampFile, "utf8") !== stamp) {
    rmSync(dir, { recursive: true, force: true });
    const { files } = await jco.transpile(bytes, { ...TRANSPILE_OPTIONS });
    for (const [name, content] of Object.entries(files)) {
      mkdirSync(dirname(join(dir, name)), { recursive: true });
      writeFileSync(join(dir, name), content);
    }
    writeFileSync(stampFile, stamp);
  }
  const { instantiate } = await import(pathToFileURL(join(dir, `${TRANSPILE_OPTIONS.name}.js`)).href);
  const modules = new Map();
  const getCoreModule = (name) => {
    if (!modules.has(name)) modules.set(name, new WebAssembly.Module(readFileSync(join(dir, name))));
    return modules.get(name);
  };
  return (cluster) => instantiate(getCoreModule, { [CLUSTER_IMPORT]: cluster });
}

// ---- replaying a call -----------------------------------------------------

const camel = (kebab) => kebab.replace(/-([a-z])/g, (_, c) => c.toUpperCase());
const none = (v) => (v === undefined ? null : v);

/**
 * The `cluster` import for one call: each lookup the component makes must
 * be the next one the harness recorded (same function, same arguments), and
 * gets the recorded answer: the ok string is returned, an error is thrown as
 * an Error whose `payload` is the `lookup-error` variant (jco's convention).
 * A lookup the harness did not see is a problem, and throws a plain Error,
 * which jco does not turn into a `lookup-error`: the call fails.
 */
export function replayCluster(lookups, problems) {
  let next = 0;
  const serve = (fn) => (...args) => {
    const got = { function: fn, args: args.map(none) };
    const want = lookups[next];
    if (!want || want.function !== got.function || JSON.stringify(want.args) !== JSON.stringify(got.args)) {
      const expected = want ? `${want.function}(${JSON.stringify(want.args)})` : "no more lookups";
      problems.push(`lookup #${next + 1} ${fn}(${JSON.stringify(got.args)}) is not what the harness saw (${expected})`);
      throw new Error(`unrecorded lookup ${fn}`);
    }
    next += 1;
    if ("ok" in want.answer) return want.answer.ok;
    const { tag, val } = want.answer.err;
    throw Object.assign(new Error(`${tag}: ${val}`), { payload: { tag, val } });
  };
  return {
    cluster: {
      getResource: serve("get-resource"),
      listResourcesByNamespace: serve("list-resources-by-namespace"),
      listResourcesAll: serve("list-resources-all"),
    },
    unused: () => lookups.length - next,
  };
}

/**
 * Differences between the harness's value and Node's, by path: an absent
 * option is `null` in the record and `undefined` (or a missing field) under
 * jco; everything else must be equal in type and value.
 */
export function differences(want, got, path = "") {
  if (want === null || want === undefined) {
    return got === null || got === undefined ? [] : [`${path}: harness none, node ${show(got)}`];
  }
  if (Array.isArray(want)) {
    if (!Array.isArray(got)) return [`${path}: harness ${show(want)}, node ${show(got)}`];
    if (want.length !== got.length) return [`${path}: harness ${want.length} items ${show(want)}, node ${got.length} ${show(got)}`];
    return want.flatMap((w, i) => differences(w, got[i], `${path}[${i}]`));
  }
  if (typeof want === "object") {
    if (got === null || typeof got !== "object" || Array.isArray(got)) return [`${path}: harness ${show(want)}, node ${show(got)}`];
    const keys = [...new Set([...Object.keys(want), ...Object.keys(got)])];
    return keys.flatMap((k) => differences(want[k], got[k], path ? `${path}.${k}` : k));
  }
  if (want === got) return [];
  if (typeof want === "string" && typeof got === "string") {
    let i = 0;
    while (want[i] === got[i]) i += 1;
    return [`${path}: strings differ at character ${i}: harness ${show(want.slice(i))}, node ${show(got.slice(i))}`];
  }
  return [`${path}: harness ${show(want)}, node ${show(got)}`];
}

function show(v) {
  const text = v === undefined ? "undefined" : JSON.stringify(v, (_, x) => (typeof x === "bigint" ? `${x}n` : x));
  return text.length > 200 ? `${text.slice(0, 200)}… (${text.length} characters)` : text;
}

/** Makes one recorded call on a fresh instance; the problems found. */
export function replay(instantiate, call) {
  const problems = [];
  const { cluster, unused } = replayCluster(call.lookups, problems);
  let answer;
  try {
    const exports = instantiate(cluster);
    const fn = exports[camel(call.function)];
    if (typeof fn !== "function") return [`the component exports no ${call.function}`];
    answer = fn(...call.args);
  } catch (e) {
    problems.push(`${call.function} threw under Node: ${e}`);
    return problems;
  }
  problems.push(...differences(call.answer, answer).map((d) => `${call.function}: ${d}`));
  if (unused() > 0) problems.push(`${call.function}: made ${call.lookups.length - unused()} of the ${call.lookups.length} lookups the harness saw`);
  return problems;
}

// ---- the check ------------------------------------------------------------

/** Replays every call of a component's record; problems, each with its case. */
export function check(instantiate, record) {
  const problems = replay(instantiate, record.metadata).map((p) => `${record.component}: ${p}`);
  let calls = 1;
  let lookups = 0;
  for (const c of record.cases) {
    for (const call of c.calls) {
      calls += 1;
      lookups += call.lookups.length;
      problems.push(...replay(instantiate, call).map((p) => `${record.component} ${c.rule}/${c.case}: ${p}`));
    }
  }
  return { problems, calls, lookups };
}

/**
 * The check must be able to fail: a changed answer, a lookup missing from
 * or added to the record, and a missing case record are each reported.
 * Returns what is wrong with the check itself (nothing, normally).
 */
export function selfCheck(instantiate, record, expected) {
  const failures = [];
  const calls = record.cases.flatMap((c) => c.calls);
  const validate = calls.find((c) => c.function === "validate");
  const withLookup = calls.find((c) => c.lookups.length > 0);
  const clone = (x) => JSON.parse(JSON.stringify(x));
  if (validate) {
    const changed = clone(validate);
    changed.answer.accepted = !changed.answer.accepted;
    if (replay(instantiate, changed).length === 0) failures.push("a flipped `accepted` went unnoticed");
    changed.answer = clone(validate.answer);
    changed.answer.warnings = [...changed.answer.warnings, "one more"];
    if (replay(instantiate, changed).length === 0) failures.push("an extra warning went unnoticed");
    const extra = clone(validate);
    extra.lookups.push({ function: "list-resources-all", args: ["v1", "Pod", null, null], answer: { ok: "{}" } });
    if (replay(instantiate, extra).length === 0) failures.push("a recorded lookup the component did not make went unnoticed");
  }
  if (withLookup) {
    const missing = clone(withLookup);
    missing.lookups = missing.lookups.slice(1);
    if (replay(instantiate, missing).length === 0) failures.push("a lookup missing from the record went unnoticed");
  }
  // A lookup's answer reaches the rule: answering one differently changes
  // the verdict of at least one of the first few calls that look up.
  const answerMatters = calls
    .filter((c) => c.lookups.length > 0)
    .slice(0, 3)
    .some((call) => {
      const answered = clone(call);
      const first = answered.lookups[0];
      first.answer = "ok" in first.answer ? { err: { tag: "unavailable", val: "self-check" } } : { ok: "{}" };
      return replay(instantiate, answered).length > 0;
    });
  const fewer = { ...record, cases: record.cases.slice(1) };
  if (record.cases.length > 0 && coverage(expected, fewer).length === 0) failures.push("a missing case record went unnoticed");
  return { failures, ran: { validate: Boolean(validate), lookup: Boolean(withLookup), answerMatters } };
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const started = Date.now();
  const jco = await loadJco(args.jco);
  const names = rules(args.policies);
  const corpus = Object.fromEntries(names.map((r) => [r, caseNames(args.policies, r).map((c) => `${r}/${c}`)]));
  corpus[BUNDLE] = names.flatMap((r) => corpus[r]);
  const problems = [];
  const selfChecked = { validate: false, lookup: false, answerMatters: false };
  let components = 0;
  let runs = 0;
  let calls = 0;
  let lookups = 0;
  if (names.length === 0) problems.push(`no rules under ${args.policies}`);
  for (const component of [...names, BUNDLE]) {
    const artifact = join(args.artifacts, component, "policy.component.wasm");
    const recordFile = join(args.records, `${component}.json`);
    if (!existsSync(artifact)) {
      problems.push(`${component}: ${artifact} is missing: run \`make artifacts\``);
      continue;
    }
    if (!existsSync(recordFile)) {
      problems.push(`${component}: ${recordFile} is missing: run \`aigov build export-cases\``);
      continue;
    }
    const record = JSON.parse(readFileSync(recordFile, "utf8"));
    if (!Array.isArray(record.cases) || !record.metadata) {
      problems.push(`${recordFile} is not what \`aigov build export-cases\` writes (no \`cases\` or \`metadata\`)`);
      continue;
    }
    if (basename(dirname(record.artifact ?? "")) !== component) problems.push(`${recordFile} is the record of ${JSON.stringify(record.artifact)}`);
    if (corpus[component].length === 0) problems.push(`${component}: the rule has no cases`);
    problems.push(...coverage(corpus[component], record));
    const instantiate = await transpiled(jco, artifact, join(args.out, component));
    const result = check(instantiate, record);
    problems.push(...result.problems);
    const self = selfCheck(instantiate, record, corpus[component]);
    problems.push(...self.failures.map((f) => `${component}: self-check: ${f}`));
    selfChecked.validate ||= self.ran.validate;
    selfChecked.lookup ||= self.ran.lookup;
    selfChecked.answerMatters ||= self.ran.answerMatters;
    components += 1;
    runs += record.cases.length;
    calls += result.calls;
    lookups += result.lookups;
  }
  if (!selfChecked.validate || !selfChecked.lookup) problems.push("self-check: the corpus has no validate call, or none with a lookup, to check the check with");
  if (selfChecked.lookup && !selfChecked.answerMatters) problems.push("self-check: answering a lookup differently never changed an answer: the replayed answers may not reach the rules");
  if (runs === 0) problems.push("no case was replayed");
  const cases = corpus[BUNDLE].length;
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  if (problems.length > 0) {
    for (const p of problems) console.log(`FAILED ${p}`);
    console.log(`jco: ${problems.length} problem(s) over ${components} components, ${cases} cases (jco ${jco.version}, ${seconds} s)`);
    process.exit(1);
  }
  console.log(
    `jco: ${components} components, ${cases} cases (${runs} case runs, ${calls} calls, ${lookups} lookups replayed), ` +
      `all answers equal the harness's (jco ${jco.version}, Node ${process.versions.node}, ${seconds} s)`,
  );
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  await main();
}
