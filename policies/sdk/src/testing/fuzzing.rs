//! The properties every rule must hold on any input, as plain functions,
//! for the fuzz targets (`host-test/fuzz/`), the smoke test on the case
//! corpus, and reproducers. Native only.
//!
//! A fuzz input is an `AdmissionRequest` as JSON text; each rule runs with
//! the settings [`Subjects`] gives it.
//!
//! - [`check_rules`]: the decoder and every rule, alone and in the bundle:
//!   never a panic; input serde_json refuses is a 400 for every rule; a
//!   rejection has a message, an admission none; no Rust type names.
//! - [`check_differential`]: the one-pass decoder against a reference built
//!   on `serde_json::Value`: the same document as serde_json re-encodes it
//!   (keys reordered, escapes and numbers re-spelt), and with `object` moved
//!   before `kind` (so the object is buffered and decoded afterwards), must
//!   decode to the same model and get the same answer from every rule.
//!   The request's object, put in a `List`, must also read the same with
//!   [`crate::model::listed::list_pods`] (one pass, the slim model) as with
//!   `list_items` and `Workload::parse` of each item, what the slim model
//!   skips pruned ([`check_listed_pods`]).
//! - [`mutate`]: a structure-aware mutation of a JSON input (a value changed
//!   in type, a list element duplicated, a key dropped, keys reordered), for
//!   libFuzzer's custom mutator.

use serde_json::{Map, Value};

use crate::model::request::Request;
use crate::runtime::policy::NativePolicy;
use crate::runtime::verdict::ValidationResponse;

/// The rules under test, each with its settings, and the bundle.
pub struct Subjects {
    /// `(rule, settings JSON)`, in name order.
    pub rules: Vec<(&'static NativePolicy, String)>,
    /// The bundle.
    pub bundle: &'static NativePolicy,
    /// The bundle's settings: every rule on, with the settings above.
    pub bundle_settings: String,
}

impl Subjects {
    /// Every rule of `rules` with `settings(name)` (default `{}`).
    pub fn new(rules: &'static [NativePolicy], bundle: &'static NativePolicy, settings: impl Fn(&str) -> Option<String>) -> Subjects {
        let mut out = Vec::new();
        let mut all = Map::new();
        for rule in rules {
            let s = settings(rule.metadata.name).unwrap_or_else(|| "{}".into());
            all.insert(rule.metadata.name.to_string(), serde_json::from_str(&s).unwrap_or(Value::Null));
            out.push((rule, s));
        }
        let mut top = Map::new();
        top.insert("rules".into(), Value::Object(all));
        Subjects { rules: out, bundle, bundle_settings: Value::Object(top).to_string() }
    }
}

fn text(data: &[u8]) -> Option<&str> {
    std::str::from_utf8(data).ok()
}

/// Whether a 400's message names a Rust type, as serde's derive writes one
/// (`expected struct Container`). A message quotes the field path, whose
/// keys are the input's own text and can hold any word: a message can only
/// be caught naming a type the input does not spell itself (as written, or
/// unescaped).
fn names_rust_type(message: &str, input: &str) -> bool {
    const WORD: &str = "struct";
    let spelt_by_input = || input.contains(WORD) || serde_json::from_str::<Value>(input).is_ok_and(|v| v.to_string().contains(WORD));
    message.contains("struct ") && !spelt_by_input()
}

/// What every response must be, whatever the input.
fn well_formed(who: &str, r: &ValidationResponse, json_ok: bool, input: &str) -> Result<(), String> {
    if !json_ok && (r.accepted || r.code != Some(400)) {
        return Err(format!("{who}: input serde_json refuses was not a 400: {r:?}"));
    }
    if r.accepted && (r.message.is_some() || r.code.is_some()) {
        return Err(format!("{who}: an admission with a message or code: {r:?}"));
    }
    if !r.accepted && r.message.as_deref().is_none_or(|m| m.trim().is_empty()) {
        return Err(format!("{who}: a rejection without a message: {r:?}"));
    }
    if r.code == Some(400) && r.message.as_deref().is_some_and(|m| names_rust_type(m, input)) {
        return Err(format!("{who}: a message names a Rust type: {r:?}"));
    }
    Ok(())
}

/// Whether `text` is one JSON value (whitespace around it allowed): only
/// then is it the same input spliced into Kubewarden's payload as given on
/// its own. Text with trailing data (`{..},"operation":..`) becomes a
/// different, valid payload; empty text an invalid one.
pub fn is_one_json_value(text: &str) -> bool {
    serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok()
}

/// The SDK's decoder and every rule, natively: see the module docs.
pub fn check_rules(subjects: &Subjects, data: &[u8]) -> Result<(), String> {
    let Some(request) = text(data) else { return Ok(()) };
    let json_ok = is_one_json_value(request);
    let cluster = crate::cluster::NoCluster;
    for (rule, settings) in &subjects.rules {
        let r = (rule.validate_request)(request, settings, &cluster);
        well_formed(rule.metadata.name, &r, json_ok, request)?;
    }
    let r = (subjects.bundle.validate_request)(request, &subjects.bundle_settings, &cluster);
    well_formed("bundle", &r, json_ok, request)?;
    // The Kubewarden payload form decodes the same request. Only for a
    // request that is one JSON value: spliced into the payload, text with
    // trailing data (`{..},"operation":..`) becomes a different, valid
    // payload, which is not the same input.
    if json_ok {
        let payload = format!("{{\"request\":{request},\"settings\":{}}}", subjects.bundle_settings);
        let p = (subjects.bundle.validate)(payload.as_bytes(), &cluster);
        well_formed("bundle (payload)", &p, json_ok, request)?;
        if p != r {
            return Err(format!("the payload and the request forms disagree: {p:?} vs {r:?}"));
        }
    }
    Ok(())
}

/// `value` with `object` moved before every other key (and `kind` last).
fn object_first(value: &Value) -> Option<String> {
    let obj = value.as_object()?;
    let mut out = String::from("{");
    let mut keys: Vec<&String> = obj.keys().collect();
    keys.sort_by_key(|k| match k.as_str() {
        "object" => 0,
        "kind" => 2,
        _ => 1,
    });
    for (i, k) in keys.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&serde_json::to_string(k).ok()?);
        out.push(':');
        out.push_str(&serde_json::to_string(obj.get(*k)?).ok()?);
    }
    out.push('}');
    Some(out)
}

