//! Layer 2, decoding: the one-pass JSON decoder the model is read with,
//! with its borrowed strings ([`dec`]); paths into a document ([`path`]);
//! the text walker that finds a field and splices edits into the text as
//! the client sent it ([`json`]); and malformed input explained with the
//! field it names ([`explain`]). Imports only [`crate::base`].

pub mod dec;
pub mod explain;
pub mod json;
pub mod path;
