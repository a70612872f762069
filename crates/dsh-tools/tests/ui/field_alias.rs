// Both names sent: validation passes, serde fails.
#[derive(serde::Deserialize, dsh_tools::ToolArgs)]
struct A {
    #[serde(alias = "y")]
    x: String,
}

fn main() {}
