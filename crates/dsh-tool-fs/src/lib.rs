//! The file tools: `read`, `write` and `edit`.
//!
//! Start at [`FsTools`]: it registers the three tools on the kernel's
//! [`ToolRegistry`] for one working directory. Names and parameters are the
//! reference harness's (`file_path`, `offset`, `limit`, `content`,
//! `old_string`, `new_string`, `replace_all`).
//!
//! - **read** shows a window of numbered lines (`cat -n` style), streamed
//!   in memory proportional to the window: neither a huge file nor a huge
//!   line is ever held whole.
//! - **Regular files only**: a fifo, socket or device is `FS_NOT_A_FILE`,
//!   refused before it is opened (and the open cannot block), so no tool
//!   hangs on one.
//! - **write** replaces a whole file, **edit** replaces an exact text once
//!   (or everywhere with `replace_all`); both write atomically (temporary
//!   file in the same directory, fsync, rename; permission bits kept but
//!   setuid/setgid cleared; symlinks written through).
//! - **The freshness guard**: every successful read, write and edit records
//!   the file's version (length, mtime, SHA-256) as an `fs/observed` event
//!   in the session, so it survives `--resume`. Replacing or editing an
//!   existing file needs an observation (`FS_NOT_OBSERVED`: read it first)
//!   whose contents still match the disk (`FS_STALE_VERSION`: read it
//!   again).
//! - **Editor files**: when an editor serves files ([`FileAccess`], set by
//!   the ACP server for a client with `fs.readTextFile`/`fs.writeTextFile`),
//!   reads come from its buffers and writes go to it; the guard compares
//!   contents, so it works the same on either side.
//!
//! Every failure is a coded error result (`FS_*`, see `docs/error-codes.md`);
//! nothing panics and nothing is half-written.

#![warn(missing_docs)]

mod atomic;
mod edit;
mod editor;
mod fence;
mod files;
mod guard;
mod image;
mod read;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use dsh_kernel::{DshError, Registration};
use dsh_llm::ContentBlock;
use dsh_protocol::codes;
use dsh_tools::regular;
use dsh_tools::{
    approved_escalation, define_tool, SandboxPermissions, Tool, ToolArgs, ToolContext, ToolError,
    ToolRegistry,
};
use serde::{Deserialize, Serialize};

pub use editor::{EditorArgs, EditorCommand, EDITOR_DESCRIPTION, MAX_EDITOR_CHARS};
pub use fence::Fence;
pub use files::{EditorFiles, FileAccess, EDITOR_TIMEOUT};
pub use guard::{Version, OBSERVED_KIND};
pub use image::{
    has_image_extension, load_image, load_image_bytes, ImageError, ImageFormat, ImagePolicy,
    ImageSupport, LoadedImage, MAX_ENCODED_BYTES, MAX_IMAGE_FILE_BYTES, MAX_IMAGE_PIXELS,
    MAX_IMAGE_SIDE, MAX_LONG_SIDE,
};
pub use read::{MAX_LINES, MAX_LINE_CHARS, MAX_OUTPUT_BYTES};

use guard::{Guard, Memory};

/// Description of `read`.
pub const READ_DESCRIPTION: &str = "Read a text file: numbered lines (`cat -n` style), by default the first 2000. Use `offset` (1-based line) and `limit` to read a window of a long file; the last line says which lines were shown out of how many. Prefer this over `cat`/`head`/`sed -n` in bash. Reading a file is required before `write` replaces it or `edit` changes it. A PNG, JPEG, GIF or WebP image is shown as an image (scaled down to at most 1568 px) when the model takes images.";

/// Description of `write`.
pub const WRITE_DESCRIPTION: &str = "Create a file or replace a whole file with `content` (parent directories are created). An existing file must have been read first in this session and must not have changed since. Prefer `edit` for changes to part of a file.";

/// Description of `edit`.
pub const EDIT_DESCRIPTION: &str = "Replace an exact text in a file: `old_string` must occur exactly once (include enough surrounding lines to make it unique), or set `replace_all` to replace every occurrence. The file must have been read first in this session and must not have changed since. Returns a diff of the change. Prefer this over `sed` or heredocs in bash.";

