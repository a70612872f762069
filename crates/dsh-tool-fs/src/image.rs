//! Images for a model: PNG, JPEG, GIF and WebP files (told by their magic
//! bytes, not their names) checked, decoded, shrunk and re-encoded into an
//! [`ImageBlock`] a provider accepts.
//!
//! Start at [`load_image`] (a file) or [`load_image_bytes`] (bytes an editor
//! or a client sent). The order of the checks is the defence:
//!
//! 1. the raw size: at most [`MAX_IMAGE_FILE_BYTES`], checked from `stat`
//!    before a byte is read;
//! 2. the format, from the magic bytes; a name that claims an image over
//!    bytes that are not one is refused;
//! 3. the dimensions, from the header alone ([`header_dimensions`]): at
//!    most [`MAX_IMAGE_SIDE`] on a side and [`MAX_IMAGE_PIXELS`] in all, so
//!    a decompression bomb (a 20,000 × 20,000 PNG of a few KB) is refused
//!    before any pixel is decoded;
//! 4. the decode itself, under [`image::Limits`] with the same bounds (a
//!    second guard should a header lie);
//! 5. the result: the long side at most [`MAX_LONG_SIDE`], the base64 of
//!    the encoded image at most [`MAX_ENCODED_BYTES`] (the original bytes
//!    when they already fit; else PNG, then JPEG at falling quality, then
//!    smaller, until it fits).
//!
//! [`ImagePolicy`] tells the `read` tool whether the current model takes
//! images at all.

use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use base64::Engine as _;
use dsh_protocol::codes;
use dsh_protocol::image::{header_dimensions, sniff, SNIFF_LEN};
use dsh_protocol::ImageBlock;

pub use dsh_protocol::image::ImageFormat;

/// Largest image file read, in bytes (20 MiB), checked before reading.
pub const MAX_IMAGE_FILE_BYTES: u64 = 20 * 1024 * 1024;
/// Largest width or height an image may declare, in pixels.
pub const MAX_IMAGE_SIDE: u32 = 16_384;
/// Most pixels (width × height) an image may declare: 50 megapixels.
pub const MAX_IMAGE_PIXELS: u64 = 50_000_000;
/// Longest side of the image sent to the model, in pixels (larger images
/// are scaled down, keeping the aspect ratio).
pub const MAX_LONG_SIDE: u32 = 1_568;
/// Most bytes of base64 in the data URL sent to the model (5 MiB: what the
/// strictest provider accepts per image).
pub const MAX_ENCODED_BYTES: usize = 5 * 1024 * 1024;
/// Most memory the decoder may allocate (the `image` crate's own guard).
const MAX_DECODE_ALLOC: u64 = 512 * 1024 * 1024;

/// Whether the model a request goes to takes images.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImageSupport {
    /// Images are sent.
    Accepted,
    /// The model does not take images; `model` names it for the message
    /// (and the `images = true` setting that would change it).
    Refused {
        /// The model's name.
        model: String,
    },
}

/// Asked at every image `read` (and attachment) whether the current model
/// takes images; cheap to clone. The stack builds it from the model
/// catalogue and the model in force (a `/model` switch included). The
/// default accepts images: a tool set without a stack (tests, embedders)
/// sends them and lets the provider adapter decide.
#[derive(Clone)]
pub struct ImagePolicy(Arc<dyn Fn() -> ImageSupport + Send + Sync>);

impl ImagePolicy {
    /// A policy that asks `current` each time.
    pub fn new(current: impl Fn() -> ImageSupport + Send + Sync + 'static) -> Self {
        ImagePolicy(Arc::new(current))
    }

    /// Every model takes images.
    pub fn accept_all() -> Self {
        Self::new(|| ImageSupport::Accepted)
    }

    /// The model `model` never takes images.
    pub fn refuse(model: impl Into<String>) -> Self {
        let model = model.into();
        Self::new(move || ImageSupport::Refused {
            model: model.clone(),
        })
    }

    /// What the policy says now.
    pub fn current(&self) -> ImageSupport {
        (self.0)()
    }
}

impl Default for ImagePolicy {
    fn default() -> Self {
        Self::accept_all()
    }
}

impl std::fmt::Debug for ImagePolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("ImagePolicy").field(&self.current()).finish()
    }
}

/// An image ready for a model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadedImage {
    /// The format of the source.
    pub format: ImageFormat,
    /// The source's width in pixels.
    pub width: u32,
    /// The source's height in pixels.
    pub height: u32,
    /// The source's size in bytes.
    pub source_bytes: u64,
    /// The format of [`LoadedImage::data`] (the source's when it was sent
    /// as it is).
    pub sent_format: ImageFormat,
    /// The width of what is sent.
    pub sent_width: u32,
    /// The height of what is sent.
    pub sent_height: u32,
    /// The encoded image sent (its base64 is at most
    /// [`MAX_ENCODED_BYTES`]).
    pub data: Vec<u8>,
}

