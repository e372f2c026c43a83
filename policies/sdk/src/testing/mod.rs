//! What tests use and guests never compile (the `testing` feature): the
//! fuzzing properties, and helpers for rules' settings tests.

// Test helpers: a failed expectation panics, as a test's does.
#![allow(clippy::panic)]

pub mod fuzzing;
pub mod settings;
