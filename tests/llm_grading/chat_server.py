"""A real HTTP server speaking the chat-completions protocol, on 127.0.0.1, with recorded replies.

``ChatServer`` is a ``ThreadingHTTPServer`` on an ephemeral loopback port. ``POST /v1/chat/completions``
answers with the :class:`Reply` set for the request's ``model`` (status, body, headers; an optional delay
before the headers and between body chunks, for the slow cases). Every request received is kept in
``requests`` (path, headers, JSON body), so a test can check what the site sent and that nothing was sent.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

REPLIES = Path(__file__).with_name("replies")


def recorded(name: str) -> dict:
    """A recorded reply body (``replies/<name>.json``)."""
    return json.loads((REPLIES / f"{name}.json").read_text())


def completion(content: str | None, *, model: str = "grader", refusal: str | None = None,
               finish_reason: str = "stop") -> dict:
    """A chat completion shaped as vLLM's OpenAI-compatible server returns one, with ``content``."""
    body = recorded("vllm_completion")
    body["model"] = model
    body["choices"][0]["message"]["content"] = content
    body["choices"][0]["message"]["refusal"] = refusal
    body["choices"][0]["finish_reason"] = finish_reason
    return body


@dataclass
class Reply:
    """What the server answers: ``status``, a JSON ``body`` (or raw ``raw`` bytes), extra ``headers``;
    ``delay_s`` before the status line, and ``chunks`` pieces sent ``chunk_delay_s`` apart."""

    status: int = 200
    body: dict | None = None
    raw: bytes | None = None
    headers: dict = field(default_factory=dict)
    delay_s: float = 0.0
    chunks: int = 1
    chunk_delay_s: float = 0.0

    def payload(self) -> bytes:
        return self.raw if self.raw is not None else json.dumps(self.body or {}).encode()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass

    def do_POST(self):  # noqa: N802 - http.server's name
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        self.server.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
        model = body.get("model") if isinstance(body, dict) else None
        reply = self.server.replies.get(model) or Reply(404, {"error": {"message": f"The model `{model}` does "
                                                                                   "not exist.", "code": 404}})
        if self.path != "/v1/chat/completions":
            reply = Reply(404, {"detail": "Not Found"})
        time.sleep(reply.delay_s)
        payload = reply.payload()
        try:
            self.send_response(reply.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.end_headers()
            step = max(1, len(payload) // reply.chunks + 1)
            for start in range(0, len(payload), step):
                self.wfile.write(payload[start:start + step])
                self.wfile.flush()
                if reply.chunk_delay_s:
                    time.sleep(reply.chunk_delay_s)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout, size limit): that is the point of those tests


class ChatServer(ThreadingHTTPServer):
    """The server; use as a context manager (it serves in a daemon thread until the block ends)."""

    daemon_threads = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.replies: dict[str, Reply] = {}
        self.requests: list[dict] = []

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def __enter__(self):
        threading.Thread(target=self.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.shutdown()
        self.server_close()
