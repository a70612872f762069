// #[tool(...)] knows only the length and item-count bounds.
#[derive(serde::Deserialize, dsh_tools::ToolArgs)]
struct S {
    #[tool(pattern = 1)]
    a: String,
}

fn main() {}
