//! What the model is shown: the two schemas, pinned, and installation
//! through the kernel plugin.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use dsh_kernel::{Kernel, Plugin};
use dsh_tool_web::{
    FetchConfig, SearchConfig, SearchProvider, WebFetchArgs, WebSearchArgs, WebTools,
};
use dsh_tools::ToolRegistry;
use serde_json::json;

#[test]
fn the_arguments_do_not_drift_from_their_schemas() {
    dsh_tools::testing::assert_no_drift::<WebFetchArgs>(128);
    dsh_tools::testing::assert_no_drift::<WebSearchArgs>(128);
}

#[test]
fn the_plugin_registers_what_it_is_given_with_its_schemas() {
    let kernel = Kernel::new();
    let (registry, _reg) = ToolRegistry::provide(&kernel).unwrap();
    let installed = WebTools {
        fetch: Some(FetchConfig::default()),
        search: Some(SearchConfig::new(SearchProvider::Brave)),
    }
    .install(&kernel)
    .unwrap();
    assert_eq!(registry.names(), ["web_fetch", "web_search"]);
    let schemas = registry.schemas();
    assert_eq!(schemas[0].description, dsh_tool_web::WEB_FETCH_DESCRIPTION);
    assert_eq!(schemas[0].parameters["required"], json!(["url"]));
    let props = schemas[0].parameters["properties"].as_object().unwrap();
    assert_eq!(props.keys().collect::<Vec<_>>(), ["url", "prompt"]);
    assert_eq!(schemas[1].parameters["required"], json!(["query"]));
    let props = schemas[1].parameters["properties"].as_object().unwrap();
    assert_eq!(
        props.keys().collect::<Vec<_>>(),
        ["query", "allowed_domains", "blocked_domains"]
    );
    // Both are read-only: they may run together with other reads.
    let call = dsh_tools::ToolCall::new("c", "web_fetch", "{}");
    assert_eq!(registry.concurrency(&call), dsh_tools::Concurrency::Safe);
    installed.undo();
    assert!(registry.names().is_empty());
    // Nothing configured, nothing registered.
    let none = WebTools::default().install(&kernel).unwrap();
    assert!(registry.names().is_empty());
    none.undo();
}
