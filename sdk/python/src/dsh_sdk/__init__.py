"""dsh_sdk: a client for `dsh serve`, dsh's session API (JSON-RPC 2.0 over
stdio or WebSocket). Pure Python, asyncio, no dependencies.

    async with await Client.spawn(dsh="dsh", args=["--model", "echo"]) as client:
        session = await client.create_session()
        events = await client.events(session["sessionId"])
        await client.prompt(session["sessionId"], "echo hello")
        async for event in events: ...

The protocol's types (every result and event as a TypedDict) are in
`dsh_sdk.types`. See README.md for the whole surface.
"""

from .client import DEFAULT_MAX_MESSAGE_BYTES, METHODS, PROTOCOL_VERSION, Client, EventStream
from .errors import DshError
from . import types
from .types import EVENT_TYPES, Decision, DecisionName, Event, PermissionMode, StreamItem

__all__ = [
    "Client",
    "DEFAULT_MAX_MESSAGE_BYTES",
    "Decision",
    "DecisionName",
    "DshError",
    "EVENT_TYPES",
    "Event",
    "EventStream",
    "METHODS",
    "PROTOCOL_VERSION",
    "PermissionMode",
    "StreamItem",
    "types",
]

__version__ = "0.1.0"