/// Arguments of `read`.
#[derive(Debug, Serialize, Deserialize, ToolArgs)]
pub struct ReadArgs {
    /// The file to read: absolute, or relative to the working directory.
    #[tool(min_length = 1)]
    pub file_path: String,
    /// The first line to show, 1-based (default 1).
    #[tool(minimum = 1)]
    pub offset: Option<u64>,
    /// How many lines to show (default and at most 2000).
    #[tool(minimum = 1, maximum = 2000)]
    pub limit: Option<u64>,
}

/// Arguments of `write`.
#[derive(Debug, Serialize, Deserialize, ToolArgs)]
#[tool(together("sandbox_permissions", "justification"))]
pub struct WriteArgs {
    /// The file to write: absolute, or relative to the working directory.
    #[tool(min_length = 1)]
    pub file_path: String,
    /// The whole new content of the file.
    pub content: String,
    /// Only after the sandbox denied this write (FS_SANDBOX_DENIED): write once under this wider mode. The user is asked to approve; give `justification` too.
    #[serde(default)]
    pub sandbox_permissions: Option<SandboxPermissions>,
    /// Why the write needs the wider mode, shown to the user who approves it.
    #[serde(default)]
    #[tool(min_length = 1)]
    pub justification: Option<String>,
}

/// Arguments of `edit`.
#[derive(Debug, Serialize, Deserialize, ToolArgs)]
#[tool(together("sandbox_permissions", "justification"))]
pub struct EditArgs {
    /// The file to edit: absolute, or relative to the working directory.
    #[tool(min_length = 1)]
    pub file_path: String,
    /// The exact text to replace (line endings may be LF or CRLF).
    #[tool(min_length = 1)]
    pub old_string: String,
    /// The text to put in its place (must differ from old_string).
    pub new_string: String,
    /// Replace every occurrence instead of exactly one (default false).
    pub replace_all: Option<bool>,
    /// Only after the sandbox denied this edit (FS_SANDBOX_DENIED): edit once under this wider mode. The user is asked to approve; give `justification` too.
    #[serde(default)]
    pub sandbox_permissions: Option<SandboxPermissions>,
    /// Why the edit needs the wider mode, shown to the user who approves it.
    #[serde(default)]
    #[tool(min_length = 1)]
    pub justification: Option<String>,
}

/// The file tools plugin: `read`, `write` and `edit` for the working
/// directory `root`, registered in the kernel's [`ToolRegistry`]. Undoing
/// the registration removes all three.
pub struct FsTools {
    /// The working directory relative paths resolve against.
    pub root: PathBuf,
}

impl dsh_kernel::Plugin for FsTools {
    /// # Errors
    /// `MISSING_SERVICE` without a registry; `DUPLICATE_TOOL` (nothing stays
    /// registered then).
    fn install(self, kernel: &dsh_kernel::Kernel) -> Result<Registration, DshError> {
        let registry = kernel.service::<ToolRegistry>().map_err(DshError::from)?;
        install(&registry, self.root).map_err(DshError::from)
    }
}

/// Registers `read`, `write` and `edit` (in that order) for `root`; the
/// SWE-bench editor `str_replace_editor` only through [`install_only`].
///
/// # Errors
/// A name is taken; nothing stays registered then.
pub fn install(registry: &ToolRegistry, root: PathBuf) -> Result<Registration, ToolError> {
    install_only(registry, root, |name| name != "str_replace_editor")
}

/// [`install`] of the tools whose name `keep` accepts (`read`, `write`,
/// `edit`, `str_replace_editor`), in that order; all four share one guard.
///
/// # Errors
/// As [`install`].
pub fn install_only(
    registry: &ToolRegistry,
    root: PathBuf,
    keep: impl Fn(&str) -> bool,
) -> Result<Registration, ToolError> {
    install_fenced(registry, root, keep, Fence::open())
}

