//! Which environment variables are secrets a spawned command must not see.
//!
//! One rule for every spawner (bash, hooks, sandboxed commands):
//! [`is_secret_var`] looks at the name (markers such as `KEY` or `TOKEN`,
//! case-insensitive; short ones such as `SK` only as a whole word) and at
//! the value (a URL carrying a password), and [`scrub`] applies it with the
//! user's pass-through list.

use std::ffi::{OsStr, OsString};

/// Upper-case substrings that mark a variable name as a secret wherever
/// they occur in it (`MYSQL_ROOT_PASSWORD`, `PGPASSWORD`, `apiKey`,
/// `SLACK_WEBHOOK_URL`). Long or distinctive enough that a name holding one
/// is almost always a secret; over-matching (`MONKEY`) costs a variable, not
/// a leak.
pub const SECRET_NAME_MARKERS: [&str; 13] = [
    "KEY",
    "SECRET",
    "TOKEN",
    "PASSWORD",
    "PASSWD",
    "PASSPHRASE",
    "PWD",
    "AUTH",
    "JWT",
    "COOKIE",
    "CREDENTIAL",
    "PRIVATE",
    "WEBHOOK",
];

/// Upper-case markers that make a name secret only as a whole word of it
/// ([`name_words`]): as substrings they would hit ordinary names (`SK` in
/// `TASK`, `DESK`, `MASK`; `PASS` in `BYPASS`, `PASSENGER`, `PASSTHROUGH`;
/// `DSN` and `PAT` inside other words, `PATH`).
pub const SECRET_NAME_WORDS: [&str; 4] = ["PASS", "DSN", "SK", "PAT"];

/// Names kept although they contain a marker: the shell's working
/// directories (`PWD` contains the marker `PWD`).
pub const NOT_SECRET_NAMES: [&str; 2] = ["PWD", "OLDPWD"];

/// Whether the variable `name=value` is a secret. Its name (compared in
/// upper case):
///
/// - contains one of [`SECRET_NAME_MARKERS`] anywhere, where `AUTH` inside
///   `AUTHOR`/`AUTHORS` does not count (`GIT_AUTHOR_NAME` stays,
///   `AUTHORIZATION` and `OAUTH_…` do not), or
/// - has one of [`SECRET_NAME_WORDS`] as a whole word ([`name_words`]:
///   `STRIPE_SK`, `SENTRY_DSN`, `GPG_PASS`, `GITHUB_PAT`, `stripeSk`),
///
/// except the exact names in [`NOT_SECRET_NAMES`]; or its value holds a URL
/// with a password (`postgres://user:pass@host/db`, `redis://:pass@host`).
/// Never panics; non-UTF-8 names and values are judged on their lossy text.
pub fn is_secret_var(name: &OsStr, value: &OsStr) -> bool {
    if has_url_password(&value.to_string_lossy()) {
        return true;
    }
    if NOT_SECRET_NAMES.iter().any(|n| name == *n) {
        return false;
    }
    let name = name.to_string_lossy();
    let upper = mask_author(&name.to_ascii_uppercase());
    SECRET_NAME_MARKERS.iter().any(|m| upper.contains(m))
        || name_words(&name).any(|w| SECRET_NAME_WORDS.iter().any(|m| w.eq_ignore_ascii_case(m)))
}

/// The words of a variable name: the runs of ASCII letters and digits
/// between any other characters (`_`, `-`, `.`, …), each run also split
/// where a lower-case letter or digit is followed by an upper-case one
/// (`stripeSk` → `stripe`, `Sk`). `TASK_ID` → `TASK`, `ID`.
pub fn name_words(name: &str) -> impl Iterator<Item = &str> {
    name.split(|c: char| !c.is_ascii_alphanumeric())
        .flat_map(split_camel)
        .filter(|w| !w.is_empty())
}

