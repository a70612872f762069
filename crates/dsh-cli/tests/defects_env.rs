//! What a command the model runs sees, through the real binary.
//!
//! Issue 33 item 10: its environment. Secrets set in dsh's environment
//! (passphrases, webhooks, DSNs, `…_SK` keys) are scrubbed before bash
//! starts, ordinary variables whose names merely contain those letters
//! (`TASK_ID`, `DESKTOP_SESSION`) reach it, and `[bash] env_passthrough`
//! lets a named one through.
//!
//! Issue 33 item 23: the sandbox's refusals. A write refused by the sandbox
//! and reported in dash's, Python's or coreutils' words ends the result
//! with the `[sandbox: …]` line; a command failing for its own reasons
//! does not.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

use dsh_testkit::cli::{output_within, text, Home, LIMIT};

/// Variables the scrub must remove, each with a value no other variable holds.
const SECRETS: [(&str, &str); 12] = [
    ("GPG_PASSPHRASE", "dshtest-gpg"),
    ("SLACK_WEBHOOK_URL", "dshtest-slack"),
    ("SENTRY_DSN", "dshtest-sentry"),
    ("STRIPE_SK", "dshtest-stripe"),
    ("DB_PASS", "dshtest-dbpass"),
    ("PGPASSWORD", "dshtest-pg"),
    ("NPM_CONFIG_AUTH", "dshtest-npm"),
    ("SESSION_COOKIE", "dshtest-cookie"),
    ("GOOGLE_APPLICATION_CREDENTIALS", "dshtest-gcp"),
    ("SIGNING_PRIVATE", "dshtest-private"),
    ("DEEPSEEK_KEY", "dshtest-key"),
    ("GITHUB_PAT", "dshtest-pat"),
];

/// Variables that look a little like secrets but are not, and must arrive.
const ORDINARY: [(&str, &str); 6] = [
    ("TASK_ID", "dshtest-task"),
    ("DESKTOP_SESSION", "dshtest-desktop"),
    ("BYPASS_CACHE", "dshtest-bypass"),
    ("GIT_AUTHOR_NAME", "dshtest-author"),
    ("MASK", "dshtest-mask"),
    ("DSNAME", "dshtest-dsname"),
];

const DSH: &str = env!("CARGO_BIN_EXE_dsh");

/// Runs `c` to its end and returns its stdout, after checking it exited 0.
fn stdout_of_success(c: Command) -> String {
    let out = output_within(c, None, LIMIT);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    stdout
}

/// Runs `env` through the bash tool with the secrets and ordinary variables
/// set, a user config holding `config` (trusted: it is the user's own), and
/// returns the bash output.
fn env_seen_by_bash(config: &str) -> String {
    let home = Home::new(DSH);
    home.write_user_config(config);
    let mut c = home.dsh();
    c.args(["run", r#"call bash {"command":"env","description":"x"}"#]);
    for (k, v) in SECRETS.iter().chain(ORDINARY.iter()) {
        c.env(k, v);
    }
    stdout_of_success(c)
}

fn has_var(env: &str, name: &str, value: &str) -> bool {
    env.lines().any(|l| l == format!("{name}={value}"))
}

#[test]
fn secrets_are_scrubbed_and_ordinary_names_arrive() {
    let env = env_seen_by_bash("");
    for (name, value) in SECRETS {
        assert!(
            !env.contains(value),
            "{name} reached bash although it is a secret:\n{env}"
        );
    }
    for (name, value) in ORDINARY {
        assert!(has_var(&env, name, value), "{name} was scrubbed:\n{env}");
    }
    let path = std::env::var("PATH").unwrap();
    assert!(has_var(&env, "PATH", &path), "PATH missing:\n{env}");
    assert!(
        env.lines().any(|l| l.starts_with("HOME=")),
        "HOME missing:\n{env}"
    );
}

#[test]
fn env_passthrough_lets_a_named_secret_through() {
    let env = env_seen_by_bash("[bash]\nenv_passthrough = [\"SENTRY_DSN\"]\n");
    assert!(
        has_var(&env, "SENTRY_DSN", "dshtest-sentry"),
        "the passthrough name was scrubbed:\n{env}"
    );
    for (name, value) in SECRETS.iter().filter(|(n, _)| *n != "SENTRY_DSN") {
        assert!(!env.contains(value), "{name} reached bash:\n{env}");
    }
}

/// The output of `dsh run [--permission MODE] 'call bash {command}'` in a
/// fresh home, and whether the sandbox could be applied at all.
fn bash_under(mode: &str, home: &Home, command: &str) -> String {
    let call = format!(
        "call bash {}",
        serde_json::json!({"command": command, "description": "sandbox denial"})
    );
    let mut c = home.dsh();
    c.args(["run", "--permission", mode, &call]);
    stdout_of_success(c)
}

/// Without Landlock the confining modes fail closed: the command is not
/// run and the result says so. That is checked instead of the denial line,
/// so the test holds (and never skips) on every kernel.
fn sandbox_available(stdout: &str) -> bool {
    if dsh_sandbox::probe().filesystem_full() {
        return true;
    }
    assert!(stdout.contains("cannot be applied"), "{stdout}");
    false
}

#[test]
fn denials_reported_by_sh_python_and_coreutils_get_the_sandbox_line() {
    let home = Home::new(DSH);
    let outside = dsh_testkit::outside_temp_dir(env!("CARGO_TARGET_TMPDIR"), "outside-");
    let target = outside.path().join("dshtest");
    let quoted = target.display().to_string();
    let commands = [
        format!("sh -c 'echo x > {quoted}'"),
        format!("python3 -c \"open('{quoted}','w')\""),
        format!("cp /dev/null '{quoted}'"),
        format!("mkdir '{quoted}'"),
    ];
    for command in commands {
        let stdout = bash_under("workspace-write", &home, &command);
        if !sandbox_available(&stdout) {
            continue;
        }
        assert!(!target.exists(), "{command} wrote through the sandbox");
        assert!(
            stdout
                .trim_end()
                .ends_with("[sandbox: write denied under workspace-write mode]"),
            "{command}:\n{stdout}"
        );
    }
    // Under read-only the workspace itself is refused: a relative path in
    // dash's and Python's words is judged against it.
    for command in [
        "sh -c 'echo x > mine.txt'",
        "python3 -c \"open('mine.txt','w')\"",
    ] {
        let stdout = bash_under("read-only", &home, command);
        if !sandbox_available(&stdout) {
            continue;
        }
        assert!(!home.path().join("mine.txt").exists());
        assert!(
            stdout
                .trim_end()
                .ends_with("[sandbox: write denied under read-only mode]"),
            "{command}:\n{stdout}"
        );
    }
}

#[test]
fn a_command_failing_for_its_own_reasons_is_not_blamed_on_the_sandbox() {
    let home = Home::new(DSH);
    for command in [
        // A missing directory: Python's error form, but not a refusal.
        "python3 -c \"open('/nonexistent-dir/f','w')\"",
        "sh -c 'echo x > missing/f'",
        "sh -c 'exit 3'",
    ] {
        let stdout = bash_under("workspace-write", &home, command);
        if !sandbox_available(&stdout) {
            continue;
        }
        assert!(stdout.contains("[exit code:"), "{command}:\n{stdout}");
        assert!(!stdout.contains("[sandbox:"), "{command}:\n{stdout}");
    }
}
