// Validation allows extra keys, so deserialization must too.
#[derive(serde::Deserialize, dsh_tools::ToolArgs)]
#[serde(deny_unknown_fields)]
struct A {
    x: String,
}

fn main() {}
