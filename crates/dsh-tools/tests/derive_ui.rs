//! The shapes `#[derive(ToolArgs)]` refuses, pinned with their compiler
//! output: each `tests/ui/<case>.rs` must fail to compile with the error in
//! `tests/ui/<case>.stderr`, which names the reason (the positive cases live
//! in `tests/derive.rs`; `tests/ui/pass/` holds the control that compiles).
//!
//! After a deliberate change to a message, or a toolchain update that
//! rewords rustc's part, regenerate with
//! `TRYBUILD=overwrite cargo test -p dsh-tools --test derive_ui` and read
//! the new `.stderr` files before committing them.

#[test]
fn derive_refusals() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
    t.pass("tests/ui/pass/*.rs");
}