/// The canonical view of what rules read from a request: the decoded
/// header and workload, with quantities compared by value.
pub fn view(r: &Request<'_>) -> String {
    format!("{:?} {:?}", r.admission().kind, r.workload())
}

/// Whether an object of the JSON document `text` has a key twice.
fn has_duplicate_keys(text: &str) -> bool {
    use serde::de::{Error, MapAccess, SeqAccess, Visitor};

    const DUPLICATE: &str = "duplicate key";
    struct Check;
    impl<'de> serde::Deserialize<'de> for Check {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Check, D::Error> {
            d.deserialize_any(Walk)
        }
    }
    struct Walk;
    impl<'de> Visitor<'de> for Walk {
        type Value = Check;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("JSON")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Check, A::Error> {
            let mut seen = std::collections::HashSet::new();
            while let Some(key) = map.next_key::<String>()? {
                if !seen.insert(key) {
                    return Err(A::Error::custom(DUPLICATE));
                }
                map.next_value::<Check>()?;
            }
            Ok(Check)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Check, A::Error> {
            while seq.next_element::<Check>()?.is_some() {}
            Ok(Check)
        }
        fn visit_bool<E: Error>(self, _: bool) -> Result<Check, E> {
            Ok(Check)
        }
        fn visit_i64<E: Error>(self, _: i64) -> Result<Check, E> {
            Ok(Check)
        }
        fn visit_u64<E: Error>(self, _: u64) -> Result<Check, E> {
            Ok(Check)
        }
        fn visit_f64<E: Error>(self, _: f64) -> Result<Check, E> {
            Ok(Check)
        }
        fn visit_str<E: Error>(self, _: &str) -> Result<Check, E> {
            Ok(Check)
        }
        fn visit_unit<E: Error>(self) -> Result<Check, E> {
            Ok(Check)
        }
    }
    serde_json::from_str::<Check>(text).is_err_and(|e| e.to_string().starts_with(DUPLICATE))
}

/// Whether a number of the JSON document `text` is one serde_json's `Value`
/// does not hold exactly. Beyond 64-bit integers it keeps an `f64`: a
/// decimal of many digits rounds to another, and serde_json's own parsing
/// may land a unit in the last place away (`1.11111111111111e+39` prints
/// back as `1.1111111111111101e39`). The re-encoding is then another
/// document; the decoder, which keeps a quantity as written (as the API
/// server does), reads the original exactly, so there is nothing to compare.
/// Each number is put through `Value` and compared with what comes back as
/// an exact decimal.
fn has_inexact_numbers(text: &str) -> bool {
    let b = text.as_bytes();
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        match c {
            b'"' => {
                i += 1;
                while let Some(&c) = b.get(i) {
                    i += if c == b'\\' { 2 } else { 1 };
                    if c == b'"' {
                        break;
                    }
                }
            }
            b'-' | b'0'..=b'9' => {
                let start = i;
                while b.get(i).is_some_and(|c| matches!(c, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')) {
                    i += 1;
                }
                if text.get(start..i).is_some_and(inexact) {
                    return true;
                }
            }
            _ => i += 1,
        }
    }
    false
}

/// [`has_inexact_numbers`] for one number literal.
fn inexact(number: &str) -> bool {
    let Ok(value) = serde_json::from_str::<Value>(number) else { return true };
    let again = value.to_string();
    again != number
        && match (crate::model::quantity::Quantity::parse(number), crate::model::quantity::Quantity::parse(&again)) {
            (Ok(a), Ok(b)) => a.canonical() != b.canonical(),
            _ => true,
        }
}

/// The decoder against serde_json's reading of the same document: see the
/// module docs.
pub fn check_differential(subjects: &Subjects, data: &[u8]) -> Result<(), String> {
    let Some(original) = text(data) else { return Ok(()) };
    let value = match serde_json::from_str::<Value>(original) {
        Ok(v) => v,
        Err(_) => {
            return match Request::parse(original) {
                Ok(_) => Err("serde_json refuses the document but the decoder read it".into()),
                Err(_) => Ok(()),
            };
        }
    };
    // With a key twice in an object, `Value` keeps the last and its
    // re-encoding is another document; the decoder, like serde's derive,
    // may already have refused the first. The API server never sends such a
    // request (it decodes and re-encodes every object), so there is nothing
    // to compare.
    if has_duplicate_keys(original) || has_inexact_numbers(original) {
        return Ok(());
    }
    let mut variants = vec![("serde_json's re-encoding", value.to_string())];
    if let Some(t) = object_first(&value) {
        variants.push(("object before kind", t));
    }
    let first = Request::parse(original);
    for (what, variant) in &variants {
        let other = Request::parse(variant);
        match (&first, &other) {
            (Ok(a), Ok(b)) if view(a) == view(b) => {}
            (Ok(a), Ok(b)) => return Err(format!("{what}: the decoder reads differently:\n{}\n{}", view(a), view(b))),
            (Err(_), Err(_)) => {}
            (a, b) => {
                return Err(format!("{what}: one reading fails: {:?} vs {:?}", a.as_ref().err(), b.as_ref().err()));
            }
        }
        for (rule, settings) in &subjects.rules {
            let x = (rule.validate_request)(original, settings, &crate::cluster::NoCluster);
            let y = (rule.validate_request)(variant, settings, &crate::cluster::NoCluster);
            // Messages of syntax-level problems quote positions, which the
            // re-encoding moves; everything else must be identical.
            let comparable = |r: &ValidationResponse| (r.accepted, r.code, r.warnings.clone(), r.audit_annotations.clone());
            if comparable(&x) != comparable(&y) || (x.code.is_none() && x.message != y.message) {
                return Err(format!("{what}: `{}` answers differently:\n{x:?}\n{y:?}", rule.metadata.name));
            }
        }
    }
    if let Some(object) = value.get("object") {
        check_listed_pods(object)?;
    }
    Ok(())
}

/// `object`, as a Pod in a `List` (twice), read by
/// [`crate::model::listed::list_pods`]'s slim model in one pass, against the
/// full model: `list_items` then `Workload::parse` of each item, with what
/// the slim model skips pruned from the object first ([`pruned_to_listed`]).
/// The same names, deletions and GPUs per pod (the same error, where a
/// quantity is unparsable), or both readings refused. `list_pods` also
/// reads `status.phase`, which `Workload::parse` skips: where only it
/// refuses the list, the status must be what it refused.
pub fn check_listed_pods(object: &Value) -> Result<(), String> {
    use crate::model::listed::{list_items, list_pods};
    let in_list = |item: &Value| format!(r#"{{"kind":"PodList","items":[{item},{item}]}}"#);
    let list = in_list(object);
    let reference = in_list(&pruned_to_listed(object));
    let gpus = crate::cluster::gpu::GpuResources::default();
    let one_pass = list_pods(&list);
    let by_item: Result<Vec<_>, _> = list_items(&reference).and_then(|items| {
        items.into_iter().map(|i| crate::model::workload::Workload::parse(crate::model::kind::WorkloadKind::Pod, i)).collect()
    });
    match (one_pass, by_item) {
        (Ok(pods), Ok(parsed)) => {
            if pods.len() != parsed.len() {
                return Err(format!("list_pods read {} pods, list_items {}", pods.len(), parsed.len()));
            }
            for (pod, w) in pods.iter().zip(&parsed) {
                let Some(t) = w.templates().next() else { return Err("Workload::parse of a Pod gave no template".into()) };
                let a = (pod.metadata.name.as_deref(), pod.metadata.being_deleted, pod.gpus_per_pod(&gpus));
                let b = (w.metadata.name.as_deref(), w.metadata.being_deleted, t.gpus_per_pod(&gpus));
                if a != b {
                    return Err(format!("a listed pod reads differently: list_pods {a:?}, Workload::parse {b:?}"));
                }
            }
            Ok(())
        }
        (Err(_), Err(_)) => Ok(()),
        (Err(e), Ok(_)) => {
            let phase_ok = match object.get("status") {
                None | Some(Value::Null) => true,
                Some(Value::Object(status)) => matches!(status.get("phase"), None | Some(Value::Null | Value::String(_))),
                Some(_) => false,
            };
            if phase_ok { Err(format!("list_pods refuses what list_items and Workload::parse read: {}", e.0)) } else { Ok(()) }
        }
        (Ok(_), Err(e)) => Err(format!("list_pods reads what list_items and Workload::parse refuse: {}", e.0)),
    }
}

/// A Pod with what [`crate::ListedPod`] does not read removed: in `spec`,
/// every key but `containers` and `initContainers`; in their containers,
/// every key but `name`, `resources` and `restartPolicy`. A value of
/// another shape than these (a `spec` that is a number, a container that
/// is a list) is kept as it is, so that both models refuse it.
pub fn pruned_to_listed(object: &Value) -> Value {
    let mut out = object.clone();
    if let Some(Value::Object(spec)) = out.get_mut("spec") {
        spec.retain(|k, _| k == "containers" || k == "initContainers");
        let containers = spec.values_mut().filter_map(Value::as_array_mut).flatten().filter_map(Value::as_object_mut);
        for c in containers {
            c.retain(|k, _| matches!(k.as_str(), "name" | "resources" | "restartPolicy"));
        }
    }
    out
}

/// A small deterministic random number generator (xorshift), seeded by
/// libFuzzer.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 { 0 } else { usize::try_from(self.next() % n as u64).unwrap_or(0) }
    }
}

