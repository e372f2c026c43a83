//! What tests use and guests never compile (the `testing` feature): the
//! fuzzing properties, and helpers for rules' settings tests.

pub mod fuzzing;
