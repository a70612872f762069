// Tuple variants are JSON arrays of mixed types: no schema.
#[derive(serde::Deserialize, dsh_tools::ToolArgs)]
enum E {
    A(String, u8),
}

fn main() {}
