//! MCP tool results → dsh content blocks.

use dsh_llm::{ContentBlock, ImageBlock};
use rmcp::model::{self, CallToolResult, ResourceContents};

/// The content of a result: text → text blocks, images → image blocks
/// (data URLs), embedded text resources → text, anything else → a text
/// block describing it. A result with no content but structured content
/// yields that JSON as text.
pub(crate) fn blocks(result: &CallToolResult) -> Vec<ContentBlock> {
    let mut out: Vec<ContentBlock> = result.content.iter().map(block).collect();
    if out.is_empty() {
        if let Some(structured) = &result.structured_content {
            out.push(ContentBlock::text(structured.to_string()));
        }
    }
    out
}

/// The text of an error result: its blocks' text joined by newlines.
pub(crate) fn error_text(result: &CallToolResult) -> String {
    let text: Vec<String> = blocks(result)
        .iter()
        .map(|b| match b {
            ContentBlock::Text(t) => t.text.clone(),
            ContentBlock::Image(i) => format!("[image {}]", i.mime_type.as_deref().unwrap_or("")),
            _ => String::new(),
        })
        .filter(|t| !t.is_empty())
        .collect();
    if text.is_empty() {
        "the tool reported an error without a message".to_string()
    } else {
        text.join("\n")
    }
}

fn block(content: &model::ContentBlock) -> ContentBlock {
    match content {
        model::ContentBlock::Text(t) => ContentBlock::text(t.text.clone()),
        model::ContentBlock::Image(i) => image(&i.mime_type, &i.data),
        model::ContentBlock::Audio(a) => ContentBlock::text(format!(
            "[audio {} omitted: {} bytes of base64]",
            a.mime_type,
            a.data.len()
        )),
        model::ContentBlock::Resource(r) => match &r.resource {
            ResourceContents::TextResourceContents { uri, text, .. } => {
                ContentBlock::text(format!("[resource {uri}]\n{text}"))
            }
            ResourceContents::BlobResourceContents {
                uri,
                mime_type,
                blob,
                ..
            } => match mime_type.as_deref() {
                Some(mime) if mime.starts_with("image/") => image(mime, blob),
                mime => ContentBlock::text(format!(
                    "[resource {uri} ({}) omitted: {} bytes of base64]",
                    mime.unwrap_or("binary"),
                    blob.len()
                )),
            },
            other => ContentBlock::text(serde_json::to_string(other).unwrap_or_default()),
        },
        model::ContentBlock::ResourceLink(link) => {
            let mut text = format!("[resource link {} \"{}\"", link.uri, link.name);
            if let Some(d) = &link.description {
                text.push_str(&format!(": {d}"));
            }
            text.push(']');
            ContentBlock::text(text)
        }
        // `ContentBlock` is non-exhaustive: keep whatever a newer server sends.
        other => ContentBlock::text(serde_json::to_string(other).unwrap_or_default()),
    }
}

fn image(mime: &str, base64: &str) -> ContentBlock {
    ContentBlock::Image(ImageBlock {
        url: format!("data:{mime};base64,{base64}"),
        mime_type: Some(mime.to_string()),
        cache: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{ContentBlock as Mcp, Resource};

    fn result(content: Vec<Mcp>) -> CallToolResult {
        CallToolResult::success(content)
    }

    #[test]
    fn maps_every_content_kind() {
        let r = result(vec![
            Mcp::text("hello"),
            Mcp::image("AAAA", "image/gif"),
            Mcp::audio("BBBBBB", "audio/wav"),
            Mcp::embedded_text("mem://a", "body"),
            Mcp::resource(ResourceContents::blob("CCCC", "mem://pic").with_mime_type("image/png")),
            Mcp::resource(ResourceContents::blob("DD", "mem://bin")),
            Mcp::resource_link(Resource::new("file:///x", "x")),
        ]);
        let texts: Vec<String> = blocks(&r)
            .iter()
            .map(|b| match b {
                ContentBlock::Text(t) => t.text.clone(),
                ContentBlock::Image(i) => format!("IMG {}", i.url),
                other => panic!("unexpected {other:?}"),
            })
            .collect();
        assert_eq!(
            texts,
            [
                "hello",
                "IMG data:image/gif;base64,AAAA",
                "[audio audio/wav omitted: 6 bytes of base64]",
                "[resource mem://a]\nbody",
                "IMG data:image/png;base64,CCCC",
                "[resource mem://bin (binary) omitted: 2 bytes of base64]",
                "[resource link file:///x \"x\"]",
            ]
        );
    }

    #[test]
    fn structured_content_stands_in_for_missing_content() {
        let mut r = result(vec![]);
        r.structured_content = Some(serde_json::json!({"n": 1}));
        assert_eq!(blocks(&r), [ContentBlock::text(r#"{"n":1}"#)]);
    }

    #[test]
    fn error_text_joins_the_text() {
        let r = CallToolResult::error(vec![Mcp::text("bad"), Mcp::text("worse")]);
        assert_eq!(error_text(&r), "bad\nworse");
        assert!(error_text(&CallToolResult::error(vec![])).contains("without a message"));
    }
}
