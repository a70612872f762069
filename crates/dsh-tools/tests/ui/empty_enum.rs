// An empty string enum would accept nothing.
#[derive(serde::Deserialize, dsh_tools::ToolArgs)]
enum E {}

fn main() {}
