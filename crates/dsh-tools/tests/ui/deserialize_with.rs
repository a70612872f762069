// The field type no longer says what is accepted.
fn f<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    serde::Deserialize::deserialize(d)
}

#[derive(serde::Deserialize, dsh_tools::ToolArgs)]
struct A {
    #[serde(deserialize_with = "f")]
    x: String,
}

fn main() {}
