//! The child's environment: secrets scrubbed, model-friendly overrides set.
//! Its own test binary because it changes this process's environment.

mod common;

use common::Fixture;
use dsh_bash::{BashExecutor, BashRequest};
use dsh_kernel::ErrorCode;

#[tokio::test]
async fn secrets_are_scrubbed_and_overrides_set() {
    // The other test of this binary spawns nothing and reads none of these
    // variables, so changing them here affects nothing else.
    for (k, v) in [
        ("DSH_TEST_API_KEY", "k1"),
        ("MONKEY", "banana"),
        ("my_password", "hunter2"),
        ("DSH_TEST_Token", "t"),
        ("DSH_TEST_SECRET_X", "s"),
        ("BASH_ENV", "/nonexistent/rc"),
        ("DSH_TEST_VISIBLE", "yes"),
        ("TERM", "xterm-256color"),
        ("PAGER", "less"),
    ] {
        std::env::set_var(k, v);
    }
    let f = Fixture::new(|_| {});
    let r = f.run("env").await;
    assert_eq!(r.exit_code, Some(0), "{}", r.stderr.text);
    let lines: Vec<&str> = r.stdout.text.lines().collect();
    for secret in [
        "DSH_TEST_API_KEY=",
        "MONKEY=",
        "my_password=",
        "DSH_TEST_Token=",
        "DSH_TEST_SECRET_X=",
        "BASH_ENV=",
    ] {
        assert!(
            !lines.iter().any(|l| l.starts_with(secret)),
            "{secret} leaked"
        );
    }
    for expected in [
        "DSH_TEST_VISIBLE=yes",
        "NO_COLOR=1",
        "TERM=dumb",
        "PAGER=cat",
        "GIT_PAGER=cat",
    ] {
        assert!(lines.contains(&expected), "{expected} missing");
    }
    assert!(!r.stdout.text.contains("hunter2"));

    // Same binary, after the run above: without bash on PATH spawning fails.
    std::env::set_var("PATH", f.tmp.path());
    let spec = f.exec.resolve(BashRequest::new("true"));
    let err = f.exec.run(spec).await.expect_err("no bash on PATH");
    assert_eq!(err.code(), "SPAWN_FAILED");
    assert!(err.to_string().contains("ENOENT"), "{err}");
}

#[test]
fn outside_a_runtime_start_is_an_error_not_a_panic() {
    let f = Fixture::new(|_| {});
    let spec = f.exec.resolve(BashRequest::new("true"));
    let err = f.exec.start(spec).expect_err("no runtime");
    assert_eq!(err.code(), "SPAWN_FAILED");
}
