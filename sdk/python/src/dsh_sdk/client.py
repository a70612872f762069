"""`Client`: JSON-RPC 2.0 with `dsh serve`, one method per call of the
protocol, and `EventStream`, a session's events as an async iterator.

One task reads every message the server sends: an answer resolves the
call waiting for it, a `session.event` or `session.lost` notification
goes to that session's stream. Calls may run concurrently.
"""

from __future__ import annotations

import asyncio
import json
from types import TracebackType
from typing import Any, Dict, List, Mapping, NoReturn, Optional, Sequence, Type, Union, cast

from .errors import DshError
from .transport import StdioTransport, Transport, WebSocketTransport
from .types import (
    Changed,
    CommandResult,
    Decision,
    DecisionName,
    EventsPage,
    QuestionAnswer,
    QuestionReply,
    FilesResult,
    InitializeResult,
    ListResult,
    LogPage,
    PermissionMode,
    SessionResult,
    StreamItem,
    Text,
)
from .websocket import WebSocket

#: Every method of the protocol (in `initialize`'s order); `Client` has a
#: method for each.
METHODS = (
    "initialize",
    "session/create",
    "session/load",
    "session/fork",
    "session/list",
    "session/info",
    "session/close",
    "session/subscribe",
    "session/unsubscribe",
    "session/prompt",
    "session/steer",
    "session/abort",
    "session/set_model",
    "session/set_permission",
    "session/set_plan_mode",
    "session/compact",
    "session/answer",
    "session/answer_question",
    "session/command",
    "session/files",
    "session/events",
    "session/log",
    "shutdown",
)

#: The protocol version this SDK speaks.
PROTOCOL_VERSION = 1

#: The largest message taken from the server by default.
DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024

#: How long `close` waits for the server to end the connection.
CLOSE_TIMEOUT = 10.0


class _End:
    """The end of a stream, with the error to raise when there is one."""

    def __init__(self, error: Optional[DshError]) -> None:
        self.error = error


class EventStream:
    """A subscribed session's events, from `Client.events`.

    An async iterator of events (`{"seq", "time", "type", ...}`) and of
    `{"type": "lost", "from", "to"}` gaps (this client read too slowly;
    `Client.read_log` has what was missed). It ends after the `closed`
    event, after `close()` or `Client.unsubscribe`, after
    `Client.close_session`, and when the client is closed; it raises
    `DshError("CONNECTION_CLOSED")` when the connection is lost. Leaving
    an `async for` early keeps the subscription: iterate again to go on.
    Events are buffered until read. One task should read it.
    """

    def __init__(self, client: "Client", session_id: str) -> None:
        self._client = client
        self.session_id = session_id
        #: The number the next event published would have when subscribed.
        self.next_seq = 0
        #: The first number after a resumed session's replayed history.
        self.live_from = 0
        self._queue: "asyncio.Queue[Union[StreamItem, _End]]" = asyncio.Queue()
        self._end: Optional[_End] = None
        self._ending = False

    def __aiter__(self) -> "EventStream":
        return self

    async def __anext__(self) -> StreamItem:
        if self._end is not None:
            self._raise_end(self._end)
        item = await self._queue.get()
        if isinstance(item, _End):
            self._end = item
            self._raise_end(item)
        return item

    @staticmethod
    def _raise_end(end: _End) -> NoReturn:
        if end.error is not None:
            raise end.error
        raise StopAsyncIteration

    async def close(self) -> None:
        """Unsubscribes (`session/unsubscribe`); the stream ends."""
        if not self._ending:
            await self._client.unsubscribe(self.session_id)

    def _push(self, item: StreamItem) -> None:
        if not self._ending:
            self._queue.put_nowait(item)

    def _finish(self, error: Optional[DshError] = None) -> None:
        if not self._ending:
            self._ending = True
            self._queue.put_nowait(_End(error))


