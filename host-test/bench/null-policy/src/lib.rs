//! The null policy: a waPC module that accepts every request without
//! reading it, and any settings. What policy-server spends on it (reading
//! the AdmissionReview, a fresh instance, the waPC call, writing the
//! answer) is the floor `make kubewarden-bench` holds the rules to.

#[cfg(target_arch = "wasm32")]
#[allow(unsafe_code)]
#[unsafe(no_mangle)]
pub extern "C" fn wapc_init() {
    use wapc_guest::register_function;
    register_function("validate", |_| Ok(br#"{"accepted":true}"#.to_vec()));
    register_function("validate_settings", |_| Ok(br#"{"valid":true}"#.to_vec()));
    register_function("protocol_version", |_| Ok(br#""v1""#.to_vec()));
}
