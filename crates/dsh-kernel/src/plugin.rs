//! [`Plugin`]: the one entry verb every dsh plugin offers.

use crate::error::DshError;
use crate::registration::Registration;
use crate::services::Kernel;

/// A plugin: a value holding its configuration that installs itself into a
/// kernel, finding the services it extends there by type.
///
/// `install` registers everything the plugin adds (services, hook listeners,
/// tools, adapters) and returns one [`Registration`] whose undo removes all
/// of it, in reverse order. On error nothing stays registered.
///
/// ```
/// use dsh_kernel::{DshError, Kernel, Plugin, Registration};
///
/// struct Greeting(&'static str);
///
/// impl Plugin for Greeting {
///     fn install(self, kernel: &Kernel) -> Result<Registration, DshError> {
///         kernel.provide(std::sync::Arc::new(self.0.to_string())).map_err(DshError::from)
///     }
/// }
///
/// let kernel = Kernel::new();
/// let reg = Greeting("hi").install(&kernel).unwrap();
/// assert_eq!(*kernel.service::<String>().unwrap(), "hi");
/// reg.undo();
/// assert!(kernel.try_service::<String>().is_none());
/// ```
pub trait Plugin {
    /// Installs the plugin.
    ///
    /// # Errors
    /// A service it needs is missing (`MISSING_SERVICE`), or a registration
    /// it makes conflicts (the conflicting layer's code).
    fn install(self, kernel: &Kernel) -> Result<Registration, DshError>;
}
