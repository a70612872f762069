// A rename_all rule serde does not know.
#[derive(dsh_tools::ToolArgs)]
#[serde(rename_all = "Title Case")]
struct A {
    x: String,
}

fn main() {}
