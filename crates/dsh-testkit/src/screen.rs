//! A program on a pseudo-terminal, its output parsed by a terminal
//! emulator (`vt100`): tests look at the screen a person would see, send
//! the keys a person would press, and resize the window.
//!
//! The program runs as `setsid -c PROGRAM…` (util-linux), so the
//! pseudo-terminal is its controlling terminal: it gets `SIGWINCH` on a
//! resize and `/dev/tty` works, as in a real terminal. A resize sets the
//! window size with `stty` on the terminal's device (the kernel then
//! signals the program), and the emulator's size follows.

use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::cli::Home;

/// The terminal emulator, for its colours and cells.
pub use vt100;

/// Keys as the terminal sends them.
pub mod key {
    /// Enter (carriage return).
    pub const ENTER: &str = "\r";
    /// Ctrl-C.
    pub const CTRL_C: &str = "\x03";
    /// Ctrl-D.
    pub const CTRL_D: &str = "\x04";
    /// Ctrl-L.
    pub const CTRL_L: &str = "\x0c";
    /// Ctrl-U (cut to the line's start).
    pub const CTRL_U: &str = "\x15";
    /// Ctrl-O.
    pub const CTRL_O: &str = "\x0f";
    /// Ctrl-R.
    pub const CTRL_R: &str = "\x12";
    /// Escape.
    pub const ESC: &str = "\x1b";
    /// Alt-Enter (a new line in the composer).
    pub const ALT_ENTER: &str = "\x1b\r";
    /// Tab.
    pub const TAB: &str = "\t";
    /// Backspace (DEL, as terminals send it).
    pub const BACKSPACE: &str = "\x7f";
    /// Arrow up.
    pub const UP: &str = "\x1b[A";
    /// Arrow down.
    pub const DOWN: &str = "\x1b[B";
    /// Arrow right.
    pub const RIGHT: &str = "\x1b[C";
    /// Arrow left.
    pub const LEFT: &str = "\x1b[D";

    /// `text` as a bracketed paste.
    pub fn paste(text: &str) -> String {
        format!("\x1b[200~{text}\x1b[201~")
    }
}

/// A program on a pseudo-terminal; killed when dropped.
pub struct Screen {
    parser: Arc<Mutex<vt100::Parser>>,
    /// Synchronized frames shown so far.
    frames: Arc<std::sync::atomic::AtomicUsize>,
    /// Every byte the program wrote, in order.
    raw: Arc<Mutex<Vec<u8>>>,
    master: std::fs::File,
    device: PathBuf,
    child: Child,
    reader: Option<std::thread::JoinHandle<()>>,
}

/// Lines kept above the screen by the emulator.
const SCROLLBACK: usize = 5_000;

/// How long [`Screen::wait_for`] waits.
const WAIT: Duration = Duration::from_secs(30);

impl Screen {
    /// Starts `cmd` (its program, arguments, environment changes and
    /// working directory; its stdio is replaced) with stdin, stdout and
    /// stderr on a new `rows`×`cols` pseudo-terminal.
    ///
    /// # Panics
    /// When the terminal or the program cannot be started.
    pub fn spawn(cmd: &Command, rows: u16, cols: u16) -> Screen {
        Self::start(cmd, rows, cols, true)
    }

    /// Starts `cmd` with only stderr on the pseudo-terminal: stdin empty,
    /// stdout piped (read it with [`Screen::stdout`]). The terminal is
    /// not the program's controlling terminal.
    ///
    /// # Panics
    /// As [`Screen::spawn`].
    pub fn spawn_stderr(cmd: &Command, rows: u16, cols: u16) -> Screen {
        Self::start(cmd, rows, cols, false)
    }