/// `run` cut before every upper-case letter that follows a lower-case
/// letter or a digit.
fn split_camel(run: &str) -> impl Iterator<Item = &str> {
    let bytes = run.as_bytes();
    let mut cuts: Vec<usize> = (1..bytes.len())
        .filter(|&i| {
            bytes[i].is_ascii_uppercase()
                && (bytes[i - 1].is_ascii_lowercase() || bytes[i - 1].is_ascii_digit())
        })
        .collect();
    cuts.push(bytes.len());
    let mut start = 0;
    cuts.into_iter().map(move |end| {
        // Cuts are at ASCII bytes, so every slice is on a char boundary.
        let word = run.get(start..end).unwrap_or("");
        start = end;
        word
    })
}

/// `upper` with every `AUTHOR` not followed by `I` (so not `AUTHORIZATION`
/// or `AUTHORITY`) replaced by `-`, so the `AUTH` marker skips
/// `GIT_AUTHOR_NAME` and `AUTHORS_FILE`.
fn mask_author(upper: &str) -> String {
    let mut out = String::with_capacity(upper.len());
    let mut rest = upper;
    while let Some(at) = rest.find("AUTHOR") {
        let after = &rest[at + "AUTHOR".len()..];
        out.push_str(&rest[..at]);
        if after.starts_with('I') {
            out.push_str("AUTHOR");
        } else {
            out.push('-');
        }
        rest = after;
    }
    out.push_str(rest);
    out
}

/// `host` without its secrets ([`is_secret_var`]), except the names listed
/// in `passthrough` (exact, case-sensitive), in the original order.
pub fn scrub(
    host: impl IntoIterator<Item = (OsString, OsString)>,
    passthrough: &[String],
) -> Vec<(OsString, OsString)> {
    host.into_iter()
        .filter(|(name, value)| {
            passthrough.iter().any(|p| name == p.as_str()) || !is_secret_var(name, value)
        })
        .collect()
}

