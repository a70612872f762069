//! What the libraries' `tracing` events become on stderr.
//!
//! Without `DSH_LOG`, only what the user should read is printed: each
//! warning or error event of dsh's own crates (a retried request, a failing
//! hook, a dropped MCP server) becomes one line `dsh: warning: <message>`,
//! with the MCP server it is about when the event names one — no
//! timestamp, level or target, sanitised, continuation lines indented.
//! Other crates' events are not shown. With `DSH_LOG` (an `EnvFilter`
//! directive such as `debug` or `dsh_llm=trace`), the full log lines are
//! printed instead, sanitised too: a logged message can quote a model, a
//! server or a config file.

use std::io::Write;

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::util::SubscriberInitExt;

/// Installs the stderr logging for this process: see the module doc.
pub(crate) fn init() {
    match std::env::var("DSH_LOG") {
        Ok(directives) if !directives.trim().is_empty() => {
            let filter = tracing_subscriber::EnvFilter::new(directives);
            let _ = tracing_subscriber::fmt()
                .with_env_filter(filter)
                .with_writer(|| SanitizedStderr)
                .with_ansi(false)
                .try_init();
        }
        _ => {
            let _ = tracing_subscriber::registry()
                .with(UserWarnings.with_filter(tracing_subscriber::filter::LevelFilter::WARN))
                .try_init();
        }
    }
}

/// Prints dsh's warning and error events as `dsh: warning:` lines.
struct UserWarnings;

impl<S: Subscriber> Layer<S> for UserWarnings {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let meta = event.metadata();
        if *meta.level() > Level::WARN || !meta.target().starts_with("dsh") {
            return;
        }
        let mut fields = Fields::default();
        event.record(&mut fields);
        if fields.message.trim().is_empty() {
            return;
        }
        crate::output::say_line(&user_line(&fields.message, fields.server.as_deref()));
    }
}

/// The line a warning event becomes: `dsh: warning: [server: ]message`,
/// every further line of the message indented under it.
fn user_line(message: &str, server: Option<&str>) -> String {
    let message = message.trim_end().replace('\n', "\n  ");
    match server {
        Some(server) => format!("dsh: warning: MCP server {server}: {message}"),
        None => format!("dsh: warning: {message}"),
    }
}

/// The fields of an event a user line shows.
#[derive(Default)]
struct Fields {
    message: String,
    server: Option<String>,
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        match field.name() {
            "message" => self.message = value.to_string(),
            "server" => self.server = Some(value.to_string()),
            _ => {}
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        match field.name() {
            // `format_args!` messages and `%` fields debug-print as their
            // display form.
            "message" => self.message = format!("{value:?}"),
            "server" => self.server = Some(format!("{value:?}")),
            _ => {}
        }
    }
}

/// stderr, with every write made safe for a terminal (the log formatter
/// writes whole lines).
struct SanitizedStderr;

impl Write for SanitizedStderr {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        let mut err = std::io::stderr().lock();
        err.write_all(crate::sanitize::visible(&text).as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

#[cfg(test)]
mod tests {
    use super::user_line;

    #[test]
    fn user_lines_have_no_log_trappings() {
        assert_eq!(user_line("retrying\n", None), "dsh: warning: retrying");
        assert_eq!(
            user_line("closed\nstderr: x", Some("fs")),
            "dsh: warning: MCP server fs: closed\n  stderr: x"
        );
    }
}
