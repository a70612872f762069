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
        ("DSH_TEST_PASSWD", "p"),
        ("DSH_TEST_DB_PWD", "p"),
        ("DSH_TEST_GH_PAT", "p"),
        ("DSH_TEST_AUTH_HEADER", "p"),
        ("DSH_TEST_JWT", "p"),
        ("DSH_TEST_COOKIE_JAR", "p"),
        ("DSH_TEST_CREDENTIALS", "p"),
        ("DSH_TEST_PRIVATE_THING", "p"),
        ("SSH_AUTH_SOCK", "/tmp/agent.sock"),
        ("DSH_TEST_DATABASE_URL", "postgres://app:pw-in-url@db/app"),
        ("DSH_TEST_PLAIN_URL", "postgres://app@db/app"),
        ("DSH_TEST_KEPT_TOKEN", "kept"),
        ("TERM", "xterm-256color"),
        ("PAGER", "less"),
    ] {
        std::env::set_var(k, v);
    }
    let f = Fixture::new(|c| c.env_passthrough = vec!["DSH_TEST_KEPT_TOKEN".into()]);
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
        "DSH_TEST_PASSWD=",
        "DSH_TEST_DB_PWD=",
        "DSH_TEST_GH_PAT=",
        "DSH_TEST_AUTH_HEADER=",
        "DSH_TEST_JWT=",
        "DSH_TEST_COOKIE_JAR=",
        "DSH_TEST_CREDENTIALS=",
        "DSH_TEST_PRIVATE_THING=",
        "SSH_AUTH_SOCK=",
        "DSH_TEST_DATABASE_URL=",
    ] {
        assert!(
            !lines.iter().any(|l| l.starts_with(secret)),
            "{secret} leaked"
        );
    }
    for expected in [
        "DSH_TEST_VISIBLE=yes",
        "DSH_TEST_PLAIN_URL=postgres://app@db/app",
        "DSH_TEST_KEPT_TOKEN=kept",
        "NO_COLOR=1",
        "TERM=dumb",
        "PAGER=cat",
        "GIT_PAGER=cat",
    ] {
        assert!(lines.contains(&expected), "{expected} missing");
    }
    assert!(!r.stdout.text.contains("hunter2"));
    assert!(!r.stdout.text.contains("pw-in-url"));
    assert!(
        lines.iter().any(|l| l.starts_with("PWD=")),
        "PWD is not a secret"
    );

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