impl LoadedImage {
    /// Whether the image sent is smaller than the source.
    pub fn resized(&self) -> bool {
        (self.sent_width, self.sent_height) != (self.width, self.height)
    }

    /// The MIME type of what is sent.
    pub fn mime_type(&self) -> &'static str {
        self.sent_format.mime_type()
    }

    /// `data:<mime>;base64,<data>`.
    pub fn data_url(&self) -> String {
        let b64 = base64::engine::general_purpose::STANDARD.encode(&self.data);
        format!("data:{};base64,{b64}", self.mime_type())
    }

    /// The content block: the data URL and its MIME type.
    pub fn block(&self) -> ImageBlock {
        ImageBlock {
            url: self.data_url(),
            mime_type: Some(self.mime_type().to_string()),
            cache: None,
        }
    }

    /// `800×600 PNG`, or `4000×3000 JPEG, resized to 1568×1176 JPEG`.
    pub fn summary(&self) -> String {
        let source = format!("{}×{} {}", self.width, self.height, self.format);
        if self.resized() || self.sent_format != self.format {
            format!(
                "{source}, resized to {}×{} {}",
                self.sent_width, self.sent_height, self.sent_format
            )
        } else {
            source
        }
    }
}

/// Why an image cannot be sent. Every variant names the file and the
/// reason; [`ImageError::code`] is `FS_NOT_TEXT` for the image's own faults
/// and `FS_IO` / `FS_NOT_FOUND` for the file system's.
#[derive(Debug)]
pub enum ImageError {
    /// The file could not be opened or read.
    Io {
        /// The file.
        name: String,
        /// What the system said.
        source: std::io::Error,
    },
    /// The raw file is larger than [`MAX_IMAGE_FILE_BYTES`].
    FileTooLarge {
        /// The file.
        name: String,
        /// Its size.
        bytes: u64,
    },
    /// The bytes are not one of the four formats (`claimed`: the format
    /// the name or the sender claimed, when one did).
    NotAnImage {
        /// The file.
        name: String,
        /// What the name or the MIME type said it was.
        claimed: Option<ImageFormat>,
        /// The bytes look like text.
        looks_like_text: bool,
    },
    /// The header declares more pixels than allowed: refused before
    /// decoding.
    TooManyPixels {
        /// The file.
        name: String,
        /// Its format.
        format: ImageFormat,
        /// Declared width.
        width: u32,
        /// Declared height.
        height: u32,
    },
    /// The image is corrupt or cut short (its header or its data).
    Corrupt {
        /// The file.
        name: String,
        /// Its format.
        format: ImageFormat,
        /// What the header reader or the decoder said.
        why: String,
    },
    /// Even shrunk, the image would not fit [`MAX_ENCODED_BYTES`].
    TooLargeEncoded {
        /// The file.
        name: String,
    },
}

impl ImageError {
    /// The stable error code: `FS_NOT_FOUND` for a missing file, `FS_IO`
    /// for another read failure, `FS_NOT_TEXT` for everything about the
    /// image itself.
    pub fn code(&self) -> &'static str {
        match self {
            ImageError::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
                codes::FS_NOT_FOUND
            }
            ImageError::Io { .. } => codes::FS_IO,
            _ => codes::FS_NOT_TEXT,
        }
    }
}

impl std::fmt::Display for ImageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ImageError::Io { name, source } => write!(f, "cannot read {name}: {source}"),
            ImageError::FileTooLarge { name, bytes } => write!(
                f,
                "{name} is {} MiB: larger than the {} MiB limit for images; refused before reading",
                bytes / (1024 * 1024),
                MAX_IMAGE_FILE_BYTES / (1024 * 1024)
            ),
            ImageError::NotAnImage {
                name,
                claimed,
                looks_like_text,
            } => {
                let claim = match claimed {
                    Some(c) => format!("is named as a {c} image but "),
                    None => String::new(),
                };
                let what = if *looks_like_text {
                    "its bytes are text"
                } else {
                    "its bytes are no PNG, JPEG, GIF or WebP image"
                };
                write!(
                    f,
                    "{name} {claim}{what}; read it with bash (`file`, `cat`) to see what it holds"
                )
            }
            ImageError::TooManyPixels {
                name,
                format,
                width,
                height,
            } => write!(
                f,
                "{name} is a {width}×{height} {format}: larger than the image limits \
                 ({MAX_IMAGE_SIDE} px on a side, {} megapixels in all); refused before decoding",
                MAX_IMAGE_PIXELS / 1_000_000
            ),
            ImageError::Corrupt { name, format, why } => {
                write!(f, "{name} is not a readable {format} image: {why}")
            }
            ImageError::TooLargeEncoded { name } => write!(
                f,
                "{name} does not fit in {} MiB even scaled down and re-encoded",
                MAX_ENCODED_BYTES / (1024 * 1024)
            ),
        }
    }
}

