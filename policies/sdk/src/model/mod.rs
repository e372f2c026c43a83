//! Layer 3, the Kubernetes model rules read: the admission request
//! ([`request`]), object metadata and pod specs ([`pod`]), the workload
//! kinds ([`kind`]) and every pod template inside them ([`workload`], one
//! file per family), objects a lookup listed ([`listed`]), quantities,
//! node selection as the scheduler reads it ([`scheduling`]), the
//! kubelet's `$(VAR)` expansion ([`expansion`]), label selectors, required
//! labels and the classification vocabulary ([`classification`]), and which
//! requests are a controller's ([`trust`]). Imports only the layers below.

pub mod classification;
pub mod expansion;
pub mod kind;
pub mod label_selector;
pub mod labels;
pub mod listed;
pub mod pod;
pub mod quantity;
pub mod request;
pub mod rollout;
pub mod scheduling;
pub mod trust;
pub mod workload;
