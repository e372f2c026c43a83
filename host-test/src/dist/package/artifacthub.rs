//! `artifacthub-pkg.yml`, a rule's ArtifactHub package metadata, and the
//! time it gives as `createdAt`.

use aigov_metadata::{Metadata, annotations};
use aigov_sdk::WorkloadKind;
use anyhow::{Context, Result};
use serde::Serialize;

use super::{Packaged, annotation, yaml};

/// ArtifactHub's `createdAt`: `SOURCE_DATE_EPOCH` (seconds; the Makefile
/// sets the last commit's time) when set, else now. It appears in
/// `artifacthub-pkg.yml` only, never in an OCI artifact.
pub fn artifacthub_created_at() -> Result<String> {
    let time = match std::env::var("SOURCE_DATE_EPOCH") {
        Ok(v) if !v.trim().is_empty() => {
            let seconds = v.trim().parse::<i64>().with_context(|| format!("SOURCE_DATE_EPOCH=`{v}` is not a number of seconds"))?;
            chrono::DateTime::from_timestamp(seconds, 0).with_context(|| format!("SOURCE_DATE_EPOCH={seconds} is out of range"))?
        }
        _ => chrono::Utc::now(),
    };
    Ok(time.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
}

/// The Kinds a rule's webhook rules route to it, for ArtifactHub.
fn kinds(m: &Metadata) -> String {
    let mut out: Vec<String> = Vec::new();
    for rule in &m.rules {
        for resource in &rule.resources {
            let (plural, sub) = resource.split_once('/').map_or((resource.as_str(), None), |(p, s)| (p, Some(s)));
            let kind = WorkloadKind::ALL
                .into_iter()
                .find(|k| k.resource() == plural && rule.api_groups.iter().any(|g| g == k.group() || g == "*"))
                .map_or_else(|| plural.to_string(), |k| k.kind().to_string());
            let name = match sub {
                Some(sub) => format!("{kind}/{sub}"),
                None => kind,
            };
            if !out.contains(&name) {
                out.push(name);
            }
        }
    }
    out.join(", ")
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ArtifactHubPackage<'a> {
    version: &'a str,
    name: &'a str,
    display_name: &'a str,
    created_at: &'a str,
    description: &'a str,
    license: &'a str,
    #[serde(rename = "homeURL")]
    home_url: &'a str,
    containers_images: Vec<Named>,
    keywords: Vec<String>,
    links: Vec<Link>,
    install: String,
    readme: &'a str,
    maintainers: Vec<Named>,
    provider: Provider<'a>,
    annotations: std::collections::BTreeMap<&'a str, String>,
}

#[derive(Serialize)]
struct Named {
    name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    image: Option<String>,
}

#[derive(Serialize)]
struct Link {
    name: String,
    url: String,
}

#[derive(Serialize)]
struct Provider<'a> {
    name: &'a str,
}

/// The rule's `artifacthub-pkg.yml`.
pub fn artifacthub(r: &Packaged, registry: &str, created: &str) -> Result<String> {
    let m = &r.metadata;
    let image = format!("{}/{}:{}", registry.trim_end_matches('/'), r.name, r.module.tag());
    let mut keywords = vec!["aigov".to_string(), "kubewarden".to_string(), "gpu".to_string(), "ai".to_string()];
    for word in annotation(m, annotations::CATEGORY).split_whitespace() {
        let word = word.to_ascii_lowercase();
        if !keywords.contains(&word) {
            keywords.push(word);
        }
    }
    let mut notes = std::collections::BTreeMap::new();
    notes.insert("kubewarden/mutation", if m.mutating { "true" } else { "false" }.to_string());
    notes.insert("kubewarden/resources", kinds(m));
    notes.insert("kubewarden/rules", yaml(&m.rules)?);
    if !m.context_aware_resources.is_empty() {
        notes.insert("kubewarden/contextAwareResources", yaml(&m.context_aware_resources)?);
    }
    let package = ArtifactHubPackage {
        version: &r.module.version,
        name: &r.name,
        display_name: annotation(m, annotations::TITLE),
        created_at: created,
        description: annotation(m, annotations::DESCRIPTION),
        license: annotation(m, annotations::LICENSE),
        home_url: annotation(m, annotations::URL),
        containers_images: vec![Named { name: "policy".into(), image: Some(image.clone()) }],
        keywords,
        links: vec![Link { name: "source".into(), url: annotation(m, annotations::SOURCE).to_string() }],
        install: format!(
            "The policy is a Kubewarden policy in an OCI registry:\n\
             ```console\n\
             kwctl pull {image}\n\
             aigov pull {image} -o policy.wasm\n\
             ```\n\
             Deploy it with the `ClusterAdmissionPolicy` aigov generates (`make manifests DEST=deploy`,\n\
             then `kubectl apply -f deploy/{name}/cluster-admission-policy.yaml`), or\n\
             scaffold one with `kwctl scaffold manifest -t ClusterAdmissionPolicy registry://{image}`.\n",
            name = r.name
        ),
        readme: annotation(m, annotations::USAGE),
        maintainers: vec![Named { name: annotation(m, annotations::AUTHOR).to_string(), image: None }],
        provider: Provider { name: "aigov" },
        annotations: notes,
    };
    let mut out = String::from(
        "# ArtifactHub package metadata, generated by `aigov manifests` from the rule's\n\
         # metadata.yml and README.md. See https://artifacthub.io/docs/topics/repositories/kubewarden-policies/\n",
    );
    out.push_str(&yaml(&package)?);
    Ok(out)
}
