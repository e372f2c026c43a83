# aigov: build every rule as a Kubewarden module and a component, test them
# three ways, and run the demo. `make demo` and `make test` install what they
# need (wasm targets, and for the end-to-end test a registry and skopeo).

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
# Reproducible guests: no build-machine paths in the binaries. (With --target,
# RUSTFLAGS reaches only the wasm crates, not the host's build scripts.)
WASM_RUSTFLAGS := --remap-path-prefix=$(CURDIR)=/aigov --remap-path-prefix=$(CARGO_HOME)=/cargo

.PHONY: setup aigov wasm artifacts demo test lint unit cases clean help

help:
	@echo "make demo       build every rule and evaluate the bundled sample workloads"
	@echo "make test       clippy, native tests, every case three ways"
	@echo "make artifacts  artifacts/<rule>/policy.wasm (Kubewarden) and policy.component.wasm"

## Toolchain: the two wasm targets (rustup fetches them once).
setup:
	@installed="$$(rustup target list --installed)"; \
	for t in $(WASM_TARGETS); do \
	  grep -qx "$$t" <<<"$$installed" || rustup target add "$$t"; \
	done

aigov: setup
	$(CARGO) build --release --locked -p host-test

## Both guest builds of every rule, with the size-tuned `wasm` profile.
wasm: setup
	RUSTFLAGS="$(WASM_RUSTFLAGS)" $(CARGO) build --locked --profile wasm --target wasm32-wasip1 $(RULES:%=-p %)
	RUSTFLAGS="$(WASM_RUSTFLAGS)" $(CARGO) build --locked --profile wasm --target wasm32-unknown-unknown $(RULES:%=-p %)

## artifacts/<rule>/policy.wasm: the waPC module annotated with its
## metadata.yml (io.kubewarden.metadata); policy.component.wasm: the component.
artifacts: wasm aigov
	@for rule in $(RULES); do \
	  crate="$${rule//-/_}"; \
	  mkdir -p $(ARTIFACTS)/$$rule; \
	  $(AIGOV) annotate target/wasm32-wasip1/wasm/$$crate.wasm \
	    --metadata policies/$$rule/metadata.yml --usage policies/$$rule/README.md \
	    -o $(ARTIFACTS)/$$rule/policy.wasm; \
	  $(AIGOV) componentize target/wasm32-unknown-unknown/wasm/$$crate.wasm \
	    -o $(ARTIFACTS)/$$rule/policy.component.wasm; \
	  echo "built $(ARTIFACTS)/$$rule/{policy.wasm,policy.component.wasm}"; \
	done

## The main job: build everything, evaluate the sample workloads, print verdicts.
demo: artifacts
	$(AIGOV) scan host-test/samples --cluster host-test/samples/cluster --artifacts $(ARTIFACTS) --fail-on none

## Per-request timings (native floor, native rule, module and component,
## warm and fresh instance) and artifact sizes; results go in BENCHMARKS.md.
.PHONY: bench
bench: artifacts
	$(AIGOV) bench --artifacts $(ARTIFACTS)

## Clippy on the host and on both guest targets, warnings as errors.
lint: setup
	$(CARGO) clippy --locked --workspace --all-targets -- -D warnings
	$(CARGO) clippy --locked --target wasm32-wasip1 $(RULES:%=-p %) -- -D warnings
	$(CARGO) clippy --locked --target wasm32-unknown-unknown $(RULES:%=-p %) -- -D warnings

## Native unit tests of every crate, and every case file as a named test
## (native, module, component).
unit: artifacts
	$(CARGO) test --release --locked --workspace

## The same cases through the CLI, as a platform team would run them.
cases: artifacts
	$(AIGOV) test --artifacts $(ARTIFACTS)

test: lint unit cases

clean:
	$(CARGO) clean
	find $(ARTIFACTS) -mindepth 1 ! -name README.md -delete
