//! Manifests for measuring `aigov scan`: N Pod manifests of about 4.5 KiB,
//! each the object of `host-test/bench/pod-request.json` (a GPU training
//! Pod created by the job controller) with its own name, spread over a few
//! namespaces, one compact JSON file per manifest in folders of 1,000.
//! `aigov gen-manifests` writes them; `aigov bench --scan N` scans them.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde_json::{Value, json};

/// The request the manifests are taken from.
const POD_REQUEST: &str = include_str!("../../bench/pod-request.json");

/// The namespaces the manifests are spread over.
const NAMESPACES: [&str; 4] = ["ml-training", "ml-platform", "research", "inference"];

/// The size each manifest is padded to (with an annotation), in bytes.
pub const MANIFEST_BYTES: usize = 4608;

/// Manifests per folder.
const PER_FOLDER: usize = 1000;

/// The `i`-th manifest (compact JSON, with a final newline).
pub fn pod_manifest(template: &Value, i: usize) -> Result<String> {
    let mut object = template.clone();
    let namespace = NAMESPACES.get(i % NAMESPACES.len()).copied().unwrap_or("default");
    let metadata = object.get_mut("metadata").and_then(Value::as_object_mut).context("the bench Pod has no metadata")?;
    metadata.insert("name".into(), json!(format!("llm-finetune-worker-{i}")));
    metadata.insert("namespace".into(), json!(namespace));
    let text = serde_json::to_string(&object)?;
    // Pad to MANIFEST_BYTES with an annotation, as notes and
    // last-applied-configuration annotations make real manifests larger.
    let pad = MANIFEST_BYTES.saturating_sub(text.len() + 1 + r#","aigov.dev/notes":"""#.len());
    if let Some(a) = object.pointer_mut("/metadata/annotations").and_then(Value::as_object_mut) {
        a.insert("aigov.dev/notes".into(), json!("x".repeat(pad)));
    }
    Ok(format!("{}\n", serde_json::to_string(&object)?))
}

/// The Pod object every manifest is made from.
pub fn template() -> Result<Value> {
    let request: Value = serde_json::from_str(POD_REQUEST).context("host-test/bench/pod-request.json")?;
    request.get("object").cloned().context("the bench request has no object")
}

/// Writes `count` manifests under `dir` (`pods-000/pod-000000.json`, ...);
/// returns the files in the order `aigov scan` reads them.
pub fn write_manifests(dir: &Path, count: usize) -> Result<Vec<PathBuf>> {
    let template = template()?;
    let mut files = Vec::with_capacity(count);
    for i in 0..count {
        let folder = dir.join(format!("pods-{:03}", i / PER_FOLDER));
        if i % PER_FOLDER == 0 {
            std::fs::create_dir_all(&folder).with_context(|| format!("creating {}", folder.display()))?;
        }
        let path = folder.join(format!("pod-{i:06}.json"));
        std::fs::write(&path, pod_manifest(&template, i)?).with_context(|| format!("writing {}", path.display()))?;
        files.push(path);
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;

    #[test]
    fn manifests_are_distinct_pods_of_the_stated_size() {
        let t = template().unwrap();
        let a = pod_manifest(&t, 0).unwrap();
        let b = pod_manifest(&t, 5).unwrap();
        assert_eq!(a.len(), MANIFEST_BYTES);
        assert!(b.len().abs_diff(MANIFEST_BYTES) <= 1);
        let b: Value = serde_json::from_str(&b).unwrap();
        assert_eq!(b["kind"], "Pod");
        assert_eq!(b["metadata"]["name"], "llm-finetune-worker-5");
        assert_eq!(b["metadata"]["namespace"], "ml-platform");
    }
}
