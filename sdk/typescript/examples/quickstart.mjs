// Create a session, prompt, stream the answer, answer an approval, read the log.
// Runs offline with dsh's echo model: DSH=path/to/dsh node quickstart.mjs
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { Client } from "@dsh/sdk";

const tmp = mkdtempSync(join(tmpdir(), "dsh-quickstart-"));
const home = join(tmp, "home"); // dsh keeps its sessions here
const workspace = join(tmp, "workspace");
mkdirSync(home);
mkdirSync(workspace);
const client = await Client.spawn({
  dsh: process.env.DSH ?? "dsh",
  args: ["--model", "echo", "--permission", "read-only"],
  cwd: workspace,
  env: { ...process.env, HOME: home },
});
try {
  const { sessionId } = await client.createSession({ cwd: workspace });
  const events = await client.events(sessionId);

  // A prompt; the answer streams in as message deltas.
  await client.prompt(sessionId, "echo hello");
  for await (const event of events) {
    if (event.type === "message_delta") process.stdout.write(event.text);
    else if (event.type === "message_completed") process.stdout.write("\n");
    else if (event.type === "status" && event.status === "idle") break; // the turn is over
  }

  // A write in read-only mode asks for approval: allow it once.
  const path = join(workspace, "hello.txt");
  const call = {
    file_path: path,
    content: "hello from the SDK\n",
    sandbox_permissions: "workspace-write",
    justification: "the quickstart writes a file",
  };
  await client.prompt(sessionId, `call write ${JSON.stringify(call)}`);
  for await (const event of events) {
    if (event.type === "approval_asked") {
      console.log(`approval asked: ${event.summary}`);
      await client.answer(sessionId, event.approvalId, "allow_once");
    } else if (event.type === "tool_finished") {
      console.log(`tool finished: ${event.output}`);
    } else if (event.type === "status" && event.status === "idle") {
      break;
    }
  }
  console.log(`file: ${JSON.stringify(readFileSync(path, "utf8"))}`);

  // The session's log: what happened, as the JSONL events.
  const log = await client.readLog(sessionId);
  const kinds = [...new Set(log.events.map((e) => e.type))].sort();
  console.log(`log: ${log.events.length} events (${kinds.join(", ")})`);
} finally {
  await client.close();
  rmSync(tmp, { recursive: true, force: true });
}