/// [`install_only`] with the writes of `write`, `edit` and
/// `str_replace_editor` confined by `fence` (`FS_SANDBOX_DENIED` outside
/// its roots; see [`Fence`]); `read` is never fenced.
///
/// # Errors
/// As [`install`].
pub fn install_fenced(
    registry: &ToolRegistry,
    root: PathBuf,
    keep: impl Fn(&str) -> bool,
    fence: Fence,
) -> Result<Registration, ToolError> {
    install_with(registry, root, keep, fence, FileAccess::disk())
}

/// [`install_fenced`] reading and writing through `files` (the disk, or an
/// editor once [`FileAccess::set_editor`] is called on any clone).
///
/// # Errors
/// As [`install`].
pub fn install_with(
    registry: &ToolRegistry,
    root: PathBuf,
    keep: impl Fn(&str) -> bool,
    fence: Fence,
    files: FileAccess,
) -> Result<Registration, ToolError> {
    let memory = Arc::new(Memory::default());
    let io = Io { fence, files };
    let tools = [
        read_tool(root.clone(), memory.clone(), io.files.clone()),
        write_tool(root.clone(), memory.clone(), io.clone()),
        edit_tool(root, memory.clone(), io.clone()),
        editor::editor_tool(memory, io),
    ];
    let kept = tools.into_iter().filter(|t| keep(&t.schema().name));
    registry.register_all(kept)
}

fn io_error(path: &Path, e: &std::io::Error) -> ToolError {
    if let Some(regular::NotAFile(kind)) = regular::not_a_file(e) {
        return special(path, kind);
    }
    match e.kind() {
        std::io::ErrorKind::NotFound => not_found(path),
        _ => ToolError::new(
            codes::FS_IO,
            format!("cannot access {}: {e}", path.display()),
        ),
    }
}

/// `FS_NOT_FOUND`, naming the closest existing sibling when one is near.
fn not_found(path: &Path) -> ToolError {
    let hint = path
        .parent()
        .zip(path.file_name().and_then(|n| n.to_str()))
        .and_then(|(dir, name)| {
            let names: Vec<String> = std::fs::read_dir(dir)
                .ok()?
                .flatten()
                .filter_map(|e| e.file_name().to_str().map(str::to_string))
                .collect();
            dsh_schema::suggest::closest(name, names.iter().map(String::as_str))
                .map(|best| format!("; did you mean {}?", dir.join(best).display()))
        })
        .unwrap_or_default();
    ToolError::new(
        codes::FS_NOT_FOUND,
        format!("{} does not exist{hint}", path.display()),
    )
}

/// `FS_IS_DIRECTORY` or `FS_NOT_A_FILE` for a path that is a `kind` (as
/// [`regular::special_kind`] names it).
fn special(path: &Path, kind: &str) -> ToolError {
    if kind == regular::DIRECTORY {
        return is_directory(path);
    }
    ToolError::new(
        codes::FS_NOT_A_FILE,
        format!(
            "{} is a {kind}, not a regular file; the file tools only read and write regular files",
            path.display()
        ),
    )
}

/// `Ok` unless `disk` (the `stat` of a path, which never blocks) says the
/// path exists and is not a regular file: checked before anything opens it
/// or asks an editor for it.
///
/// # Errors
/// `FS_IS_DIRECTORY`, `FS_NOT_A_FILE` naming what it is.
fn refuse_special(path: &Path, disk: &std::io::Result<std::fs::Metadata>) -> Result<(), ToolError> {
    match disk {
        Ok(meta) => match regular::special_kind(meta.file_type()) {
            Some(kind) => Err(special(path, kind)),
            None => Ok(()),
        },
        Err(_) => Ok(()),
    }
}

fn is_directory(path: &Path) -> ToolError {
    ToolError::new(
        codes::FS_IS_DIRECTORY,
        format!(
            "{} is a directory, not a file; list it with bash (ls) instead",
            path.display()
        ),
    )
}

