//! The SDK's layers, held to what `src/lib.rs` says of them with the
//! module-graph checker the host's tests use
//! (`host-test/tests/suite/layers.rs`): each module uses only its own layer
//! and the layers below, and no modules use each other in a circle. Tests
//! inside a module may reach up (a test of a model type may build a
//! verdict), so `check_code` leaves them out.

#[path = "../../../host-test/tests/suite/layers.rs"]
#[allow(dead_code)]
mod layers;

/// The layers, bottom up: each layer's folder module and every module in
/// it, the generated WIT bindings with the runtime that exports them, and
/// the crate root with the prelude on top.
const SDK_LAYERS: &[&[&str]] = &[
    &["base", "base::*"],
    &["decode", "decode::*"],
    &["model", "model::*"],
    &["cluster", "cluster::*"],
    &["runtime", "runtime::*", "bindings"],
    &["testing", "testing::*"],
    &["prelude", "crate"],
];

#[test]
fn every_module_uses_only_its_layer_and_the_ones_below() {
    let src = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src");
    let problems = layers::check_code(&src, SDK_LAYERS);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
