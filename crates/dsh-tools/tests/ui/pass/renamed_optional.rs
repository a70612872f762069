// The control case: the same shapes done the supported way compile.
use dsh_tools::ToolArgs;

#[derive(serde::Deserialize, dsh_tools::ToolArgs)]
struct A {
    #[serde(rename = "y")]
    x: Option<Vec<u8>>,
}

fn main() {
    let spec = A::schema_spec();
    assert!(spec.contains("y"));
    assert!(!spec.get("y").map_or(true, |p| p.required));
}
