// `serde_json::Value` accepts anything: no schema can say what.
#[derive(serde::Deserialize, dsh_tools::ToolArgs)]
struct A {
    x: serde_json::Value,
}

fn main() {}
