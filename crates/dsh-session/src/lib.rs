//! Event-sourced session log, message derivation, store, JSONL persistence
