//! ACP image content in `session/prompt`: base64 data and a MIME type,
//! checked with the `read` tool's rules ([`dsh_tool_fs::load_image_bytes`]:
//! size, header limits before decoding, decode limits, scaled to what a
//! model takes) and sent after the prompt's text as a label and an image
//! block. A refused image fails the whole prompt with a message naming why.

use agent_client_protocol::v1::schema::ContentBlock as AcpBlock;
use base64::Engine as _;
use dsh_protocol::image::ImageFormat;
use dsh_protocol::ContentBlock;

/// The images of `prompt`, in order, as the blocks to send: `[image:
/// <name> <w>×<h>]` and the image. `<name>` is the last segment of the
/// image's `uri`, else `image N`. Blocking (decodes): run it off the async
/// threads.
///
/// # Errors
/// The first image that is refused: its base64 larger than a 20 MiB image
/// (checked before decoding), not base64, or refused by the image rules;
/// the message names the image and the reason.
pub(crate) fn prompt_images(prompt: &[AcpBlock]) -> Result<Vec<ContentBlock>, String> {
    let max_b64 = (dsh_tool_fs::MAX_IMAGE_FILE_BYTES as usize).div_ceil(3) * 4;
    let mut out = Vec::new();
    let mut n = 0;
    for block in prompt {
        let AcpBlock::Image(image) = block else {
            continue;
        };
        n += 1;
        let name = image
            .uri
            .as_deref()
            .and_then(|u| u.rsplit('/').next())
            .filter(|s| !s.is_empty())
            .map_or_else(|| format!("image {n}"), str::to_string);
        if image.data.len() > max_b64 {
            return Err(format!(
                "{name} is {} MiB of base64: larger than the {} MiB limit for images; refused before decoding",
                image.data.len() / (1024 * 1024),
                dsh_tool_fs::MAX_IMAGE_FILE_BYTES / (1024 * 1024)
            ));
        }
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(image.data.trim())
            .map_err(|e| format!("{name} is not valid base64 data: {e}"))?;
        let claimed = ImageFormat::from_mime_type(&image.mime_type);
        let loaded =
            dsh_tool_fs::load_image_bytes(&bytes, &name, claimed).map_err(|e| e.to_string())?;
        out.push(ContentBlock::text(format!(
            "[image: {name} {}×{}]",
            loaded.width, loaded.height
        )));
        out.push(ContentBlock::Image(loaded.block()));
    }
    Ok(out)
}
