//! The client's file system as the file tools' editor: when the client
//! advertises `fs.readTextFile` / `fs.writeTextFile`, `read`, `write`,
//! `edit` and `str_replace_editor` read its buffers (unsaved changes
//! included) with `fs/read_text_file` and write with `fs/write_text_file`
//! (the edit lands in the editor, with its undo). The freshness guard
//! compares contents, so it holds on the client's side too.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use agent_client_protocol::v1::schema::{
    FileSystemCapabilities, ReadTextFileRequest, WriteTextFileRequest,
};
use dsh_kernel::sync::lock;
use dsh_kernel::BoxFuture;
use dsh_tool_fs::EditorFiles;

use crate::Conn;

/// One write the client took: the text it replaced (`None`: a new file)
/// and the new text, for the `diff` of the call's update.
pub(crate) type Change = (Option<String>, String);

/// The client's files for one ACP session.
pub(crate) struct ClientFiles {
    cx: Conn,
    /// The ACP session id the requests name.
    session: String,
    reads: bool,
    writes: bool,
    /// The last write per path, until the update stream takes it; the
    /// newest [`KEPT_CHANGES`] only (a sub-agent's writes, which no stream
    /// takes, do not pile up).
    changes: Arc<Mutex<Recent>>,
}

/// The newest writes, at most [`KEPT_CHANGES`], the last one per path.
#[derive(Default)]
struct Recent(VecDeque<(PathBuf, Change)>);

impl Recent {
    fn put(&mut self, path: PathBuf, change: Change) {
        self.0.retain(|(p, _)| *p != path);
        if self.0.len() == KEPT_CHANGES {
            self.0.pop_front();
        }
        self.0.push_back((path, change));
    }

    fn take(&mut self, path: &Path) -> Option<Change> {
        let at = self.0.iter().position(|(p, _)| p == path)?;
        self.0.remove(at).map(|(_, change)| change)
    }
}

/// How many untaken writes [`ClientFiles`] keeps for diffs.
const KEPT_CHANGES: usize = 32;

impl ClientFiles {
    /// The client's files when it serves any (`None` when it advertised
    /// neither capability).
    pub(crate) fn of(cx: &Conn, session: &str, fs: &FileSystemCapabilities) -> Option<Self> {
        (fs.read_text_file || fs.write_text_file).then(|| ClientFiles {
            cx: cx.clone(),
            session: session.to_string(),
            reads: fs.read_text_file,
            writes: fs.write_text_file,
            changes: Arc::default(),
        })
    }

    /// The last write to `path` through the client, taken (once).
    pub(crate) fn take_change(&self, path: &Path) -> Option<Change> {
        lock(&self.changes).take(path)
    }
}

impl EditorFiles for ClientFiles {
    fn reads(&self) -> bool {
        self.reads
    }

    fn writes(&self) -> bool {
        self.writes
    }

    fn read_text(&self, path: &Path) -> BoxFuture<'static, Result<String, String>> {
        let sent = self
            .cx
            .send_request(ReadTextFileRequest::new(self.session.clone(), path));
        Box::pin(async move {
            sent.block_task()
                .await
                .map(|r| r.content)
                .map_err(|e| e.to_string())
        })
    }

    fn write_text(
        &self,
        path: &Path,
        old: Option<String>,
        new: String,
    ) -> BoxFuture<'static, Result<(), String>> {
        let sent = self.cx.send_request(WriteTextFileRequest::new(
            self.session.clone(),
            path,
            new.clone(),
        ));
        let (path, changes) = (path.to_path_buf(), self.changes.clone());
        Box::pin(async move {
            sent.block_task().await.map_err(|e| e.to_string())?;
            // Recorded once the client took it: a refused write has no diff.
            lock(&changes).put(path, (old, new));
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_write_per_path_is_kept_and_taken_once() {
        let mut recent = Recent::default();
        let p = |i: usize| PathBuf::from(format!("/f{i}"));
        recent.put(p(0), (None, "a".into()));
        recent.put(p(0), (Some("a".into()), "b".into()));
        assert_eq!(recent.take(&p(0)), Some((Some("a".into()), "b".into())));
        assert_eq!(recent.take(&p(0)), None);
        // Writes nobody takes stay bounded: the oldest go first.
        for i in 0..KEPT_CHANGES + 5 {
            recent.put(p(i), (None, i.to_string()));
        }
        assert_eq!(recent.0.len(), KEPT_CHANGES);
        assert_eq!(recent.take(&p(4)), None);
        assert_eq!(recent.take(&p(5)), Some((None, "5".into())));
    }
}
