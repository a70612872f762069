"""A minimal WebSocket client (RFC 6455) over asyncio streams.

Enough for `dsh serve`: the opening handshake (with its
`Sec-WebSocket-Accept` check), masked client frames, text messages
(fragmented or not), ping/pong and the closing handshake. No extensions,
no subprotocols, no binary messages (the server sends none).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import os
import ssl as ssl_module
import struct
from typing import Dict, Mapping, NoReturn, Optional, Tuple
from urllib.parse import urlsplit

from .errors import DshError

#: The GUID RFC 6455 appends to the key to compute the accept value.
_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

#: The most a handshake response's head may hold.
_MAX_HEAD_BYTES = 64 * 1024

OP_CONTINUATION = 0x0
OP_TEXT = 0x1
OP_BINARY = 0x2
OP_CLOSE = 0x8
OP_PING = 0x9
OP_PONG = 0xA

CLOSE_NORMAL = 1000
CLOSE_PROTOCOL_ERROR = 1002
CLOSE_UNSUPPORTED_DATA = 1003
CLOSE_INVALID_PAYLOAD = 1007
CLOSE_TOO_BIG = 1009


def accept_for(key: str) -> str:
    """The `Sec-WebSocket-Accept` a server must answer `key` with."""
    digest = hashlib.sha1((key + _GUID).encode("ascii")).digest()
    return base64.b64encode(digest).decode("ascii")


def mask(payload: bytes, key: bytes) -> bytes:
    """`payload` XORed with the 4-byte `key` repeated (masking and
    unmasking are the same operation)."""
    n = len(payload)
    if n == 0:
        return b""
    repeated = (key * (n // 4 + 1))[:n]
    return (int.from_bytes(payload, "big") ^ int.from_bytes(repeated, "big")).to_bytes(n, "big")


def encode_frame(opcode: int, payload: bytes, *, fin: bool = True, key: Optional[bytes] = None) -> bytes:
    """One client frame: masked with `key` (4 random bytes when None)."""
    key = os.urandom(4) if key is None else key
    head = bytearray([(0x80 if fin else 0) | opcode])
    n = len(payload)
    if n < 126:
        head.append(0x80 | n)
    elif n < 1 << 16:
        head.append(0x80 | 126)
        head += struct.pack("!H", n)
    else:
        head.append(0x80 | 127)
        head += struct.pack("!Q", n)
    return bytes(head) + key + mask(payload, key)


def split_url(url: str) -> Tuple[bool, str, int, str]:
    """(tls, host, port, path-and-query) of a `ws://`, `wss://`, `http://`
    or `https://` URL. An http(s) URL without a path (what `dsh serve`
    prints) means its `/api/ws`."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in ("ws", "wss", "http", "https"):
        raise DshError("CONNECT_FAILED", f"not a WebSocket or HTTP URL: {url}")
    tls = scheme in ("wss", "https")
    if not parts.hostname:
        raise DshError("CONNECT_FAILED", f"no host in {url}")
    try:
        port = parts.port or (443 if tls else 80)
    except ValueError as e:
        raise DshError("CONNECT_FAILED", f"bad port in {url}: {e}") from None
    path = parts.path
    if scheme in ("http", "https") and path in ("", "/"):
        path = "/api/ws"
    path = path or "/"
    if parts.query:
        path += "?" + parts.query
    return tls, parts.hostname, port, path