/// Values that make rules and the decoder work: GPU names, operators,
/// quantities at the edges, escapes.
fn interesting(rng: &mut Rng) -> Value {
    let strings = [
        "nvidia.com/gpu",
        "nvidia.com/mig-1g.10gb",
        "amd.com/gpu",
        "Exists",
        "Equal",
        "NoSchedule",
        "0",
        "-1",
        "1e999",
        "99999999999999999999",
        "500m",
        "4Gi",
        "\u{e9}\"\\",
        "",
        "sleep",
        "infinity",
        "true",
        "Always",
        "CREATE",
        "UPDATE",
        "DELETE",
        "CONNECT",
        "status",
        "exec",
        "default",
        "kube-system",
    ];
    match rng.below(9) {
        0 => Value::Null,
        1 => Value::Bool(rng.below(2) == 0),
        2 => Value::from(i64::try_from(rng.next() % 20).unwrap_or(0) - 5),
        3 => Value::from(u64::MAX),
        4 => serde_json::json!(1.5),
        5 => Value::Array(Vec::new()),
        6 => Value::Object(Map::new()),
        _ => Value::from(strings.get(rng.below(strings.len())).copied().unwrap_or("")),
    }
}

/// Every node of a document, as JSON pointers.
fn pointers(v: &Value, at: String, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, c) in m {
                pointers(c, format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")), out);
            }
        }
        Value::Array(a) => {
            for (i, c) in a.iter().enumerate() {
                pointers(c, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
    out.push(at);
}

/// Every rule of the bundle with the settings `aigov build fuzz-corpus` wrote
/// (`$AIGOV_FUZZ_DIR/settings.json`, default `target/fuzz`; each rule's
/// defaults without it): what the fuzz targets test.
pub fn subjects_from_env(rules: &'static [NativePolicy], bundle: &'static NativePolicy) -> Subjects {
    let dir = std::env::var("AIGOV_FUZZ_DIR").unwrap_or_else(|_| "target/fuzz".into());
    let text = std::fs::read_to_string(format!("{dir}/settings.json")).unwrap_or_else(|_| "{}".into());
    let settings: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    Subjects::new(rules, bundle, |name| settings.get(name).map(Value::to_string))
}

/// The fuzz targets' custom mutator: on every other seed a [`mutate`]
/// of the input written over `data` (when it fits `max_size`), else
/// libFuzzer's own mutation (`fallback`). Returns the new size.
pub fn mutate_in_place(
    data: &mut [u8],
    size: usize,
    max_size: usize,
    seed: u32,
    fallback: impl FnOnce(&mut [u8], usize, usize) -> usize,
) -> usize {
    if seed.is_multiple_of(2)
        && let Some(m) = data.get(..size).and_then(|d| mutate(d, seed))
        && m.len() <= max_size
        && let Some(out) = data.get_mut(..m.len())
    {
        out.copy_from_slice(&m);
        return m.len();
    }
    fallback(data, size, max_size)
}

/// One structure-aware mutation of a JSON document; `None` when the input
/// is not JSON (the byte-level mutators handle it).
pub fn mutate(data: &[u8], seed: u32) -> Option<Vec<u8>> {
    let mut doc: Value = serde_json::from_slice(data).ok()?;
    let mut rng = Rng(u64::from(seed).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mut all = Vec::new();
    pointers(&doc, String::new(), &mut all);
    let target = all.get(rng.below(all.len()))?.clone();
    match rng.below(5) {
        0 | 1 => {
            let v = interesting(&mut rng);
            *doc.pointer_mut(&target)? = v;
        }
        2 => {
            if let Some(Value::Array(a)) = doc.pointer_mut(&target)
                && let Some(first) = a.first().cloned()
            {
                a.push(first);
            }
        }
        3 => {
            let (parent, key) = target.rsplit_once('/')?;
            if let Some(Value::Object(m)) = doc.pointer_mut(parent) {
                m.remove(&key.replace("~1", "/").replace("~0", "~"));
            }
        }
        _ => return object_first(&doc).map(String::into_bytes),
    }
    Some(doc.to_string().into_bytes())
}

#[cfg(test)]
mod tests {
    use super::{check_listed_pods, has_duplicate_keys, names_rust_type, pruned_to_listed};

    #[test]
    fn listed_pods_read_alike_or_are_refused_alike() {
        let pod = |text: &str| serde_json::from_str::<serde_json::Value>(text).unwrap_or(serde_json::Value::Null);
        for ok in [
            r#"{"metadata":{"name":"a","deletionTimestamp":"x"},"spec":{"initContainers":[{"restartPolicy":"Always","resources":{"limits":{"nvidia.com/gpu":"1"}}}],"containers":[{"resources":{"requests":{"nvidia.com/gpu":"2"}}}]},"status":{"phase":"Running"}}"#,
            r#"{"spec":{"containers":[{"resources":{"limits":{"nvidia.com/gpu":"two"}}}]}}"#,
            r#"{"spec":{"containers":7}}"#,
            // Only `list_pods` reads the phase: refusing a phase that is not
            // a string is its own, and allowed.
            r#"{"metadata":{"name":"a"},"status":{"phase":5}}"#,
            r#"{"status":[]}"#,
            "null",
            r#""a string""#,
            // What only the full model reads, and refuses: pruned from its
            // reading, skipped by the slim one.
            r#"{"spec":{"tolerations":7,"containers":[{"name":"c","env":"x","resources":{"limits":{"nvidia.com/gpu":"1"}}}],"ephemeralContainers":[3]}}"#,
            r#"{"spec":{"containers":[7,{"image":[]}]}}"#,
        ] {
            assert_eq!(check_listed_pods(&pod(ok)), Ok(()), "{ok}");
        }
    }

    #[test]
    fn pruning_keeps_what_the_slim_model_reads_and_shapes_it_cannot() {
        let pod = |text: &str| serde_json::from_str::<serde_json::Value>(text).unwrap();
        let full = pod(
            r#"{"metadata":{"name":"a"},"status":{"phase":"Running","podIP":"x"},"spec":{"volumes":[],"initContainers":[{"name":"i","image":"x","restartPolicy":"Always"}],"containers":[{"name":"c","env":[],"resources":{"limits":{}}},7]}}"#,
        );
        let slim = pod(
            r#"{"metadata":{"name":"a"},"status":{"phase":"Running","podIP":"x"},"spec":{"initContainers":[{"name":"i","restartPolicy":"Always"}],"containers":[{"name":"c","resources":{"limits":{}}},7]}}"#,
        );
        assert_eq!(pruned_to_listed(&full), slim);
        for kept in [r#"{"spec":7}"#, r#"{"spec":{"containers":{"a":{"env":1}}}}"#, "[]"] {
            assert_eq!(pruned_to_listed(&pod(kept)), pod(kept), "{kept}");
        }
    }

    #[test]
    fn a_type_name_counts_only_when_the_input_does_not_spell_it() {
        let msg = "the admission request is malformed: `spec`: invalid type: string \"x\", expected struct PodSpec";
        assert!(names_rust_type(msg, r#"{"spec":"x"}"#));
        // The `rules` target's finding: a key spliced from prose
        // (`...storagnstruct a list...`), quoted in the message's path.
        let echoed = "the admission request is malformed: `kind.storagnstruct a list`: expected `:` at line 2 column 9";
        assert!(!names_rust_type(echoed, "{\"kind\":{\"storagnstruct a list\"\n}"));
        // The same key with an escape: the input spells it once unescaped.
        assert!(!names_rust_type(echoed, r#"{"kind":{"storagns\u0074ruct a list":1}}"#));
        assert!(!names_rust_type("expected an object", "{}"));
    }

    #[test]
    fn duplicate_keys_are_found_at_any_depth() {
        assert!(has_duplicate_keys(r#"{"a":1,"a":2}"#));
        assert!(has_duplicate_keys(r#"{"a":[{"b":{"c":1,"c":1}}]}"#));
        assert!(!has_duplicate_keys(r#"{"a":{"a":1},"b":[{"a":1},{"a":2}],"c":"\"a\""}"#));
        assert!(!has_duplicate_keys("{"), "malformed is not duplicate");
    }

    #[test]
    fn numbers_a_double_cannot_hold_are_found() {
        use super::has_inexact_numbers as inexact;
        // The differential target's finding: a 41-digit GPU count.
        assert!(inexact(r#"{"limits":{"nvidia.com/gpu":11111111111111111111111111111111111111118}}"#));
        assert!(inexact(r#"[0.1000000000000000055511151231257827]"#));
        assert!(inexact(r#"[1e400]"#));
        // The next smoke run's: 15 digits, but serde_json's parsing lands
        // a unit in the last place away. That is serde_json's fast float
        // parser; with its `float_roundtrip` feature it parses exactly, and
        // Cargo turns the feature on in any build that also compiles a crate
        // asking for it (the workspace's tests do: sigstore's JSON
        // canonicalizer; the fuzz build does not). So the helper must follow
        // the build, against Rust's own correctly rounded parse.
        let n = "1.11111111111111e+39";
        let lands_off = serde_json::from_str::<f64>(n).ok() != n.parse::<f64>().ok();
        assert_eq!(inexact(&format!(r#"{{"nvidia.com/gpu":{n}}}"#)), lands_off);
        assert!(!inexact(
            r#"{"a":18446744073709551615,"b":-9223372036854775808,"c":1e25,"d":0.000125,"e":-3.5e10,"f":100000000000000000000000}"#
        ));
        assert!(!inexact(r#"{"not a number":"12345678901234567890.5","esc\"aped":"1e999"}"#), "strings are skipped");
        assert!(!inexact(r#"[12345678901234.5, 2.5e-3, 4E+2, -0.75]"#));
    }
}
