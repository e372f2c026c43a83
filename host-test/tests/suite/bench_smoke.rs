//! `aigov bench` runs end to end with a tiny iteration count: every row is
//! there, every figure is positive, and the Markdown table holds every row.
//! (Smoke test only: performance is measured by `make bench`, never asserted
//! in a test.) Needs `make artifacts` first.

use crate::common::artifacts;
use std::time::Duration;

use aigov::tools::bench::render::{render_markdown, render_text};
use aigov::tools::bench::{BUNDLE_NAME, Config, Measurement, Plan, bench, requests};
use aigov::tools::report::model::Target;

#[test]
fn every_row_is_present_and_positive() {
    let artifacts = artifacts();
    let config = Config { artifacts: artifacts.clone(), plan: Plan::exact(3), rules: Vec::new(), ..Config::default() };
    let report = bench(&config).unwrap_or_else(|e| panic!("aigov bench could not run: {e:#}\n(run `make artifacts` first)"));

    let mut expected_rows = 0;
    for (name, _, text) in requests() {
        let target = Target::of(&serde_json::from_str(&text).unwrap());
        let floor: Vec<_> = report.rows.iter().filter(|r| r.request == name && r.measurement == Measurement::Floor).collect();
        assert_eq!(floor.len(), 1, "{name}: one floor row");
        assert!(floor[0].rule.is_none());
        expected_rows += 1;
        let governing: Vec<&str> =
            aigov::run::native::RULES.iter().filter(|r| target.governed_by(r.metadata)).map(|r| r.metadata.name).collect();
        if name == "exec" {
            assert_eq!(governing, ["exec-guard"], "{name}: only exec-guard governs `pods/exec`");
        } else {
            assert!(governing.contains(&"gpu-runtime-class"), "{name}: gpu-runtime-class governs every workload");
        }
        // Every governing rule, then the bundle with every rule on.
        for rule in governing.into_iter().chain([BUNDLE_NAME]) {
            for m in Measurement::RULE {
                let found =
                    report.rows.iter().filter(|r| r.request == name && r.rule.as_deref() == Some(rule) && r.measurement == m).count();
                assert_eq!(found, 1, "{name}/{rule}: one `{}` row", m.label());
                expected_rows += 1;
            }
            assert!(report.sizes.iter().any(|s| s.rule == rule), "{rule}: artifact sizes");
            assert!(report.instantiation.iter().any(|i| i.rule == rule), "{rule}: instantiation");
            assert!(report.verdicts.iter().any(|v| v.starts_with(&format!("{name}/{rule}: "))), "{name}/{rule}: verdict");
        }
    }
    assert_eq!(report.rows.len(), expected_rows, "no unexpected rows");
    for r in &report.rows {
        assert_eq!(r.stats.samples, 3, "{r:?}");
        assert!(r.stats.median > Duration::ZERO && r.stats.p90 >= r.stats.median, "{r:?}");
        assert!(r.ratio > 0.0 && r.ratio.is_finite(), "{r:?}");
    }
    for s in &report.sizes {
        assert!(s.module > 0 && s.component > 0, "{s:?}");
    }
    for i in &report.instantiation {
        assert!(i.module.median > Duration::ZERO && i.component.median > Duration::ZERO, "{i:?}");
    }
    assert!(report.machine.cpus > 0);
    assert!(!report.notes.iter().any(|n| n.contains("disagree")), "the three forms agree: {:?}", report.notes);
    // Every rule and the bundle, in both forms, answer the three requests
    // in a fresh instance without growing its memory (the heap fits in the
    // initial memory the Makefile links the guests with).
    assert!(report.memory_growths.is_empty(), "{:?}", report.memory_growths);
    // The admitted Pod is what its name says: every rule, and the bundle,
    // admit it (a rule that starts refusing it needs the request mended, or
    // the bench stops measuring the path where no message is written).
    let admitted: Vec<&String> = report.verdicts.iter().filter(|v| v.starts_with("pod-admitted/")).collect();
    assert!(admitted.len() > 2, "{admitted:?}");
    for v in admitted {
        assert!(v.ends_with(": accepted"), "{v}");
    }

    // `--namespace-pods`: gpu-quota reads a crowded namespace, and answers
    // every request as with none.
    let crowded = Config {
        artifacts: artifacts.clone(),
        plan: Plan::exact(1),
        rules: vec!["gpu-quota".into()],
        namespace_pods: 20,
        ..Config::default()
    };
    let crowded = bench(&crowded).unwrap_or_else(|e| panic!("aigov bench --namespace-pods could not run: {e:#}"));
    let quota =
        |r: &aigov::tools::bench::Report| -> Vec<String> { r.verdicts.iter().filter(|v| v.contains("/gpu-quota: ")).cloned().collect() };
    assert!(!quota(&report).is_empty());
    assert_eq!(quota(&crowded), quota(&report));
    assert!(render_text(&crowded).contains("holds 20 more running CPU-only pods"));

    // `--spelt-out-settings`: the settings generated policies carry, every
    // key spelt out, give every rule and the bundle the same answers.
    let rules = vec!["aigov-bundle".to_string(), "gpu-access".to_string()];
    let spelt_out = Config { artifacts, plan: Plan::exact(1), rules, spelt_out_settings: true, ..Config::default() };
    let spelt_out = bench(&spelt_out).unwrap_or_else(|e| panic!("aigov bench --spelt-out-settings could not run: {e:#}"));
    let of = |r: &aigov::tools::bench::Report| -> Vec<String> {
        r.verdicts.iter().filter(|v| v.contains("/gpu-access: ") || v.contains("/bundle (every rule): ")).cloned().collect()
    };
    assert!(of(&spelt_out).len() >= 5, "{:?}", spelt_out.verdicts);
    assert_eq!(of(&spelt_out), of(&report));
    assert!(render_text(&spelt_out).contains("settings spelt out"));

    let markdown = render_markdown(&report);
    // The first table: one line per row, after its header and rule line.
    let table_rows = markdown
        .lines()
        .skip_while(|l| !l.starts_with("| request | rule | measurement"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .count();
    assert_eq!(table_rows, report.rows.len(), "{markdown}");
    assert!(markdown.contains("| bundle ÷ cheapest |"), "the bundle against the single rules: {markdown}");
    assert!(render_text(&report).contains("native JSON skim (floor)"));
}

#[test]
fn the_scan_benchmark_scans_every_manifest_in_every_form() {
    let artifacts = artifacts();
    let b = aigov::tools::scanbench::bench_scan(&artifacts, 40).unwrap_or_else(|e| panic!("aigov bench --scan could not run: {e:#}"));
    assert_eq!(b.documents, 40);
    assert!(b.floor > Duration::ZERO);
    let forms: Vec<&str> = b.rows.iter().map(|r| r.form).collect();
    for form in ["native", "module", "component"] {
        assert!(forms.contains(&form), "{form}: {forms:?}");
    }
    for r in &b.rows {
        assert_eq!(r.documents, 40);
        assert!(r.scan > Duration::ZERO && r.rate() > 0.0, "{r:?}");
    }
    // The first row of each form times one manifest and its guest calls.
    assert!(b.rows.iter().filter(|r| r.jobs == b.cpus).all(|r| r.guest > Duration::ZERO && r.one >= r.guest / 2));
    let md = aigov::tools::scanbench::render_scan(&b, true);
    assert_eq!(
        md.lines().filter(|l| l.starts_with("| native") || l.starts_with("| module") || l.starts_with("| component")).count(),
        b.rows.len()
    );
}

#[test]
fn the_bundle_can_be_benchmarked_alone() {
    let artifacts = artifacts();
    let config = Config { artifacts: artifacts.clone(), plan: Plan::exact(1), rules: vec!["aigov-bundle".into()], ..Config::default() };
    let report = bench(&config).unwrap_or_else(|e| panic!("aigov bench --rule aigov-bundle could not run: {e:#}"));
    let rules: std::collections::BTreeSet<Option<&str>> = report.rows.iter().map(|r| r.rule.as_deref()).collect();
    assert_eq!(rules, [None, Some(BUNDLE_NAME)].into_iter().collect(), "only the floors and the bundle");
    let e = bench(&Config { artifacts, plan: Plan::exact(1), rules: vec!["gpu-runtime-clas".into()], ..Config::default() }).unwrap_err();
    assert!(e.to_string().contains("no rule named `gpu-runtime-clas`") && e.to_string().contains("aigov-bundle"), "{e}");
}