/// The window `offset..` (at most `limit` lines) of the file at `path`,
/// from the editor when it serves reads (falling back to the disk when it
/// cannot read a file that is there), else from the disk. A partial
/// window's tail line says to use `read_on` (the argument that reads
/// further: `offset`, `view_range`) to read on.
///
/// # Errors
/// `FS_IS_DIRECTORY`, `FS_NOT_A_FILE`, `FS_NOT_FOUND`, `FS_NOT_TEXT`,
/// `FS_IO`, `ABORTED`.
async fn window(
    files: &FileAccess,
    ctx: &ToolContext,
    path: &Path,
    (offset, limit): (u64, u64),
    read_on: &str,
) -> Result<read::Window, ToolError> {
    match shown(files, ctx, path, (offset, limit), read_on).await? {
        Shown::Text(window) => Ok(window),
        Shown::Image(format) => Err(ToolError::new(
            codes::FS_NOT_TEXT,
            format!(
                "{} is a {format} image, not text; the read tool shows images",
                path.display()
            ),
        )),
    }
}

/// What a read found: a text window, or a file that is an image.
enum Shown {
    Text(read::Window),
    Image(ImageFormat),
}

/// [`window`], telling an image file (by its magic bytes) apart instead
/// of refusing it.
async fn shown(
    files: &FileAccess,
    ctx: &ToolContext,
    path: &Path,
    (offset, limit): (u64, u64),
    read_on: &str,
) -> Result<Shown, ToolError> {
    let disk = std::fs::metadata(path);
    refuse_special(path, &disk)?;
    let key = guard::key_of(path);
    let shown = match files::editor_text(files, ctx, path).await? {
        Some(Ok(text)) => {
            let mtime = disk.as_ref().map_or(0, guard::mtime_ms);
            read::text_window(&text, &key, mtime, offset, limit, read_on)
        }
        // The editor could not read it: the disk says why, or has it.
        Some(Err(_)) | None => match disk {
            Ok(_) => read::read_window(path, &key, offset, limit, read_on),
            Err(e) => return Err(io_error(path, &e)),
        },
    };
    shown.map(Shown::Text).or_else(|e| match e {
        read::ReadError::Image(format) => Ok(Shown::Image(format)),
        read::ReadError::NotText => Err(ToolError::new(
            codes::FS_NOT_TEXT,
            format!(
                "{} is not a text file (it holds a NUL byte in its first 8 KiB)",
                path.display()
            ),
        )),
        read::ReadError::Io(e) => Err(io_error(path, &e)),
    })
}

fn read_tool(root: PathBuf, memory: Arc<Memory>, files: FileAccess) -> Arc<dyn Tool> {
    define_tool(
        "read",
        READ_DESCRIPTION,
        move |args: ReadArgs, ctx: ToolContext| {
            let root = root.clone();
            let memory = memory.clone();
            let files = files.clone();
            async move {
                let path = guard::resolve(&root, &args.file_path);
                let guard = Guard {
                    ctx: &ctx,
                    memory: &memory,
                };
                if has_image_extension(&path) {
                    refuse_special(&path, &std::fs::metadata(&path))?;
                    return read_image(&guard, &files, &path).await;
                }
                let offset = args.offset.unwrap_or(1);
                let limit = args.limit.unwrap_or(MAX_LINES);
                match shown(&files, &ctx, &path, (offset, limit), "offset").await? {
                    Shown::Text(window) => {
                        guard.record(&window.version);
                        Ok(vec![ContentBlock::text(window.text)])
                    }
                    Shown::Image(_) => read_image(&guard, &files, &path).await,
                }
            }
        },
    )
    .concurrency_safe()
    .into_arc()
}

