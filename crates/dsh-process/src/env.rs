//! Which environment variables are secrets a spawned command must not see.
//!
//! One rule for every spawner (bash today, hooks and sandboxed commands
//! later): [`is_secret_var`] looks at the name (markers such as `KEY` or
//! `TOKEN`, case-insensitive) and at the value (a URL carrying a password),
//! and [`scrub`] applies it with the user's pass-through list.

use std::ffi::{OsStr, OsString};

/// Upper-case substrings that mark a variable name as a secret.
pub const SECRET_NAME_MARKERS: [&str; 11] = [
    "KEY",
    "SECRET",
    "TOKEN",
    "PASSWORD",
    "PASSWD",
    "PWD",
    "AUTH",
    "JWT",
    "COOKIE",
    "CREDENTIAL",
    "PRIVATE",
];

/// Names kept although they contain a marker: the shell's working
/// directories (`PWD` contains the marker `PWD`).
pub const NOT_SECRET_NAMES: [&str; 2] = ["PWD", "OLDPWD"];

/// Whether the variable `name=value` is a secret: its name contains one of
/// [`SECRET_NAME_MARKERS`] in any case (except the exact names in
/// [`NOT_SECRET_NAMES`]), ends in `_PAT` (a personal access token), or its
/// value holds a URL with a password (`postgres://user:pass@host/db`,
/// `redis://:pass@host`). Never panics; non-UTF-8 names and values are
/// judged on their lossy text.
pub fn is_secret_var(name: &OsStr, value: &OsStr) -> bool {
    if NOT_SECRET_NAMES.iter().any(|n| name == *n) {
        return has_url_password(&value.to_string_lossy());
    }
    let upper = name.to_string_lossy().to_ascii_uppercase();
    SECRET_NAME_MARKERS.iter().any(|m| upper.contains(m))
        || upper.ends_with("_PAT")
        || has_url_password(&value.to_string_lossy())
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
        for name in ["PATH", "PAT", "PATTERN", "MY_PATH", "_PATX"] {
            assert!(!secret(name, "v"), "{name}");
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
