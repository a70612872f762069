//! [`SandboxMode`]: how far the agent's commands and file writes reach.
//! One record for the permission preset, the OS sandbox, the file-tool
//! fence and the escalation argument of the tools.

use serde::{Deserialize, Serialize};

/// The permission mode, narrowest first (the derived order is
/// "narrower than").
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// Nothing may be written except `/dev/null` and the tools' own spill
    /// files.
    ReadOnly,
    /// Writes only under the working directory, the system temp directory
    /// and the spill directory (the default).
    #[default]
    WorkspaceWrite,
    /// No confinement.
    DangerFullAccess,
}

impl SandboxMode {
    /// Every mode, narrowest first.
    pub const ALL: [SandboxMode; 3] = [
        SandboxMode::ReadOnly,
        SandboxMode::WorkspaceWrite,
        SandboxMode::DangerFullAccess,
    ];

    /// The mode's name: `read-only`, `workspace-write`,
    /// `danger-full-access`.
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxMode::ReadOnly => "read-only",
            SandboxMode::WorkspaceWrite => "workspace-write",
            SandboxMode::DangerFullAccess => "danger-full-access",
        }
    }

    /// Whether `self` allows strictly more than `other`.
    pub fn is_wider_than(self, other: SandboxMode) -> bool {
        self > other
    }

    /// Whether the mode confines at all (not `danger-full-access`).
    pub fn confines(self) -> bool {
        self != SandboxMode::DangerFullAccess
    }
}

impl std::fmt::Display for SandboxMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for SandboxMode {
    type Err = String;

    /// One of the three names.
    ///
    /// # Errors
    /// Any other text, with the names listed.
    fn from_str(s: &str) -> Result<Self, String> {
        SandboxMode::ALL
            .into_iter()
            .find(|m| m.as_str() == s)
            .ok_or_else(|| {
                format!(
                    "unknown permission mode {s:?}; expected read-only, workspace-write or danger-full-access"
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_order_and_parsing_agree() {
        for m in SandboxMode::ALL {
            assert_eq!(m.as_str().parse::<SandboxMode>(), Ok(m));
            assert_eq!(
                serde_json::to_value(m).ok(),
                Some(serde_json::json!(m.as_str()))
            );
        }
        assert!(SandboxMode::DangerFullAccess.is_wider_than(SandboxMode::WorkspaceWrite));
        assert!(SandboxMode::WorkspaceWrite.is_wider_than(SandboxMode::ReadOnly));
        assert!(!SandboxMode::WorkspaceWrite.is_wider_than(SandboxMode::WorkspaceWrite));
        assert_eq!(SandboxMode::default(), SandboxMode::WorkspaceWrite);
        let e = "full".parse::<SandboxMode>().unwrap_err();
        assert!(
            e.contains("read-only, workspace-write or danger-full-access"),
            "{e}"
        );
    }
}
