//! The client's file system as the file tools' editor: when the client
//! advertises `fs.readTextFile` / `fs.writeTextFile`, `read`, `write`,
//! `edit` and `str_replace_editor` read its buffers (unsaved changes
//! included) with `fs/read_text_file` and write with `fs/write_text_file`
//! (the edit lands in the editor, with its undo). The freshness guard
//! compares contents, so it holds on the client's side too. The diff of a
//! write the client took is the controller's to record (it wraps these
//! files and puts the change into the call's `tool_finished` event).

use std::path::Path;
use std::sync::OnceLock;

use agent_client_protocol::v1::schema::{
    FileSystemCapabilities, ReadTextFileRequest, WriteTextFileRequest,
};
use dsh_kernel::BoxFuture;
use dsh_tool_fs::EditorFiles;

use crate::Conn;

/// The client's files for one ACP session.
pub(crate) struct ClientFiles {
    cx: Conn,
    /// The ACP session id the requests name; set by [`ClientFiles::bind`]
    /// once the session is open (a new session's id is known only then,
    /// and no tool runs before).
    session: OnceLock<String>,
    reads: bool,
    writes: bool,
}

impl ClientFiles {
    /// The client's files when it serves any (`None` when it advertised
    /// neither capability), for session `session` when known already
    /// (`session/load`), else named later with [`ClientFiles::bind`].
    pub(crate) fn of(
        cx: &Conn,
        session: Option<&str>,
        fs: &FileSystemCapabilities,
    ) -> Option<Self> {
        (fs.read_text_file || fs.write_text_file).then(|| {
            let id = OnceLock::new();
            if let Some(s) = session {
                let _ = id.set(s.to_string());
            }
            ClientFiles {
                cx: cx.clone(),
                session: id,
                reads: fs.read_text_file,
                writes: fs.write_text_file,
            }
        })
    }

    /// Names the ACP session the requests are for (the first name given
    /// stays).
    pub(crate) fn bind(&self, session: &str) {
        let _ = self.session.set(session.to_string());
    }

    /// The session the requests name.
    fn session(&self) -> Result<String, String> {
        self.session
            .get()
            .cloned()
            .ok_or_else(|| "the ACP session is not open yet".to_string())
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
            .session()
            .map(|s| self.cx.send_request(ReadTextFileRequest::new(s, path)));
        Box::pin(async move {
            sent?
                .block_task()
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
        // `fs/write_text_file` carries the whole new text; the change's
        // diff (`old` to `new`) is the controller's to record.
        let _ = old;
        let sent = self.session().map(|s| {
            self.cx
                .send_request(WriteTextFileRequest::new(s, path, new))
        });
        Box::pin(async move {
            sent?.block_task().await.map_err(|e| e.to_string())?;
            Ok(())
        })
    }
}
