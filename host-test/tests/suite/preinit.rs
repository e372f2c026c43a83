//! A pre-initialised bundle (`aigov build preinit`) answers exactly as the
//! module it was made from, whatever settings a request brings, and keeps
//! the Kubewarden metadata; it starts with its settings read. Needs `make
//! artifacts` first.

use std::sync::Arc;

use aigov::run::artifact::{BUNDLE, module_path, payload};
use aigov::run::cluster::FixtureCluster;
use aigov::run::preinit::{as_sent, preinit};
use aigov::run::settings::needs_settings;
use aigov::run::wapc::WapcModule;
use aigov::run::{engine, native};
use aigov::tools::bench;
use aigov::tools::cases::{Case, bundle_settings, case_files};

use crate::common::{artifacts, root};

/// Every rule on at its defaults (the rules with no safe default left
/// off), as a team that turned them on without settings.
fn defaults() -> String {
    let on: serde_json::Map<String, serde_json::Value> = native::RULES
        .iter()
        .filter(|r| needs_settings(r).is_none())
        .map(|r| (r.metadata.name.to_string(), serde_json::json!({})))
        .collect();
    as_sent(&serde_json::json!({ "rules": on }))
}

/// The custom sections of a module, by name, in order.
fn custom_sections(module: &[u8]) -> Vec<(String, Vec<u8>)> {
    wasmparser::Parser::new(0)
        .parse_all(module)
        .filter_map(|p| match p.unwrap() {
            wasmparser::Payload::CustomSection(c) => Some((c.name().to_string(), c.data().to_vec())),
            _ => None,
        })
        .collect()
}

#[test]
fn a_preinitialised_bundle_answers_every_case_as_its_module() {
    let engine = engine::counting_engine().unwrap();
    let bytes = std::fs::read(module_path(&artifacts(), BUNDLE)).expect("run `make artifacts` first");
    let plain = WapcModule::new(&engine, &bytes).unwrap();
    let bench_settings =
        as_sent(&serde_json::from_str(&bench::settings_for(&native::BUNDLE, false, &Default::default()).unwrap()).unwrap());
    let baked: Vec<(&str, String, WapcModule)> = [("bench settings", bench_settings.clone()), ("defaults", defaults())]
        .into_iter()
        .map(|(name, settings)| {
            let image = preinit(&engine, &bytes, &settings).unwrap();
            assert_eq!(custom_sections(&image), custom_sections(&bytes), "{name}: the metadata and every custom section kept");
            (name, settings, WapcModule::new(&engine, &image).unwrap())
        })
        .collect();
    let run = |module: &WapcModule, cluster: &Arc<FixtureCluster>, request: &str, settings: &str| {
        let mut instance = module.instantiate(bench::host_for(&native::BUNDLE, cluster)).unwrap();
        let answer = instance.call("validate", payload(request, settings).as_bytes()).unwrap();
        (String::from_utf8(answer).unwrap(), instance.fuel_used().unwrap())
    };

    // Every case, with the settings it brings (the baked ones, at their
    // defaults, or others): the same answer.
    let (mut cases, mut fuel_plain, mut fuel_baked) = (0, 0, 0);
    for rule in native::names() {
        for (name, path) in case_files(&root().join("policies"), rule).unwrap() {
            let case = Case::load(&path).unwrap();
            let Some(request) = case.admission_request().unwrap() else { continue };
            let cluster = Arc::new(FixtureCluster::from_objects(case.cluster.clone()).unwrap());
            let settings = bundle_settings(rule, &case.settings.to_string());
            let (want, fuel) = run(&plain, &cluster, &request, &settings);
            for (baked_with, _, module) in &baked {
                let (got, f) = run(module, &cluster, &request, &settings);
                assert_eq!(got, want, "{rule}/{name}, pre-initialised with the {baked_with}");
                if *baked_with == "defaults" && case.settings == serde_json::json!({}) {
                    fuel_plain += fuel;
                    fuel_baked += f;
                }
            }
            cases += 1;
        }
    }
    assert!(cases > 1000, "{cases} cases");
    assert!(fuel_baked < fuel_plain, "a case at its rule's defaults starts with them read: {fuel_baked} against {fuel_plain}");

    // The bench's requests, with the settings baked in: the same answer,
    // the settings not read again.
    let cluster = Arc::new(bench::bench_cluster(0).unwrap());
    for (name, _, request) in bench::requests() {
        let (want, fuel) = run(&plain, &cluster, &request, &bench_settings);
        let (got, f) = run(&baked[0].2, &cluster, &request, &bench_settings);
        assert_eq!(got, want, "{name}");
        assert!(f + 50_000 < fuel, "{name}: a fresh pre-initialised instance reads no settings: {f} against {fuel}");
    }
}

#[test]
fn settings_the_module_refuses_are_refused_when_baked() {
    let engine = engine::new_engine().unwrap();
    let bytes = std::fs::read(module_path(&artifacts(), BUNDLE)).expect("run `make artifacts` first");
    let e = preinit(&engine, &bytes, r#"{"rules":{"gpu-quota":{"noSuchSetting":1}}}"#).unwrap_err();
    let message = format!("{e:#}");
    assert!(message.contains("refuses these settings") && message.contains("rules.gpu-quota: "), "{message}");
}
