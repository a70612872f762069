// #[tool(together(...))] names JSON properties the struct has.
#[derive(serde::Deserialize, dsh_tools::ToolArgs)]
#[tool(together("a", "justification"))]
struct S {
    a: Option<String>,
    #[serde(rename = "why")]
    justification: Option<String>,
}

fn main() {}
