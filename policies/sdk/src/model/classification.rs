//! The classification labels: one vocabulary for every rule that reads
//! them, so that rules left at their defaults agree on what a workload may
//! say it is. `workload-classification` requires them on every workload,
//! `ray-cluster-limits` on Ray objects, `gpu-access` reads the CPU training
//! type, and `opencost-labels` allows the OpenCost categories these types
//! map to. Change the vocabulary here and every rule's defaults follow.
//!
//! The types are those of the data platform in the blog post *Governing GPU
//! and CPU Workloads at Scale* (its `data-platform-workload-classification`
//! policy), with `cpu-training`, which its CPU training placement policy
//! reads. The same post's Ray policy lists `training`, `inference` and
//! `development` instead; with both at their defaults no Ray workload could
//! pass both rules, so the Ray rule takes this vocabulary too (`ml-training`
//! for `training`, `model-inference` for `inference`, `jupyter-notebook`
//! for `development`).

use crate::model::labels::{COMPUTE_TYPE_LABEL, COMPUTE_TYPES, RequiredLabels};

/// The label naming the team that owns a workload.
pub const TEAM_LABEL: &str = "team";

/// The label naming who pays for a workload.
pub const COST_CENTER_LABEL: &str = "cost-center";

/// The label saying what a workload does.
pub const WORKLOAD_TYPE_LABEL: &str = "workload-type";

/// One value of [`WORKLOAD_TYPE_LABEL`] and the OpenCost workload category
/// it falls in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WorkloadType {
    /// The label value.
    pub name: &'static str,
    /// The `opencost.io/workload-category` it maps to.
    pub opencost_category: &'static str,
}

/// Every workload type, in the order messages list them.
pub const WORKLOAD_TYPES: [WorkloadType; 6] = [
    WorkloadType { name: "jupyter-notebook", opencost_category: "development" },
    WorkloadType { name: "ml-training", opencost_category: "training" },
    WorkloadType { name: "cpu-training", opencost_category: "training" },
    WorkloadType { name: "data-processing", opencost_category: "data-processing" },
    WorkloadType { name: "model-inference", opencost_category: "inference" },
    WorkloadType { name: "report-generation", opencost_category: "data-processing" },
];

/// The workload type of CPU training, which `gpu-access` keeps off GPUs.
pub const CPU_TRAINING: &str = "cpu-training";

/// The names of [`WORKLOAD_TYPES`].
pub fn workload_type_names() -> Vec<&'static str> {
    WORKLOAD_TYPES.iter().map(|t| t.name).collect()
}

/// The OpenCost workload categories (`opencost.io/workload-category`)
/// the types map to, each used by at least one type.
pub const OPENCOST_CATEGORIES: [&str; 4] = ["training", "inference", "development", "data-processing"];

/// The classification labels with their allowed values: `team` and
/// `cost-center` with any value, `workload-type` one of the types,
/// `compute-type` one of `gpu`, `cpu`, `mixed`.
pub fn classification_labels() -> RequiredLabels {
    let types = workload_type_names();
    RequiredLabels::new([
        (TEAM_LABEL, &[][..]),
        (COST_CENTER_LABEL, &[][..]),
        (WORKLOAD_TYPE_LABEL, &types[..]),
        (COMPUTE_TYPE_LABEL, &COMPUTE_TYPES[..]),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_vocabulary() {
        assert!(workload_type_names().contains(&CPU_TRAINING));
        for c in OPENCOST_CATEGORIES {
            assert!(WORKLOAD_TYPES.iter().any(|t| t.opencost_category == c), "`{c}` is no type's category");
        }
        for t in WORKLOAD_TYPES {
            assert!(OPENCOST_CATEGORIES.contains(&t.opencost_category), "`{}` maps to an unknown category", t.name);
        }
        let labels = classification_labels();
        assert_eq!(labels.0.len(), 4);
        assert!(labels.validate("requiredLabels").is_ok());
        let mut names = workload_type_names();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), WORKLOAD_TYPES.len(), "each type once");
    }
}
