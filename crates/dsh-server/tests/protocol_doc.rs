//! `docs/serve-protocol.json` is generated from the protocol's Rust types;
//! a change to the types that is not regenerated fails here. Regenerate:
//! `DSH_BLESS=1 cargo test -p dsh-server --test protocol_doc`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[test]
fn the_protocol_document_is_current() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/serve-protocol.json"
    );
    let want = format!(
        "{}\n",
        serde_json::to_string_pretty(&dsh_server::protocol::schema_document()).unwrap()
    );
    if std::env::var_os("DSH_BLESS").is_some() {
        std::fs::write(path, &want).unwrap();
    }
    let have = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        have == want,
        "docs/serve-protocol.json is stale: run `DSH_BLESS=1 cargo test -p dsh-server --test protocol_doc`"
    );
}

#[test]
fn every_method_and_event_type_is_in_the_document() {
    let doc = dsh_server::protocol::schema_document();
    for m in dsh_server::protocol::METHODS {
        let entry = &doc["methods"][m.name];
        assert!(entry["params"].is_object(), "{}", m.name);
        assert!(entry["result"].is_object(), "{}", m.name);
    }
    let text = doc.to_string();
    for kind in [
        "session_started",
        "message_delta",
        "tool_finished",
        "approval_asked",
        "turn_ended",
        "closed",
    ] {
        assert!(text.contains(&format!("\"{kind}\"")), "{kind}");
    }
}
