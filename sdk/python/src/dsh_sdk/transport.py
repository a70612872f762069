"""The two ways to reach `dsh serve`: a child process speaking
newline-delimited JSON-RPC on its stdin/stdout, or a WebSocket.

A transport moves whole messages (JSON text) and knows how to end: `close`
asks the other side to finish, `release` frees what is left once it has
(or the wait ran out)."""

from __future__ import annotations

import asyncio
import os
from typing import Mapping, Optional, Protocol, Sequence

from .errors import DshError
from .websocket import WebSocket


class Transport(Protocol):
    """What `Client` needs from a connection."""

    async def send(self, text: str) -> None:
        """Sends one message; `DshError("CONNECTION_CLOSED")` when it cannot."""

    async def receive(self) -> Optional[str]:
        """The next message, or None at the end of the stream."""

    async def close(self) -> None:
        """Asks the other side to end (it then ends the stream)."""

    async def release(self) -> None:
        """Frees the connection once the stream ended or the wait ran out."""

    async def end_reason(self) -> str:
        """Why the stream ended, for the error of the calls left waiting."""


class StdioTransport:
    """`dsh serve --stdio` as a child process."""

    def __init__(self, process: asyncio.subprocess.Process, max_message_bytes: int) -> None:
        self._process = process
        self._max = max_message_bytes
        self._lock = asyncio.Lock()

    @classmethod
    async def spawn(
        cls,
        dsh: str,
        args: Sequence[str],
        *,
        cwd: Optional[str],
        env: Optional[Mapping[str, str]],
        stderr: Optional[int],
        max_message_bytes: int,
    ) -> "StdioTransport":
        """Starts `dsh serve --stdio *args`; `DshError("SPAWN_FAILED")`
        when it cannot be started. A `dsh` with a slash is a path from our
        working directory (not from `cwd`); without one, it is looked up
        on PATH."""
        if os.sep in dsh:
            dsh = os.path.abspath(dsh)
        try:
            process = await asyncio.create_subprocess_exec(
                dsh,
                "serve",
                "--stdio",
                *args,
                cwd=cwd,
                env=dict(env) if env is not None else None,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=stderr,
                limit=max_message_bytes + 1,
            )
        except OSError as e:
            raise DshError("SPAWN_FAILED", f"cannot start {dsh}: {e}") from None
        return cls(process, max_message_bytes)

    @property
    def pid(self) -> int:
        """The child's process id."""
        return self._process.pid

    async def send(self, text: str) -> None:
        stdin = self._process.stdin
        if stdin is None or stdin.is_closing():
            raise DshError("CONNECTION_CLOSED", "dsh's stdin is closed")
        async with self._lock:
            try:
                stdin.write(text.encode("utf-8") + b"\n")
                await stdin.drain()
            except (OSError, RuntimeError) as e:
                raise DshError("CONNECTION_CLOSED", f"cannot write to dsh: {e}") from None

    async def receive(self) -> Optional[str]:
        stdout = self._process.stdout
        if stdout is None:
            return None
        try:
            line = await stdout.readuntil(b"\n")
        except asyncio.IncompleteReadError:
            return None
        except asyncio.LimitOverrunError:
            raise DshError("PROTOCOL_ERROR", f"dsh sent a line over {self._max} bytes") from None
        try:
            return line.decode("utf-8")
        except UnicodeDecodeError:
            raise DshError("PROTOCOL_ERROR", "dsh sent a line that is not UTF-8") from None

    async def close(self) -> None:
        # End of input ends `dsh serve --stdio` (exit 0): its sessions are
        # closed, their logs flushed.
        stdin = self._process.stdin
        if stdin is not None and not stdin.is_closing():
            stdin.close()

    async def release(self, timeout: float = 10.0) -> None:
        await self.close()
        try:
            await asyncio.wait_for(self._process.wait(), timeout)
        except asyncio.TimeoutError:
            self._process.kill()
            await self._process.wait()

    async def end_reason(self) -> str:
        try:
            code = await asyncio.wait_for(self._process.wait(), 2.0)
        except asyncio.TimeoutError:
            return "dsh closed its stdout"
        return f"dsh serve --stdio exited with status {code}"


class WebSocketTransport:
    """A WebSocket to `dsh serve`'s `/api/ws`."""

    def __init__(self, socket: WebSocket) -> None:
        self._socket = socket

    async def send(self, text: str) -> None:
        await self._socket.send_text(text)

    async def receive(self) -> Optional[str]:
        return await self._socket.receive_text()

    async def close(self) -> None:
        await self._socket.send_close()

    async def release(self) -> None:
        await self._socket.wait_closed()

    async def end_reason(self) -> str:
        if self._socket.close_received:
            return "the server closed the WebSocket"
        return "the WebSocket connection ended"
