//! Image formats as dsh knows them: the four a model may be sent (PNG,
//! JPEG, GIF, WebP), told apart by their magic bytes, their dimensions read
//! from the header alone, and `data:` URLs.
//!
//! Pure byte inspection, no decoding and no allocation: the file tools use
//! it to refuse a decompression bomb before any pixel is decoded, the
//! session store and the renderers to describe an image without showing
//! its bytes.

/// An image format a model may be sent. Closed set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ImageFormat {
    /// Portable Network Graphics.
    Png,
    /// JPEG (JFIF, Exif).
    Jpeg,
    /// GIF (87a, 89a); only the first frame of an animation is used.
    Gif,
    /// WebP (lossy `VP8 `, lossless `VP8L`, extended `VP8X`).
    WebP,
}

impl ImageFormat {
    /// Every format, in the order error messages list them.
    pub const ALL: [ImageFormat; 4] = [
        ImageFormat::Png,
        ImageFormat::Jpeg,
        ImageFormat::Gif,
        ImageFormat::WebP,
    ];

    /// The short upper-case name: `PNG`, `JPEG`, `GIF`, `WebP`.
    pub fn name(self) -> &'static str {
        match self {
            ImageFormat::Png => "PNG",
            ImageFormat::Jpeg => "JPEG",
            ImageFormat::Gif => "GIF",
            ImageFormat::WebP => "WebP",
        }
    }

    /// The MIME type: `image/png`, `image/jpeg`, `image/gif`, `image/webp`.
    pub fn mime_type(self) -> &'static str {
        match self {
            ImageFormat::Png => "image/png",
            ImageFormat::Jpeg => "image/jpeg",
            ImageFormat::Gif => "image/gif",
            ImageFormat::WebP => "image/webp",
        }
    }

    /// The file extension used when dsh stores one: `png`, `jpg`, `gif`,
    /// `webp`.
    pub fn extension(self) -> &'static str {
        match self {
            ImageFormat::Png => "png",
            ImageFormat::Jpeg => "jpg",
            ImageFormat::Gif => "gif",
            ImageFormat::WebP => "webp",
        }
    }

    /// The format a MIME type names (`image/jpg` too, case blind); `None`
    /// for any other type.
    pub fn from_mime_type(mime: &str) -> Option<ImageFormat> {
        match mime.trim().to_ascii_lowercase().as_str() {
            "image/png" => Some(ImageFormat::Png),
            "image/jpeg" | "image/jpg" => Some(ImageFormat::Jpeg),
            "image/gif" => Some(ImageFormat::Gif),
            "image/webp" => Some(ImageFormat::WebP),
            _ => None,
        }
    }

    /// The format a file name's extension claims (`.png`, `.jpg`, `.jpeg`,
    /// `.gif`, `.webp`, case blind); `None` for any other name. A claim
    /// only: the bytes decide ([`sniff`]).
    pub fn from_extension(name: &str) -> Option<ImageFormat> {
        let (_, ext) = name.rsplit_once('.')?;
        match ext.to_ascii_lowercase().as_str() {
            "png" => Some(ImageFormat::Png),
            "jpg" | "jpeg" => Some(ImageFormat::Jpeg),
            "gif" => Some(ImageFormat::Gif),
            "webp" => Some(ImageFormat::WebP),
            _ => None,
        }
    }
}

impl std::fmt::Display for ImageFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Bytes [`sniff`] needs to recognise every format.
pub const SNIFF_LEN: usize = 12;

/// The format whose magic bytes `head` (the first bytes of a file, at
/// least [`SNIFF_LEN`] of them when the file has that many) starts with;
/// `None` for anything else.
pub fn sniff(head: &[u8]) -> Option<ImageFormat> {
    if head.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some(ImageFormat::Png)
    } else if head.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some(ImageFormat::Jpeg)
    } else if head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a") {
        Some(ImageFormat::Gif)
    } else if head.len() >= 12 && &head[..4] == b"RIFF" && &head[8..12] == b"WEBP" {
        Some(ImageFormat::WebP)
    } else {
        None
    }
}

/// Why [`header_dimensions`] found no dimensions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderError(pub String);

impl std::fmt::Display for HeaderError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for HeaderError {}

fn bad(why: impl Into<String>) -> HeaderError {
    HeaderError(why.into())
}

