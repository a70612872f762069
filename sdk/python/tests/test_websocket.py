"""The WebSocket client and the JSON-RPC client against scripted servers:
RFC 6455's examples, the handshake checks, fragments, ping/pong, the
closing handshake, framing errors; answers and notifications routed.

Run: PYTHONPATH=sdk/python/src python3 -m unittest discover -s sdk/python/tests
"""

import asyncio
import json
import re
import struct
import unittest
from typing import Any, Awaitable, Callable, Dict, Optional, Tuple

from dsh_sdk import Client, DshError
from dsh_sdk.websocket import (
    OP_CLOSE,
    OP_CONTINUATION,
    OP_PING,
    OP_PONG,
    OP_TEXT,
    WebSocket,
    accept_for,
    encode_frame,
    mask,
    split_url,
)

Script = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


def server_frame(opcode: int, payload: bytes, *, fin: bool = True, masked: bool = False) -> bytes:
    """A frame as a server sends it (unmasked unless `masked`)."""
    head = bytearray([(0x80 if fin else 0) | opcode])
    n = len(payload)
    bit = 0x80 if masked else 0
    if n < 126:
        head.append(bit | n)
    elif n < 1 << 16:
        head += bytes([bit | 126]) + struct.pack("!H", n)
    else:
        head += bytes([bit | 127]) + struct.pack("!Q", n)
    if masked:
        key = b"\x01\x02\x03\x04"
        return bytes(head) + key + mask(payload, key)
    return bytes(head) + payload


async def read_client_frame(reader: asyncio.StreamReader) -> Tuple[bool, int, bytes]:
    """A client frame, unmasked; fails the test when it is not masked or
    does not come within 5 s."""
    return await asyncio.wait_for(_read_client_frame(reader), 5.0)


async def _read_client_frame(reader: asyncio.StreamReader) -> Tuple[bool, int, bytes]:
    b0, b1 = await reader.readexactly(2)
    assert b1 & 0x80, "client frames are masked"
    n = b1 & 0x7F
    if n == 126:
        (n,) = struct.unpack("!H", await reader.readexactly(2))
    elif n == 127:
        (n,) = struct.unpack("!Q", await reader.readexactly(8))
    key = await reader.readexactly(4)
    return bool(b0 & 0x80), b0 & 0x0F, mask(await reader.readexactly(n), key)


class FakeServer:
    """One connection: the handshake answered (`status`, `accept`), then
    `script` runs with the streams."""

    def __init__(self, script: Optional[Script] = None, *, status: int = 101, accept: Optional[str] = None) -> None:
        self.script = script
        self.status = status
        self.accept = accept
        self.request = ""
        self.done = asyncio.Event()
        self.error: Optional[BaseException] = None

    async def __aenter__(self) -> "FakeServer":
        self.server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        port = self.server.sockets[0].getsockname()[1]
        self.url = f"ws://127.0.0.1:{port}/api/ws"
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.server.close()
        await self.server.wait_closed()
        if self.error is not None:
            raise self.error

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            self.request = (await reader.readuntil(b"\r\n\r\n")).decode()
            key = re.search(r"Sec-WebSocket-Key: (\S+)", self.request)
            assert key is not None
            if self.status != 101:
                writer.write(f"HTTP/1.1 {self.status} No\r\ncontent-length: 0\r\n\r\n".encode())
            else:
                accept = self.accept or accept_for(key.group(1))
                writer.write(
                    "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                    f"Connection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\n\r\n".encode()
                )
            await writer.drain()
            if self.script is not None and self.status == 101:
                await self.script(reader, writer)
        except BaseException as e:  # surfaced by __aexit__
            self.error = e
        finally:
            writer.close()
            self.done.set()


