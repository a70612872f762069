//! `DshError`: a stable code, a message, an optional cause.

use std::error::Error as _;

use dsh_kernel::{DshError, ErrorCode};

#[test]
fn new_error_has_code_message_and_no_cause() {
    let e = DshError::new("INVALID_ARGS", "path must be absolute");

    assert_eq!(e.code(), "INVALID_ARGS");
    assert_eq!(e.message(), "path must be absolute");
    assert_eq!(e.to_string(), "path must be absolute");
    assert!(e.cause().is_none());
    assert!(e.source().is_none());
    assert_eq!(ErrorCode::code(&e), "INVALID_ARGS");
}

#[test]
fn with_cause_keeps_the_message_and_exposes_the_cause_as_source() {
    let io = std::io::Error::new(std::io::ErrorKind::PermissionDenied, "denied");
    let e = DshError::new("IO", "could not write the session").with_cause(io);

    assert_eq!(e.message(), "could not write the session");
    assert_eq!(e.source().unwrap().to_string(), "denied");
    let clone = e.clone();
    assert_eq!(clone.cause().unwrap().to_string(), "denied");
    let debug = format!("{e:?}");
    assert!(debug.contains("IO") && debug.contains("denied"), "{debug}");
}