fn be16(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from(u16::from_be_bytes([
        *b.get(at)?,
        *b.get(at + 1)?,
    ])))
}

fn le16(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from(u16::from_le_bytes([
        *b.get(at)?,
        *b.get(at + 1)?,
    ])))
}

fn le24(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes([
        *b.get(at)?,
        *b.get(at + 1)?,
        *b.get(at + 2)?,
        0,
    ]))
}

fn be32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes([
        *b.get(at)?,
        *b.get(at + 1)?,
        *b.get(at + 2)?,
        *b.get(at + 3)?,
    ]))
}

/// `(width, height)` in pixels as the header of `bytes` (a whole file of
/// `format`, or at least its header) declares them, read without decoding
/// anything: PNG's IHDR, GIF's logical screen, WebP's `VP8 `/`VP8L`/`VP8X`
/// header, JPEG's first start-of-frame marker (segments are skipped by
/// their lengths). Constant memory; time linear in the JPEG segments
/// before the frame header.
///
/// # Errors
/// The header is cut short or is not that format's (the message says
/// which part).
pub fn header_dimensions(format: ImageFormat, bytes: &[u8]) -> Result<(u32, u32), HeaderError> {
    let short = || bad(format!("the {format} header is cut short"));
    match format {
        ImageFormat::Png => {
            if bytes.get(12..16) != Some(b"IHDR") {
                return Err(if bytes.len() < 16 {
                    short()
                } else {
                    bad("the PNG does not start with an IHDR chunk")
                });
            }
            let w = be32(bytes, 16).ok_or_else(short)?;
            let h = be32(bytes, 20).ok_or_else(short)?;
            Ok((w, h))
        }
        ImageFormat::Gif => {
            let w = le16(bytes, 6).ok_or_else(short)?;
            let h = le16(bytes, 8).ok_or_else(short)?;
            Ok((w, h))
        }
        ImageFormat::WebP => {
            let chunk = bytes.get(12..16).ok_or_else(short)?;
            match chunk {
                b"VP8 " => {
                    if bytes.get(23..26) != Some(&[0x9D, 0x01, 0x2A]) {
                        return Err(if bytes.len() < 26 {
                            short()
                        } else {
                            bad("the WebP VP8 frame header has no start code")
                        });
                    }
                    let w = le16(bytes, 26).ok_or_else(short)? & 0x3FFF;
                    let h = le16(bytes, 28).ok_or_else(short)? & 0x3FFF;
                    Ok((w, h))
                }
                b"VP8L" => {
                    if bytes.get(20) != Some(&0x2F) {
                        return Err(if bytes.len() < 21 {
                            short()
                        } else {
                            bad("the WebP VP8L header has no signature")
                        });
                    }
                    let b = |i: usize| bytes.get(21 + i).map(|&x| u32::from(x)).ok_or_else(short);
                    let bits = b(0)? | b(1)? << 8 | b(2)? << 16 | b(3)? << 24;
                    Ok(((bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1))
                }
                b"VP8X" => {
                    let w = le24(bytes, 24).ok_or_else(short)? + 1;
                    let h = le24(bytes, 27).ok_or_else(short)? + 1;
                    Ok((w, h))
                }
                _ => Err(bad("the WebP holds no VP8, VP8L or VP8X chunk first")),
            }
        }
        ImageFormat::Jpeg => jpeg_dimensions(bytes).map_err(|e| match e {
            None => short(),
            Some(e) => e,
        }),
    }
}

/// The first SOFn frame header's dimensions; `Err(None)` when the bytes
/// end first.
fn jpeg_dimensions(b: &[u8]) -> Result<(u32, u32), Option<HeaderError>> {
    let mut at = 2;
    loop {
        // Fill bytes (0xFF runs) may precede a marker.
        while b.get(at) == Some(&0xFF) && b.get(at + 1) == Some(&0xFF) {
            at += 1;
        }
        let (Some(&0xFF), Some(&marker)) = (b.get(at), b.get(at + 1)) else {
            return Err(if at + 1 >= b.len() {
                None
            } else {
                Some(bad(format!("the JPEG has no marker at byte {at}")))
            });
        };
        at += 2;
        match marker {
            // Standalone markers: no length.
            0x01 | 0xD0..=0xD7 => continue,
            0xD9 | 0xDA => {
                return Err(Some(bad(
                    "the JPEG has no frame header (SOF) before its image data",
                )))
            }
            // SOF0..SOF15 but DHT (C4), JPG (C8), DAC (CC).
            0xC0..=0xCF if !matches!(marker, 0xC4 | 0xC8 | 0xCC) => {
                let h = be16(b, at + 3).ok_or(None)?;
                let w = be16(b, at + 5).ok_or(None)?;
                return Ok((w, h));
            }
            _ => {
                let len = be16(b, at).ok_or(None)? as usize;
                if len < 2 {
                    return Err(Some(bad(format!(
                        "the JPEG segment at byte {} has a length below 2",
                        at - 2
                    ))));
                }
                at += len;
            }
        }
    }
}

/// A `data:` URL split into its MIME type and its base64 payload:
/// `data:image/png;base64,iVBOR…` → `("image/png", "iVBOR…")`. `None` for
/// any other URL, and for a data URL that is not base64.
pub fn split_data_url(url: &str) -> Option<(&str, &str)> {
    let rest = url.strip_prefix("data:")?;
    let (meta, payload) = rest.split_once(',')?;
    let mime = meta.strip_suffix(";base64")?;
    Some((mime, payload))
}

/// How many bytes a base64 payload of `len` characters decodes to (padding
/// counted as in standard base64; exact for a well-formed payload).
pub fn base64_decoded_len(payload: &str) -> usize {
    let pad = payload.bytes().rev().take_while(|&b| b == b'=').count();
    (payload.len() / 4 * 3).saturating_sub(pad) + (payload.len() % 4).saturating_sub(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn png_ihdr_dimensions() {
        let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
        png.extend_from_slice(&20_000u32.to_be_bytes());
        png.extend_from_slice(&30_000u32.to_be_bytes());
        assert_eq!(sniff(&png), Some(ImageFormat::Png));
        assert_eq!(
            header_dimensions(ImageFormat::Png, &png),
            Ok((20_000, 30_000))
        );
        assert!(header_dimensions(ImageFormat::Png, &png[..20]).is_err());
    }

    #[test]
    fn jpeg_skips_segments_to_the_frame_header() {
        let jpeg = [
            0xFF, 0xD8, 0xFF, 0xE0, 0, 4, 1, 2, // APP0 of 2 bytes
            0xFF, 0xC0, 0, 11, 8, 0x01, 0x2C, 0x02, 0x58, 3, // SOF0 300 high, 600 wide
        ];
        assert_eq!(sniff(&jpeg), Some(ImageFormat::Jpeg));
        assert_eq!(header_dimensions(ImageFormat::Jpeg, &jpeg), Ok((600, 300)));
        assert!(header_dimensions(ImageFormat::Jpeg, &jpeg[..10]).is_err());
        assert!(header_dimensions(ImageFormat::Jpeg, &[0xFF, 0xD8, 0xFF, 0xDA]).is_err());
        assert!(header_dimensions(ImageFormat::Jpeg, &[0xFF, 0xD8, 0xFF, 0xE0, 0, 0]).is_err());
    }

    #[test]
    fn gif_and_webp_headers() {
        let gif = b"GIF89a\x20\x03\x58\x02";
        assert_eq!(header_dimensions(ImageFormat::Gif, gif), Ok((800, 600)));
        let mut vp8x = b"RIFF\0\0\0\0WEBPVP8X\0\0\0\0\0\0\0\0".to_vec();
        vp8x.extend_from_slice(&[0x1F, 0x03, 0x00, 0x57, 0x02, 0x00]);
        assert_eq!(sniff(&vp8x), Some(ImageFormat::WebP));
        assert_eq!(header_dimensions(ImageFormat::WebP, &vp8x), Ok((800, 600)));
    }

    #[test]
    fn data_urls_split_and_measure() {
        assert_eq!(
            split_data_url("data:image/png;base64,AAAA"),
            Some(("image/png", "AAAA"))
        );
        assert_eq!(split_data_url("https://x/y.png"), None);
        assert_eq!(split_data_url("data:text/plain,hi"), None);
        assert_eq!(base64_decoded_len("AAAA"), 3);
        assert_eq!(base64_decoded_len("AAA="), 2);
        assert_eq!(base64_decoded_len("AA=="), 1);
        assert_eq!(
            ImageFormat::from_extension("a/b.JPEG"),
            Some(ImageFormat::Jpeg)
        );
        assert_eq!(ImageFormat::from_extension("notes.txt"), None);
    }
}
