//! Layer 1, below everything: how messages word lists and counts, wildcard
//! patterns, regular expressions in settings, the syntax of Kubernetes
//! names, labels and DNS subdomains (and sysctl names as the kubelet reads
//! them), cron schedules as the CronJob controller reads them, and the
//! errors a rule reports (malformed input, refused settings) and what a
//! rule's settings type is.
//! Imports nothing of the SDK.

pub mod cron;
pub mod error;
pub mod glob;
pub mod names;
pub mod regex;
pub mod rule_settings;
pub mod text;
