//! `validate_args` allocates nothing on a valid value (paths and messages
//! are built only for violations).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use dsh_schema::{validate_args, SchemaProp, SchemaSpec};
use serde_json::json;

struct Counting;

thread_local! {
    static ALLOCS: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: delegates every allocation to `System` unchanged; it only counts.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // try_with: the thread-local may be gone during thread teardown.
        let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations_during(f: impl FnOnce()) -> usize {
    let before = ALLOCS.with(Cell::get);
    f();
    ALLOCS.with(Cell::get) - before
}

#[test]
fn the_valid_path_does_not_allocate() {
    let item = SchemaSpec::new()
        .with("c", SchemaProp::string_enum(["x", "y"]).required(true))
        .with(
            "n",
            SchemaProp::integer().with_range(Some(0.into()), Some(9.into())),
        );
    let spec = SchemaSpec::new()
        .with("command", SchemaProp::string().required(true))
        .with("timeoutMs", SchemaProp::number())
        .with("list", SchemaProp::array_of(SchemaProp::object_with(item)));
    let valid = json!({"command": "ls", "timeoutMs": 5, "list": [{"c": "x", "n": 3}, {"c": "y"}], "extra": 1});
    let invalid = json!({"list": [{"c": "z"}]});
    let mut result = Vec::new();
    assert_eq!(
        allocations_during(|| result = validate_args(&spec, &valid)),
        0
    );
    assert!(result.is_empty());
    assert!(allocations_during(|| result = validate_args(&spec, &invalid)) > 0);
    assert_eq!(result.len(), 2);
}

#[test]
fn the_valid_path_with_the_new_keywords_does_not_allocate() {
    use dsh_schema::SchemaType;
    let tagged = |tag: &str| {
        SchemaProp::object_with(
            SchemaSpec::new()
                .with(
                    "kind",
                    SchemaProp::constant(SchemaType::String, json!(tag)).required(true),
                )
                .with("path", SchemaProp::string().with_length(Some(1), Some(64))),
        )
        .with_additional_properties(false)
    };
    let spec = SchemaSpec::new()
        .with(
            "target",
            SchemaProp::one_of([SchemaProp::integer(), tagged("dir"), tagged("file")])
                .required(true),
        )
        .with(
            "mode",
            SchemaProp::constant(SchemaType::String, json!("fast")),
        )
        .with(
            "tags",
            SchemaProp::array_of(SchemaProp::string().with_length(Some(1), None))
                .with_item_count(Some(1), Some(8)),
        )
        .with("blob", SchemaProp::json())
        .with("none", SchemaProp::null());
    // The value matches the last branch: the first two fail quietly.
    let valid = json!({"target": {"kind": "file", "path": "src/lib.rs"}, "mode": "fast",
                       "tags": ["a", "bb"], "blob": {"x": [1]}, "none": null});
    let mut result = Vec::new();
    assert_eq!(
        allocations_during(|| result = validate_args(&spec, &valid)),
        0
    );
    assert!(result.is_empty());
    let invalid = json!({"target": {"kind": "file", "path": ""}});
    assert!(allocations_during(|| result = validate_args(&spec, &invalid)) > 0);
    assert_eq!(result.len(), 1, "{result:?}");
}

#[test]
fn parsing_tool_arguments_into_an_arg_value_allocates_once_and_validating_it_never() {
    use dsh_schema::ArgValue;
    let spec = SchemaSpec::new()
        .with("command", SchemaProp::string().required(true))
        .with("description", SchemaProp::string())
        .with("timeoutMs", SchemaProp::integer());
    let text = r#"{"command":"ls -la src","description":"List source files","timeoutMs":60000}"#;
    let mut parsed = None;
    // One allocation: the object's entry vector; every string is borrowed.
    assert_eq!(
        allocations_during(|| parsed = Some(ArgValue::parse(text).unwrap())),
        1
    );
    let tree = parsed.unwrap();
    let mut result = vec![String::new()];
    assert_eq!(
        allocations_during(|| result = validate_args(&spec, &tree)),
        0
    );
    assert!(result.is_empty());
    // An escape makes that one string owned (plus the parser's scratch
    // buffer it is unescaped in).
    assert_eq!(
        allocations_during(|| drop(ArgValue::parse(r#"{"command":"say \"hi\""}"#).unwrap())),
        3
    );
}
