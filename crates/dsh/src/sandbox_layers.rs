//! Which sandbox layers the session's commands get, in words: for the
//! session log (`sandbox/layers`), the once-per-session warning when the
//! namespace layer is missing, and `dsh doctor`.
//!
//! The answer comes from preparing the real confinement
//! ([`dsh_sandbox::SandboxPolicy::prepare`]) for the configured mode, so
//! it says what the next command gets, not what the config asked for.

use dsh_bash_local::LocalBashConfig;
use dsh_sandbox::{NamespaceMode, Network, SandboxMode, SandboxPolicy};

/// The session event naming the layers in force: `{mode, landlock,
/// namespaces, network, unix_sockets, private_tmp}`, each a short text.
pub const LAYERS_EVENT: &str = "sandbox/layers";

/// The session event of a connection the network proxy refused: `{host,
/// port, reason}`.
pub const NETWORK_DENIED_EVENT: &str = "sandbox/network-denied";

/// The layers a command of this configuration gets now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layers {
    /// The permission mode.
    pub mode: SandboxMode,
    /// Landlock and seccomp: `active (ABI N)`, or why commands are refused.
    pub landlock: String,
    /// Why a confining mode refuses commands (the sandbox cannot be
    /// applied), `None` when commands run.
    pub refused: Option<String>,
    /// Whether commands get the namespace layer.
    pub namespaces_active: bool,
    /// The namespace layer: `active`, `off ([sandbox] namespaces = "off")`,
    /// `unavailable: <why>` or `not applied (…)`.
    pub namespaces: String,
    /// The network: `host`, `none (…)`, `proxy: a, b`.
    pub network: String,
    /// Unix sockets on the file system: `denied to commands (seccomp)`,
    /// `only the listed ones: a, b (…)`, or why a list is not enforced.
    pub unix_sockets: String,
    /// Whether `/tmp` is the session's own.
    pub private_tmp: bool,
    /// The namespace setting asked for.
    pub setting: NamespaceMode,
    /// Why the namespace layer is missing under a confining mode, when it
    /// is.
    pub fallback: Option<String>,
}

/// Describes the layers of `bash` (its network, namespace and private
/// `/tmp` settings; `hosts` is the `[sandbox] network` list) under `mode`.
pub fn describe(
    bash: &LocalBashConfig,
    hosts: Option<&dsh_netproxy::Allowlist>,
    mode: SandboxMode,
) -> Layers {
    let workspace = bash
        .cwd
        .clone()
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_default();
    let network = Network::of_setting(hosts.is_some(), bash.network);
    let policy = SandboxPolicy::for_mode(mode, &workspace, None)
        .with_namespaces(bash.namespaces)
        .with_network_access(network)
        .with_unix_sockets(bash.allow_unix_sockets.clone());
    let listed = || {
        bash.allow_unix_sockets
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let shown_hosts = || hosts.map(|h| h.entries().join(", ")).unwrap_or_default();
    if !mode.confines() {
        return Layers {
            mode,
            landlock: "not applied (danger-full-access runs commands unconfined)".to_string(),
            refused: None,
            namespaces_active: false,
            namespaces: "not applied (danger-full-access)".to_string(),
            network: "host".to_string(),
            unix_sockets: "allowed (danger-full-access runs commands unconfined)".to_string(),
            private_tmp: false,
            setting: bash.namespaces,
            fallback: None,
        };
    }
    match policy.prepare() {
        Err(e) => Layers {
            mode,
            landlock: format!("unavailable: {e}"),
            refused: Some(e.to_string()),
            namespaces_active: false,
            namespaces: "not applied (commands are refused)".to_string(),
            network: "none (commands are refused)".to_string(),
            unix_sockets: "none (commands are refused)".to_string(),
            private_tmp: false,
            setting: bash.namespaces,
            fallback: None,
        },
        Ok(c) => {
            let abi = dsh_sandbox::probe()
                .abi
                .map(|v| format!("ABI {v}"))
                .unwrap_or_default();
            let namespaces = if c.namespaces() {
                "active".to_string()
            } else if bash.namespaces == NamespaceMode::Off {
                "off ([sandbox] namespaces = \"off\")".to_string()
            } else {
                format!(
                    "unavailable: {}",
                    c.namespace_fallback().unwrap_or("unknown reason")
                )
            };
            let network = match network {
                Network::Open => "host".to_string(),
                Network::Closed if c.network_namespace() => {
                    "none (an empty network namespace)".to_string()
                }
                Network::Closed => "none (Landlock TCP rules; UDP is not confined)".to_string(),
                Network::Proxied if c.network_namespace() => {
                    format!("proxy: {}", shown_hosts())
                }
                Network::Proxied => format!(
                    "none: the list ({}) needs the namespace layer; Landlock closes TCP instead",
                    shown_hosts()
                ),
            };
            let unix_sockets = if c.unix_sockets_gated() {
                format!(
                    "only the listed ones: {} (each connect is checked by the command's namespace init)",
                    listed()
                )
            } else {
                match c.unix_sockets_fallback() {
                    Some(why) => format!(
                        "denied to commands (seccomp): the list ({}) is not enforced here: {why}",
                        listed()
                    ),
                    None => "denied to commands (seccomp)".to_string(),
                }
            };
            let fallback = (!c.namespaces() && bash.namespaces == NamespaceMode::Auto).then(|| {
                c.namespace_fallback()
                    .unwrap_or("unknown reason")
                    .to_string()
            });
            Layers {
                mode,
                landlock: format!("active ({abi}) with seccomp"),
                refused: None,
                namespaces_active: c.namespaces(),
                namespaces,
                network,
                unix_sockets,
                private_tmp: bash.private_tmp && c.namespaces(),
                setting: bash.namespaces,
                fallback,
            }
        }
    }
}

impl Layers {
    /// The `sandbox/layers` event data.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "mode": self.mode.as_str(),
            "landlock": self.landlock,
            "namespaces": self.namespaces,
            "network": self.network,
            "unix_sockets": self.unix_sockets,
            "private_tmp": self.private_tmp,
        })
    }

    /// The warning shown once per session when a confining mode runs
    /// without the namespace layer under `namespaces = "auto"`: `sandbox:
    /// the namespace layer is unavailable (<why>); commands run with
    /// Landlock and seccomp alone …`.
    pub fn fallback_warning(&self) -> Option<String> {
        self.fallback.as_ref().map(|why| {
            format!(
                "sandbox: the namespace layer is unavailable ({why}); commands run with Landlock and seccomp alone: \
                 metadata changes outside the workspace, other processes and /proc are not shielded \
                 (see `dsh doctor`; [sandbox] namespaces = \"required\" refuses commands instead)"
            )
        })
    }
}