/// Whether `text` contains `scheme://user:password@…` with a non-empty
/// password, in any of the URLs it holds.
fn has_url_password(text: &str) -> bool {
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        let after = &rest[at + 3..];
        let end = after
            .find(|c: char| {
                matches!(c, '/' | '?' | '#') || c.is_whitespace() || c == ',' || c == ';'
            })
            .unwrap_or(after.len());
        let authority = &after[..end];
        if let Some(userinfo) = authority.rsplit_once('@').map(|(u, _)| u) {
            if userinfo
                .split_once(':')
                .is_some_and(|(_, password)| !password.is_empty())
            {
                return true;
            }
        }
        rest = after;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret(name: &str, value: &str) -> bool {
        is_secret_var(OsStr::new(name), OsStr::new(value))
    }

    #[test]
    fn names_with_markers_are_secret_in_any_case() {
        for name in [
            "DEEPSEEK_API_KEY",
            "GITHUB_TOKEN",
            "AWS_SECRET_ACCESS_KEY",
            "MONKEY",
            "my_password",
            "apiKey",
            "MYSQL_PASSWD",
            "DB_PWD",
            "SSH_AUTH_SOCK",
            "GH_AUTH",
            "SESSION_JWT",
            "BROWSER_COOKIE",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "PRIVATE_REGISTRY",
            "GITHUB_PAT",
            "gitlab_pat",
        ] {
            assert!(secret(name, "x"), "{name}");
        }
    }

    /// The table the issue asked for: what goes and what stays.
    #[test]
    fn the_broadened_rule_table() {
        for name in [
            "GPG_PASSPHRASE",
            "SLACK_WEBHOOK_URL",
            "SENTRY_DSN",
            "STRIPE_SK",
            "sk_live",
            "stripeSk",
            "GPG_PASS",
            "DB_PASS",
            "dbPass",
            "PASS",
            "PGPASSWORD",
            "DATABASE_DSN",
            "DSN",
            "NPM_CONFIG__AUTH",
            "AUTHORIZATION",
            "OAUTH_CLIENT",
            "GIT_CREDENTIALS",
            "SESSION_COOKIE",
            "PRIVATE_KEY_PATH",
            "GITHUB_PAT_X",
            "PAT",
            "DISCORD_WEBHOOK",
        ] {
            assert!(secret(name, "x"), "{name} must be scrubbed");
        }
        for name in [
            "PATH",
            "HOME",
            "TASK_ID",
            "DESKTOP_SESSION",
            "MASK",
            "ASK_USER",
            "DISK_SIZE",
            "BYPASS_CACHE",
            "PASSENGER_APP_ENV",
            "PASSTHROUGH",
            "COMPASS_DIR",
            "GIT_AUTHOR_NAME",
            "GIT_AUTHOR_EMAIL",
            "AUTHORS_FILE",
            "DSNAME",
            "PATTERN",
            "SKIP_TESTS",
            "RISK_LEVEL",
            "LANG",
            "TERM",
            "XDG_RUNTIME_DIR",
        ] {
            assert!(!secret(name, "x"), "{name} must stay");
        }
    }

    #[test]
    fn name_words_split_on_punctuation_and_camel_case() {
        fn words(n: &str) -> Vec<&str> {
            name_words(n).collect()
        }
        assert_eq!(words("TASK_ID"), ["TASK", "ID"]);
        assert_eq!(words("stripeSk"), ["stripe", "Sk"]);
        assert_eq!(words("__A--b.c"), ["A", "b", "c"]);
        assert_eq!(words("HTTPSProxy"), ["HTTPSProxy"]);
        assert_eq!(words("v2Key"), ["v2", "Key"]);
        assert_eq!(words("é_SK"), ["SK"]);
        assert!(words("").is_empty());
    }

    #[test]
    fn ordinary_names_and_the_working_directories_are_kept() {
        for name in [
            "PATH",
            "HOME",
            "LANG",
            "PWD",
            "OLDPWD",
            "PATCH_LEVEL",
            "SHELL",
        ] {
            assert!(!secret(name, "/home/u"), "{name}");
        }
        assert!(
            secret("pwd", "x"),
            "only the exact names PWD and OLDPWD are exempt"
        );
    }

    #[test]
    fn urls_with_a_password_are_secret_whatever_the_name() {
        assert!(secret("DATABASE_URL", "postgres://app:hunter2@db:5432/app"));
        assert!(secret("CACHE", "redis://:pw@cache:6379"));
        assert!(secret(
            "MIRRORS",
            "https://a.example, https://u:p@b.example/x"
        ));
        assert!(
            !secret("DATABASE_URL", "postgres://app@db/app"),
            "no password"
        );
        assert!(
            !secret("HOMEPAGE", "https://example.com/a:b@c"),
            "@ in the path"
        );
        assert!(!secret("X", "user:pass@host"), "not a URL");
        assert!(!secret("X", "https://u:@host"), "empty password");
    }

    #[test]
    fn scrub_keeps_the_passthrough_names() {
        let host = [("PATH", "/bin"), ("GITHUB_TOKEN", "t"), ("NPM_TOKEN", "n")]
            .map(|(k, v)| (OsString::from(k), OsString::from(v)));
        let env = scrub(host, &["GITHUB_TOKEN".to_string()]);
        let names: Vec<_> = env
            .iter()
            .map(|(k, _)| k.to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["PATH", "GITHUB_TOKEN"]);
    }

    #[test]
    fn non_utf8_never_panics() {
        use std::os::unix::ffi::OsStrExt;
        let name = OsStr::from_bytes(b"\xffKEY\xfe");
        let value = OsStr::from_bytes(b"\xff://a:b@\xfe");
        assert!(is_secret_var(name, value));
        assert!(is_secret_var(OsStr::from_bytes(b"X"), value));
        assert!(!is_secret_var(
            OsStr::from_bytes(b"\xff"),
            OsStr::from_bytes(b"\xfe")
        ));
    }

    /// Every marker, in every case mix of a few shapes, anywhere in a name.
    #[test]
    fn every_marker_matches_in_any_case_and_position() {
        for marker in SECRET_NAME_MARKERS {
            let lower = marker.to_ascii_lowercase();
            let mixed: String = marker
                .chars()
                .enumerate()
                .map(|(i, c)| {
                    if i % 2 == 0 {
                        c.to_ascii_lowercase()
                    } else {
                        c
                    }
                })
                .collect();
            for m in [marker.to_string(), lower, mixed] {
                for name in [
                    m.clone(),
                    format!("X_{m}"),
                    format!("{m}_X"),
                    format!("A{m}B"),
                ] {
                    let exempt = NOT_SECRET_NAMES.contains(&name.as_str());
                    assert_eq!(secret(&name, "v"), !exempt, "{name}");
                }
            }
        }
        for name in ["GITHUB_PAT", "x_pat", "A_Pat"] {
            assert!(secret(name, "v"), "{name}");
        }
        for name in ["PATH", "PATTERN", "MY_PATH", "_PATX", "PATCH"] {
            assert!(!secret(name, "v"), "{name}");
        }
    }

    proptest::proptest! {
        /// A word marker as a whole `_`-separated word of any name is
        /// secret; glued to letters on both sides (`TASKS`, `XSKY`) it is
        /// not, unless the result holds a substring marker.
        #[test]
        fn word_markers_match_whole_words_only(
            pre in "[A-Z]{1,6}",
            post in "[A-Z]{1,6}",
            marker in proptest::sample::select(SECRET_NAME_WORDS.to_vec()),
        ) {
            let names = [
                format!("{pre}_{marker}_{post}"),
                format!("{pre}_{marker}"),
                format!("{}_{post}", marker.to_ascii_lowercase()),
            ];
            for name in names {
                proptest::prop_assert!(secret(&name, "v"), "{}", name);
            }
            let glued = format!("{pre}{marker}{post}");
            let has_substring_marker = SECRET_NAME_MARKERS
                .iter()
                .any(|m| mask_author(&glued).contains(m));
            proptest::prop_assert_eq!(secret(&glued, "v"), has_substring_marker, "{}", glued);
        }

        /// Any substring marker anywhere in any name is secret (outside
        /// the exact exempt names); any name never panics.
        #[test]
        fn substring_markers_match_anywhere(
            pre in "[A-Za-z0-9_]{0,8}",
            post in "[A-Za-z0-9_]{0,8}",
            marker in proptest::sample::select(SECRET_NAME_MARKERS.to_vec()),
            any in ".{0,24}",
        ) {
            let name = format!("{pre}{marker}{post}");
            let exempt = NOT_SECRET_NAMES.contains(&name.as_str())
                || (marker == "AUTH" && mask_author(&name.to_ascii_uppercase()) != name.to_ascii_uppercase());
            if !exempt {
                proptest::prop_assert!(secret(&name, "v"), "{}", name);
            }
            let _ = secret(&any, &any);
        }
    }

    /// Arbitrary bytes in names and values never panic, and a name without
    /// any marker letter sequence with a value without `://` is never secret.
    #[test]
    fn arbitrary_bytes_never_panic() {
        use std::os::unix::ffi::OsStrExt;
        let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..5_000 {
            let len = (next() % 24) as usize;
            let bytes: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            let (a, b) = bytes.split_at(len / 2);
            let _ = is_secret_var(OsStr::from_bytes(a), OsStr::from_bytes(b));
            let _ = is_secret_var(OsStr::from_bytes(b), OsStr::from_bytes(a));
            // Digits only: no marker, no URL.
            let digits: Vec<u8> = a.iter().map(|x| b'0' + x % 10).collect();
            assert!(!is_secret_var(
                OsStr::from_bytes(&digits),
                OsStr::from_bytes(&digits)
            ));
        }
        // The bytes that end a URL's authority (so the "password" is empty).
        let ends_authority = |b: u8| {
            matches!(b, b'/' | b'?' | b'#' | b',' | b';')
                || (b.is_ascii() && (b as char).is_whitespace())
        };
        for byte in 0..=255u8 {
            let one = [byte];
            let _ = is_secret_var(OsStr::from_bytes(&one), OsStr::from_bytes(&one));
            let url = [b"s://u:".as_slice(), &one, b"@h"].concat();
            assert_eq!(
                is_secret_var(OsStr::new("X"), OsStr::from_bytes(&url)),
                !ends_authority(byte),
                "password byte {byte:#x}"
            );
        }
    }
}