class Client:
    """A connection to `dsh serve`: `await Client.spawn(...)` or
    `await Client.connect(url, token)`; `close()` (or `async with`) ends
    it. Every method raises `DshError` when the call fails."""

    def __init__(self, transport: Transport) -> None:
        """A client on an open transport (`spawn` and `connect` make one)."""
        self._transport = transport
        self._next_id = 0
        self._pending: Dict[int, "asyncio.Future[Any]"] = {}
        self._streams: Dict[str, EventStream] = {}
        self._closing = False
        self._ended: Optional[DshError] = None
        self._reader = asyncio.get_running_loop().create_task(self._read_loop())
        #: `initialize`'s answer, once `spawn` or `connect` asked.
        self.server: Optional[InitializeResult] = None

    # -- opening and closing -------------------------------------------------

    @classmethod
    async def spawn(
        cls,
        dsh: str = "dsh",
        args: Sequence[str] = (),
        *,
        cwd: Optional[str] = None,
        env: Optional[Mapping[str, str]] = None,
        stderr: Optional[int] = None,
        client_name: str = "dsh-sdk-python",
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    ) -> "Client":
        """Starts `dsh serve --stdio *args` (in `cwd`, with `env`; its
        stderr goes to ours unless `stderr` says otherwise, e.g.
        `asyncio.subprocess.DEVNULL`) and initializes it. The process ends
        when the client is closed."""
        transport = await StdioTransport.spawn(
            dsh, args, cwd=cwd, env=env, stderr=stderr, max_message_bytes=max_message_bytes
        )
        return await cls._initialized(transport, client_name)

    @classmethod
    async def connect(
        cls,
        url: str,
        token: str,
        *,
        client_name: str = "dsh-sdk-python",
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        timeout: float = 10.0,
    ) -> "Client":
        """Connects to a running `dsh serve` and initializes. `url` is what
        it printed (`http://127.0.0.1:<port>`, meaning its `/api/ws`) or a
        `ws://` URL; `token` is sent as `Authorization: Bearer`. A wrong
        token raises `DshError("UNAUTHORIZED")` (HTTP 401)."""
        socket = await WebSocket.connect(
            url,
            headers={"Authorization": f"Bearer {token}"},
            max_message_bytes=max_message_bytes,
            timeout=timeout,
        )
        return await cls._initialized(WebSocketTransport(socket), client_name)

    @classmethod
    async def _initialized(cls, transport: Transport, client_name: str) -> "Client":
        client = cls(transport)
        try:
            client.server = await client.initialize(client=client_name)
        except BaseException:
            await client.close()
            raise
        return client

    async def close(self) -> None:
        """Ends the connection (a spawned server exits, closing its
        sessions); the calls still waiting and the streams end. Idempotent."""
        if not self._closing:
            self._closing = True
            try:
                await self._transport.close()
                await asyncio.wait_for(asyncio.shield(self._reader), CLOSE_TIMEOUT)
            except (asyncio.TimeoutError, DshError):
                pass
            finally:
                self._reader.cancel()
                await self._transport.release()
        await asyncio.gather(self._reader, return_exceptions=True)

    async def __aenter__(self) -> "Client":
        return self

    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        await self.close()

    # -- the wire --------------------------------------------------------------

    async def call(self, method: str, params: Optional[Mapping[str, Any]] = None) -> Any:
        """Calls `method` with `params` (omitted fields: leave them out, not
        None) and returns its `result`; raises `DshError` with the server's
        error."""
        if self._ended is not None:
            raise self._ended.copy()
        if self._closing:
            raise DshError("CONNECTION_CLOSED", "the client is closed")
        self._next_id += 1
        request_id = self._next_id
        future: "asyncio.Future[Any]" = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        try:
            frame = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": dict(params or {})}
            try:
                await self._transport.send(json.dumps(frame, ensure_ascii=False))
            except DshError:
                # The other side is gone; the reader learns why (an exit
                # status) when it sees the end.
                await asyncio.wait({self._reader}, timeout=2.0)
                if self._ended is not None:
                    raise self._ended.copy() from None
                raise
            return await future
        finally:
            self._pending.pop(request_id, None)

    async def _read_loop(self) -> None:
        error: Optional[DshError] = None
        try:
            while True:
                text = await self._transport.receive()
                if text is None:
                    break
                self._dispatch(text)
        except DshError as e:
            error = e
        except Exception as e:  # a frame that is not JSON, or not JSON-RPC
            error = DshError("PROTOCOL_ERROR", f"cannot read the server's message: {e}")
        finally:
            if error is None:
                reason = "the client was closed" if self._closing else await self._transport.end_reason()
                error = DshError("CONNECTION_CLOSED", reason)
            self._ended = error
            for future in self._pending.values():
                if not future.done():
                    future.set_exception(error.copy())
            for stream in self._streams.values():
                stream._finish(None if self._closing else error.copy())
            self._streams.clear()

    def _dispatch(self, text: str) -> None:
        message = json.loads(text)
        if not isinstance(message, dict):
            raise DshError("PROTOCOL_ERROR", f"a message that is not an object: {text[:200]}")
        if "result" in message or "error" in message:
            future = self._pending.get(message.get("id"))  # type: ignore[arg-type]
            if future is None or future.done():
                return  # an answer to nothing this client waits for
            if "error" in message:
                future.set_exception(DshError.from_rpc(message["error"]))
            else:
                future.set_result(message["result"])
            return
        params = message.get("params")
        if not isinstance(params, dict):
            return
        stream = self._streams.get(params.get("sessionId"))  # type: ignore[arg-type]
        if stream is None:
            return
        method = message.get("method")
        if method == "session.event" and isinstance(params.get("event"), dict):
            event = params["event"]
            stream._push(event)
            if event.get("type") == "closed":
                self._drop_stream(stream)
        elif method == "session.lost":
            stream._push(cast(StreamItem, {"type": "lost", "from": params.get("from"), "to": params.get("to")}))

    def _drop_stream(self, stream: EventStream) -> None:
        if self._streams.get(stream.session_id) is stream:
            del self._streams[stream.session_id]
        stream._finish()

    # -- the methods -----------------------------------------------------------

    async def initialize(self, *, client: Optional[str] = None, protocol: int = PROTOCOL_VERSION) -> InitializeResult:
        """`initialize`: says who the client is; the server's name,
        version, protocol and methods."""
        params: Dict[str, Any] = {"protocol": protocol}
        if client is not None:
            params["client"] = client
        return cast(InitializeResult, await self.call("initialize", params))

    async def create_session(
        self,
        *,
        cwd: Optional[str] = None,
        model: Optional[str] = None,
        permission: Optional[PermissionMode] = None,
        plan_mode: Optional[bool] = None,
    ) -> SessionResult:
        """`session/create`: a new session (`cwd` absolute; the server's
        defaults for what is left out)."""
        params = _present(cwd=cwd, model=model, permission=permission, planMode=plan_mode)
        return cast(SessionResult, await self.call("session/create", params))

    async def load_session(self, session_id: str) -> SessionResult:
        """`session/load`: opens a saved session (its history is replayed
        as events from 0), or returns the open one."""
        return cast(SessionResult, await self.call("session/load", {"sessionId": session_id}))

    async def fork_session(self, session_id: str) -> SessionResult:
        """`session/fork`: a new session whose history is a copy of
        `session_id`'s."""
        return cast(SessionResult, await self.call("session/fork", {"sessionId": session_id}))

    async def list_sessions(self) -> ListResult:
        """`session/list`: the open sessions and the saved ones."""
        return cast(ListResult, await self.call("session/list", {}))

    async def session_info(self, session_id: str) -> SessionResult:
        """`session/info`: what an open session is now."""
        return cast(SessionResult, await self.call("session/info", {"sessionId": session_id}))

    async def close_session(self, session_id: str) -> None:
        """`session/close`: its turn aborted, its log flushed; this
        client's stream of it ends."""
        await self.call("session/close", {"sessionId": session_id})
        stream = self._streams.get(session_id)
        if stream is not None:
            self._drop_stream(stream)

    async def events(self, session_id: str, *, from_seq: Optional[int] = None, log: bool = False) -> EventStream:
        """`session/subscribe`: the session's events from `from_seq`
        (default: from now; a reconnecting client passes the last `seq` it
        saw plus one), with the log's events too when `log`. While
        subscribed this client is asked the session's approval questions.
        A second call for the same session ends the first stream."""
        old = self._streams.pop(session_id, None)
        if old is not None:
            old._finish()
        stream = EventStream(self, session_id)
        self._streams[session_id] = stream
        try:
            params = _present(sessionId=session_id, fromSeq=from_seq, log=log or None)
            result = await self.call("session/subscribe", params)
        except BaseException:
            self._drop_stream(stream)
            raise
        stream.next_seq = result["nextSeq"]
        stream.live_from = result["liveFrom"]
        return stream

    async def unsubscribe(self, session_id: str) -> None:
        """`session/unsubscribe`: stops the session's stream."""
        await self.call("session/unsubscribe", {"sessionId": session_id})
        stream = self._streams.get(session_id)
        if stream is not None:
            self._drop_stream(stream)

    async def prompt(self, session_id: str, text: str) -> None:
        """`session/prompt`: a message that starts a turn
        (`TURN_RUNNING` while one runs: wait for the `idle` status)."""
        await self.call("session/prompt", {"sessionId": session_id, "text": text})

    async def steer(self, session_id: str, text: str) -> None:
        """`session/steer`: a message into the running turn (or a new one)."""
        await self.call("session/steer", {"sessionId": session_id, "text": text})

    async def abort(self, session_id: str, reason: Optional[str] = None) -> None:
        """`session/abort`: aborts the running turn."""
        await self.call("session/abort", _present(sessionId=session_id, reason=reason))

    async def set_model(self, session_id: str, model: str) -> None:
        """`session/set_model`: the model for the next requests."""
        await self.call("session/set_model", {"sessionId": session_id, "model": model})

    async def set_permission(self, session_id: str, mode: PermissionMode) -> None:
        """`session/set_permission`: the permission mode."""
        await self.call("session/set_permission", {"sessionId": session_id, "mode": mode})

    async def set_plan_mode(self, session_id: str, on: bool) -> Changed:
        """`session/set_plan_mode`: plan mode on or off; whether it changed."""
        return cast(Changed, await self.call("session/set_plan_mode", {"sessionId": session_id, "on": on}))

    async def compact(self, session_id: str, focus: Optional[str] = None) -> Text:
        """`session/compact`: compacts the history now (between turns)."""
        return cast(Text, await self.call("session/compact", _present(sessionId=session_id, focus=focus)))

    async def answer(
        self,
        session_id: str,
        approval_id: str,
        decision: Union[DecisionName, Decision],
        note: Optional[str] = None,
    ) -> None:
        """`session/answer`: answers an `approval_asked` event
        (`"allow_once"`, `"allow_always"`, `"reject"` with an optional
        `note` for the model, `"cancelled"`); the first answer of any
        client wins, later ones raise `UNKNOWN_APPROVAL`."""
        body: Dict[str, Any] = {"decision": decision} if isinstance(decision, str) else dict(decision)
        if note is not None:
            body["note"] = note
        await self.call("session/answer", {"sessionId": session_id, "approvalId": approval_id, "decision": body})

    async def answer_question(
        self,
        session_id: str,
        question_id: str,
        reply: Union[List[QuestionAnswer], QuestionReply],
    ) -> None:
        """`session/answer_question`: replies to a `question_asked` event:
        a list of answers, one per question in order (`{"selected": [0]}`,
        `{"text": "..."}`, `{}` to skip one), or a whole reply such as
        `{"outcome": "declined"}`. The first reply of any client wins,
        later ones raise `UNKNOWN_QUESTION`; answers that do not fit the
        questions raise `INVALID_ANSWER`."""
        body: Dict[str, Any] = {"outcome": "answered", "answers": list(reply)} if isinstance(reply, list) else dict(reply)
        await self.call("session/answer_question", {"sessionId": session_id, "questionId": question_id, "reply": body})

    async def command(self, session_id: str, line: str) -> CommandResult:
        """`session/command`: a chat command line (`/model`, `/todo`, ...)."""
        return cast(CommandResult, await self.call("session/command", {"sessionId": session_id, "line": line}))

    async def files(self, session_id: str, query: str = "", *, limit: Optional[int] = None) -> FilesResult:
        """`session/files`: workspace paths containing `query` (case blind;
        ignored and hidden files left out), shortest first, at most `limit`
        (default 50)."""
        params = _present(sessionId=session_id, query=query, limit=limit)
        return cast(FilesResult, await self.call("session/files", params))

    async def read_events(
        self, session_id: str, *, from_seq: Optional[int] = None, limit: Optional[int] = None
    ) -> EventsPage:
        """`session/events`: a page of the events the session still holds."""
        params = _present(sessionId=session_id, fromSeq=from_seq, limit=limit)
        return cast(EventsPage, await self.call("session/events", params))

    async def read_log(self, session_id: str, *, from_seq: Optional[int] = None, limit: Optional[int] = None) -> LogPage:
        """`session/log`: a page (at most 1,000) of the session's log events;
        the next page starts at `nextSeq`."""
        params = _present(sessionId=session_id, fromSeq=from_seq, limit=limit)
        return cast(LogPage, await self.call("session/log", params))

    async def shutdown(self) -> None:
        """`shutdown`: over stdio the server stops (then `close()`); over a
        WebSocket only this connection ends."""
        await self.call("shutdown", {})


def _present(**fields: Any) -> Dict[str, Any]:
    """The fields that are not None (the protocol omits absent ones)."""
    return {k: v for k, v in fields.items() if v is not None}