    /// `dsh chat ARGS…` in `home` (its environment, as [`Home::dsh`],
    /// with `TERM=xterm-256color`, colour allowed) on a `rows`×`cols`
    /// terminal.
    ///
    /// # Panics
    /// As [`Screen::spawn`].
    pub fn chat(home: &Home, args: &[&str], rows: u16, cols: u16) -> Screen {
        let mut cmd = home.dsh();
        cmd.arg("chat")
            .args(args)
            .env("TERM", "xterm-256color")
            .env_remove("NO_COLOR")
            .env_remove("COLORTERM");
        Self::spawn(&cmd, rows, cols)
    }

    fn start(cmd: &Command, rows: u16, cols: u16, all: bool) -> Screen {
        let size = nix::pty::Winsize {
            ws_row: rows,
            ws_col: cols,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        let pty = nix::pty::openpty(Some(&size), None).expect("a pseudo-terminal");
        let device = nix::unistd::ttyname(&pty.slave).expect("the terminal's device");
        let mut c = Command::new("setsid");
        if all {
            c.arg("-c");
        }
        c.arg(cmd.get_program()).args(cmd.get_args());
        for (name, value) in cmd.get_envs() {
            match value {
                Some(v) => c.env(name, v),
                None => c.env_remove(name),
            };
        }
        if let Some(dir) = cmd.get_current_dir() {
            c.current_dir(dir);
        }
        let slave = |fd: &OwnedFd| Stdio::from(fd.try_clone().expect("the terminal's fd"));
        c.stderr(slave(&pty.slave));
        if all {
            c.stdin(slave(&pty.slave)).stdout(slave(&pty.slave));
        } else {
            c.stdin(Stdio::null()).stdout(Stdio::piped());
        }
        let child = c
            .spawn()
            .expect("the program starts (setsid is util-linux)");
        drop(pty.slave);
        let master = std::fs::File::from(pty.master);
        let parser = Arc::new(Mutex::new(vt100::Parser::new(rows, cols, SCROLLBACK)));
        let raw = Arc::new(Mutex::new(Vec::new()));
        let mut input = master.try_clone().expect("the terminal's fd");
        let shown = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let (p, r) = (parser.clone(), raw.clone());
        let mut frames = Frames {
            shown: shown.clone(),
            ..Frames::default()
        };
        let reader = std::thread::spawn(move || {
            let mut buf = [0u8; 16 * 1024];
            // EIO once the program and its children have all gone.
            while let Ok(n) = input.read(&mut buf) {
                if n == 0 {
                    break;
                }
                lock(&r).extend_from_slice(&buf[..n]);
                frames.feed(&buf[..n], &p);
            }
            frames.flush(&p);
        });
        Screen {
            parser,
            frames: shown,
            raw,
            master,
            device,
            child,
            reader: Some(reader),
        }
    }

    /// Types `keys` (text and [`key`] sequences).
    ///
    /// # Panics
    /// When the terminal is gone.
    pub fn keys(&mut self, keys: &str) {
        self.master
            .write_all(keys.as_bytes())
            .and_then(|()| self.master.flush())
            .expect("keys reach the terminal");
    }

    /// The screen's rows as text, trailing spaces and trailing empty rows
    /// dropped.
    pub fn text(&self) -> String {
        let p = lock(&self.parser);
        tidy(&p.screen().contents())
    }

    /// Everything the terminal shows and keeps: the scrollback, then the
    /// screen, as [`Screen::text`] tidies it.
    pub fn history(&self) -> String {
        let mut p = lock(&self.parser);
        let (rows, _) = p.screen().size();
        let rows = usize::from(rows);
        p.screen_mut().set_scrollback(usize::MAX);
        let kept = p.screen().scrollback();
        let mut lines: Vec<String> = Vec::new();
        let mut offset = kept;
        while offset > 0 {
            p.screen_mut().set_scrollback(offset);
            let take = offset.min(rows);
            lines.extend(
                p.screen()
                    .contents()
                    .split('\n')
                    .take(take)
                    .map(str::to_string),
            );
            offset -= take;
        }
        p.screen_mut().set_scrollback(0);
        lines.extend(p.screen().contents().split('\n').map(str::to_string));
        tidy(&lines.join("\n"))
    }

    /// Calls `f` with the emulator's screen (for colours and attributes).
    pub fn with_screen<T>(&self, f: impl FnOnce(&vt100::Screen) -> T) -> T {
        f(lock(&self.parser).screen())
    }

    /// The cell where `needle` first appears on the screen (row, column),
    /// searching row by row.
    pub fn find(&self, needle: &str) -> Option<(u16, u16)> {
        let p = lock(&self.parser);
        let screen = p.screen();
        let (rows, cols) = screen.size();
        for (r, line) in screen.rows(0, cols).enumerate().take(usize::from(rows)) {
            if let Some(byte) = line.find(needle) {
                let col = line[..byte].chars().count();
                return Some((r as u16, col as u16));
            }
        }
        None
    }

    /// The foreground colour of the first cell of `needle` on the screen.
    pub fn color_of(&self, needle: &str) -> Option<vt100::Color> {
        let (r, c) = self.find(needle)?;
        self.with_screen(|s| s.cell(r, c).map(vt100::Cell::fgcolor))
    }

    /// The screen as an SVG image (a dark terminal, monospace text in the
    /// cells' colours, bold and dim kept), for documentation.
    pub fn svg(&self) -> String {
        use std::fmt::Write as _;
        const CELL_W: f32 = 8.4;
        const CELL_H: f32 = 18.0;
        let p = lock(&self.parser);
        let screen = p.screen();
        let (rows, cols) = screen.size();
        let used = (0..rows)
            .rev()
            .find(|r| (0..cols).any(|c| screen.cell(*r, c).is_some_and(vt100::Cell::has_contents)))
            .map_or(1, |r| r + 1);
        let width = f32::from(cols) * CELL_W + 24.0;
        let height = f32::from(used) * CELL_H + 24.0;
        let mut out = String::new();
        let _ = write!(
            out,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\">\n\
             <rect width=\"100%\" height=\"100%\" rx=\"8\" fill=\"#1d1f21\"/>\n\
             <g font-family=\"DejaVu Sans Mono, Menlo, Consolas, monospace\" font-size=\"14\" xml:space=\"preserve\" style=\"white-space:pre\">\n"
        );
        for r in 0..used {
            let mut c = 0;
            while c < cols {
                let Some(cell) = screen.cell(r, c) else { break };
                let style = (cell.fgcolor(), cell.bold(), cell.dim());
                let start = c;
                let mut text = String::new();
                while c < cols {
                    let Some(cell) = screen.cell(r, c) else { break };
                    if (cell.fgcolor(), cell.bold(), cell.dim()) != style {
                        break;
                    }
                    if !cell.is_wide_continuation() {
                        let t = cell.contents();
                        text.push_str(if t.is_empty() { " " } else { t });
                    }
                    c += 1;
                }
                if text.trim().is_empty() {
                    continue;
                }
                let x = 12.0 + f32::from(start) * CELL_W;
                let y = 12.0 + f32::from(r) * CELL_H + 14.0;
                let mut attrs = format!("fill=\"{}\"", svg_color(style.0));
                if style.1 {
                    attrs.push_str(" font-weight=\"bold\"");
                }
                if style.2 {
                    attrs.push_str(" opacity=\"0.6\"");
                }
                let text = text
                    .trim_end()
                    .replace('&', "&amp;")
                    .replace('<', "&lt;")
                    .replace('>', "&gt;");
                let _ = writeln!(
                    out,
                    "<text x=\"{x}\" y=\"{y}\" xml:space=\"preserve\" {attrs}>{text}</text>"
                );
            }
        }
        out.push_str("</g>\n</svg>\n");
        out
    }

    /// How many synchronized frames (`CSI ? 2026 h` … `l`) have reached
    /// the screen: a program's redraws, for timing them.
    pub fn frames(&self) -> usize {
        self.frames.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// The program's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Every byte the program has written so far.
    pub fn raw(&self) -> Vec<u8> {
        lock(&self.raw).clone()
    }

    /// Waits (30 s at most) until the screen's text satisfies `pred`;
    /// returns that text.
    ///
    /// # Panics
    /// On time-out, naming `what` and showing the screen.
    pub fn wait_for(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        self.wait_with(what, pred, Self::text)
    }

    /// [`Screen::wait_for`] on the [`Screen::history`].
    ///
    /// # Panics
    /// As [`Screen::wait_for`].
    pub fn wait_for_history(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        self.wait_with(what, pred, Self::history)
    }

    fn wait_with(
        &self,
        what: &str,
        pred: impl Fn(&str) -> bool,
        get: fn(&Self) -> String,
    ) -> String {
        crate::cli::poll_screen(
            what,
            WAIT,
            Duration::from_millis(20),
            || get(self),
            pred,
            || self.history(),
        )
    }

    /// Resizes the terminal to `rows`×`cols`: the emulator, then the
    /// device (the program gets `SIGWINCH`).
    ///
    /// # Panics
    /// When `stty` fails.
    pub fn resize(&mut self, rows: u16, cols: u16) {
        lock(&self.parser).screen_mut().set_size(rows, cols);
        let device = std::fs::File::options()
            .read(true)
            .write(true)
            .open(&self.device)
            .expect("the terminal's device");
        let out = Command::new("stty")
            .args(["rows", &rows.to_string(), "cols", &cols.to_string()])
            .stdin(device)
            .output()
            .expect("stty runs");
        assert!(
            out.status.success(),
            "stty: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Waits (at most `limit`) for the program to exit; its exit code
    /// (128 + N for signal N).
    ///
    /// # Panics
    /// When it does not exit in time (it is killed then).
    pub fn wait_exit(&mut self, limit: Duration) -> i32 {
        let code = crate::cli::wait_exit(&mut self.child, limit);
        // The last output is parsed before anyone looks at it.
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
        code
    }

    /// Whether the program still runs.
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// The program's stdout to its end (for [`Screen::spawn_stderr`]).
    ///
    /// # Panics
    /// When stdout is not piped.
    pub fn stdout(&mut self) -> String {
        let mut out = String::new();
        if let Some(mut s) = self.child.stdout.take() {
            let _ = s.read_to_string(&mut out);
        }
        out
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Output on its way to the emulator, shown as a terminal that honours
/// synchronized updates (`CSI ? 2026 h` … `CSI ? 2026 l`) shows it: a
/// frame reaches the screen whole, never half drawn.
#[derive(Default)]
struct Frames {
    pending: Vec<u8>,
    in_frame: bool,
    /// Frames shown so far.
    shown: Arc<std::sync::atomic::AtomicUsize>,
}

const FRAME_START: &[u8] = b"\x1b[?2026h";
const FRAME_END: &[u8] = b"\x1b[?2026l";

impl Frames {
    fn feed(&mut self, bytes: &[u8], parser: &Mutex<vt100::Parser>) {
        self.pending.extend_from_slice(bytes);
        loop {
            if self.in_frame {
                let Some(end) = find(&self.pending, FRAME_END) else {
                    return;
                };
                let frame: Vec<u8> = self.pending.drain(..end + FRAME_END.len()).collect();
                lock(parser).process(&frame);
                self.shown.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                self.in_frame = false;
                continue;
            }
            match find(&self.pending, FRAME_START) {
                Some(start) => {
                    let before: Vec<u8> = self.pending.drain(..start).collect();
                    lock(parser).process(&before);
                    self.in_frame = true;
                }
                None => {
                    // Keep only what could be the start of a marker.
                    let keep = (1..FRAME_START.len())
                        .rev()
                        .find(|k| self.pending.ends_with(&FRAME_START[..*k]))
                        .unwrap_or(0);
                    let cut = self.pending.len() - keep;
                    let done: Vec<u8> = self.pending.drain(..cut).collect();
                    lock(parser).process(&done);
                    return;
                }
            }
        }
    }

    fn flush(&mut self, parser: &Mutex<vt100::Parser>) {
        lock(parser).process(&self.pending);
        self.pending.clear();
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// A terminal colour as SVG shows it (the xterm palette).
fn svg_color(color: vt100::Color) -> String {
    const BASE: [&str; 16] = [
        "#1d1f21", "#cc6666", "#b5bd68", "#f0c674", "#81a2be", "#b294bb", "#8abeb7", "#c5c8c6",
        "#969896", "#d54e53", "#b9ca4a", "#e7c547", "#7aa6da", "#c397d8", "#70c0b1", "#eaeaea",
    ];
    match color {
        vt100::Color::Default => "#c5c8c6".to_string(),
        vt100::Color::Rgb(r, g, b) => format!("#{r:02x}{g:02x}{b:02x}"),
        vt100::Color::Idx(i) if i < 16 => BASE[usize::from(i)].to_string(),
        vt100::Color::Idx(i) if i < 232 => {
            let i = i - 16;
            let level = |v: u8| if v == 0 { 0 } else { 55 + v * 40 };
            format!(
                "#{:02x}{:02x}{:02x}",
                level(i / 36),
                level(i / 6 % 6),
                level(i % 6)
            )
        }
        vt100::Color::Idx(i) => {
            let v = 8 + (i - 232) * 10;
            format!("#{v:02x}{v:02x}{v:02x}")
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Rows with trailing spaces and trailing empty rows dropped.
fn tidy(text: &str) -> String {
    let lines: Vec<&str> = text.split('\n').map(str::trim_end).collect();
    let end = lines
        .iter()
        .rposition(|l| !l.is_empty())
        .map_or(0, |i| i + 1);
    lines[..end].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_program_sees_a_terminal_and_its_resize() {
        let mut cmd = Command::new("sh");
        cmd.args([
            "-c",
            "stty size; printf '\\033[31mred\\033[0m\\n'; read x; stty size; echo \"got $x\"",
        ]);
        let mut s = Screen::spawn(&cmd, 24, 80);
        s.wait_for("the size", |t| t.contains("24 80"));
        assert_eq!(s.color_of("red"), Some(vt100::Color::Idx(1)));
        s.resize(30, 100);
        s.keys("hello\r");
        s.wait_for("the new size", |t| {
            t.contains("30 100") && t.contains("got hello")
        });
        assert_eq!(s.wait_exit(Duration::from_secs(5)), 0);
    }

    #[test]
    fn a_synchronized_frame_shows_whole_or_not_at_all() {
        let parser = Mutex::new(vt100::Parser::new(5, 20, 0));
        let mut frames = Frames::default();
        frames.feed(b"before\r\n\x1b[?20", &parser);
        assert_eq!(tidy(&lock(&parser).screen().contents()), "before");
        frames.feed(b"26hhalf", &parser);
        assert_eq!(tidy(&lock(&parser).screen().contents()), "before");
        frames.feed(b" done\x1b[?2026l after", &parser);
        assert_eq!(
            tidy(&lock(&parser).screen().contents()),
            "before\nhalf done after"
        );
    }

    #[test]
    fn history_holds_what_scrolled_off() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "for i in $(seq 1 40); do echo line$i; done"]);
        let mut s = Screen::spawn(&cmd, 10, 40);
        s.wait_exit(Duration::from_secs(5));
        let h = s.history();
        let want: Vec<String> = (1..=40).map(|i| format!("line{i}")).collect();
        assert_eq!(h, want.join("\n"));
        assert!(!s.text().contains("line1\n"));
    }
}
