//! What the model is shown: tool order, names, descriptions and schemas.

mod common;

use common::Harness;
use dsh_tools::ErrorCode;
use serde_json::json;

#[test]
fn tools_register_in_reference_order() {
    let h = Harness::new(|_| {});
    assert_eq!(h.registry.names(), ["bash", "bash_output", "bash_kill"]);
}

#[test]
fn bash_schema_matches_reference() {
    let h = Harness::new(|_| {});
    let schemas = h.registry.schemas();
    let bash = &schemas[0];
    assert_eq!(bash.name, "bash");
    assert_eq!(
        bash.description,
        dsh_tool_bash::BASH_DESCRIPTION_WITHOUT_JOBS
    );
    assert_eq!(bash.strict, None, "no tool sets strict");
    let p = &bash.parameters;
    assert_eq!(p["type"], "object");
    assert_eq!(p["required"], json!(["command", "description"]));
    let props = p["properties"].as_object().expect("properties object");
    let mut names: Vec<&str> = props.keys().map(String::as_str).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "command",
            "description",
            "justification",
            "run_in_background",
            "sandbox_permissions",
            "timeoutMs",
            "workdir"
        ]
    );
    for (name, ty) in [
        ("command", "string"),
        ("description", "string"),
        ("timeoutMs", "number"),
        ("workdir", "string"),
        ("run_in_background", "boolean"),
        ("sandbox_permissions", "string"),
        ("justification", "string"),
    ] {
        assert_eq!(props[name]["type"], ty, "type of {name}");
        let doc = props[name]["description"].as_str().unwrap_or_default();
        assert!(!doc.is_empty(), "{name} has a description");
    }
    let timeout_doc = props["timeoutMs"]["description"]
        .as_str()
        .unwrap_or_default();
    assert!(timeout_doc.contains("120000") && timeout_doc.contains("600000"));
    assert_eq!(
        props["sandbox_permissions"]["enum"],
        json!(["workspace-write", "danger-full-access"])
    );
    assert_eq!(props["justification"]["minLength"], 1);
}

#[test]
fn task_tools_take_a_required_task_id() {
    let h = Harness::new(|_| {});
    let schemas = h.registry.schemas();
    for (schema, description) in [
        (&schemas[1], dsh_tool_bash::BASH_OUTPUT_DESCRIPTION),
        (&schemas[2], dsh_tool_bash::BASH_KILL_DESCRIPTION),
    ] {
        assert_eq!(schema.description, description);
        assert_eq!(schema.strict, None, "{} sets no strict flag", schema.name);
        let p = &schema.parameters;
        assert_eq!(p["type"], "object");
        assert_eq!(p["required"], json!(["task_id"]), "{}", schema.name);
        let props = p["properties"].as_object().expect("properties object");
        assert_eq!(props.len(), 1, "{}: {props:?}", schema.name);
        assert_eq!(props["task_id"]["type"], "string");
    }
}

#[test]
fn installing_twice_fails_and_undo_removes_all_three() {
    let h = Harness::new(|_| {});
    let Err(err) = dsh_tool_bash::install(&h.registry, h.exec.clone()) else {
        panic!("a second install must collide");
    };
    assert_eq!(err.code(), "DUPLICATE_TOOL");
    assert_eq!(h.registry.names(), ["bash", "bash_output", "bash_kill"]);
    let Harness {
        installed,
        registry,
        ..
    } = h;
    installed.undo();
    assert!(registry.is_empty(), "left behind: {:?}", registry.names());
}
