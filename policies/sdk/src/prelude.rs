//! What a rule imports: `use aigov_sdk::prelude::*;`.

pub use crate::base::error::Malformed;
pub use crate::base::glob::Glob;
pub use crate::base::rule_settings::{RuleSettings, SettingsError};
pub use crate::base::text::{count, one_of, quoted, yaml_value};
pub use crate::cluster::gpu::{ExemptGpus, GpuRequest, GpuResources, GpuUse, ResourceClaims};
pub use crate::cluster::namespaces::{Namespace, NamespaceSelector};
pub use crate::cluster::{Cluster, LookupError, OnLookupError};
pub use crate::decode::json::Edit;
pub use crate::decode::path::Path;
pub use crate::model::kind::WorkloadKind;
pub use crate::model::pod::{Container, Labels, ObjectMeta, PodSpec};
pub use crate::model::request::{Operation, Request};
pub use crate::model::workload::{ContainerList, ContainerRef, PodTemplate, Role, ShmShortfall, Workload};
pub use crate::runtime::policy::Policy;
pub use crate::runtime::verdict::Verdict;
