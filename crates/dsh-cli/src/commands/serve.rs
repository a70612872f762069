//! `dsh serve` and `dsh web`: the session API for programs and the
//! browser ([`dsh_server`]).
//!
//! `dsh serve` listens on `--host` (127.0.0.1) and `--port` (0: a free
//! one) and prints two lines on stdout: `url: http://127.0.0.1:<port>`
//! and `token: <token>` (with `--token-file F` the token is written to F,
//! mode 0600, and the line says `token-file: F`). `dsh web` also serves
//! the browser app, prints `open: <url>/?token=<token>` and opens it
//! unless `--no-open`. `dsh serve --stdio` serves one client on
//! stdin/stdout instead.
//!
//! SIGINT, SIGTERM, SIGHUP and SIGQUIT stop it as they stop `dsh run`:
//! running turns are aborted, logs flushed, commands killed; exit 130,
//! 143, 129 or 131. Over stdio, the client closing stdin or sending
//! `shutdown` ends it with 0.

use std::io::Write;
use std::sync::Arc;

use dsh_controller::Controller;
use dsh_server::{HttpOptions, Server};

use crate::cli::{ListenArgs, ServeArgs, WebArgs};
use crate::commands::block_on;

/// Runs `dsh serve`; returns the exit code.
pub(crate) fn run(args: ServeArgs) -> u8 {
    let settings = crate::app::settings(&args.stack, dsh::ProjectTrust::Refuse);
    // Fail on a bad configuration before a client connects.
    if let Err(e) = dsh::resolve(&settings) {
        return crate::commands::report(&e);
    }
    if args.stdio {
        return block_on(stdio(settings));
    }
    block_on(listen(settings, args.listen, &[], None))
}

/// Runs `dsh web`; returns the exit code.
pub(crate) fn web(args: WebArgs) -> u8 {
    let settings = crate::app::settings(&args.stack, dsh::ProjectTrust::Refuse);
    if let Err(e) = dsh::resolve(&settings) {
        return crate::commands::report(&e);
    }
    let open = !args.no_open;
    block_on(listen(
        settings,
        args.listen,
        dsh_server::web::ASSETS,
        Some(open),
    ))
}

async fn stdio(settings: dsh::Settings) -> u8 {
    let controller = Arc::new(Controller::new(settings));
    let server = Server::new(controller.clone());
    let mut signals = crate::signals::get();
    let served = dsh_server::serve_stdio(
        server,
        tokio::io::stdin(),
        tokio::io::stdout(),
        dsh_server::DEFAULT_MAX_LINE_BYTES,
    );
    let (code, why, result) = tokio::select! {
        r = served => (0, "the client left", r),
        stop = signals.next() => {
            crate::output::say!("dsh serve: {}: stopping", stop.reason());
            (stop.exit_code(), stop.reason(), Ok(()))
        }
    };
    crate::commands::shutdown_bounded(controller.shutdown(why)).await;
    if let Err(e) = result {
        crate::output::say!("dsh serve: {e}");
        return 1;
    }
    code
}

/// Serves HTTP until a signal; `web`: the app's files, and whether to open
/// the browser (`None` for `dsh serve`).
async fn listen(
    settings: dsh::Settings,
    listen: ListenArgs,
    assets: &'static [dsh_server::Asset],
    web: Option<bool>,
) -> u8 {
    let name = if web.is_some() {
        "dsh web"
    } else {
        "dsh serve"
    };
    let listener = match tokio::net::TcpListener::bind((listen.host, listen.port)).await {
        Ok(l) => l,
        Err(e) => {
            crate::output::say!(
                "{name}: cannot listen on {}:{}: {e}",
                listen.host,
                listen.port
            );
            return 1;
        }
    };
    let addr = match listener.local_addr() {
        Ok(a) => a,
        Err(e) => {
            crate::output::say!("{name}: {e}");
            return 1;
        }
    };
    if !listen.host.is_loopback() {
        crate::output::say!(
            "{name}: warning: listening on {addr}, beyond this machine: anyone who can reach it and has the token can run commands as you; the traffic is not encrypted (put a TLS reverse proxy in front)"
        );
    }
    let token = match dsh_server::new_token() {
        Ok(t) => t,
        Err(e) => {
            crate::output::say!("{name}: cannot make a token: {e}");
            return 1;
        }
    };
    let url = format!("http://{addr}");
    let mut lines = vec![format!("url: {url}")];
    match &listen.token_file {
        Some(path) => {
            if let Err(e) = write_private(path, &token) {
                crate::output::say!("{name}: cannot write {}: {e}", path.display());
                return 1;
            }
            lines.push(format!("token-file: {}", path.display()));
        }
        None => lines.push(format!("token: {token}")),
    }
    let open_url = format!("{url}/?token={token}");
    if web.is_some() {
        lines.push(format!("open: {open_url}"));
    }
    let printed = {
        let mut out = std::io::stdout().lock();
        lines
            .iter()
            .try_for_each(|l| writeln!(out, "{l}"))
            .and_then(|()| out.flush())
    };
    if let Err(e) = printed {
        crate::output::say!("{name}: cannot print the address: {e}");
        return 1;
    }
    if web == Some(true) {
        open_browser(&open_url);
    }
    let controller = Arc::new(Controller::new(settings));
    let server = Server::new(controller.clone());
    let mut signals = crate::signals::get();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(dsh_server::serve_http(
        server,
        listener,
        HttpOptions { token, assets },
        async move {
            let _ = stop_rx.await;
        },
    ));
    let stop = signals.next().await;
    crate::output::say!("{name}: {}: stopping", stop.reason());
    // Turns end cleanly (aborted, logged, flushed) before the sockets go.
    crate::commands::shutdown_bounded(controller.shutdown(stop.reason())).await;
    let _ = stop_tx.send(());
    let _ = tokio::time::timeout(std::time::Duration::from_secs(2), served).await;
    stop.exit_code()
}

/// Writes `text` to `path` readable by the user only (0600), atomically:
/// a private temporary file beside it, renamed over it.
fn write_private(path: &std::path::Path, text: &str) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        path.file_name().and_then(|n| n.to_str()).unwrap_or("token"),
        std::process::id()
    ));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)?;
    let written = file
        .write_all(format!("{text}\n").as_bytes())
        .and_then(|()| file.sync_all())
        .and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// Opens `url` in the user's browser (`xdg-open`, detached); says so when
/// it cannot.
fn open_browser(url: &str) {
    let spawned = std::process::Command::new("xdg-open")
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    if spawned.is_err() {
        crate::output::say!("dsh web: cannot open a browser here; open the address above");
    }
}
