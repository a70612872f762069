// End-to-end check of `dsh acp` with the official TypeScript ACP client
// (@agentclientprotocol/sdk): connect, initialize, open a session, prompt
// the offline echo model and receive its updates, serve the file tools
// from the client's buffers (fs/read_text_file, fs/write_text_file), then
// cancel a long command and expect `cancelled` within a second.
//
//   DSH=/path/to/dsh node check.mjs      (see ../acp-ts-check.sh)
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const dsh = process.env.DSH ?? "dsh";
const home = mkdtempSync(join(tmpdir(), "dsh-acp-ts-"));
writeFileSync(join(home, "none.toml"), "");
const env = { ...process.env, XDG_DATA_HOME: join(home, "data"), XDG_CONFIG_HOME: join(home, "config") };
delete env.DEEPSEEK_API_KEY;
const child = spawn(dsh, ["acp", "--model", "echo", "--config", join(home, "none.toml")], {
  cwd: home,
  env,
  stdio: ["pipe", "pipe", "inherit"],
});

function fail(message) {
  console.error(`FAIL: ${message}`);
  child.kill("SIGKILL");
  process.exit(1);
}
const timer = setTimeout(() => fail("timed out after 30 s"), 30_000);

const updates = [];
// The editor's buffers by absolute path; a path without one is read from disk.
const buffers = new Map();
const fsLog = [];
const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
const app = acp
  .client({ name: "dsh-acp-ts-check" })
  .onNotification(acp.methods.client.session.update, ({ params }) => {
    updates.push(params.update);
  })
  .onRequest(acp.methods.client.session.requestPermission, () => ({
    outcome: { outcome: "cancelled" },
  }))
  .onRequest(acp.methods.client.fs.readTextFile, ({ params }) => {
    fsLog.push(`read ${params.path}`);
    return { content: buffers.get(params.path) ?? readFileSync(params.path, "utf8") };
  })
  .onRequest(acp.methods.client.fs.writeTextFile, ({ params }) => {
    fsLog.push(`write ${params.path}`);
    buffers.set(params.path, params.content);
    return {};
  });

await app.connectWith(stream, async (ctx) => {
  const init = await ctx.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: true, writeTextFile: true } },
  });
  if (!init.agentCapabilities?.loadSession) fail("loadSession is not advertised");
  const session = await ctx.request(acp.methods.agent.session.new, { cwd: home, mcpServers: [] });
  const sessionId = session.sessionId;
  if (session.modes?.currentModeId !== "workspace-write") fail(`mode ${session.modes?.currentModeId}`);

  const reply = await ctx.request(acp.methods.agent.session.prompt, {
    sessionId,
    prompt: [{ type: "text", text: "echo hello from typescript" }],
  });
  if (reply.stopReason !== "end_turn") fail(`stop reason ${reply.stopReason}`);
  const text = updates
    .filter((u) => u.sessionUpdate === "agent_message_chunk")
    .map((u) => u.content.text)
    .join("");
  if (!text.endsWith("The echo tool says: hello from typescript")) fail(`text ${JSON.stringify(text)}`);
  if (!updates.some((u) => u.sessionUpdate === "tool_call")) fail("no tool_call update");
  if (!updates.some((u) => u.sessionUpdate === "tool_call_update" && u.status === "completed"))
    fail("no completed tool_call_update");
  if (!updates.some((u) => u.sessionUpdate === "available_commands_update")) fail("no commands");

  // The file tools read the editor's unsaved buffer and write through it.
  const notes = join(home, "notes.txt");
  writeFileSync(notes, "on disk\n");
  buffers.set(notes, "unsaved one\n");
  const prompt = (text) =>
    ctx.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text }] });
  await prompt('call read {"file_path":"notes.txt"}');
  await prompt('call edit {"file_path":"notes.txt","old_string":"one","new_string":"two"}');
  if (buffers.get(notes) !== "unsaved two\n") fail(`buffer ${JSON.stringify(buffers.get(notes))}`);
  if (readFileSync(notes, "utf8") !== "on disk\n") fail("the disk was written");
  if (fsLog.join(",") !== `read ${notes},read ${notes},write ${notes}`) fail(`fs requests ${fsLog}`);
  const diff = updates
    .filter((u) => u.sessionUpdate === "tool_call_update")
    .flatMap((u) => u.content ?? [])
    .find((c) => c.type === "diff");
  if (diff?.oldText !== "unsaved one\n" || diff?.newText !== "unsaved two\n")
    fail(`diff ${JSON.stringify(diff)}`);

  const long = ctx.request(acp.methods.agent.session.prompt, {
    sessionId,
    prompt: [{ type: "text", text: "run sleep 30" }],
  });
  const calls = updates.filter((u) => u.sessionUpdate === "tool_call").length;
  // The bash call of this prompt has started.
  while (updates.filter((u) => u.sessionUpdate === "tool_call").length === calls) {
    await new Promise((r) => setTimeout(r, 20));
  }
  const started = Date.now();
  await ctx.notify(acp.methods.agent.session.cancel, { sessionId });
  const cancelled = await long;
  const ms = Date.now() - started;
  if (cancelled.stopReason !== "cancelled") fail(`after cancel: ${cancelled.stopReason}`);
  if (ms > 1000) fail(`cancel took ${ms} ms`);
  console.log(`ok: ${updates.length} updates, end_turn, ${fsLog.length} fs requests, cancelled in ${ms} ms`);
});
clearTimeout(timer);
child.stdin.end();
child.on("exit", (code) => process.exit(code === 0 ? 0 : 1));