class WebSocket:
    """An open WebSocket connection. One task reads (`receive_text`);
    any task may send."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        max_message_bytes: int,
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._max = max_message_bytes
        self._send_lock = asyncio.Lock()
        self.close_sent = False
        self.close_received = False

    @classmethod
    async def connect(
        cls,
        url: str,
        *,
        headers: Optional[Mapping[str, str]] = None,
        max_message_bytes: int = 64 * 1024 * 1024,
        timeout: float = 10.0,
    ) -> "WebSocket":
        """Opens `url` and completes the opening handshake, sending
        `headers` with the request.

        Raises `DshError`: `CONNECT_FAILED` (no connection),
        `UNAUTHORIZED` (401), `FORBIDDEN` (403), `HANDSHAKE_FAILED` (any
        other answer than a valid 101)."""
        tls, host, port, path = split_url(url)
        context = ssl_module.create_default_context() if tls else None
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection(host, port, ssl=context, limit=_MAX_HEAD_BYTES),
                timeout,
            )
        except (OSError, asyncio.TimeoutError) as e:
            raise DshError("CONNECT_FAILED", f"cannot connect to {host}:{port}: {e or 'timed out'}") from None
        try:
            await asyncio.wait_for(cls._handshake(reader, writer, host, port, tls, path, headers or {}), timeout)
        except BaseException as e:
            writer.close()
            if isinstance(e, asyncio.TimeoutError):
                raise DshError("HANDSHAKE_FAILED", f"no handshake answer from {host}:{port} in {timeout} s") from None
            if isinstance(e, (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError)):
                raise DshError("HANDSHAKE_FAILED", f"the handshake with {host}:{port} broke off: {e}") from None
            raise
        return cls(reader, writer, max_message_bytes)

    @staticmethod
    async def _handshake(
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        host: str,
        port: int,
        tls: bool,
        path: str,
        headers: Mapping[str, str],
    ) -> None:
        key = base64.b64encode(os.urandom(16)).decode("ascii")
        host_header = f"[{host}]" if ":" in host else host
        if port != (443 if tls else 80):
            host_header += f":{port}"
        lines = [
            f"GET {path} HTTP/1.1",
            f"Host: {host_header}",
            "Upgrade: websocket",
            "Connection: Upgrade",
            f"Sec-WebSocket-Key: {key}",
            "Sec-WebSocket-Version: 13",
        ]
        for name, value in headers.items():
            if any(c in name + value for c in "\r\n"):
                raise DshError("HANDSHAKE_FAILED", f"header {name!r} holds a line break")
            lines.append(f"{name}: {value}")
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("utf-8"))
        await writer.drain()

        head = await reader.readuntil(b"\r\n\r\n")
        status, answer = _parse_head(head)
        if status != 101:
            code = {401: "UNAUTHORIZED", 403: "FORBIDDEN"}.get(status, "HANDSHAKE_FAILED")
            raise DshError(code, f"the server answered the upgrade with HTTP {status}", status=status)
        if answer.get("upgrade", "").lower() != "websocket":
            raise DshError("HANDSHAKE_FAILED", "101 without `Upgrade: websocket`", status=status)
        if "upgrade" not in [t.strip().lower() for t in answer.get("connection", "").split(",")]:
            raise DshError("HANDSHAKE_FAILED", "101 without `Connection: upgrade`", status=status)
        if answer.get("sec-websocket-accept") != accept_for(key):
            raise DshError("HANDSHAKE_FAILED", "wrong Sec-WebSocket-Accept", status=status)
        if answer.get("sec-websocket-extensions") or answer.get("sec-websocket-protocol"):
            raise DshError("HANDSHAKE_FAILED", "the server chose an extension or subprotocol not asked for", status=status)

    async def send_text(self, text: str) -> None:
        """Sends one text message (one frame)."""
        await self._send(OP_TEXT, text.encode("utf-8"))

    async def send_close(self, code: int = CLOSE_NORMAL, reason: str = "") -> None:
        """Starts (or answers) the closing handshake; once only."""
        if self.close_sent:
            return
        self.close_sent = True
        payload = struct.pack("!H", code) + reason.encode("utf-8")[:123]
        try:
            await self._send(OP_CLOSE, payload)
        except DshError:
            pass

    async def _send(self, opcode: int, payload: bytes) -> None:
        if self.close_sent and opcode != OP_CLOSE:
            raise DshError("CONNECTION_CLOSED", "the WebSocket is closing")
        frame = encode_frame(opcode, payload)
        async with self._send_lock:
            try:
                self._writer.write(frame)
                await self._writer.drain()
            except (OSError, RuntimeError) as e:
                raise DshError("CONNECTION_CLOSED", f"the WebSocket connection broke: {e}") from None

    async def receive_text(self) -> Optional[str]:
        """The next text message, or None once the connection closed (the
        server's close frame was answered, or the TCP stream ended).
        Answers pings. Raises `DshError("PROTOCOL_ERROR")` (after closing
        with the matching code) when the server breaks the framing."""
        message: Optional[bytearray] = None
        while True:
            try:
                fin, opcode, payload = await self._read_frame()
            except (asyncio.IncompleteReadError, OSError):
                return None
            if opcode == OP_PING:
                await self._send(OP_PONG, payload)
            elif opcode == OP_PONG:
                pass
            elif opcode == OP_CLOSE:
                self.close_received = True
                if len(payload) == 1:
                    await self._fail(CLOSE_PROTOCOL_ERROR, "a close frame with a 1-byte payload")
                await self.send_close(struct.unpack("!H", payload[:2])[0] if payload else CLOSE_NORMAL)
                return None
            elif opcode == OP_TEXT:
                if message is not None:
                    await self._fail(CLOSE_PROTOCOL_ERROR, "a new message inside a fragmented one")
                message = bytearray(payload)
            elif opcode == OP_CONTINUATION:
                if message is None:
                    await self._fail(CLOSE_PROTOCOL_ERROR, "a continuation frame outside a message")
                message += payload
            elif opcode == OP_BINARY:
                await self._fail(CLOSE_UNSUPPORTED_DATA, "a binary message (dsh sends text)")
            else:
                await self._fail(CLOSE_PROTOCOL_ERROR, f"unknown opcode {opcode:#x}")
            if message is not None and len(message) > self._max:
                await self._fail(CLOSE_TOO_BIG, f"a message over {self._max} bytes")
            if message is not None and fin and opcode in (OP_TEXT, OP_CONTINUATION):
                try:
                    return message.decode("utf-8")
                except UnicodeDecodeError:
                    await self._fail(CLOSE_INVALID_PAYLOAD, "a text message that is not UTF-8")

    async def _read_frame(self) -> Tuple[bool, int, bytes]:
        b0, b1 = await self._reader.readexactly(2)
        fin, opcode = bool(b0 & 0x80), b0 & 0x0F
        if b0 & 0x70:
            await self._fail(CLOSE_PROTOCOL_ERROR, "reserved bits set (no extension was agreed)")
        if b1 & 0x80:
            await self._fail(CLOSE_PROTOCOL_ERROR, "a masked frame from the server")
        n = b1 & 0x7F
        if n == 126:
            (n,) = struct.unpack("!H", await self._reader.readexactly(2))
        elif n == 127:
            (n,) = struct.unpack("!Q", await self._reader.readexactly(8))
            if n >> 63:
                await self._fail(CLOSE_PROTOCOL_ERROR, "a frame length with its top bit set")
        if opcode >= 0x8 and (not fin or n > 125):
            await self._fail(CLOSE_PROTOCOL_ERROR, "a fragmented or long control frame")
        if n > self._max:
            await self._fail(CLOSE_TOO_BIG, f"a frame over {self._max} bytes")
        return fin, opcode, await self._reader.readexactly(n)

    async def _fail(self, code: int, why: str) -> NoReturn:
        await self.send_close(code, why)
        self.abort()
        raise DshError("PROTOCOL_ERROR", f"the server sent {why}")

    def abort(self) -> None:
        """Closes the TCP connection now."""
        if not self._writer.is_closing():
            self._writer.close()

    async def wait_closed(self) -> None:
        """Closes the TCP connection and waits until it is gone."""
        self.abort()
        try:
            await self._writer.wait_closed()
        except (OSError, RuntimeError):
            pass


def _parse_head(head: bytes) -> Tuple[int, Dict[str, str]]:
    """The status and the headers (names lower-cased, repeats joined with
    `, `) of an HTTP response head."""
    try:
        text = head.decode("iso-8859-1")
    except UnicodeDecodeError:  # pragma: no cover - latin-1 decodes anything
        raise DshError("HANDSHAKE_FAILED", "an unreadable response head") from None
    lines = text.split("\r\n")
    status_line = lines[0].split(" ", 2)
    if len(status_line) < 2 or not status_line[0].startswith("HTTP/") or not status_line[1].isdigit():
        raise DshError("HANDSHAKE_FAILED", f"not an HTTP response: {lines[0][:80]!r}")
    headers: Dict[str, str] = {}
    for line in lines[1:]:
        if not line:
            continue
        name, sep, value = line.partition(":")
        if not sep:
            raise DshError("HANDSHAKE_FAILED", f"a malformed header line: {line[:80]!r}")
        key = name.strip().lower()
        headers[key] = f"{headers[key]}, {value.strip()}" if key in headers else value.strip()
    return int(status_line[1]), headers
