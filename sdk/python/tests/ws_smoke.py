"""The SDK over a WebSocket against a running `dsh serve --model echo
--permission read-only`: DSH_URL and DSH_TOKEN name it, DSH_WORKSPACE is a
directory the session may use; and spawn's failures (DSH: the binary). Prints one `ok: ...` line per check and
exits non-zero on the first failure (run by crates/dsh-cli/tests/sdk.rs).
"""

import asyncio
import json
import os
import sys

from dsh_sdk import METHODS, Client, DshError


def check(what: str, condition: bool, detail: object = "") -> None:
    if not condition:
        sys.exit(f"FAILED: {what}: {detail}")
    print(f"ok: {what}")


async def expect_error(code: str, call) -> DshError:  # type: ignore[no-untyped-def]
    try:
        await call
    except DshError as e:
        check(f"{code} raised", e.code == code, f"{e.code}: {e.message}")
        return e
    sys.exit(f"FAILED: {code} expected, the call succeeded")


async def main() -> None:
    url, token = os.environ["DSH_URL"], os.environ["DSH_TOKEN"]
    workspace = os.environ["DSH_WORKSPACE"]

    refused = await expect_error("UNAUTHORIZED", Client.connect(url, token + "x"))
    check("the refusal is HTTP 401", refused.status == 401, refused.status)
    await expect_error("CONNECT_FAILED", Client.connect("http://127.0.0.1:1", token))
    await expect_error("SPAWN_FAILED", Client.spawn(dsh="/nonexistent/dsh"))
    bad_args = await expect_error(
        "CONNECTION_CLOSED", Client.spawn(dsh=os.environ["DSH"], args=["--no-such-flag"], stderr=asyncio.subprocess.DEVNULL)
    )
    check("a failed start tells the exit status", "status 2" in bad_args.message, bad_args.message)

    async with await Client.connect(url, token) as client:
        assert client.server is not None
        check("initialize names every method", client.server["methods"] == list(METHODS), client.server)
        session = await client.create_session(cwd=workspace)
        sid = session["sessionId"]
        check("session created", session["info"]["model"] == "echo", session)
        check(
            "initialize lists the chat commands",
            [c["name"] for c in client.server["commands"]][:2] == ["help", "model"]
            and all(c["description"] for c in client.server["commands"]),
            client.server,
        )
        check("the session's models", "echo" in session["info"]["models"], session)
        events = await client.events(sid)

        await client.prompt(sid, "echo hello")
        answer, seqs = "", []
        async for event in events:
            if event["type"] != "lost":
                seqs.append(event["seq"])
            if event["type"] == "message_delta":
                answer += event["text"]
            elif event["type"] == "status" and event["status"] == "idle":
                break
        check("answer streamed", answer.endswith("The echo tool says: hello"), answer)
        check("events in order", seqs == sorted(seqs), seqs)

        path = os.path.join(workspace, "ws.txt")
        call = {"file_path": path, "content": "over ws\n", "sandbox_permissions": "workspace-write", "justification": "test"}
        await client.prompt(sid, "call write " + json.dumps(call))
        async for event in events:
            if event["type"] == "approval_asked":
                await client.answer(sid, event["approvalId"], "allow_once")
                await expect_error("UNKNOWN_APPROVAL", client.answer(sid, event["approvalId"], "reject", note="late"))
            elif event["type"] == "status" and event["status"] == "idle":
                break
        with open(path) as f:
            check("approved write done", f.read() == "over ws\n")

        asks = {"questions": [{"question": "Which?", "options": [{"label": "a"}, {"label": "b"}]}, {"question": "Why?"}]}
        await client.prompt(sid, "call ask_user " + json.dumps(asks))
        result = None
        async for event in events:
            if event["type"] == "question_asked":
                qid = event["questionId"]
                await expect_error("INVALID_ANSWER", client.answer_question(sid, qid, [{"selected": [7]}, {}]))
                await client.answer_question(sid, qid, [{"selected": [1]}, {"text": "because"}])
                await expect_error("UNKNOWN_QUESTION", client.answer_question(sid, qid, {"outcome": "declined"}))
            elif event["type"] == "tool_finished":
                result = event["output"]
            elif event["type"] == "status" and event["status"] == "idle":
                break
        check("questions answered", result == "Q: Which?\nA: b\nQ: Why?\nA: because", result)
        found = await client.files(sid, "WS.T")
        check("files found", "ws.txt" in found["paths"], found)

        log = await client.read_log(sid, limit=5)
        check("log paged", len(log["events"]) == 5 and log["nextSeq"] == log["events"][-1]["seq"] + 1, log["nextSeq"])
        page = await client.read_events(sid)
        check("events page", any(e["type"] == "turn_ended" for e in page["events"]), len(page["events"]))
        listed = await client.list_sessions()
        check("session listed", any(s["sessionId"] == sid for s in listed["open"]), listed)
        changed = await client.set_plan_mode(sid, True)
        check("plan mode set", changed["changed"] is True, changed)
        reply = await client.command(sid, "/help")
        check("command answered", not reply["failed"] and reply["text"] != "", reply)

        await expect_error("UNKNOWN_SESSION", client.session_info("no-such-session"))
        await expect_error("RPC_METHOD_NOT_FOUND", client.call("session/nothing"))
        await expect_error("INVALID_ARGS", client.call("session/prompt", {"sessionId": sid}))

        await client.close_session(sid)
        rest = [e async for e in events]
        check("stream ends with the session", True, rest)
        await expect_error("UNKNOWN_SESSION", client.prompt(sid, "again"))
    await expect_error("CONNECTION_CLOSED", client.list_sessions())
    print("ws smoke: all passed")


asyncio.run(main())
