// A variant deserialized by custom code has no schema.
fn f<'de, D: serde::Deserializer<'de>>(d: D) -> Result<(), D::Error> {
    serde::Deserialize::deserialize(d)
}

#[derive(serde::Deserialize, dsh_tools::ToolArgs)]
enum E {
    #[serde(deserialize_with = "f")]
    A,
}

fn main() {}
