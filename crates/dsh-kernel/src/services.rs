//! Services looked up by type.

use crate::sync::{read, write};
use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use dsh_protocol::codes;

use crate::error::{DshError, ErrorCode};
use crate::registration::Registration;

/// Errors of the kernel's service container.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum KernelError {
    /// `service::<T>()` found nothing registered for `T`.
    #[error("service {0} is not available: load the plugin that provides it first")]
    MissingService(&'static str),
    /// `provide::<T>()` when `T` is already provided.
    #[error("service {0} is already provided")]
    DuplicateService(&'static str),
}

impl ErrorCode for KernelError {
    /// `MISSING_SERVICE` or `DUPLICATE_SERVICE`.
    fn code(&self) -> &str {
        match self {
            KernelError::MissingService(_) => codes::MISSING_SERVICE,
            KernelError::DuplicateService(_) => codes::DUPLICATE_SERVICE,
        }
    }
}

impl From<KernelError> for DshError {
    fn from(e: KernelError) -> Self {
        DshError::new(e.code().to_string(), e.to_string())
    }
}

type ServiceMap = HashMap<TypeId, Arc<dyn Any + Send + Sync>>;

/// The plugin context: a container of services keyed by type.
///
/// Cloning is cheap and yields a handle to the same container. Plugins
/// `provide` the services they own (returning a [`Registration`] to put in
/// their scope) and look up others with [`Kernel::service`].
#[derive(Clone, Default)]
pub struct Kernel {
    services: Arc<RwLock<ServiceMap>>,
}

impl Kernel {
    /// An empty kernel.
    pub fn new() -> Self {
        Self::default()
    }

    /// Makes `service` available as `T`. Undoing the registration withdraws it
    /// (holders of an `Arc<T>` keep theirs).
    ///
    /// # Errors
    /// [`KernelError::DuplicateService`] when a `T` is already provided.
    pub fn provide<T: Send + Sync + 'static>(
        &self,
        service: Arc<T>,
    ) -> Result<Registration, KernelError> {
        let id = TypeId::of::<T>();
        {
            let mut map = write(&self.services);
            if map.contains_key(&id) {
                return Err(KernelError::DuplicateService(std::any::type_name::<T>()));
            }
            map.insert(id, service.clone());
        }
        let services = Arc::downgrade(&self.services);
        let registered: Arc<dyn Any + Send + Sync> = service;
        Ok(Registration::new(move || {
            if let Some(services) = services.upgrade() {
                let mut map = write(&services);
                // Remove only our own instance, not a later replacement.
                if map.get(&id).is_some_and(|s| Arc::ptr_eq(s, &registered)) {
                    map.remove(&id);
                }
            }
        }))
    }

    /// The service registered as `T`.
    ///
    /// # Errors
    /// [`KernelError::MissingService`] naming the type when none is provided.
    pub fn service<T: Send + Sync + 'static>(&self) -> Result<Arc<T>, KernelError> {
        self.try_service::<T>()
            .ok_or(KernelError::MissingService(std::any::type_name::<T>()))
    }

    /// The service registered as `T`, or `None`.
    pub fn try_service<T: Send + Sync + 'static>(&self) -> Option<Arc<T>> {
        let map = read(&self.services);
        map.get(&TypeId::of::<T>())
            .cloned()
            .and_then(|s| s.downcast::<T>().ok())
    }
}

impl std::fmt::Debug for Kernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.services.read().map(|m| m.len()).unwrap_or(0);
        f.debug_struct("Kernel").field("services", &n).finish()
    }
}
