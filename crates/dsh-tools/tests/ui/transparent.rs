// The schema is derived from the fields, which `transparent` bypasses.
#[derive(serde::Deserialize, dsh_tools::ToolArgs)]
#[serde(transparent)]
struct A {
    x: String,
}

fn main() {}