class Codec(unittest.TestCase):
    def test_rfc_6455_examples(self) -> None:
        # Section 1.3: the accept value for the sample nonce.
        self.assertEqual(accept_for("dGhlIHNhbXBsZSBub25jZQ=="), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
        # Section 5.7: a masked "Hello".
        frame = encode_frame(OP_TEXT, b"Hello", key=bytes([0x37, 0xFA, 0x21, 0x3D]))
        self.assertEqual(frame, bytes([0x81, 0x85, 0x37, 0xFA, 0x21, 0x3D, 0x7F, 0x9F, 0x4D, 0x51, 0x58]))

    def test_lengths_take_7_16_or_64_bits(self) -> None:
        for n, head in [(125, bytes([0x81, 0x80 | 125])), (126, bytes([0x81, 0xFE, 0, 126])),
                        (65535, bytes([0x81, 0xFE, 0xFF, 0xFF])), (65536, bytes([0x81, 0xFF]) + struct.pack("!Q", 65536))]:
            frame = encode_frame(OP_TEXT, b"a" * n, key=b"\0\0\0\0")
            self.assertEqual(frame[: len(head)], head, n)
            self.assertEqual(len(frame), len(head) + 4 + n)
        self.assertEqual(mask(mask(b"any bytes at all", b"abcd"), b"abcd"), b"any bytes at all")

    def test_urls(self) -> None:
        self.assertEqual(split_url("http://127.0.0.1:8080"), (False, "127.0.0.1", 8080, "/api/ws"))
        self.assertEqual(split_url("ws://h/x?token=t"), (False, "h", 80, "/x?token=t"))
        self.assertEqual(split_url("wss://h"), (True, "h", 443, "/"))
        with self.assertRaises(DshError):
            split_url("ftp://h")


class Connection(unittest.IsolatedAsyncioTestCase):
    async def test_fragments_pings_and_the_closing_handshake(self) -> None:
        seen = []

        async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            writer.write(server_frame(OP_TEXT, b"Hel", fin=False))
            writer.write(server_frame(OP_PING, b"are you there"))
            writer.write(server_frame(OP_CONTINUATION, "lo \u00e9".encode(), fin=True))
            await writer.drain()
            seen.append(await read_client_frame(reader))  # the pong
            seen.append(await read_client_frame(reader))  # the client's message
            writer.write(server_frame(OP_CLOSE, struct.pack("!H", 1001) + b"going away"))
            await writer.drain()
            seen.append(await read_client_frame(reader))  # the close answer

        async with FakeServer(script) as server:
            ws = await WebSocket.connect(server.url, headers={"Authorization": "Bearer t"})
            self.assertEqual(await ws.receive_text(), "Hello \u00e9")
            await ws.send_text('{"x": 1}')
            self.assertIsNone(await ws.receive_text())
            await ws.wait_closed()
            await server.done.wait()
        self.assertIn("Authorization: Bearer t", server.request)
        self.assertIn("Sec-WebSocket-Version: 13", server.request)
        self.assertEqual(seen[0], (True, OP_PONG, b"are you there"))
        self.assertEqual(seen[1], (True, OP_TEXT, b'{"x": 1}'))
        self.assertEqual(seen[2], (True, OP_CLOSE, struct.pack("!H", 1001)))

    async def test_a_refused_or_wrong_handshake_raises(self) -> None:
        async with FakeServer(status=401) as server:
            with self.assertRaises(DshError) as caught:
                await WebSocket.connect(server.url)
        self.assertEqual((caught.exception.code, caught.exception.status), ("UNAUTHORIZED", 401))
        async with FakeServer(status=403) as server:
            with self.assertRaises(DshError) as caught:
                await WebSocket.connect(server.url)
        self.assertEqual(caught.exception.code, "FORBIDDEN")
        async with FakeServer(accept="d3Jvbmc=") as server:
            with self.assertRaises(DshError) as caught:
                await WebSocket.connect(server.url)
        self.assertEqual(caught.exception.code, "HANDSHAKE_FAILED")
        self.assertIn("Sec-WebSocket-Accept", caught.exception.message)

    async def framing_error(self, frames: bytes, close_code: int, max_message_bytes: int = 1 << 20) -> str:
        answer = []

        async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            writer.write(frames)
            await writer.drain()
            answer.append(await read_client_frame(reader))

        async with FakeServer(script) as server:
            ws = await WebSocket.connect(server.url, max_message_bytes=max_message_bytes)
            with self.assertRaises(DshError) as caught:
                await ws.receive_text()
            await server.done.wait()
        self.assertEqual(caught.exception.code, "PROTOCOL_ERROR")
        self.assertEqual(answer[0][1], OP_CLOSE)
        self.assertEqual(struct.unpack("!H", answer[0][2][:2])[0], close_code)
        return caught.exception.message

    async def test_framing_errors_close_with_their_code(self) -> None:
        self.assertIn("masked", await self.framing_error(server_frame(OP_TEXT, b"x", masked=True), 1002))
        self.assertIn("UTF-8", await self.framing_error(server_frame(OP_TEXT, b"\xff\xfe"), 1007))
        self.assertIn("over 10 bytes", await self.framing_error(server_frame(OP_TEXT, b"x" * 11), 1009, 10))
        too_big_in_pieces = server_frame(OP_TEXT, b"x" * 6, fin=False) + server_frame(OP_CONTINUATION, b"x" * 6)
        self.assertIn("over 10 bytes", await self.framing_error(too_big_in_pieces, 1009, 10))
        self.assertIn("continuation", await self.framing_error(server_frame(OP_CONTINUATION, b"x"), 1002))
        self.assertIn("control", await self.framing_error(server_frame(OP_PING, b"x", fin=False), 1002))
        self.assertIn("binary", await self.framing_error(server_frame(0x2, b"x"), 1003))


class Rpc(unittest.IsolatedAsyncioTestCase):
    async def test_answers_errors_and_notifications_are_routed(self) -> None:
        async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            def send(message: object) -> None:
                writer.write(server_frame(OP_TEXT, json.dumps(message).encode()))

            async def request() -> Dict[str, Any]:
                _, _, payload = await read_client_frame(reader)
                message: Dict[str, Any] = json.loads(payload)
                return message

            init = await request()
            assert init["method"] == "initialize" and init["params"]["client"] == "dsh-sdk-python", init
            send({"jsonrpc": "2.0", "id": init["id"], "result": {"server": "fake", "version": "0", "protocol": 1, "methods": []}})
            sub = await request()
            assert sub["params"] == {"sessionId": "s1", "fromSeq": 3}, sub
            # Events may come before the subscription's answer.
            send({"jsonrpc": "2.0", "method": "session.event", "params": {"sessionId": "s1", "event": {"seq": 3, "time": 0, "type": "turn_started", "turn": 1}}})
            send({"jsonrpc": "2.0", "method": "session.event", "params": {"sessionId": "other", "event": {"seq": 9, "time": 0, "type": "turn_started", "turn": 1}}})
            send({"jsonrpc": "2.0", "id": sub["id"], "result": {"nextSeq": 3, "liveFrom": 0}})
            send({"jsonrpc": "2.0", "method": "session.lost", "params": {"sessionId": "s1", "from": 4, "to": 10}})
            send({"jsonrpc": "2.0", "method": "session.event", "params": {"sessionId": "s1", "event": {"seq": 10, "time": 0, "type": "closed", "reason": "bye"}}})
            prompt = await request()
            assert prompt["params"] == {"sessionId": "s1", "text": "hi"}, prompt
            send({"jsonrpc": "2.0", "id": prompt["id"], "error": {"code": -32000, "message": "busy", "data": {"code": "TURN_RUNNING", "message": "a turn runs"}}})
            bad = await request()
            send({"jsonrpc": "2.0", "id": bad["id"], "error": {"code": -32601, "message": "Method not found: x"}})
            await writer.drain()
            # The server goes away without a close frame.

        async with FakeServer(script) as server:
            client = await Client.connect(server.url, "t")
            self.assertEqual(client.server and client.server["server"], "fake")
            stream = await client.events("s1", from_seq=3)
            self.assertEqual((stream.next_seq, stream.live_from), (3, 0))
            items = [item async for item in stream]
            self.assertEqual([i["type"] for i in items], ["turn_started", "lost", "closed"])
            self.assertEqual(items[1], {"type": "lost", "from": 4, "to": 10})
            with self.assertRaises(DshError) as caught:
                await client.prompt("s1", "hi")
            self.assertEqual((caught.exception.code, caught.exception.message, caught.exception.rpc_code), ("TURN_RUNNING", "a turn runs", -32000))
            with self.assertRaises(DshError) as caught:
                await client.call("x")
            self.assertEqual((caught.exception.code, caught.exception.rpc_code), ("RPC_METHOD_NOT_FOUND", -32601))
            await server.done.wait()
            with self.assertRaises(DshError) as caught:
                await client.list_sessions()
            self.assertEqual(caught.exception.code, "CONNECTION_CLOSED")
            await client.close()

    async def test_a_lost_connection_ends_streams_with_an_error(self) -> None:
        async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            for _ in range(2):
                _, _, payload = await read_client_frame(reader)
                request = json.loads(payload)
                result: Dict[str, Any] = {"nextSeq": 0, "liveFrom": 0} if request["method"] == "session/subscribe" else {"methods": []}
                writer.write(server_frame(OP_TEXT, json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result}).encode()))
                await writer.drain()

        async with FakeServer(script) as server:
            client = await Client.connect(server.url, "t")
            stream = await client.events("s1")
            with self.assertRaises(DshError) as caught:
                await stream.__anext__()
            self.assertEqual(caught.exception.code, "CONNECTION_CLOSED")
            await client.close()


if __name__ == "__main__":
    unittest.main()
