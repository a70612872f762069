//! What the model is shown, and installation through the kernel plugin.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use dsh_kernel::{Kernel, Plugin};
use dsh_tools::ToolRegistry;
use serde_json::json;

#[test]
fn the_plugin_registers_glob_and_grep_with_their_schemas() {
    let kernel = Kernel::new();
    let (registry, _reg) = ToolRegistry::provide(&kernel).unwrap();
    let installed = dsh_tool_search::SearchTools {
        root: std::env::temp_dir(),
    }
    .install(&kernel)
    .unwrap();
    assert_eq!(registry.names(), ["glob", "grep"]);
    let schemas = registry.schemas();
    let glob = &schemas[0];
    assert_eq!(glob.description, dsh_tool_search::GLOB_DESCRIPTION);
    assert!(glob.description.contains("`find`"));
    assert_eq!(glob.parameters["required"], json!(["pattern"]));
    assert_eq!(
        glob.parameters["properties"]["pattern"]["minLength"],
        json!(1)
    );
    assert!(glob.parameters["properties"]["path"]["description"]
        .as_str()
        .unwrap()
        .contains("working directory"));
    let grep = &schemas[1];
    assert_eq!(grep.description, dsh_tool_search::GREP_DESCRIPTION);
    assert!(grep.description.contains("`grep`"));
    assert_eq!(grep.parameters["required"], json!(["pattern"]));
    let props = grep.parameters["properties"].as_object().unwrap();
    assert_eq!(
        props.keys().collect::<Vec<_>>(),
        ["pattern", "path", "include"]
    );
    // A second install conflicts; undoing the first frees the names.
    let again = dsh_tool_search::SearchTools {
        root: std::env::temp_dir(),
    }
    .install(&kernel);
    assert!(again.is_err());
    installed.undo();
    assert!(registry.names().is_empty());
}
