// End-to-end check of `dsh acp` with the official TypeScript ACP client
// (@agentclientprotocol/sdk): connect, initialize, open a session, prompt
// the offline echo model and receive its updates, then cancel a long
// command and expect `cancelled` within a second.
//
//   DSH=/path/to/dsh node check.mjs      (see ../acp-ts-check.sh)
import { spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
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
const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
const app = acp
  .client({ name: "dsh-acp-ts-check" })
  .onNotification(acp.methods.client.session.update, ({ params }) => {
    updates.push(params.update);
  })
  .onRequest(acp.methods.client.session.requestPermission, () => ({
    outcome: { outcome: "cancelled" },
  }));

await app.connectWith(stream, async (ctx) => {
  const init = await ctx.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: {},
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

  const long = ctx.request(acp.methods.agent.session.prompt, {
    sessionId,
    prompt: [{ type: "text", text: "run sleep 30" }],
  });
  while (!updates.some((u) => u.sessionUpdate === "tool_call" && u.title !== "echo")) {
    await new Promise((r) => setTimeout(r, 20));
  }
  const started = Date.now();
  await ctx.notify(acp.methods.agent.session.cancel, { sessionId });
  const cancelled = await long;
  const ms = Date.now() - started;
  if (cancelled.stopReason !== "cancelled") fail(`after cancel: ${cancelled.stopReason}`);
  if (ms > 1000) fail(`cancel took ${ms} ms`);
  console.log(`ok: ${updates.length} updates, end_turn, cancelled in ${ms} ms`);
});
clearTimeout(timer);
child.stdin.end();
child.on("exit", (code) => process.exit(code === 0 ? 0 : 1));
