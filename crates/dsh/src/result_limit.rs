//! [`ResultLimit`]: no tool result larger than `max_result_bytes` reaches
//! the session log or the model.
//!
//! A `tools/execute` listener, outermost, so it sees each result as every
//! other listener left it. A result whose blocks together exceed the limit
//! keeps the head of its text (cut at a character boundary), then a marker
//! naming how much was cut and where the whole text is, so the model can
//! `read` it in windows: a private spill file
//! `<session_dir>/<session-id>/spill/result-<random>.txt` (directory 0700,
//! file 0600, exclusive create), kept with the saved session (`dsh session
//! clean` removes it). Non-text blocks that do not fit (a large image) are
//! replaced by a note. When the spill file cannot be written the marker says
//! so; the result is cut either way. Results of `read` are exempt: that
//! tool bounds its own output (51,200 bytes) and points at the rest itself.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use dsh_agent::Agent;
use dsh_kernel::{DshError, Kernel, Plugin, Registration};
use dsh_llm::ContentBlock;
use dsh_tools::{Execution, ToolRegistry, ToolResult};

/// The plugin: cuts results above `max_bytes`, spilling the whole text
/// under `session_dir`.
#[derive(Debug, Clone)]
pub struct ResultLimit {
    /// Largest result kept whole, in bytes of text (at least 64).
    pub max_bytes: usize,
    /// The session directory; spill files go to `<dir>/<session-id>/spill/`.
    pub session_dir: PathBuf,
}

/// Tools whose results are never cut (they bound and window their own
/// output).
const EXEMPT: &[&str] = &["read"];

impl Plugin for ResultLimit {
    /// Prepends the listener to the registry's `tools/execute`.
    ///
    /// # Errors
    /// `MISSING_SERVICE` without a [`ToolRegistry`] in the kernel.
    fn install(self, kernel: &Kernel) -> Result<Registration, DshError> {
        let tools = kernel.service::<ToolRegistry>()?;
        let limit = Arc::new(self);
        Ok(tools
            .on_execute()
            .prepend(move |(call, env): Execution, next| {
                let limit = limit.clone();
                let session = env
                    .extensions
                    .get::<Arc<dyn Agent>>()
                    .map(|a| a.session().id().to_string());
                let exempt = EXEMPT.contains(&call.name.as_str());
                async move {
                    let result = next.run((call, env)).await;
                    if exempt {
                        result
                    } else {
                        limit.apply(result, session.as_deref())
                    }
                }
            }))
    }
}

impl ResultLimit {
    /// `result` unchanged when it fits, else cut (see the module doc).
    /// `session` names the spill directory (`unattached` without one).
    pub fn apply(&self, mut result: ToolResult, session: Option<&str>) -> ToolResult {
        let size: usize = result.content.iter().map(block_size).sum();
        if size <= self.max_bytes {
            return result;
        }
        let mut text = String::new();
        let mut dropped = Vec::new();
        for block in &result.content {
            match block {
                ContentBlock::Text(t) => {
                    if !text.is_empty() {
                        text.push('\n');
                    }
                    text.push_str(&t.text);
                }
                other => dropped.push(format!(
                    "[a {} block of {} bytes was removed: the result exceeded {} bytes]",
                    other.kind(),
                    block_size(other),
                    self.max_bytes
                )),
            }
        }
        let budget = self.max_bytes.max(64);
        let where_ = match self.spill(session, &text) {
            Ok(path) => format!("the full text is in {}", path.display()),
            Err(e) => format!("the full text could not be saved: {e}"),
        };
        let cut = if text.len() > budget {
            let head = floor_boundary(&text, budget);
            format!(
                "{}\n[… {} bytes cut: the result had {} bytes, more than max_result_bytes = {}; read the rest in windows with the read tool; {where_} …]",
                &text[..head],
                text.len() - head,
                text.len(),
                self.max_bytes,
            )
        } else {
            format!("{text}\n[{where_}]")
        };
        result.content = std::iter::once(ContentBlock::text(cut))
            .chain(dropped.into_iter().map(ContentBlock::text))
            .collect();
        result
    }

    fn spill(&self, session: Option<&str>, text: &str) -> std::io::Result<PathBuf> {
        let session = session.unwrap_or("unattached");
        if session.contains(['/', '\\']) || session.starts_with('.') {
            return Err(std::io::Error::other(
                "the session id cannot name a directory",
            ));
        }
        let dir = self.session_dir.join(session).join("spill");
        create_private_dir(&dir)?;
        // tempfile: random name, O_EXCL, mode 0600.
        let mut file = tempfile::Builder::new()
            .prefix("result-")
            .suffix(".txt")
            .tempfile_in(&dir)?;
        file.write_all(text.as_bytes())?;
        file.as_file().sync_all()?;
        let (_, path) = file.keep().map_err(|e| e.error)?;
        Ok(path)
    }
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

fn block_size(block: &ContentBlock) -> usize {
    match block {
        ContentBlock::Text(t) => t.text.len(),
        ContentBlock::Reasoning(r) => r.text.len(),
        other => serde_json::to_string(other).map_or(0, |s| s.len()),
    }
}

fn floor_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limit(dir: &Path, max: usize) -> ResultLimit {
        ResultLimit {
            max_bytes: max,
            session_dir: dir.to_path_buf(),
        }
    }

    #[test]
    fn small_results_pass_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let r = ToolResult::success("c1", vec![ContentBlock::text("hello")]);
        assert_eq!(limit(dir.path(), 100).apply(r.clone(), Some("s1")), r);
        assert!(!dir.path().join("s1").exists(), "nothing spilled");
    }

    #[test]
    fn large_results_are_cut_and_spilled_privately() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let big: String = (0..10_000).map(|i| format!("line {i} é\n")).collect();
        let r = ToolResult::success("c1", vec![ContentBlock::text(big.clone())]);
        let out = limit(dir.path(), 1000).apply(r, Some("s1"));
        let text = out.content[0].as_text().unwrap();
        assert!(text.len() < 1400, "{}", text.len());
        assert!(text.starts_with("line 0 é\n"), "head kept");
        assert!(!text.contains("line 9999"), "only the head is kept");
        assert!(text.contains("read the rest in windows with the read tool"));
        let path = text
            .split("the full text is in ")
            .nth(1)
            .and_then(|s| s.split(" …]").next())
            .unwrap();
        assert!(path.starts_with(&dir.path().join("s1/spill").display().to_string()));
        assert_eq!(std::fs::read_to_string(path).unwrap(), big);
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(Path::new(path)), 0o600);
        assert_eq!(mode(&dir.path().join("s1/spill")), 0o700);
    }

    #[test]
    fn an_unwritable_spill_directory_still_cuts() {
        let file = tempfile::NamedTempFile::new().unwrap();
        let r = ToolResult::success("c1", vec![ContentBlock::text("x".repeat(5000))]);
        let out = limit(file.path(), 200).apply(r, Some("s1"));
        let text = out.content[0].as_text().unwrap();
        assert!(text.len() < 600);
        assert!(text.contains("could not be saved"), "{text}");
    }
}
