//! The SDKs of `sdk/` against the real binary: the Python package installs
//! with pip offline and its quickstart runs (a session, a prompt streamed,
//! an approval answered, the file written, the log read), so does the
//! TypeScript quickstart (node); both SDKs drive a real `dsh serve` over a
//! WebSocket and are refused with a wrong token (HTTP 401); the Python
//! WebSocket client's own tests pass; the READMEs show the example files
//! byte for byte; and the SDKs name every method, event and field of the
//! protocol (`dsh_server::protocol::schema_document`), so a change to the
//! protocol fails here until the SDKs follow.
//!
//! Needs `python3` (3.10+, with setuptools >= 61, and `wheel` when
//! setuptools is older than 70.1) and `node` (20.10+): a machine without
//! them fails these tests rather than skipping them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use dsh_testkit::cli::{output_within, stderr, stdout, Home};
use serde_json::Value;

const DSH: &str = env!("CARGO_BIN_EXE_dsh");

/// How long one SDK script may take.
const LIMIT: Duration = Duration::from_secs(120);

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

fn read(path: &str) -> String {
    let full = repo().join(path);
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{}: {e}", full.display()))
}

/// `program` with an environment that cannot reach the developer's dsh
/// settings (the examples and smoke scripts give dsh a temp HOME), no
/// Python bytecode written into the repository, `DSH` naming the binary.
///
/// # Panics
/// When `program` is not installed: these tests need it.
fn tool(program: &str) -> Command {
    let probe = Command::new(program).arg("--version").output();
    assert!(
        probe.as_ref().is_ok_and(|o| o.status.success()),
        "`{program}` is needed by the SDK tests (CI must install it): {probe:?}"
    );
    let mut cmd = Command::new(program);
    for name in [
        "XDG_CONFIG_HOME",
        "XDG_DATA_HOME",
        "XDG_STATE_HOME",
        "DEEPSEEK_API_KEY",
        "DEEPSEEK_BASE_URL",
        "DSH_LOG",
        "DSH_MODEL",
        "DSH_PERMISSION",
        "PYTHONPATH",
        "NODE_OPTIONS",
    ] {
        cmd.env_remove(name);
    }
    cmd.env("DSH", DSH)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("PIP_DISABLE_PIP_VERSION_CHECK", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// Runs `cmd`; its stdout.
///
/// # Panics
/// When it fails or hangs, with its output.
fn succeed(what: &str, cmd: Command) -> String {
    let out: Output = output_within(cmd, None, LIMIT);
    assert!(
        out.status.success(),
        "{what} failed ({}):\n--- stdout\n{}\n--- stderr\n{}",
        out.status,
        stdout(&out),
        stderr(&out)
    );
    stdout(&out)
}

/// The body of the first fenced block of `language` in a Markdown text.
fn fenced(markdown: &str, language: &str) -> String {
    let open = format!("```{language}\n");
    let start = markdown
        .find(&open)
        .unwrap_or_else(|| panic!("no ```{language} block"))
        + open.len();
    let len = markdown[start..].find("```\n").expect("the block ends");
    markdown[start..start + len].to_string()
}

#[test]
fn the_readmes_show_the_example_files_byte_for_byte() {
    for (readme, language, example) in [
        (
            "sdk/python/README.md",
            "python",
            "sdk/python/examples/quickstart.py",
        ),
        (
            "sdk/typescript/README.md",
            "js",
            "sdk/typescript/examples/quickstart.mjs",
        ),
    ] {
        assert!(
            fenced(&read(readme), language) == read(example),
            "the first ```{language} block of {readme} is not {example}: copy the file into it"
        );
    }
}

/// Checks the quickstart's output: the streamed answer, the approval
/// asked and answered, the file written (`quoted`: its content as the
/// language prints a string), the log read.
fn check_quickstart(out: &str, quoted: &str) {
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines.get(..2),
        Some(&["Calling the echo tool.", "The echo tool says: hello"][..]),
        "{out}"
    );
    assert!(
        lines.iter().any(|l| l.starts_with("approval asked: write ")
            && l.contains("/workspace/hello.txt under workspace-write")),
        "{out}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("tool finished: Created ")
                && l.ends_with("/workspace/hello.txt (1 lines, 19 bytes)")),
        "the write ran after the approval: {out}"
    );
    assert!(lines.contains(&format!("file: {quoted}").as_str()), "{out}");
    let log = lines
        .iter()
        .find_map(|l| l.strip_prefix("log: "))
        .unwrap_or_else(|| panic!("the log was read: {out}"));
    let (count, kinds) = log.split_once(" events (").expect("count and kinds");
    assert!(count.parse::<usize>().unwrap() > 20, "{log}");
    for kind in [
        "user/message",
        "approval/asked",
        "approval/decided",
        "tool/result",
        "turn/end",
    ] {
        assert!(kinds.contains(kind), "{kind} in {log}");
    }
}

