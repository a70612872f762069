//! The browser app's files, built into the binary (no build step: plain
//! ES modules, one style sheet, no inline script or style, as the CSP
//! demands). `dsh web` serves them; `dsh serve` does not.
//!
//! `index.html` loads `app.js`, which imports the others: `rpc.js` (the
//! JSON-RPC WebSocket), `view.js` (events as DOM), `markdown.js` (a safe
//! markdown renderer: DOM nodes, never HTML strings), `diff.js`,
//! `composer.js` and `dom.js`. The browser tests are
//! `crates/dsh-cli/tests/web.rs`.

use crate::http::Asset;

const JS: &str = "text/javascript; charset=utf-8";

/// Every file of the app, by the path it is served at.
pub const ASSETS: &[Asset] = &[
    Asset {
        path: "/",
        content_type: "text/html; charset=utf-8",
        body: include_bytes!("../web/index.html"),
    },
    Asset {
        path: "/app.css",
        content_type: "text/css; charset=utf-8",
        body: include_bytes!("../web/app.css"),
    },
    Asset {
        path: "/app.js",
        content_type: JS,
        body: include_bytes!("../web/app.js"),
    },
    Asset {
        path: "/rpc.js",
        content_type: JS,
        body: include_bytes!("../web/rpc.js"),
    },
    Asset {
        path: "/view.js",
        content_type: JS,
        body: include_bytes!("../web/view.js"),
    },
    Asset {
        path: "/markdown.js",
        content_type: JS,
        body: include_bytes!("../web/markdown.js"),
    },
    Asset {
        path: "/diff.js",
        content_type: JS,
        body: include_bytes!("../web/diff.js"),
    },
    Asset {
        path: "/composer.js",
        content_type: JS,
        body: include_bytes!("../web/composer.js"),
    },
    Asset {
        path: "/dom.js",
        content_type: JS,
        body: include_bytes!("../web/dom.js"),
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    /// Every module an app file imports is served, and every file in
    /// `web/` is listed (a module added but not listed would 404).
    #[test]
    fn every_file_and_every_import_is_served() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("web");
        let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .map(|n| {
                if n == "index.html" {
                    "/".to_string()
                } else {
                    format!("/{n}")
                }
            })
            .collect();
        on_disk.sort();
        let mut listed: Vec<String> = ASSETS.iter().map(|a| a.path.to_string()).collect();
        listed.sort();
        assert_eq!(on_disk, listed);
        for a in ASSETS {
            let text = std::str::from_utf8(a.body).unwrap_or_default();
            for quote in ['"', '\''] {
                for piece in text.split(&format!("from {quote}./")).skip(1) {
                    let name = piece.split(quote).next().unwrap_or_default();
                    assert!(
                        ASSETS.iter().any(|x| x.path == format!("/{name}")),
                        "{} imports {name}, which is not served",
                        a.path
                    );
                }
            }
        }
    }

    /// Nothing the CSP would block: no inline script, style element,
    /// style attribute or event-handler attribute, and no HTML parsed
    /// from strings in the scripts.
    #[test]
    fn the_app_needs_nothing_the_csp_blocks() {
        for a in ASSETS {
            let text = std::str::from_utf8(a.body).unwrap_or_default();
            if a.path == "/" {
                assert!(!text.contains("<style"), "no style element");
                assert!(!text.contains(" style="), "no style attribute");
                assert!(!text.contains(" onclick="), "no inline handler");
                for script in text.split("<script").skip(1) {
                    assert!(script.contains(" src="), "no inline script");
                }
            } else if a.content_type == JS {
                for sink in [
                    "innerHTML",
                    "outerHTML",
                    "insertAdjacentHTML",
                    "document.write",
                    "eval(",
                    "new Function",
                ] {
                    assert!(!text.contains(sink), "{} uses {sink}", a.path);
                }
                assert!(
                    !text.contains("setAttribute(\"style\""),
                    "{} sets a style attribute",
                    a.path
                );
            }
        }
    }

    #[test]
    fn the_app_is_small() {
        let total: usize = ASSETS.iter().map(|a| a.body.len()).sum();
        assert!(total < 400 * 1024, "{total} bytes");
    }
}
