//! Issue 33 item 10: the environment a command the model runs sees. Secrets
//! set in dsh's environment (passphrases, webhooks, DSNs, `…_SK` keys) are
//! scrubbed before bash starts, ordinary variables whose names merely
//! contain those letters (`TASK_ID`, `DESKTOP_SESSION`) reach it, and
//! `[bash] env_passthrough` lets a named one through.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Command, Stdio};

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

/// Runs `env` through the bash tool with the secrets and ordinary variables
/// set, a user config holding `config` (trusted: it is the user's own), and
/// returns the bash output.
fn env_seen_by_bash(config: &str) -> String {
    let home = tempfile::tempdir().unwrap();
    let config_dir = home.path().join("config/dsh");
    std::fs::create_dir_all(&config_dir).unwrap();
    std::fs::write(config_dir.join("dsh.toml"), config).unwrap();
    let mut c = Command::new(env!("CARGO_BIN_EXE_dsh"));
    c.current_dir(home.path())
        .env_remove("DEEPSEEK_API_KEY")
        .env_remove("DSH_MODEL")
        .env_remove("DSH_PERMISSION")
        .env("NO_COLOR", "1")
        .env("HOME", home.path())
        .env("XDG_CONFIG_HOME", home.path().join("config"))
        .env("XDG_DATA_HOME", home.path().join("data"))
        .env("XDG_STATE_HOME", home.path().join("state"))
        .stdin(Stdio::null())
        .args(["run", r#"call bash {"command":"env","description":"x"}"#]);
    for (k, v) in SECRETS.iter().chain(ORDINARY.iter()) {
        c.env(k, v);
    }
    let out = c.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
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
