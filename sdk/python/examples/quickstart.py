"""Create a session, prompt, stream the answer, answer an approval, read the log.

Runs offline with dsh's echo model: DSH=path/to/dsh python3 quickstart.py
"""

import asyncio
import json
import os
import tempfile

from dsh_sdk import Client


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        home = os.path.join(tmp, "home")  # dsh keeps its sessions here
        workspace = os.path.join(tmp, "workspace")
        os.makedirs(home)
        os.makedirs(workspace)
        client = await Client.spawn(
            dsh=os.environ.get("DSH", "dsh"),
            args=["--model", "echo", "--permission", "read-only"],
            cwd=workspace,
            env={**os.environ, "HOME": home},
        )
        async with client:
            session = await client.create_session(cwd=workspace)
            sid = session["sessionId"]
            events = await client.events(sid)

            # A prompt; the answer streams in as message deltas.
            await client.prompt(sid, "echo hello")
            async for event in events:
                if event["type"] == "message_delta":
                    print(event["text"], end="", flush=True)
                elif event["type"] == "message_completed":
                    print()
                elif event["type"] == "status" and event["status"] == "idle":
                    break  # the turn is over: the session takes a new prompt

            # A write in read-only mode asks for approval: allow it once.
            path = os.path.join(workspace, "hello.txt")
            call = {
                "file_path": path,
                "content": "hello from the SDK\n",
                "sandbox_permissions": "workspace-write",
                "justification": "the quickstart writes a file",
            }
            await client.prompt(sid, "call write " + json.dumps(call))
            async for event in events:
                if event["type"] == "approval_asked":
                    print(f"approval asked: {event['summary']}")
                    await client.answer(sid, event["approvalId"], "allow_once")
                elif event["type"] == "tool_finished":
                    print(f"tool finished: {event['output']}")
                elif event["type"] == "status" and event["status"] == "idle":
                    break
            with open(path) as f:
                print(f"file: {f.read()!r}")

            # The session's log: what happened, as the JSONL events.
            log = await client.read_log(sid)
            kinds = sorted({e["type"] for e in log["events"]})
            print(f"log: {len(log['events'])} events ({', '.join(kinds)})")


asyncio.run(main())
