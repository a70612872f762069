//! `Kernel`: services provided and looked up by type.

use std::sync::Arc;

use dsh_kernel::{ErrorCode, Kernel, KernelError, Scope};

#[derive(Debug, PartialEq)]
struct Clock(u32);

#[derive(Debug, PartialEq)]
struct Store(&'static str);

#[test]
fn services_are_provided_and_found_by_type() {
    let kernel = Kernel::new();
    let clock = Arc::new(Clock(1));
    let _c = kernel.provide(clock.clone()).unwrap();
    let _s = kernel.provide(Arc::new(Store("disk"))).unwrap();

    let found = kernel.service::<Clock>().unwrap();
    assert!(Arc::ptr_eq(&found, &clock), "the provided instance itself");
    assert_eq!(*kernel.service::<Store>().unwrap(), Store("disk"));
    assert_eq!(kernel.try_service::<Clock>().as_deref(), Some(&Clock(1)));
}

#[test]
fn clones_of_a_kernel_share_its_services() {
    let kernel = Kernel::new();
    let other = kernel.clone();
    let reg = other.provide(Arc::new(Clock(2))).unwrap();

    assert_eq!(*kernel.service::<Clock>().unwrap(), Clock(2));
    reg.undo();
    assert!(kernel.try_service::<Clock>().is_none());
}

#[test]
fn missing_service_error_names_the_type() {
    let kernel = Kernel::new();

    let err = kernel.service::<Clock>().unwrap_err();

    assert_eq!(
        err,
        KernelError::MissingService(std::any::type_name::<Clock>())
    );
    assert_eq!(err.code(), "MISSING_SERVICE");
    assert!(
        err.to_string().contains(std::any::type_name::<Clock>()),
        "{err}"
    );
    assert!(kernel.try_service::<Clock>().is_none());
}

#[test]
fn duplicate_provide_is_refused_and_keeps_the_first() {
    let kernel = Kernel::new();
    let _first = kernel.provide(Arc::new(Clock(1))).unwrap();

    let err = kernel.provide(Arc::new(Clock(2))).unwrap_err();

    assert_eq!(
        err,
        KernelError::DuplicateService(std::any::type_name::<Clock>())
    );
    assert_eq!(err.code(), "DUPLICATE_SERVICE");
    assert!(
        err.to_string().contains(std::any::type_name::<Clock>()),
        "{err}"
    );
    assert_eq!(*kernel.service::<Clock>().unwrap(), Clock(1));
}

#[test]
fn undo_withdraws_the_service_but_holders_keep_theirs() {
    let kernel = Kernel::new();
    let reg = kernel.provide(Arc::new(Clock(1))).unwrap();
    let held = kernel.service::<Clock>().unwrap();

    reg.undo();

    assert_eq!(
        kernel.service::<Clock>().unwrap_err().code(),
        "MISSING_SERVICE"
    );
    assert_eq!(*held, Clock(1));
    // The type can be provided again once withdrawn.
    let _again = kernel.provide(Arc::new(Clock(2))).unwrap();
    assert_eq!(*kernel.service::<Clock>().unwrap(), Clock(2));
}

#[test]
fn undo_withdraws_only_its_own_type() {
    let kernel = Kernel::new();
    let clock = kernel.provide(Arc::new(Clock(1))).unwrap();
    let _store = kernel.provide(Arc::new(Store("disk"))).unwrap();

    clock.undo();

    assert!(kernel.try_service::<Clock>().is_none());
    assert_eq!(*kernel.service::<Store>().unwrap(), Store("disk"));
}

#[test]
fn closing_an_old_scope_again_does_not_remove_a_newer_provider() {
    // The undo handle is consumed, so the only way an old registration can be
    // "undone again" is through its (idempotent) scope.
    let kernel = Kernel::new();
    let old = Scope::new();
    old.add(kernel.provide(Arc::new(Clock(1))).unwrap());
    old.close();
    let new = Scope::new();
    new.add(kernel.provide(Arc::new(Clock(2))).unwrap());

    old.close();

    assert_eq!(*kernel.service::<Clock>().unwrap(), Clock(2));
    new.close();
    assert!(kernel.try_service::<Clock>().is_none());
}

#[test]
fn a_registration_outliving_its_kernel_can_still_be_undone() {
    let kernel = Kernel::new();
    let reg = kernel.provide(Arc::new(Clock(1))).unwrap();
    drop(kernel);
    reg.undo();
}

#[test]
fn trait_objects_are_services_too() {
    trait Greeter: Send + Sync {
        fn greet(&self) -> String;
    }
    struct En;
    impl Greeter for En {
        fn greet(&self) -> String {
            "hello".into()
        }
    }

    let kernel = Kernel::new();
    let greeter: Arc<dyn Greeter> = Arc::new(En);
    let reg = kernel
        .provide::<Arc<dyn Greeter>>(Arc::new(greeter))
        .unwrap();

    assert_eq!(
        kernel.service::<Arc<dyn Greeter>>().unwrap().greet(),
        "hello"
    );
    reg.undo();
    assert!(kernel.try_service::<Arc<dyn Greeter>>().is_none());
}
