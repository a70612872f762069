// `Option` below the field level: JSON `null` is never valid.
#[derive(serde::Deserialize, dsh_tools::ToolArgs)]
struct A {
    x: Vec<Option<String>>,
}

fn main() {}
