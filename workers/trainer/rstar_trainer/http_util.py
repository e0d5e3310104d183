"""A small JSON-over-HTTP server on the standard library (one thread per connection)."""

from __future__ import annotations

import json
import sys
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote

from .errors import RequestError, RstarWorkerError

MAX_BODY = 64 << 20


class JsonServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256


def read_body(h: BaseHTTPRequestHandler):
    n = int(h.headers.get("content-length") or 0)
    if n > MAX_BODY:
        raise RequestError(f"body of {n} bytes is over the {MAX_BODY}-byte limit", "body")
    raw = h.rfile.read(n) if n else b""
    if not raw.strip():
        return {}
    try:
        return json.loads(raw)
    except json.JSONDecodeError as e:
        raise RequestError(f"body is not JSON ({e.msg} at {e.pos})", "body") from e


def send(h: BaseHTTPRequestHandler, status: int, body, content_type: str = "application/json") -> None:
    data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
    h.send_response(status)
    h.send_header("content-type", content_type)
    h.send_header("content-length", str(len(data)))
    h.end_headers()
    if h.command != "HEAD":
        h.wfile.write(data)


def send_error(h: BaseHTTPRequestHandler, e: Exception) -> None:
    if isinstance(e, RstarWorkerError):
        send(h, e.status, {"error": e.to_json()})
    else:
        traceback.print_exc(file=sys.stderr)
        send(h, 500, {"error": {"code": "internal", "message": f"{type(e).__name__}: {e}"}})


def path_parts(h: BaseHTTPRequestHandler) -> list[str]:
    path = h.path.split("?", 1)[0]
    return [unquote(p) for p in path.strip("/").split("/") if p]


class QuietHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass
