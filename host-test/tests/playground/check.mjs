// The playground in a real browser: `aigov playground` serves the page that
// `make playground` built, and headless Chromium (Debian's, driven by
// playwright-core, which downloads nothing) loads it.
//
// 1. The server: the right Content-Type for the page's files, `..` and its
//    encodings refused, other methods and foreign Host headers refused.
// 2. The page, as a person uses it: a denied manifest shows the verdict and
//    the message, and the offending line is highlighted in the editor; a
//    compliant one shows admitted; a mutating rule shows its diff; the
//    page builds every sample's AdmissionRequest as `aigov` does.
// 3. The whole case corpus through the page's own evaluation function
//    (`window.aigov.evaluate`, `validateSettings`, `metadata`): every call
//    `aigov build export-cases` recorded for the bundle, lookups replayed in the
//    browser from the records, every answer equal to the harness's and
//    every lookup the one the harness saw. Any difference, no records, or
//    a case without its record fails the check.
// 4. A screenshot of the page with a denied sample (--screenshot).
//
//   node check.mjs --tools DIR --aigov BIN --page DIR --policies DIR --artifacts DIR --records DIR --out DIR --screenshot FILE
//
// Exit status 1 on any failure, 2 on bad usage.

import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { connect } from "node:net";
import { join, resolve } from "node:path";

import { caseNames, coverage, differences, rules } from "../jco/run.mjs";

const CHROMIUM = "/usr/bin/chromium";
// Without the background-networking flags, Chromium's own connections are
// refused on machines without network, and the launch stalls.
const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];
const BATCH = 150;

// ---- arguments --------------------------------------------------------------

function parseArgs(argv) {
  const wanted = ["tools", "aigov", "page", "policies", "artifacts", "records", "out", "screenshot"];
  const args = {};
  for (let i = 0; i < argv.length; i += 2) {
    const key = argv[i]?.replace(/^--/, "");
    if (!wanted.includes(key) || argv[i + 1] === undefined) usage(`unexpected argument ${JSON.stringify(argv[i])}`);
    args[key] = resolve(argv[i + 1]);
  }
  for (const key of wanted) if (!args[key]) usage(`--${key} is required`);
  return args;
}

function usage(why) {
  console.error(`playground: ${why}\nusage: node check.mjs --tools DIR --aigov BIN --page DIR --policies DIR --artifacts DIR --records DIR --out DIR --screenshot FILE`);
  process.exit(2);
}

const problems = [];
const fail = (p) => problems.push(p);
const expect = (ok, p) => {
  if (!ok) fail(p);
  return ok;
};

// ---- the server ---------------------------------------------------------------

/** Starts `aigov playground --port 0`; resolves with its URL and process. */
function startServer(aigov, page) {
  const server = spawn(aigov, ["playground", "--dir", page, "--port", "0"], { stdio: ["ignore", "pipe", "pipe"] });
  return new Promise((res, rej) => {
    let out = "";
    let err = "";
    const timer = setTimeout(() => rej(new Error(`aigov playground printed no address in 10 s: ${out}${err}`)), 10000);
    server.stdout.on("data", (d) => {
      out += d;
      const m = out.match(/http:\/\/127\.0\.0\.1:(\d+)\//);
      if (m) {
        clearTimeout(timer);
        res({ server, url: m[0], port: Number(m[1]) });
      }
    });
    server.stderr.on("data", (d) => (err += d));
    server.on("exit", (code) => rej(new Error(`aigov playground exited (${code}): ${err}`)));
  });
}

/** One raw HTTP/1.1 request (no client-side normalisation of `..`). */
function raw(port, method, target, host = `127.0.0.1:${port}`) {
  return new Promise((res, rej) => {
    const socket = connect(port, "127.0.0.1", () => socket.write(`${method} ${target} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`));
    const chunks = [];
    socket.on("data", (c) => chunks.push(c));
    socket.on("error", rej);
    socket.on("end", () => {
      const text = Buffer.concat(chunks).toString("latin1");
      const [head] = text.split("\r\n\r\n");
      const status = Number(head.split(" ")[1]);
      const type = head.match(/\r\ncontent-type: ([^\r]*)/i)?.[1] ?? "";
      const csp = head.match(/\r\ncontent-security-policy: ([^\r]*)/i)?.[1] ?? "";
      res({ status, type, csp });
    });
  });
}

async function checkServer(port) {
  const cases = [
    ["GET", "/", 200, "text/html"],
    ["GET", "/playground.js", 200, "text/javascript"],
    ["GET", "/bundle/aigov-bundle.js", 200, "text/javascript"],
    ["GET", "/bundle/aigov-bundle.core.wasm", 200, "application/wasm"],
    ["GET", "/data.json", 200, "application/json"],
    ["HEAD", "/playground.css", 200, "text/css"],
    ["GET", "/../Cargo.toml", 403],
    ["GET", "/bundle/../../Cargo.toml", 403],
    ["GET", "/%2e%2e/Cargo.toml", 403],
    ["GET", "/bundle/%2E%2E/%2e%2e/README.md", 403],
    ["GET", "/..%2f..%2fCargo.toml", 403],
    ["GET", "/no-such-file.js", 404],
    ["POST", "/", 405],
  ];
  for (const [method, target, status, type] of cases) {
    const got = await raw(port, method, target);
    expect(got.status === status, `server: ${method} ${target} answered ${got.status}, not ${status}`);
    if (type) expect(got.type.startsWith(type), `server: ${target} is served as ${JSON.stringify(got.type)}, not ${type}`);
  }
  const index = await raw(port, "GET", "/");
  expect(index.csp.includes("connect-src 'self'"), `server: the page is served without a Content-Security-Policy keeping it to itself (${index.csp})`);
  const rebound = await raw(port, "GET", "/", "attacker.example:80");
  expect(rebound.status === 421, `server: a request for Host attacker.example answered ${rebound.status}, not 421`);
  return cases.length + 2;
}

// ---- the page -------------------------------------------------------------------

const DENIED = `apiVersion: v1
kind: Pod
metadata:
  name: trainer
  namespace: ml
spec:
  containers:
    - name: trainer
      image: nvcr.io/nvidia/pytorch:24.05-py3
      resources:
        limits:
          nvidia.com/gpu: 2
`;

const COMPLIANT = DENIED.replace("spec:\n", "spec:\n  runtimeClassName: nvidia\n  tolerations:\n    - key: nvidia.com/gpu\n      operator: Exists\n      effect: NoSchedule\n");

/** The 1-based line of the first line of `text` equal to `line`. */
const lineOf = (text, line) => text.split("\n").indexOf(line) + 1;

async function enableOnly(page, names) {
  await page.click("#rules-none");
  for (const n of names) await page.check(`.rule[data-rule="${n}"] input[type=checkbox]`);
  await settle(page);
}

async function type(page, text) {
  await page.fill("#manifest", text);
  await settle(page);
}

const settle = (page) => page.evaluate(() => window.aigov.settled());

async function checkPage(page, screenshot) {
  let checks = 0;
  const check = (ok, p) => {
    checks += 1;
    return expect(ok, `page: ${p}`);
  };

  // A GPU pod without the runtime class and the toleration: denied.
  await enableOnly(page, ["gpu-runtime-class"]);
  await type(page, DENIED);
  check((await page.locator(".verdict").getAttribute("data-verdict")) === "denied", "the GPU pod without runtimeClassName is not shown as denied");
  const card = page.locator('.card[data-rule="gpu-runtime-class"][data-status="denied"]');
  check((await card.count()) === 1, "no denied card for gpu-runtime-class");
  const first = card.locator(".messages li.error").first();
  const text = (await first.textContent()) ?? "";
  check(text.includes("spec.runtimeClassName is not set"), `the message does not say that spec.runtimeClassName is not set: ${text}`);
  // `spec.runtimeClassName` is missing: shown at its parent, `spec:`.
  const spec = lineOf(DENIED, "spec:");
  check((await first.getAttribute("data-line")) === String(spec), `the message points at line ${await first.getAttribute("data-line")}, not ${spec} (spec:)`);
  check((await page.locator(`.mark-line.error[data-line="${spec}"]`).count()) === 1, `line ${spec} is not highlighted in the editor`);
  check((await page.locator(`#gutter div:nth-child(${spec}).error`).count()) === 1, `line ${spec} is not marked in the gutter`);
  await first.click();
  check((await page.locator(`.mark-line.active[data-line="${spec}"]`).count()) === 1, "clicking the message does not make its line the active one");
  const selected = await page.evaluate(() => {
    const ta = document.getElementById("manifest");
    return ta.value.slice(ta.selectionStart, ta.selectionEnd);
  });
  check(selected === "spec:", `clicking the message selects ${JSON.stringify(selected)}, not the line \`spec:\``);

  // In audit mode the rule admits and warns: the warning is shown, and its
  // line highlighted as a warning.
  const settings = '.rule[data-rule="gpu-runtime-class"] .settings';
  await page.click('.rule[data-rule="gpu-runtime-class"] .row button');
  await page.fill(`${settings} textarea`, "mode: audit\n");
  await settle(page);
  check((await page.locator(".verdict").getAttribute("data-verdict")) === "warned", "gpu-runtime-class in audit mode is not shown as admitted with warnings");
  const warning = page.locator('.card[data-rule="gpu-runtime-class"] .messages li.warning').first();
  check(((await warning.textContent()) ?? "").includes("spec.runtimeClassName"), "the audit warning does not name spec.runtimeClassName");
  check((await page.locator(`.mark-line.warning[data-line="${spec}"]`).count()) === 1, `the warning's line ${spec} is not highlighted`);
  await page.click(`${settings} .from button`);
  await page.click('.rule[data-rule="gpu-runtime-class"] .row button');
  await settle(page);

  // The same pod, fixed: admitted.
  await type(page, COMPLIANT);
  check((await page.locator(".verdict").getAttribute("data-verdict")) === "admitted", "the compliant GPU pod is not shown as admitted");
  check((await page.locator(".mark-line").count()) === 0, "the compliant pod still has highlighted lines");

  // A mutating rule: its diff.
  await enableOnly(page, ["gpu-runtime-defaults"]);
  await type(page, DENIED);
  check((await page.locator(".verdict").getAttribute("data-verdict")) === "changed", "gpu-runtime-defaults on the GPU pod is not shown as a change");
  const diff = (await page.locator('.diff[data-diff="gpu-runtime-defaults"] .add').allTextContents()).join("\n");
  check(diff.includes('spec.runtimeClassName: "nvidia"'), `the diff does not add spec.runtimeClassName: "nvidia": ${diff}`);
  check(diff.includes("spec.tolerations"), `the diff does not add the toleration: ${diff}`);

  // Both: the bundle mutates first, so the validating rule admits.
  await page.check('.rule[data-rule="gpu-runtime-class"] input[type=checkbox]');
  await settle(page);
  check((await page.locator(".verdict").getAttribute("data-verdict")) === "changed", "with gpu-runtime-defaults and gpu-runtime-class, the pod is not admitted with changes");

  // Settings the rule refuses are named, and the rule is not run.
  await page.click('.rule[data-rule="gpu-runtime-class"] .row button');
  await page.fill('.rule[data-rule="gpu-runtime-class"] .settings textarea', "noSuchSetting: 1\n");
  await settle(page);
  const refusal = (await page.locator('.rule[data-rule="gpu-runtime-class"] .settings-error').textContent()) ?? "";
  check(refusal.includes("noSuchSetting"), `refused settings are not explained naming the key: ${JSON.stringify(refusal)}`);
  await page.click('.rule[data-rule="gpu-runtime-class"] .settings .from button');
  await page.click('.rule[data-rule="gpu-runtime-class"] .row button');
  await settle(page);

  // Every sample: the page builds the AdmissionRequest aigov builds.
  const mismatches = await page.evaluate(() =>
    window.aigov.data.samples.flatMap((s) => {
      const { docs, errors } = window.aigov.documents(s.text);
      if (errors.length) return [{ file: s.file, problem: `does not parse: ${errors[0].message}` }];
      if (docs.length !== s.requests.length) return [{ file: s.file, problem: `${docs.length} documents, aigov read ${s.requests.length}` }];
      return docs.map((d, i) => ({ file: s.file, want: s.requests[i], got: window.aigov.buildRequest(d.value) }));
    }),
  );
  for (const m of mismatches) {
    if (m.problem) check(false, `sample ${m.file} ${m.problem}`);
    else for (const d of differences(m.want, m.got)) check(false, `sample ${m.file}: the page's AdmissionRequest differs from aigov's: ${d}`);
  }

  // Context-aware rules: the sample cluster answers, and an empty box makes
  // every lookup `unavailable`, which the page explains.
  await page.click("#rules-all");
  await page.selectOption("#samples", "40-gpu-quota-pod-namespace-full.yaml");
  await settle(page);
  const quota = (await page.locator('.card[data-rule="gpu-quota"] .messages').textContent()) ?? "";
  check(/14/.test(quota) && /16/.test(quota), `with the sample cluster, gpu-quota does not count the namespace's 14 of 16 GPUs: ${quota}`);
  await page.click("#cluster-box summary");
  await page.click("#cluster-clear");
  await settle(page);
  const note = (await page.locator(".lookups").first().textContent()) ?? "";
  check(note.includes("unavailable") && note.includes("onLookupError"), `with no cluster objects, the page does not explain the unavailable lookups: ${note}`);
  await page.click("#cluster-sample");
  await page.click("#cluster-box summary");
  await settle(page);

  // The screenshot: the broken training pod, every rule on.
  await page.selectOption("#samples", "02-gpu-training-pod-broken.yaml");
  await settle(page);
  check((await page.locator(".verdict").getAttribute("data-verdict")) === "denied", "sample 02 is not denied");
  // The same picture every run (the file is committed): the page as it
  // loads with this state (kept in localStorage), the mouse away from it,
  // no timing.
  await page.mouse.move(0, 0);
  await page.reload();
  await page.waitForSelector("body[data-state=ready]");
  await page.evaluate(() => {
    document.getElementById("timing").textContent = "";
    document.activeElement?.blur();
    for (const id of ["rules", "manifest", "results"]) document.getElementById(id).scrollTop = 0;
  });
  mkdirSync(resolve(screenshot, ".."), { recursive: true });
  // Taken until two in a row agree (nothing still settling).
  const options = { animations: "disabled", caret: "hide" };
  let shot = await page.screenshot(options);
  for (let i = 0; i < 5; i += 1) {
    await page.waitForTimeout(150);
    const again = await page.screenshot(options);
    if (again.equals(shot)) break;
    shot = again;
  }
  writeFileSync(screenshot, shot);

  // The page keeps its state in this browser across a reload, and "Reset
  // the page" brings back the first visit's.
  const mine = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: mine, namespace: ml}\n";
  await page.click("#rules-none");
  await type(page, mine);
  await page.reload();
  await page.waitForSelector("body[data-state=ready]");
  check((await page.inputValue("#manifest")) === mine, "the manifest is not kept across a reload");
  check(((await page.textContent("#rules-count")) ?? "").startsWith("0 of"), "the rules switched off are not kept across a reload");
  await page.click("#reset");
  await settle(page);
  const sample = await page.evaluate(() => window.aigov.data.samples.find((s) => s.file === "02-gpu-training-pod-broken.yaml").text);
  check((await page.inputValue("#manifest")) === sample, "Reset the page does not bring back the first sample");
  check(((await page.textContent("#rules-count")) ?? "").startsWith("20 of 20"), "Reset the page does not switch every rule on");
  check((await page.locator(".verdict").getAttribute("data-verdict")) === "denied", "after Reset the page, the first sample is not denied");
  return checks;
}

// ---- the corpus -------------------------------------------------------------------

/** Makes the recorded calls through the page, in batches; what each answered. */
async function runInPage(page, calls) {
  const answers = [];
  for (let i = 0; i < calls.length; i += BATCH) {
    const batch = calls.slice(i, i + BATCH).map((c) => ({ function: c.function, args: c.args, lookups: c.lookups }));
    answers.push(
      ...(await page.evaluate(async (batch) => {
        const out = [];
        for (const c of batch) {
          let got;
          if (c.function === "validate") got = await window.aigov.evaluate(c.args[0], c.args[1], c.lookups);
          else if (c.function === "validate-settings") got = await window.aigov.validateSettings(c.args[0], c.lookups);
          else if (c.function === "metadata") got = await window.aigov.metadata(c.lookups);
          else got = { error: `unknown function ${c.function}` };
          out.push({ answer: got.answer, error: got.error, lookups: got.lookups.map((l) => ({ function: l.function, args: l.args })) });
        }
        return out;
      }, batch)),
    );
  }
  return answers;
}

/** Problems of one call: the page's answer and lookups against the harness's. */
function compare(call, got, where) {
  if (got.error) return [`${where} ${call.function} failed in the browser: ${got.error}`];
  // run.mjs names the other side "node"; here it is the browser.
  const out = differences(call.answer, got.answer).map((d) => `${where} ${call.function}: ${d.replace(", node ", ", browser ")}`);
  const want = call.lookups.map((l) => JSON.stringify([l.function, l.args]));
  const made = got.lookups.map((l) => JSON.stringify([l.function, l.args]));
  if (want.join("\n") !== made.join("\n")) out.push(`${where} ${call.function}: the page made lookups ${made.join(", ") || "none"}, the harness ${want.join(", ") || "none"}`);
  return out;
}

async function checkCorpus(page, args) {
  const file = join(args.records, "bundle.json");
  if (!existsSync(file)) {
    fail(`corpus: ${file} is missing: run \`aigov build export-cases\``);
    return { calls: 0, lookups: 0, cases: 0 };
  }
  const record = JSON.parse(readFileSync(file, "utf8"));
  if (!Array.isArray(record.cases) || !record.metadata) {
    fail(`corpus: ${file} is not what \`aigov build export-cases\` writes`);
    return { calls: 0, lookups: 0, cases: 0 };
  }
  // The page must run the component the records came from.
  const component = join(args.artifacts, "bundle", "policy.component.wasm");
  const digest = createHash("sha256").update(readFileSync(component)).digest("hex");
  const transpiled = readFileSync(join(args.page, "bundle", "transpiled-from.sha256"), "utf8").trim();
  expect(transpiled === digest, `corpus: the page runs a transpile of ${transpiled}, but ${component} is ${digest}: run \`make playground\``);
  expect(resolve(record.artifact ?? "") === resolve(component), `corpus: ${file} records ${record.artifact}, not ${component}`);
  const corpus = rules(args.policies).flatMap((r) => caseNames(args.policies, r).map((c) => `${r}/${c}`));
  expect(corpus.length > 0, `corpus: no cases under ${args.policies}`);
  for (const p of coverage(corpus, record)) fail(`corpus: ${p}`);

  const calls = [{ where: "bundle", call: record.metadata }];
  for (const c of record.cases) for (const call of c.calls) calls.push({ where: `bundle ${c.rule}/${c.case}`, call });
  expect(record.cases.length > 0 && calls.length > 1, "corpus: no case was recorded");
  const answers = await runInPage(
    page,
    calls.map((c) => c.call),
  );
  expect(answers.length === calls.length, `corpus: the page answered ${answers.length} of ${calls.length} calls`);
  let lookups = 0;
  calls.forEach(({ where, call }, i) => {
    lookups += call.lookups.length;
    for (const p of compare(call, answers[i] ?? { error: "no answer" }, where)) fail(`corpus: ${p}`);
  });

  // The check can fail: a flipped verdict, and a lookup missing from the
  // record (the page must then fail the call or answer differently).
  const validate = calls.find((c) => c.call.function === "validate")?.call;
  const withLookup = calls.find((c) => c.call.lookups.length > 0)?.call;
  if (validate) {
    const flipped = { ...validate, answer: { ...validate.answer, accepted: !validate.answer.accepted } };
    expect(compare(flipped, answers[calls.findIndex((c) => c.call === validate)], "").length > 0, "self-check: a flipped `accepted` went unnoticed");
  }
  if (withLookup) {
    const missing = { ...withLookup, lookups: withLookup.lookups.slice(1) };
    const [got] = await runInPage(page, [missing]);
    expect(compare(missing, got, "").length > 0, "self-check: a lookup missing from the record went unnoticed");
  }
  expect(Boolean(validate && withLookup), "self-check: the corpus has no validate call, or none with a lookup");
  return { calls: calls.length, lookups, cases: record.cases.length };
}

// ---- main ---------------------------------------------------------------------------

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const started = Date.now();
  const require = createRequire(join(args.tools, "package.json"));
  let playwright;
  try {
    playwright = require("playwright-core");
  } catch {
    usage(`playwright-core is not installed under ${args.tools}: run \`make playground-deps\``);
  }
  const pinned = JSON.parse(readFileSync(new URL("../../playground/package.json", import.meta.url), "utf8")).devDependencies["playwright-core"];
  const installed = JSON.parse(readFileSync(join(args.tools, "node_modules", "playwright-core", "package.json"), "utf8")).version;
  if (installed !== pinned) usage(`${args.tools} holds playwright-core ${installed}, but package.json pins ${pinned}: reinstall it`);
  if (!existsSync(CHROMIUM)) usage(`${CHROMIUM} is missing: run \`make chromium-deps\``);

  const { server, url, port } = await startServer(args.aigov, args.page);
  mkdirSync(args.out, { recursive: true });
  const profile = mkdtempSync(join(args.out, "chromium-profile-"));
  let context;
  const summary = { server: 0, page: 0, corpus: { calls: 0, lookups: 0, cases: 0 } };
  try {
    summary.server = await checkServer(port);
    context = await playwright.chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: CHROMIUM_ARGS,
      viewport: { width: 1440, height: 900 },
      timeout: 60000,
    });
    const page = context.pages()[0] ?? (await context.newPage());
    page.setDefaultTimeout(30000);
    const pageErrors = [];
    page.on("pageerror", (e) => pageErrors.push(e.message));
    page.on("console", (m) => m.type() === "error" && pageErrors.push(m.text()));
    // Nothing but the page's own files: every request stays on the server.
    page.on("request", (r) => {
      if (!r.url().startsWith(url) && !r.url().startsWith("data:")) pageErrors.push(`the page requested ${r.url()}`);
    });
    await page.goto(url);
    await page.waitForSelector("body[data-state=ready], body[data-state=failed]", { timeout: 60000 });
    if ((await page.getAttribute("body", "data-state")) !== "ready") {
      fail(`page: the playground did not start: ${await page.textContent("#results")}`);
    } else {
      summary.page = await checkPage(page, args.screenshot);
      summary.corpus = await checkCorpus(page, args);
    }
    for (const e of pageErrors) fail(`page: ${e}`);
    summary.browser = context.browser()?.version() ?? "chromium";
  } finally {
    await context?.close().catch(() => {});
    server.kill();
    rmSync(profile, { recursive: true, force: true });
  }
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  if (problems.length) {
    for (const p of problems) console.log(`FAILED ${p}`);
    console.log(`playground: ${problems.length} problem(s) (${seconds} s)`);
    process.exit(1);
  }
  console.log(
    `playground: server ${summary.server} checks, page ${summary.page} checks, ` +
      `${summary.corpus.calls} bundle calls of ${summary.corpus.cases} cases (${summary.corpus.lookups} lookups replayed) through the page equal the harness's ` +
      `(Chromium ${summary.browser}, ${seconds} s); screenshot ${args.screenshot}`,
  );
}

await main();
