"""`DshError`: every failure the SDK raises."""

from __future__ import annotations

from typing import Any, Optional

#: JSON-RPC's own error codes, as the `code` of an error that carries no
#: dsh code (`data`): a frame the server could not read, a method it does
#: not serve.
RPC_CODES = {
    -32700: "RPC_PARSE_ERROR",
    -32600: "RPC_INVALID_REQUEST",
    -32601: "RPC_METHOD_NOT_FOUND",
    -32602: "RPC_INVALID_PARAMS",
}


class DshError(Exception):
    """A call failed, or the connection did.

    `code` is dsh's stable code (`UNKNOWN_SESSION`, `TURN_RUNNING`, ... from
    `docs/error-codes.md`) when the server sent one; otherwise one of the
    SDK's: `RPC_*` (a JSON-RPC error without a dsh code, `rpc_code` says
    which), `CONNECTION_CLOSED` (the connection ended, or was closed,
    before the answer), `SPAWN_FAILED` (the dsh binary could not be
    started), `CONNECT_FAILED` (no TCP connection), `UNAUTHORIZED` (HTTP
    401: a missing or wrong token), `FORBIDDEN` (HTTP 403: an `Origin`
    the server refuses), `HANDSHAKE_FAILED` (any other refused or
    malformed WebSocket handshake; `status` is the HTTP status when there
    was one), `PROTOCOL_ERROR` (the server broke WebSocket or JSON-RPC
    framing).
    """

    def __init__(
        self,
        code: str,
        message: str,
        *,
        rpc_code: Optional[int] = None,
        status: Optional[int] = None,
        data: Any = None,
    ) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.rpc_code = rpc_code
        self.status = status
        self.data = data

    def copy(self) -> "DshError":
        """The same error as a new exception (one raise per copy keeps
        tracebacks apart)."""
        return DshError(self.code, self.message, rpc_code=self.rpc_code, status=self.status, data=self.data)

    @classmethod
    def from_rpc(cls, error: Any) -> "DshError":
        """The error of a JSON-RPC error object (`{code, message, data?}`)."""
        if not isinstance(error, dict):
            return cls("PROTOCOL_ERROR", f"malformed error object: {error!r}")
        rpc_code = error.get("code")
        message = str(error.get("message", ""))
        data = error.get("data")
        if isinstance(data, dict) and isinstance(data.get("code"), str):
            return cls(
                data["code"],
                str(data.get("message", message)),
                rpc_code=rpc_code if isinstance(rpc_code, int) else None,
                data=data,
            )
        code = RPC_CODES.get(rpc_code, "RPC_ERROR") if isinstance(rpc_code, int) else "RPC_ERROR"
        return cls(
            code,
            message,
            rpc_code=rpc_code if isinstance(rpc_code, int) else None,
            data=data,
        )
