//! `read` of images: real PNG, JPEG, GIF and WebP files made here with the
//! `image` crate, shrunk to what a model takes; and the hostile ones — a
//! 20,000 × 20,000 PNG that is only a header (refused before decoding,
//! fast and without allocating), a text file named `.png`, a JPEG cut
//! short, a 30 MiB file, a model that takes no images.
#![allow(clippy::unwrap_used, clippy::expect_used, unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::time::{Duration, Instant};

use base64::Engine as _;
use dsh_protocol::ContentBlock;
use dsh_tool_fs::{Fence, FileAccess, ImagePolicy, ImageSupport};
use dsh_tools::{CallEnv, ToolCall, ToolRegistry, ToolResult};
use serde_json::json;

/// Counts the bytes this thread allocates while `COUNTING` is set.
struct Counting;

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static ALLOCATED: Cell<usize> = const { Cell::new(0) };
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // `try_with`: the thread-locals may be gone while a thread exits.
        let _ = COUNTING.try_with(|on| {
            if on.get() {
                let _ = ALLOCATED.try_with(|a| a.set(a.get() + layout.size()));
            }
        });
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Bytes this thread allocated while running `f`.
fn allocated_by<T>(f: impl FnOnce() -> T) -> (T, usize) {
    ALLOCATED.with(|a| a.set(0));
    COUNTING.with(|c| c.set(true));
    let out = f();
    COUNTING.with(|c| c.set(false));
    (out, ALLOCATED.with(Cell::get))
}

struct Fx {
    dir: tempfile::TempDir,
    registry: ToolRegistry,
    files: FileAccess,
    _reg: dsh_kernel::Registration,
}

impl Fx {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let registry = ToolRegistry::new();
        let files = FileAccess::disk();
        let reg = dsh_tool_fs::install_with(
            &registry,
            dir.path().to_path_buf(),
            |_| true,
            Fence::open(),
            files.clone(),
        )
        .unwrap();
        Fx {
            dir,
            registry,
            files,
            _reg: reg,
        }
    }

    fn path(&self, name: &str) -> std::path::PathBuf {
        self.dir.path().join(name)
    }

    async fn call(&self, tool: &str, args: serde_json::Value) -> ToolResult {
        self.registry
            .execute(
                &ToolCall::new("c1", tool, args.to_string()),
                CallEnv::default(),
            )
            .await
    }

    async fn read(&self, name: &str) -> ToolResult {
        self.call("read", json!({ "file_path": name })).await
    }
}

/// A gradient with some structure, `w`×`h`.
fn picture(w: u32, h: u32) -> image::RgbImage {
    image::RgbImage::from_fn(w, h, |x, y| {
        image::Rgb([
            (x % 256) as u8,
            (y % 256) as u8,
            ((x / 7 + y / 5) % 256) as u8,
        ])
    })
}

/// Noise that no encoder compresses well.
fn noise(w: u32, h: u32) -> image::RgbImage {
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    image::RgbImage::from_fn(w, h, |_, _| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let b = state.to_le_bytes();
        image::Rgb([b[0], b[1], b[2]])
    })
}

fn save(img: &image::RgbImage, path: &std::path::Path, format: image::ImageFormat) {
    img.save_with_format(path, format).unwrap();
}

/// The image block of a result: its decoded bytes and MIME type.
fn image_of(r: &ToolResult) -> (Vec<u8>, String) {
    assert!(!r.is_error, "expected an image, got {}", r.text());
    let block = r
        .content
        .iter()
        .find_map(|b| match b {
            ContentBlock::Image(i) => Some(i.clone()),
            _ => None,
        })
        .expect("an image block");
    let mime = block.mime_type.clone().unwrap();
    let (url_mime, payload) = block
        .url
        .strip_prefix("data:")
        .unwrap()
        .split_once(";base64,")
        .unwrap();
    assert_eq!(url_mime, mime);
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(payload)
        .unwrap();
    (bytes, mime)
}

fn err(r: &ToolResult, code: &str) -> String {
    assert!(r.is_error, "expected {code}, got success {}", r.text());
    assert_eq!(r.code(), Some(code), "{}", r.text());
    r.text()
}

#[tokio::test]
async fn each_format_comes_back_as_an_image_block_of_its_own_dimensions() {
    let fx = Fx::new();
    let img = picture(64, 48);
    for (name, format, mime) in [
        ("a.png", image::ImageFormat::Png, "image/png"),
        ("a.jpg", image::ImageFormat::Jpeg, "image/jpeg"),
        ("a.gif", image::ImageFormat::Gif, "image/gif"),
        ("a.webp", image::ImageFormat::WebP, "image/webp"),
    ] {
        save(&img, &fx.path(name), format);
        let r = fx.read(name).await;
        let (bytes, got_mime) = image_of(&r);
        assert_eq!(got_mime, mime, "{name}");
        // Small enough: the file's own bytes are sent.
        assert_eq!(bytes, std::fs::read(fx.path(name)).unwrap(), "{name}");
        let back = image::load_from_memory(&bytes).unwrap();
        assert_eq!((back.width(), back.height()), (64, 48), "{name}");
        let text = r.text();
        assert!(
            text.starts_with(&format!("Image: {} (64×48 ", fx.path(name).display())),
            "{text}"
        );
    }
}