/// `read` of an image file (always from the disk: editors serve text):
/// `Image: <path> (<summary>)` and the image block, the file's version
/// recorded like a text read's. The decode runs off the async threads and
/// stops waiting at an abort.
///
/// # Errors
/// `FS_NOT_TEXT` when the model takes no images or the image is refused
/// (see [`image`]); `FS_NOT_FOUND`, `FS_IO`, `ABORTED`.
async fn read_image(
    guard: &Guard<'_>,
    files: &FileAccess,
    path: &Path,
) -> Result<Vec<ContentBlock>, ToolError> {
    let owned = path.to_path_buf();
    let policy = files.images();
    let work = tokio::task::spawn_blocking(move || {
        let (meta, bytes) = image::read_image_file(&owned)?;
        let name = owned.display().to_string();
        let claimed = owned
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(ImageFormat::from_extension);
        // Refused for the model before decoding: no work for nothing.
        if let ImageSupport::Refused { model } = policy.current() {
            if let Some(format) = dsh_protocol::image::sniff(&bytes) {
                return Ok(Err(image::refused_message(&owned, format, &model)));
            }
        }
        let loaded = load_image_bytes(&bytes, &name, claimed)?;
        let key = guard::key_of(&owned);
        Ok(Ok((loaded, guard::version_of_bytes(&key, &meta, &bytes))))
    });
    let done = tokio::select! {
        biased;
        () = guard.ctx.cancel.cancelled() => {
            return Err(ToolError::aborted(format!(
                "reading the image {} was aborted",
                path.display()
            )))
        }
        done = work => done,
    };
    let outcome: Result<_, ImageError> = done.map_err(|e| {
        ToolError::new(
            codes::FS_IO,
            format!("reading the image {} failed: {e}", path.display()),
        )
    })?;
    let (loaded, version) = match outcome {
        Ok(Ok(found)) => found,
        Ok(Err(refused)) => return Err(ToolError::new(codes::FS_NOT_TEXT, refused)),
        Err(ImageError::Io { source, .. }) => return Err(io_error(path, &source)),
        Err(e) => return Err(ToolError::new(e.code(), e.to_string())),
    };
    guard.record(&version);
    let kb = loaded.data.len().div_ceil(1024);
    Ok(vec![
        ContentBlock::text(format!(
            "Image: {} ({}, {kb} KB sent)",
            path.display(),
            loaded.summary()
        )),
        ContentBlock::Image(loaded.block()),
    ])
}

/// Where the writing tools read and write: the fence on their writes and
/// the side (disk or editor) they use.
#[derive(Clone)]
pub(crate) struct Io {
    pub(crate) fence: Fence,
    pub(crate) files: FileAccess,
}

/// `FS_IO` for an editor that could not do `what` (`read`, `write`).
fn editor_failed(path: &Path, what: &str, why: &str) -> ToolError {
    ToolError::new(
        codes::FS_IO,
        format!(
            "the editor could not {what} {}: {why} (the file was not changed)",
            path.display()
        ),
    )
}

/// Checks that the existing file at `path` may be changed: observed by
/// this session and unchanged since. Returns the text it holds now when
/// the editor will take the write (for its diff view).
async fn check_fresh(
    guard: &Guard<'_>,
    files: &FileAccess,
    path: &Path,
    key: &str,
) -> Result<Option<String>, ToolError> {
    let (now, text) = match files::editor_text(files, guard.ctx, path).await? {
        Some(Ok(text)) => (guard::version_of_text(key, path, &text), Some(text)),
        Some(Err(why)) => return Err(editor_failed(path, "read", &why)),
        None if files.writer().is_some() => {
            let (meta, bytes) = regular::read_all(path).map_err(|e| io_error(path, &e))?;
            let now = guard::version_of_bytes(key, &meta, &bytes);
            (now, Some(String::from_utf8_lossy(&bytes).into_owned()))
        }
        None => (
            guard::current(path, key).map_err(|e| io_error(path, &e))?,
            None,
        ),
    };
    check_against(guard, path, key, now)?;
    Ok(text)
}

/// [`check_fresh`] with the current version already known.
fn check_against(
    guard: &Guard<'_>,
    path: &Path,
    key: &str,
    now: guard::Version,
) -> Result<guard::Version, ToolError> {
    let Some(seen) = guard.last(key) else {
        return Err(ToolError::new(
            codes::FS_NOT_OBSERVED,
            format!(
                "{} exists and this session has not read it; read it first",
                path.display()
            ),
        ));
    };
    if !guard::same_contents(&seen, &now) {
        return Err(ToolError::new(
            codes::FS_STALE_VERSION,
            format!(
                "{} changed since you read it at {}; read it again",
                path.display(),
                guard::format_time(seen.at_ms)
            ),
        ));
    }
    Ok(now)
}

