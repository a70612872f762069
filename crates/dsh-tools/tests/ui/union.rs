// Unions have no schema.
#[derive(dsh_tools::ToolArgs)]
union U {
    a: u32,
    b: f32,
}

fn main() {}