#[tokio::test]
async fn the_format_comes_from_the_bytes_not_the_name() {
    let fx = Fx::new();
    save(&picture(10, 20), &fx.path("shot"), image::ImageFormat::Png);
    save(
        &picture(10, 20),
        &fx.path("really-a-png.jpg"),
        image::ImageFormat::Png,
    );
    for name in ["shot", "really-a-png.jpg"] {
        let (_, mime) = image_of(&fx.read(name).await);
        assert_eq!(mime, "image/png", "{name}");
    }
    // A text file that happens to start like a GIF stays text.
    std::fs::write(fx.path("notes.txt"), "GIF89a is the magic of a GIF\n").unwrap();
    let r = fx.read("notes.txt").await;
    assert!(!r.is_error, "{}", r.text());
    assert!(r.text().contains("GIF89a is the magic"), "{}", r.text());
}

#[tokio::test]
async fn a_large_image_is_scaled_to_1568_on_its_long_side() {
    let fx = Fx::new();
    save(
        &picture(3000, 2000),
        &fx.path("big.png"),
        image::ImageFormat::Png,
    );
    let r = fx.read("big.png").await;
    let (bytes, mime) = image_of(&r);
    assert_eq!(mime, "image/png");
    let back = image::load_from_memory(&bytes).unwrap();
    assert_eq!(back.width(), 1568);
    assert!((1044..=1046).contains(&back.height()), "{}", back.height());
    assert!(
        r.text().contains("3000×2000 PNG, resized to 1568×"),
        "{}",
        r.text()
    );
}

#[tokio::test]
async fn an_image_too_large_as_png_is_sent_as_jpeg_under_5_mib() {
    let fx = Fx::new();
    // Noise: about 5 MB as PNG, 6.7 MB in base64, over the limit.
    save(
        &noise(1300, 1300),
        &fx.path("noise.png"),
        image::ImageFormat::Png,
    );
    assert!(std::fs::metadata(fx.path("noise.png")).unwrap().len() > 4_000_000);
    let r = fx.read("noise.png").await;
    let (bytes, mime) = image_of(&r);
    assert_eq!(mime, "image/jpeg", "{}", r.text());
    assert!(bytes.len().div_ceil(3) * 4 <= dsh_tool_fs::MAX_ENCODED_BYTES);
    let back = image::load_from_memory(&bytes).unwrap();
    assert_eq!((back.width(), back.height()), (1300, 1300));
}

/// A PNG that is only its signature and IHDR chunk, declaring `w`×`h`.
fn png_header(w: u32, h: u32) -> Vec<u8> {
    let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
    png.extend_from_slice(&w.to_be_bytes());
    png.extend_from_slice(&h.to_be_bytes());
    png.extend_from_slice(&[8, 6, 0, 0, 0]); // 8-bit RGBA
    png.extend_from_slice(&[0, 0, 0, 0]); // CRC (never checked: refused first)
    png
}

#[tokio::test]
async fn a_decompression_bomb_is_refused_by_its_header_fast_and_without_allocating() {
    let fx = Fx::new();
    std::fs::write(fx.path("bomb.png"), png_header(20_000, 20_000)).unwrap();
    let started = Instant::now();
    let text = err(&fx.read("bomb.png").await, "FS_NOT_TEXT");
    assert!(started.elapsed() < Duration::from_secs(2));
    assert!(text.contains("is a 20000×20000 PNG"), "{text}");
    assert!(text.contains("16384 px on a side, 50 megapixels"), "{text}");
    assert!(text.contains("refused before decoding"), "{text}");
    // The library call on the bytes: a few hundred bytes of message, not
    // the 1.6 GB the pixels would take.
    let bytes = png_header(20_000, 20_000);
    let (refused, allocated) =
        allocated_by(|| dsh_tool_fs::load_image_bytes(&bytes, "bomb.png", None));
    assert!(matches!(
        refused,
        Err(dsh_tool_fs::ImageError::TooManyPixels {
            width: 20_000,
            height: 20_000,
            ..
        })
    ));
    assert!(allocated < 4096, "allocated {allocated} bytes");
    // Within the side limit but over 50 megapixels: refused too.
    let wide = png_header(16_000, 4_000);
    assert!(matches!(
        dsh_tool_fs::load_image_bytes(&wide, "wide.png", None),
        Err(dsh_tool_fs::ImageError::TooManyPixels { .. })
    ));
}

