// JSON-RPC 2.0 over the server's WebSocket (`/api/ws`, authenticated by
// the HttpOnly cookie the start link set). Reconnects with back-off; the
// owner re-subscribes from the last sequence number it saw (`onopen`).

/** A JSON-RPC error answer, as an exception. */
export class RpcError extends Error {
  constructor(error) {
    super(error && error.message ? error.message : "request failed");
    this.code = error && error.code;
    this.dshCode = error && error.data && error.data.code;
  }
}

/** The connection: `call(method, params)` → Promise of the result. */
export class Rpc {
  /**
   * `handlers`: `onopen()` after each (re)connect and `initialize`,
   * `onclose()` when the socket dropped, `onnotify(method, params)`.
   */
  constructor(handlers) {
    this.handlers = handlers;
    this.nextId = 1;
    this.pending = new Map();
    this.ws = null;
    this.open = false;
    this.delay = 250;
    this.connect();
  }

  connect() {
    const scheme = location.protocol === "https:" ? "wss://" : "ws://";
    const ws = new WebSocket(scheme + location.host + "/api/ws");
    this.ws = ws;
    ws.onopen = async () => {
      this.open = true;
      this.delay = 250;
      try {
        this.info = await this.call("initialize", { client: "dsh-web", protocol: 1 });
      } catch (e) {
        // An old server without `initialize` still serves the rest.
      }
      this.handlers.onopen();
    };
    ws.onmessage = (m) => this.receive(m.data);
    ws.onclose = () => {
      const was = this.open;
      this.open = false;
      for (const { reject } of this.pending.values()) reject(new RpcError({ message: "connection lost" }));
      this.pending.clear();
      if (this.ws === ws) {
        this.handlers.onclose(was);
        setTimeout(() => this.connect(), this.delay);
        this.delay = Math.min(this.delay * 2, 5000);
      }
    };
  }

  receive(data) {
    let msg;
    try {
      msg = JSON.parse(data);
    } catch {
      return;
    }
    if (msg.method) {
      this.handlers.onnotify(msg.method, msg.params || {});
      return;
    }
    const p = this.pending.get(msg.id);
    if (!p) return;
    this.pending.delete(msg.id);
    if (msg.error) p.reject(new RpcError(msg.error));
    else p.resolve(msg.result);
  }

  /** Sends a request; resolves with its result, rejects with RpcError. */
  call(method, params = {}) {
    if (!this.open) return Promise.reject(new RpcError({ message: "not connected" }));
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.ws.send(JSON.stringify({ jsonrpc: "2.0", id, method, params }));
    });
  }
}
