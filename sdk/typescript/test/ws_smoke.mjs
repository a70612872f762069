// The SDK over a WebSocket against a running `dsh serve --model echo
// --permission read-only` (DSH_URL, DSH_TOKEN; DSH_WORKSPACE a directory
// the session may use), and spawn's failures (DSH: the binary). Prints one
// `ok: ...` line per check; exits non-zero on the first failure (run by
// crates/dsh-cli/tests/sdk.rs with node --experimental-websocket).
import { readFileSync } from "node:fs";
import { join } from "node:path";

import { Client, DshError, EVENT_TYPES, METHODS } from "@dsh/sdk";

function check(what, condition, detail = "") {
  if (!condition) {
    console.error(`FAILED: ${what}: ${typeof detail === "string" ? detail : JSON.stringify(detail)}`);
    process.exit(1);
  }
  console.log(`ok: ${what}`);
}

async function expectError(code, promise) {
  try {
    await promise;
  } catch (e) {
    check(`${code} raised`, e instanceof DshError && e.code === code, `${e?.code}: ${e?.message}`);
    return e;
  }
  check(`${code} expected`, false, "the call succeeded");
}

const { DSH_URL: url, DSH_TOKEN: token, DSH_WORKSPACE: workspace, DSH: dsh } = process.env;

const refused = await expectError("UNAUTHORIZED", Client.connect(url, `${token}x`));
check("the refusal is HTTP 401", refused.status === 401, refused.status);
await expectError("CONNECT_FAILED", Client.connect("http://127.0.0.1:1", token));
await expectError("SPAWN_FAILED", Client.spawn({ dsh: "/nonexistent/dsh" }));
const badArgs = await expectError("CONNECTION_CLOSED", Client.spawn({ dsh, args: ["--no-such-flag"], stderr: "ignore" }));
check("a failed start tells the exit status", /status 2/.test(badArgs.message), badArgs.message);

const client = await Client.connect(url, token);
check("initialize names every method", JSON.stringify(client.server.methods) === JSON.stringify(METHODS), client.server);
check("event types known, each once", EVENT_TYPES.includes("activity") && EVENT_TYPES.includes("turn_ended") && new Set(EVENT_TYPES).size === EVENT_TYPES.length, EVENT_TYPES);
const { sessionId, info } = await client.createSession({ cwd: workspace });
check("session created", info.model === "echo", info);
check(
  "initialize lists the chat commands",
  JSON.stringify(client.server.commands.slice(0, 2).map((c) => c.name)) === JSON.stringify(["help", "model"]) && client.server.commands.every((c) => c.description),
  client.server,
);
check("the session's models", info.models.includes("echo"), info);
const events = await client.events(sessionId);

await client.prompt(sessionId, "echo hello");
let answer = "";
const seqs = [];
for await (const event of events) {
  seqs.push(event.seq);
  if (event.type === "message_delta") answer += event.text;
  else if (event.type === "status" && event.status === "idle") break;
}
check("answer streamed", answer.endsWith("The echo tool says: hello"), answer);
check("events in order", seqs.every((s, i) => i === 0 || s > seqs[i - 1]), seqs);

const path = join(workspace, "ws-ts.txt");
const call = { file_path: path, content: "over ws\n", sandbox_permissions: "workspace-write", justification: "test" };
await client.prompt(sessionId, `call write ${JSON.stringify(call)}`);
for await (const event of events) {
  if (event.type === "approval_asked") {
    await client.answer(sessionId, event.approvalId, "allow_once");
    await expectError("UNKNOWN_APPROVAL", client.answer(sessionId, event.approvalId, "reject", "late"));
  } else if (event.type === "status" && event.status === "idle") break;
}
check("approved write done", readFileSync(path, "utf8") === "over ws\n");

const asks = { questions: [{ question: "Which?", options: [{ label: "a" }, { label: "b" }] }, { question: "Why?" }] };
await client.prompt(sessionId, `call ask_user ${JSON.stringify(asks)}`);
let result;
for await (const event of events) {
  if (event.type === "question_asked") {
    await expectError("INVALID_ANSWER", client.answerQuestion(sessionId, event.questionId, [{ selected: [7] }, {}]));
    await client.answerQuestion(sessionId, event.questionId, [{ selected: [1] }, { text: "because" }]);
    await expectError("UNKNOWN_QUESTION", client.answerQuestion(sessionId, event.questionId, { outcome: "declined" }));
  } else if (event.type === "tool_finished") result = event.output;
  else if (event.type === "status" && event.status === "idle") break;
}
check("questions answered", result === "Q: Which?\nA: b\nQ: Why?\nA: because", result);
const found = await client.files(sessionId, { query: "WS-TS" });
check("files found", found.paths.includes("ws-ts.txt"), found);

const log = await client.readLog(sessionId, { limit: 5 });
check("log paged", log.events.length === 5 && log.nextSeq === log.events[4].seq + 1, log.nextSeq);
const page = await client.readEvents(sessionId);
check("events page", page.events.some((e) => e.type === "turn_ended"), page.events.length);
const listed = await client.listSessions();
check("session listed", listed.open.some((s) => s.sessionId === sessionId), listed);
check("plan mode set", (await client.setPlanMode(sessionId, true)).changed === true);
const reply = await client.command(sessionId, "/help");
check("command answered", !reply.failed && reply.text !== "", reply);

await expectError("UNKNOWN_SESSION", client.sessionInfo("no-such-session"));
await expectError("RPC_METHOD_NOT_FOUND", client.call("session/nothing"));
await expectError("INVALID_ARGS", client.call("session/prompt", { sessionId }));

await client.closeSession(sessionId);
for await (const _ of events);
check("stream ends with the session", true);
await expectError("UNKNOWN_SESSION", client.prompt(sessionId, "again"));
await client.close();
await expectError("CONNECTION_CLOSED", client.listSessions());
console.log("ws smoke: all passed");