/// The text of an existing UTF-8 file this session may change (observed,
/// unchanged since), read once (from the editor when it serves reads): the
/// guard hashes the text the change works on. Returns the guard key and
/// the text.
async fn load_fresh(
    guard: &Guard<'_>,
    files: &FileAccess,
    path: &Path,
) -> Result<(String, String), ToolError> {
    let meta = std::fs::metadata(path);
    refuse_special(path, &meta)?;
    let key = guard::key_of(path);
    match files::editor_text(files, guard.ctx, path).await? {
        Some(Ok(text)) => {
            check_against(guard, path, &key, guard::version_of_text(&key, path, &text))?;
            return Ok((key, text));
        }
        Some(Err(why)) if meta.is_ok() => return Err(editor_failed(path, "read", &why)),
        Some(Err(_)) | None => {}
    }
    meta.map_err(|e| io_error(path, &e))?;
    let (meta, bytes) = regular::read_all(path).map_err(|e| io_error(path, &e))?;
    check_against(
        guard,
        path,
        &key,
        guard::version_of_bytes(&key, &meta, &bytes),
    )?;
    let text = String::from_utf8(bytes).map_err(|_| {
        ToolError::new(
            codes::FS_NOT_TEXT,
            format!("{} is not valid UTF-8; edit it with bash", path.display()),
        )
    })?;
    Ok((key, text))
}

/// Writes `out` to `path` — through the editor when it takes writes
/// (`old`: the text it replaces, `None` for a new file), else atomically
/// on disk — and records the version of what was written (hashed in
/// memory, not read back). The fence is checked again just before.
async fn store(
    guard: &Guard<'_>,
    io: &Io,
    path: &Path,
    key: &str,
    old: Option<&str>,
    out: &str,
) -> Result<(), ToolError> {
    if let Some(editor) = io.files.writer() {
        io.fence.recheck(path).map_err(|e| write_err(path, &e))?;
        let request = editor.write_text(path, old.map(str::to_string), out.to_string());
        files::ask(guard.ctx, path, "writing", request)
            .await?
            .map_err(|why| editor_failed(path, "write", &why))?;
        guard.record(&guard::version_of_text(key, path, out));
        return Ok(());
    }
    atomic::write_atomic(path, out.as_bytes(), &|p| io.fence.recheck(p))
        .map_err(|(p, e)| write_err(&p, &e))?;
    let meta = std::fs::metadata(path).map_err(|e| io_error(path, &e))?;
    guard.record(&guard::version_of_bytes(key, &meta, out.as_bytes()));
    Ok(())
}

fn write_err(path: &Path, e: &std::io::Error) -> ToolError {
    if let Some(denied) = e
        .get_ref()
        .and_then(|r| r.downcast_ref::<fence::FenceDenied>())
    {
        return ToolError::new(codes::FS_SANDBOX_DENIED, denied.0.clone());
    }
    ToolError::new(
        codes::FS_IO,
        format!(
            "cannot write {}: {e} (the file was not changed)",
            path.display()
        ),
    )
}

impl Io {
    /// This call's side of things: the fence widened to the asked mode
    /// when the call was approved to escalate, the same files.
    ///
    /// # Errors
    /// `PERMISSION_DENIED` for an escalation nobody approved.
    fn for_call(
        &self,
        ctx: &ToolContext,
        asked: Option<SandboxPermissions>,
    ) -> Result<Io, ToolError> {
        let fence = match approved_escalation(ctx, asked)? {
            Some(mode) => self.fence.widened(mode),
            None => self.fence.clone(),
        };
        Ok(Io {
            fence,
            files: self.files.clone(),
        })
    }
}

