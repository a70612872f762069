//! The lock-poisoning policy of dsh, in one place.
//!
//! A lock is poisoned when a thread panicked while holding it. dsh contains
//! panics (tool bodies, listeners) instead of crashing, and every critical
//! section in dsh leaves its data consistent before it can panic (no
//! multi-step invariants are broken across a call that may unwind), so the
//! data behind a poisoned lock is still valid: these helpers take the guard
//! anyway and log the event once per call. No dsh code calls `.lock()`
//! directly.

use std::sync::{Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Locks `m`, recovering the guard of a poisoned mutex.
pub fn lock<T: ?Sized>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(recover)
}

/// Read-locks `l`, recovering the guard of a poisoned lock.
pub fn read<T: ?Sized>(l: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(recover)
}

/// Write-locks `l`, recovering the guard of a poisoned lock.
pub fn write<T: ?Sized>(l: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(recover)
}

fn recover<G>(poisoned: PoisonError<G>) -> G {
    tracing::warn!("a lock was poisoned by a panic; continuing with its data");
    poisoned.into_inner()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_poisoned_mutex_is_still_usable() {
        let m = std::sync::Arc::new(Mutex::new(1));
        let m2 = m.clone();
        let _ = std::thread::spawn(move || {
            let _g = m2.lock().unwrap();
            panic!("poison it");
        })
        .join();
        assert!(m.is_poisoned());
        *lock(&m) += 1;
        assert_eq!(*lock(&m), 2);
    }
}
