//! Where the file tools read and write text: the disk, or an editor.
//!
//! An editor that drives dsh (an ACP client advertising
//! `fs.readTextFile`/`fs.writeTextFile`) can serve file contents itself:
//! its unsaved buffers are what the model reads, and the tools' writes land
//! in the editor (with its undo). [`FileAccess`] is the switch the tools
//! share; [`EditorFiles`] is what an editor plugs into it. The freshness
//! guard works the same either way: it compares contents (length and
//! SHA-256), whichever side served them.

use std::path::Path;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use dsh_kernel::sync::{read, write};
use dsh_kernel::BoxFuture;
use dsh_protocol::codes;
use dsh_tools::{ToolContext, ToolError};

use crate::image::ImagePolicy;

/// How long the tools wait for the editor to answer one read or write.
pub const EDITOR_TIMEOUT: Duration = Duration::from_secs(30);

/// An editor's view of text files (an ACP client's file-system
/// capability). Paths are absolute.
pub trait EditorFiles: Send + Sync {
    /// Whether the editor serves reads (`fs.readTextFile`); when not, the
    /// tools read the disk.
    fn reads(&self) -> bool;

    /// Whether the editor takes writes (`fs.writeTextFile`); when not, the
    /// tools write the disk (atomically).
    fn writes(&self) -> bool;

    /// The whole text of `path` as the editor has it (an unsaved buffer
    /// included). Called only when [`EditorFiles::reads`] is true.
    ///
    /// # Errors
    /// What the editor said, for the model to read.
    fn read_text(&self, path: &Path) -> BoxFuture<'static, Result<String, String>>;

    /// Replaces the text of `path` (creating the file) with `new`. `old` is
    /// the text the tool checked just before (`None` for a new file), for
    /// an editor that shows the change as a diff. Called only when
    /// [`EditorFiles::writes`] is true; the parent directory exists.
    ///
    /// # Errors
    /// What the editor said; the tool reports the file as unchanged.
    fn write_text(
        &self,
        path: &Path,
        old: Option<String>,
        new: String,
    ) -> BoxFuture<'static, Result<(), String>>;
}

/// The file tools' switch between the disk and an editor; cheap to clone
/// (all clones see [`FileAccess::set_editor`]). The default is the disk.
///
/// It also carries the [`ImagePolicy`] `read` asks before it returns an
/// image (the default accepts images; the stack sets one that asks the
/// model catalogue).
#[derive(Clone, Default)]
pub struct FileAccess {
    editor: Arc<RwLock<Option<Arc<dyn EditorFiles>>>>,
    images: Arc<RwLock<ImagePolicy>>,
}

impl std::fmt::Debug for FileAccess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let editor = self.editor();
        f.debug_struct("FileAccess")
            .field("reads", &editor.as_ref().is_some_and(|e| e.reads()))
            .field("writes", &editor.as_ref().is_some_and(|e| e.writes()))
            .finish()
    }
}

impl FileAccess {
    /// Reads and writes go to the disk (until [`FileAccess::set_editor`]).
    pub fn disk() -> Self {
        Self::default()
    }

    /// Routes reads and writes through `editor` as far as it serves them
    /// (see [`EditorFiles::reads`], [`EditorFiles::writes`]); `None` goes
    /// back to the disk. Calls already running keep the side they started
    /// with.
    pub fn set_editor(&self, editor: Option<Arc<dyn EditorFiles>>) {
        *write(&self.editor) = editor;
    }

    /// The editor, when one is set.
    pub fn editor(&self) -> Option<Arc<dyn EditorFiles>> {
        read(&self.editor).clone()
    }

    /// Sets whether the model takes images, asked at every image `read`
    /// from now on (all clones see it).
    pub fn set_images(&self, policy: ImagePolicy) {
        *write(&self.images) = policy;
    }

    /// The image policy in force.
    pub fn images(&self) -> ImagePolicy {
        read(&self.images).clone()
    }

    /// The editor when it serves reads.
    pub(crate) fn reader(&self) -> Option<Arc<dyn EditorFiles>> {
        self.editor().filter(|e| e.reads())
    }

    /// The editor when it takes writes.
    pub(crate) fn writer(&self) -> Option<Arc<dyn EditorFiles>> {
        self.editor().filter(|e| e.writes())
    }
}

/// Waits for an editor request, bounded by the call's cancel token
/// (`ABORTED`) and [`EDITOR_TIMEOUT`] (`FS_IO`).
pub(crate) async fn ask<T>(
    ctx: &ToolContext,
    path: &Path,
    what: &str,
    request: BoxFuture<'static, Result<T, String>>,
) -> Result<Result<T, String>, ToolError> {
    tokio::select! {
        biased;
        () = ctx.cancel.cancelled() => Err(ToolError::aborted(format!(
            "{what} {} was aborted while waiting for the editor",
            path.display()
        ))),
        r = tokio::time::timeout(EDITOR_TIMEOUT, request) => r.map_err(|_| {
            ToolError::new(
                codes::FS_IO,
                format!(
                    "the editor did not answer within {} s ({what} {})",
                    EDITOR_TIMEOUT.as_secs(),
                    path.display()
                ),
            )
        }),
    }
}

/// The text of `path` from the editor when it serves reads: `Ok(None)`
/// means "read the disk".
///
/// # Errors
/// `ABORTED`, or `FS_IO` when the editor did not answer in time.
pub(crate) async fn editor_text(
    files: &FileAccess,
    ctx: &ToolContext,
    path: &Path,
) -> Result<Option<Result<String, String>>, ToolError> {
    let Some(editor) = files.reader() else {
        return Ok(None);
    };
    ask(ctx, path, "reading", editor.read_text(path))
        .await
        .map(Some)
}