fn write_tool(root: PathBuf, memory: Arc<Memory>, io: Io) -> Arc<dyn Tool> {
    define_tool(
        "write",
        WRITE_DESCRIPTION,
        move |args: WriteArgs, ctx: ToolContext| {
            let root = root.clone();
            let memory = memory.clone();
            let io = io.clone();
            async move {
                let io = io.for_call(&ctx, args.sandbox_permissions)?;
                let path = guard::resolve(&root, &args.file_path);
                io.fence.check(&path)?;
                let guard = Guard {
                    ctx: &ctx,
                    memory: &memory,
                };
                let disk = std::fs::metadata(&path);
                refuse_special(&path, &disk)?;
                let (existed, old) = match disk {
                    Ok(_) => {
                        let key = guard::key_of(&path);
                        (true, check_fresh(&guard, &io.files, &path, &key).await?)
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => (false, None),
                    Err(e) => return Err(io_error(&path, &e)),
                };
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent).map_err(|e| write_err(parent, &e))?;
                }
                let key = guard::key_of(&path);
                store(&guard, &io, &path, &key, old.as_deref(), &args.content).await?;
                let lines = args.content.lines().count();
                let verb = if existed { "Replaced" } else { "Created" };
                Ok(vec![ContentBlock::text(format!(
                    "{verb} {} ({lines} lines, {} bytes)",
                    path.display(),
                    args.content.len()
                ))])
            }
        },
    )
    .into_arc()
}

fn edit_tool(root: PathBuf, memory: Arc<Memory>, io: Io) -> Arc<dyn Tool> {
    define_tool("edit", EDIT_DESCRIPTION, move |args: EditArgs, ctx: ToolContext| {
        let root = root.clone();
        let memory = memory.clone();
        let io = io.clone();
        async move {
            if args.old_string == args.new_string {
                return Err(ToolError::new(
                    codes::INVALID_ARGS,
                    "invalid arguments: \"new_string\" must differ from \"old_string\"",
                ));
            }
            let io = io.for_call(&ctx, args.sandbox_permissions)?;
            let path = guard::resolve(&root, &args.file_path);
            io.fence.check(&path)?;
            let guard = Guard {
                ctx: &ctx,
                memory: &memory,
            };
            let (key, original) = load_fresh(&guard, &io.files, &path).await?;
            let ending = edit::dominant_ending(&original);
            let text = edit::to_lf(&original);
            let old = edit::to_lf(&args.old_string);
            let new = edit::to_lf(&args.new_string);
            let found = edit::occurrences(&text, &old);
            if found.is_empty() {
                let near = edit::whitespace_candidates(&text, &old);
                let hint = if near.is_empty() {
                    String::new()
                } else {
                    format!(
                        "; the text occurs with different whitespace at line(s) {}",
                        join(&near)
                    )
                };
                return Err(ToolError::new(
                    codes::FS_EDIT_NOT_FOUND,
                    format!("old_string does not occur in {}{hint}", path.display()),
                ));
            }
            if found.len() > 1 && args.replace_all != Some(true) {
                return Err(ToolError::new(
                    codes::FS_AMBIGUOUS_EDIT,
                    format!(
                        "old_string occurs {} times in {} (lines {}); include more context to make it unique, or set replace_all",
                        found.len(),
                        path.display(),
                        edit::list_lines(&text, &found)
                    ),
                ));
            }
            let replaced = edit::replace_at(&text, &found, old.len(), &new);
            let changes: Vec<edit::Change<'_>> = found
                .iter()
                .map(|at| edit::Change {
                    old_start: *at,
                    old: &old,
                    new: &new,
                })
                .collect();
            let diff = edit::unified_diff(&path.display().to_string(), &text, &replaced, &changes);
            let out = edit::with_ending(&replaced, ending);
            store(&guard, &io, &path, &key, Some(&original), &out).await?;
            Ok(vec![ContentBlock::text(format!(
                "Edited {} ({} replacement{})\n{diff}",
                path.display(),
                found.len(),
                if found.len() == 1 { "" } else { "s" }
            ))])
        }
    })
    .into_arc()
}

fn join(numbers: &[usize]) -> String {
    numbers
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}
