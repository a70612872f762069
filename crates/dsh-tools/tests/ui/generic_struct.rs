// The schema the model sees must be one fixed shape.
#[derive(serde::Deserialize, dsh_tools::ToolArgs)]
struct A<T> {
    x: T,
}

fn main() {}
