// Tagged (here: untagged) representations have no schema.
#[derive(serde::Deserialize, dsh_tools::ToolArgs)]
#[serde(untagged)]
enum E {
    A,
    B,
}

fn main() {}
