// The schema would be infinite.
#[derive(serde::Deserialize, dsh_tools::ToolArgs)]
struct Tree {
    children: Vec<Tree>,
}

fn main() {}
