#!/usr/bin/env bash
# End-to-end check of `dsh acp` with the official TypeScript ACP client
# library (@agentclientprotocol/sdk from npm). Run by hand (needs node and
# the npm registry); `cargo test` does not need it. The ignored test
# `acp_typescript_client` in crates/dsh-cli/tests runs this script.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
dsh="${DSH:-$root/target/debug/dsh}"
[ -x "$dsh" ] || (cd "$root" && cargo build -p dsh-cli)
cd "$here/acp-ts"
[ -d node_modules/@agentclientprotocol/sdk ] || npm install --no-audit --no-fund --silent
DSH="$dsh" node check.mjs