impl std::error::Error for ImageError {}

/// Whether `path`'s name claims an image (`.png`, `.jpg`, `.jpeg`, `.gif`,
/// `.webp`, case blind). A claim only: [`load_image`] checks the bytes.
pub fn has_image_extension(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .and_then(ImageFormat::from_extension)
        .is_some()
}

/// Loads the image file at `path` for a model: see the module docs for
/// the checks, in order. Only regular files are opened (a fifo or device
/// is refused without blocking); the file is read once, at most
/// [`MAX_IMAGE_FILE_BYTES`] of it.
///
/// # Errors
/// Every [`ImageError`]; the bytes are never decoded when the size or the
/// header refuses them.
pub fn load_image(path: &Path) -> Result<LoadedImage, ImageError> {
    read_image_file(path).and_then(|(_, bytes)| {
        let name = path.display().to_string();
        let claimed = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(ImageFormat::from_extension);
        load_image_bytes(&bytes, &name, claimed)
    })
}

/// The metadata and bytes of the image file at `path`, its size checked
/// before reading.
pub(crate) fn read_image_file(path: &Path) -> Result<(std::fs::Metadata, Vec<u8>), ImageError> {
    let name = || path.display().to_string();
    let io = |source| ImageError::Io {
        name: name(),
        source,
    };
    let (file, meta) = dsh_tools::regular::open(path).map_err(io)?;
    if meta.len() > MAX_IMAGE_FILE_BYTES {
        return Err(ImageError::FileTooLarge {
            name: name(),
            bytes: meta.len(),
        });
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    // One byte past the limit tells a file that grew since the stat.
    file.take(MAX_IMAGE_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > MAX_IMAGE_FILE_BYTES {
        return Err(ImageError::FileTooLarge {
            name: name(),
            bytes: bytes.len() as u64,
        });
    }
    Ok((meta, bytes))
}

/// [`load_image`] of bytes already in memory: `name` is what messages call
/// them, `claimed` the format a file name or MIME type claimed (only for
/// the message when the bytes are no image).
///
/// # Errors
/// As [`load_image`] (no `Io`).
pub fn load_image_bytes(
    bytes: &[u8],
    name: &str,
    claimed: Option<ImageFormat>,
) -> Result<LoadedImage, ImageError> {
    if bytes.len() as u64 > MAX_IMAGE_FILE_BYTES {
        return Err(ImageError::FileTooLarge {
            name: name.to_string(),
            bytes: bytes.len() as u64,
        });
    }
    let Some(format) = sniff(&bytes[..bytes.len().min(SNIFF_LEN)]) else {
        let head = &bytes[..bytes.len().min(8192)];
        let looks_like_text = !head.contains(&0) && std::str::from_utf8(head).is_ok();
        return Err(ImageError::NotAnImage {
            name: name.to_string(),
            claimed,
            looks_like_text,
        });
    };
    let corrupt = |why: String| ImageError::Corrupt {
        name: name.to_string(),
        format,
        why,
    };
    let (width, height) = header_dimensions(format, bytes).map_err(|e| corrupt(e.0))?;
    check_dimensions(name, format, width, height)?;
    if width == 0 || height == 0 {
        return Err(corrupt(format!("its header says {width}×{height}")));
    }
    if format == ImageFormat::Jpeg && !jpeg_is_complete(bytes) {
        return Err(corrupt(
            "the file ends before the JPEG's end-of-image marker (cut short)".to_string(),
        ));
    }
    let decoded = decode(bytes, format).map_err(|e| corrupt(e.to_string()))?;
    // A header that lied about its size (GIF frames larger than the
    // screen): the decoder's own dimensions count.
    let (width, height) = (decoded.width(), decoded.height());
    check_dimensions(name, format, width, height)?;
    let source_bytes = bytes.len() as u64;
    let fits_as_is =
        width.max(height) <= MAX_LONG_SIDE && b64_len(bytes.len()) <= MAX_ENCODED_BYTES;
    if fits_as_is {
        return Ok(LoadedImage {
            format,
            width,
            height,
            source_bytes,
            sent_format: format,
            sent_width: width,
            sent_height: height,
            data: bytes.to_vec(),
        });
    }
    let (data, sent_format, sent_width, sent_height) =
        shrink(&decoded, format).ok_or_else(|| ImageError::TooLargeEncoded {
            name: name.to_string(),
        })?;
    Ok(LoadedImage {
        format,
        width,
        height,
        source_bytes,
        sent_format,
        sent_width,
        sent_height,
        data,
    })
}

fn check_dimensions(
    name: &str,
    format: ImageFormat,
    width: u32,
    height: u32,
) -> Result<(), ImageError> {
    if width > MAX_IMAGE_SIDE
        || height > MAX_IMAGE_SIDE
        || u64::from(width) * u64::from(height) > MAX_IMAGE_PIXELS
    {
        return Err(ImageError::TooManyPixels {
            name: name.to_string(),
            format,
            width,
            height,
        });
    }
    Ok(())
}

/// Whether a JPEG holds an end-of-image marker after its image data
/// starts (the decoder fills a cut-short scan with grey rather than fail).
fn jpeg_is_complete(bytes: &[u8]) -> bool {
    // Some cameras append data after the EOI: look for it, not just at the end.
    memchr::memmem::rfind(bytes, &[0xFF, 0xD9])
        .is_some_and(|eoi| memchr::memmem::find(bytes, &[0xFF, 0xDA]).is_some_and(|sos| sos < eoi))
}

fn decode(bytes: &[u8], format: ImageFormat) -> image::ImageResult<image::DynamicImage> {
    let mut reader =
        image::ImageReader::with_format(std::io::Cursor::new(bytes), codec_format(format));
    let mut limits = image::Limits::default();
    limits.max_image_width = Some(MAX_IMAGE_SIDE);
    limits.max_image_height = Some(MAX_IMAGE_SIDE);
    limits.max_alloc = Some(MAX_DECODE_ALLOC);
    reader.limits(limits);
    reader.decode()
}

fn codec_format(format: ImageFormat) -> image::ImageFormat {
    match format {
        ImageFormat::Png => image::ImageFormat::Png,
        ImageFormat::Jpeg => image::ImageFormat::Jpeg,
        ImageFormat::Gif => image::ImageFormat::Gif,
        ImageFormat::WebP => image::ImageFormat::WebP,
    }
}

fn b64_len(bytes: usize) -> usize {
    bytes.div_ceil(3) * 4
}

/// The image scaled to fit [`MAX_LONG_SIDE`] and encoded to fit
/// [`MAX_ENCODED_BYTES`]: PNG for a source that is not a JPEG (lossless,
/// keeps transparency), else (or when the PNG is too large) JPEG at
/// quality 85, 70, 55, 40; then the same at three quarters of the size,
/// down to 64 px. `None` when nothing fits.
fn shrink(
    img: &image::DynamicImage,
    format: ImageFormat,
) -> Option<(Vec<u8>, ImageFormat, u32, u32)> {
    let mut long = img.width().max(img.height()).min(MAX_LONG_SIDE);
    loop {
        let scaled = if img.width().max(img.height()) > long {
            img.resize(long, long, image::imageops::FilterType::Triangle)
        } else {
            img.clone()
        };
        let (w, h) = (scaled.width(), scaled.height());
        if format != ImageFormat::Jpeg {
            if let Some(png) = encode_png(&scaled).filter(|d| b64_len(d.len()) <= MAX_ENCODED_BYTES)
            {
                return Some((png, ImageFormat::Png, w, h));
            }
        }
        let rgb = image::DynamicImage::ImageRgb8(scaled.to_rgb8());
        for quality in [85, 70, 55, 40] {
            if let Some(jpeg) =
                encode_jpeg(&rgb, quality).filter(|d| b64_len(d.len()) <= MAX_ENCODED_BYTES)
            {
                return Some((jpeg, ImageFormat::Jpeg, w, h));
            }
        }
        if long <= 64 {
            return None;
        }
        long = (long * 3 / 4).max(64);
    }
}

fn encode_png(img: &image::DynamicImage) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    img.write_with_encoder(image::codecs::png::PngEncoder::new(&mut out))
        .ok()?;
    Some(out)
}

fn encode_jpeg(img: &image::DynamicImage, quality: u8) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, quality)
        .encode_image(img)
        .ok()?;
    Some(out)
}

/// The `FS_NOT_TEXT` message for an image the current model cannot take.
pub(crate) fn refused_message(path: &Path, format: ImageFormat, model: &str) -> String {
    format!(
        "{} is a {format} image and model {model} does not take images \
         (set `images = true` under [models.\"{model}\"] if it does)",
        path.display()
    )
}
