// `flatten` is supported only on a plain struct field.
#[derive(serde::Deserialize, dsh_tools::ToolArgs)]
struct Inner {
    y: String,
}

#[derive(serde::Deserialize, dsh_tools::ToolArgs)]
struct A {
    #[serde(flatten)]
    inner: Option<Inner>,
}

fn main() {}