#[test]
fn the_python_package_installs_offline_and_its_quickstart_runs() {
    let tmp = tempfile::tempdir().unwrap();
    // pip builds in the source tree: build a copy, not the repository.
    let source = tmp.path().join("source");
    copy_dir(&repo().join("sdk/python"), &source);
    let target = tmp.path().join("site");
    let mut pip = tool("python3");
    pip.args([
        "-m",
        "pip",
        "install",
        "--no-build-isolation",
        "--no-index",
        "--no-deps",
        "--no-cache-dir",
        "--quiet",
        "--target",
    ])
    .arg(&target)
    .arg(&source);
    succeed(
        "pip install ./sdk/python (offline: needs setuptools >= 61, and wheel when setuptools < 70.1)",
        pip,
    );
    assert!(target.join("dsh_sdk/py.typed").is_file(), "py.typed ships");

    let mut example = tool("python3");
    example
        .arg(repo().join("sdk/python/examples/quickstart.py"))
        .env("PYTHONPATH", &target)
        .current_dir(tmp.path());
    let out = succeed("the Python quickstart", example);
    check_quickstart(&out, r"'hello from the SDK\n'");
}

#[test]
fn the_typescript_quickstart_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let mut example = tool("node");
    example
        .arg("--experimental-websocket")
        .arg(repo().join("sdk/typescript/examples/quickstart.mjs"))
        .current_dir(tmp.path());
    let out = succeed("the TypeScript quickstart", example);
    check_quickstart(&out, r#""hello from the SDK\n""#);
}

/// A `dsh serve --model echo --permission read-only` in a private home,
/// killed when dropped.
struct Served {
    child: Child,
    home: Home,
    url: String,
    token: String,
}

impl Served {
    fn start() -> Self {
        let home = Home::new(DSH).in_dir("workspace");
        let mut child = home
            .dsh()
            .args(["serve", "--model", "echo", "--permission", "read-only"])
            .stderr(Stdio::null())
            .spawn()
            .expect("dsh serve starts");
        let out = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { return };
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        let mut served = Self {
            child,
            home,
            url: String::new(),
            token: String::new(),
        };
        for _ in 0..2 {
            let line = rx
                .recv_timeout(Duration::from_secs(30))
                .expect("dsh serve prints its address and token");
            if let Some(url) = line.strip_prefix("url: ") {
                served.url = url.to_string();
            } else if let Some(token) = line.strip_prefix("token: ") {
                served.token = token.to_string();
            }
        }
        assert!(
            served.url.starts_with("http://127.0.0.1:"),
            "{}",
            served.url
        );
        assert_eq!(served.token.len(), 64);
        served
    }

