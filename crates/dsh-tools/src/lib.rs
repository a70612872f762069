//! The model boundary: schema DSL, validation, typed tools, tool registry
