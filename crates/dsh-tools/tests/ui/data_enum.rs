// Only unit-only enums (string enums) have a schema.
#[derive(serde::Deserialize, dsh_tools::ToolArgs)]
enum E {
    A(String),
}

fn main() {}