#[tokio::test]
async fn a_text_file_named_png_is_refused_naming_why() {
    let fx = Fx::new();
    std::fs::write(fx.path("fake.png"), "just some text\n").unwrap();
    let text = err(&fx.read("fake.png").await, "FS_NOT_TEXT");
    assert!(
        text.contains("fake.png is named as a PNG image but its bytes are text"),
        "{text}"
    );
}

#[tokio::test]
async fn corrupt_images_are_refused_naming_the_format() {
    let fx = Fx::new();
    save(
        &picture(200, 150),
        &fx.path("full.jpg"),
        image::ImageFormat::Jpeg,
    );
    let whole = std::fs::read(fx.path("full.jpg")).unwrap();
    std::fs::write(fx.path("cut.jpg"), &whole[..whole.len() / 2]).unwrap();
    let text = err(&fx.read("cut.jpg").await, "FS_NOT_TEXT");
    assert!(
        text.contains("cut.jpg is not a readable JPEG image"),
        "{text}"
    );

    save(
        &picture(200, 150),
        &fx.path("full.png"),
        image::ImageFormat::Png,
    );
    let whole = std::fs::read(fx.path("full.png")).unwrap();
    std::fs::write(fx.path("cut.png"), &whole[..whole.len() / 2]).unwrap();
    let text = err(&fx.read("cut.png").await, "FS_NOT_TEXT");
    assert!(
        text.contains("cut.png is not a readable PNG image"),
        "{text}"
    );

    // Only the signature: the header is cut short.
    std::fs::write(fx.path("sig.png"), b"\x89PNG\r\n\x1a\n").unwrap();
    let text = err(&fx.read("sig.png").await, "FS_NOT_TEXT");
    assert!(text.contains("header is cut short"), "{text}");
}

#[tokio::test]
async fn a_file_over_20_mib_is_refused_before_reading() {
    let fx = Fx::new();
    let f = std::fs::File::create(fx.path("huge.png")).unwrap();
    f.set_len(30 * 1024 * 1024).unwrap(); // sparse: nothing to read anyway
    let text = err(&fx.read("huge.png").await, "FS_NOT_TEXT");
    assert!(
        text.contains("is 30 MiB: larger than the 20 MiB limit"),
        "{text}"
    );
}

#[tokio::test]
async fn a_model_without_images_gets_a_message_saying_how_to_enable_them() {
    let fx = Fx::new();
    save(&picture(8, 8), &fx.path("a.png"), image::ImageFormat::Png);
    fx.files
        .set_images(ImagePolicy::refuse("deepseek-v4-flash"));
    let text = err(&fx.read("a.png").await, "FS_NOT_TEXT");
    assert!(
        text.contains("a.png is a PNG image and model deepseek-v4-flash does not take images (set `images = true` under [models.\"deepseek-v4-flash\"] if it does)"),
        "{text}"
    );
    // Asked at every call: a switch to a model that takes images counts.
    let flag = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let f = flag.clone();
    fx.files.set_images(ImagePolicy::new(move || {
        if f.load(std::sync::atomic::Ordering::SeqCst) {
            ImageSupport::Accepted
        } else {
            ImageSupport::Refused { model: "m".into() }
        }
    }));
    image_of(&fx.read("a.png").await);
    flag.store(false, std::sync::atomic::Ordering::SeqCst);
    err(&fx.read("a.png").await, "FS_NOT_TEXT");
}

#[tokio::test]
async fn an_image_read_counts_as_observed_for_write() {
    let fx = Fx::new();
    save(&picture(8, 8), &fx.path("a.png"), image::ImageFormat::Png);
    // Not read yet: the guard refuses.
    let r = fx
        .call("write", json!({"file_path": "a.png", "content": "x"}))
        .await;
    err(&r, "FS_NOT_OBSERVED");
    image_of(&fx.read("a.png").await);
    let r = fx
        .call("write", json!({"file_path": "a.png", "content": "x"}))
        .await;
    assert!(!r.is_error, "{}", r.text());
}

#[tokio::test]
async fn binary_files_that_are_not_images_keep_their_old_error() {
    let fx = Fx::new();
    std::fs::write(fx.path("blob.bin"), b"\0\x01\x02binary").unwrap();
    let text = err(&fx.read("blob.bin").await, "FS_NOT_TEXT");
    assert!(
        text.contains("holds a NUL byte in its first 8 KiB"),
        "{text}"
    );
}

#[test]
fn load_image_is_the_shared_entry_point() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x.webp");
    save(&picture(30, 40), &p, image::ImageFormat::WebP);
    let loaded = dsh_tool_fs::load_image(&p).unwrap();
    assert_eq!((loaded.width, loaded.height), (30, 40));
    assert_eq!(loaded.mime_type(), "image/webp");
    assert!(!loaded.resized());
    assert_eq!(loaded.summary(), "30×40 WebP");
    assert!(loaded.data_url().starts_with("data:image/webp;base64,"));
    let missing = dsh_tool_fs::load_image(&dir.path().join("nope.png")).unwrap_err();
    assert_eq!(missing.code(), "FS_NOT_FOUND");
}