    /// A smoke script run against this server, which must outlive it.
    fn smoke(&mut self, mut cmd: Command, what: &str) -> String {
        cmd.env("DSH_URL", &self.url)
            .env("DSH_TOKEN", &self.token)
            .env("DSH_WORKSPACE", self.home.cwd())
            .current_dir(self.home.path());
        let out = succeed(what, cmd);
        let status = self.child.try_wait().unwrap();
        assert!(
            status.is_none(),
            "dsh serve ended ({status:?}) with its clients: {out}"
        );
        out
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The checks every smoke script prints when the SDK works over a
/// WebSocket.
fn check_smoke(out: &str) {
    for line in [
        "ok: UNAUTHORIZED raised",
        "ok: the refusal is HTTP 401",
        "ok: CONNECT_FAILED raised",
        "ok: SPAWN_FAILED raised",
        "ok: a failed start tells the exit status",
        "ok: initialize names every method",
        "ok: initialize lists the chat commands",
        "ok: the session's models",
        "ok: answer streamed",
        "ok: UNKNOWN_APPROVAL raised",
        "ok: approved write done",
        "ok: INVALID_ANSWER raised",
        "ok: UNKNOWN_QUESTION raised",
        "ok: questions answered",
        "ok: files found",
        "ok: log paged",
        "ok: UNKNOWN_SESSION raised",
        "ok: RPC_METHOD_NOT_FOUND raised",
        "ok: INVALID_ARGS raised",
        "ok: stream ends with the session",
        "ok: CONNECTION_CLOSED raised",
        "ws smoke: all passed",
    ] {
        assert!(out.lines().any(|l| l == line), "`{line}` missing:\n{out}");
    }
}

#[test]
fn the_python_sdk_drives_dsh_serve_over_a_websocket() {
    let mut served = Served::start();
    let mut smoke = tool("python3");
    smoke
        .arg(repo().join("sdk/python/tests/ws_smoke.py"))
        .env("PYTHONPATH", repo().join("sdk/python/src"));
    let out = served.smoke(smoke, "sdk/python/tests/ws_smoke.py");
    check_smoke(&out);
    let written = std::fs::read_to_string(served.home.cwd().join("ws.txt")).unwrap();
    assert_eq!(written, "over ws\n");
}

#[test]
fn the_typescript_sdk_drives_dsh_serve_over_a_websocket() {
    let mut served = Served::start();
    let mut smoke = tool("node");
    smoke
        .arg("--experimental-websocket")
        .arg(repo().join("sdk/typescript/test/ws_smoke.mjs"));
    let out = served.smoke(smoke, "sdk/typescript/test/ws_smoke.mjs");
    check_smoke(&out);
    let written = std::fs::read_to_string(served.home.cwd().join("ws-ts.txt")).unwrap();
    assert_eq!(written, "over ws\n");
}

#[test]
fn the_python_websocket_client_passes_its_own_tests() {
    let mut tests = tool("python3");
    tests
        .args(["-m", "unittest", "discover", "-v", "-s"])
        .arg(repo().join("sdk/python/tests"))
        .env("PYTHONPATH", repo().join("sdk/python/src"));
    let out = output_within(tests, None, LIMIT);
    let report = stderr(&out);
    assert!(out.status.success(), "{report}");
    let ran: usize = report
        .lines()
        .find_map(|l| l.strip_prefix("Ran ")?.split(' ').next()?.parse().ok())
        .unwrap_or_else(|| panic!("unittest says how many ran: {report}"));
    assert!(ran >= 8, "{report}");
}

// -- the SDKs name all of the protocol --------------------------------------------

/// A type's fields: required and optional names.
type Fields = (BTreeSet<String>, BTreeSet<String>);

/// The fields of an object schema.
fn schema_fields(schema: &Value) -> Fields {
    let required: BTreeSet<String> = schema["required"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| Some(v.as_str()?.to_string()))
                .collect()
        })
        .unwrap_or_default();
    let optional = schema["properties"]
        .as_object()
        .map(|p| {
            p.keys()
                .filter(|k| !required.contains(*k))
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    (required, optional)
}

/// The protocol's object types (`$defs` with properties) and its events
/// (type → fields, `seq` and `time` included).
fn protocol() -> (
    BTreeMap<String, Fields>,
    BTreeMap<String, Fields>,
    Vec<String>,
) {
    let doc = dsh_server::protocol::schema_document();
    let defs = doc["$defs"].as_object().unwrap();
    let types = defs
        .iter()
        .filter(|(_, s)| s["properties"].is_object() && s.get("oneOf").is_none())
        .map(|(name, s)| (name.clone(), schema_fields(s)))
        .collect();
    let event = &defs["Event"];
    let (base, _) = schema_fields(event);
    let events = event["oneOf"]
        .as_array()
        .unwrap()
        .iter()
        .map(|variant| {
            let (mut required, optional) = schema_fields(variant);
            required.extend(base.iter().cloned());
            let name = variant["properties"]["type"]["const"].as_str().unwrap();
            (name.to_string(), (required, optional))
        })
        .collect();
    let methods = doc["methods"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    (types, events, methods)
}

/// The interfaces of a hand-written `.d.ts`: name → fields (an interface
/// that extends `EventBase` gets `seq` and `time`), and the event
/// interfaces by their `type` literal.
fn typescript_interfaces(dts: &str) -> (BTreeMap<String, Fields>, BTreeMap<String, Fields>) {
    let mut interfaces = BTreeMap::new();
    let mut events = BTreeMap::new();
    let mut lines = dts.lines();
    while let Some(line) = lines.next() {
        let Some(head) = line.strip_prefix("export interface ") else {
            continue;
        };
        let name = head.split([' ', '<']).next().unwrap().to_string();
        let mut fields: Fields = Default::default();
        if head.contains("extends EventBase") {
            fields.0.extend(["seq".to_string(), "time".to_string()]);
        }
        let mut event_type = None;
        for field in lines.by_ref().take_while(|l| *l != "}") {
            let Some(field) = field.strip_prefix("  ") else {
                continue;
            };
            let Some((key, ty)) = field.split_once(": ") else {
                continue;
            };
            if key.starts_with(['/', '*', '[', ' ']) || key.contains('(') {
                continue;
            }
            if key == "type" {
                event_type = ty
                    .strip_prefix('"')
                    .and_then(|t| t.strip_suffix("\";"))
                    .map(str::to_string);
            }
            match key.strip_suffix('?') {
                Some(optional) => fields.1.insert(optional.to_string()),
                None => fields.0.insert(key.to_string()),
            };
        }
        if let Some(t) = event_type.filter(|_| head.contains("extends EventBase")) {
            events.insert(t, fields.clone());
        }
        interfaces.insert(name, fields);
    }
    (interfaces, events)
}

#[test]
fn the_sdks_name_every_method_event_and_field_of_the_protocol() {
    let (types, events, methods) = protocol();
    let python_client = read("sdk/python/src/dsh_sdk/client.py");
    let js = read("sdk/typescript/src/index.js");
    let dts = read("sdk/typescript/src/index.d.ts");
    for method in &methods {
        assert!(
            python_client.contains(&format!("self.call(\"{method}\"")),
            "the Python client has no method for {method}"
        );
        assert!(
            js.contains(&format!("this.call(\"{method}\"")),
            "the TypeScript client has no method for {method}"
        );
        let key = if method.contains('/') {
            format!("  \"{method}\": {{ params: ")
        } else {
            format!("  {method}: {{ params: ")
        };
        assert!(dts.contains(&key), "index.d.ts's Methods lacks {method}");
    }

    // TypeScript: every object type and event, field by field.
    let (interfaces, ts_events) = typescript_interfaces(&dts);
    for (name, fields) in &types {
        if name == "CommandError" {
            continue; // inlined as RpcError's `data`
        }
        assert_eq!(
            interfaces.get(name),
            Some(fields),
            "index.d.ts's {name} (required, optional fields)"
        );
    }
    assert_eq!(ts_events, events, "index.d.ts's events");
    for ty in events.keys() {
        assert!(
            js.contains(&format!("  \"{ty}\",\n")),
            "EVENT_TYPES of index.js lacks {ty}"
        );
    }

    // Python: the TypedDicts, read by Python itself.
    let mut introspect = tool("python3");
    introspect
        .args(["-c", PYTHON_TYPES])
        .env("PYTHONPATH", repo().join("sdk/python/src"));
    let out: Value = serde_json::from_str(&succeed("reading dsh_sdk.types", introspect)).unwrap();
    let fields_of = |v: &Value| -> Fields {
        let names = |k: &str| {
            v[k].as_array()
                .unwrap()
                .iter()
                .map(|s| s.as_str().unwrap().to_string())
                .collect()
        };
        (names("required"), names("optional"))
    };
    let py_types: BTreeMap<String, Fields> = out["types"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), fields_of(v)))
        .collect();
    let py_events: BTreeMap<String, Fields> = out["events"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), fields_of(v)))
        .collect();
    assert_eq!(py_events, events, "dsh_sdk.types.Event");
    let doc = dsh_server::protocol::schema_document();
    for (method, spec) in doc["methods"].as_object().unwrap() {
        let name = spec["result"]["$ref"]
            .as_str()
            .unwrap()
            .trim_start_matches("#/$defs/");
        if name != "Empty" {
            assert!(
                py_types.contains_key(name),
                "dsh_sdk.types lacks {name} ({method})"
            );
        }
    }
    for (name, fields) in &py_types {
        if let Some(expected) = types.get(name) {
            assert_eq!(
                fields, expected,
                "dsh_sdk.types.{name} (required, optional fields)"
            );
        }
    }
    let py_event_types: Vec<String> = out["event_types"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        py_event_types.iter().cloned().collect::<BTreeSet<_>>(),
        events.keys().cloned().collect::<BTreeSet<_>>(),
        "dsh_sdk.EVENT_TYPES"
    );
}

/// Prints dsh_sdk.types as JSON: every TypedDict's required and optional
/// keys, the members of the Event union by their `type`, EVENT_TYPES.
const PYTHON_TYPES: &str = r#"
import json, typing
import dsh_sdk.types as t

def keys(cls):
    return {"required": sorted(cls.__required_keys__), "optional": sorted(cls.__optional_keys__)}

types = {name: keys(obj) for name, obj in vars(t).items()
         if isinstance(obj, type) and hasattr(obj, "__required_keys__") and not name.startswith("_")}
events = {}
for cls in typing.get_args(t.Event):
    (literal,) = typing.get_args(typing.get_type_hints(cls)["type"])
    events[literal] = keys(cls)
print(json.dumps({"types": types, "events": events, "event_types": list(t.EVENT_TYPES)}))
"#;

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        if name == "__pycache__" || name.to_string_lossy().ends_with(".egg-info") {
            continue;
        }
        let path = entry.path();
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&path, &to.join(&name));
        } else {
            std::fs::copy(&path, to.join(&name)).unwrap();
        }
    }
}
