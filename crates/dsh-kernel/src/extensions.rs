//! `Extensions`: a typed map that carries context across crate boundaries.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::Arc;

/// A map from type to one shared value of that type.
///
/// Lets a caller hand context to a callee that does not know the caller's
/// crate (the agent loop puts its agent handle into a tool call's extensions;
/// a tool that needs it looks it up by type). Cloning is O(1) (the map is
/// shared; an insert into a shared map copies it first).
#[derive(Clone, Default)]
pub struct Extensions {
    map: Arc<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>,
}

impl Extensions {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    /// Stores `value` as `T`, replacing a previous `T`.
    pub fn insert<T: Send + Sync + 'static>(&mut self, value: T) {
        Arc::make_mut(&mut self.map).insert(TypeId::of::<T>(), Arc::new(value));
    }

    /// The stored `T`, if any.
    pub fn get<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.map
            .get(&TypeId::of::<T>())
            .and_then(|v| v.downcast_ref::<T>())
    }

    /// Whether nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

impl std::fmt::Debug for Extensions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Extensions")
            .field("len", &self.map.len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_lookup() {
        let mut ext = Extensions::new();
        assert!(ext.get::<String>().is_none());
        ext.insert(String::from("agent-1"));
        ext.insert(7u32);
        assert_eq!(ext.get::<String>().map(String::as_str), Some("agent-1"));
        assert_eq!(ext.get::<u32>(), Some(&7));
        ext.insert(8u32);
        assert_eq!(ext.get::<u32>(), Some(&8));
    }
}
