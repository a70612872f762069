// Tool arguments are a JSON object: a tuple struct has no schema.
#[derive(serde::Deserialize, dsh_tools::ToolArgs)]
struct A(String);

fn main() {}
