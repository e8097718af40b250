"""A real OpenAI-compatible HTTP server on 127.0.0.1 that replays scripted replies, for LLM tests.

It behaves like `vllm serve`: POST /v1/chat/completions and GET /v1/models, 404 with vLLM's
wording for an unknown model, 400 with vLLM's wording when the prompt exceeds `max_context_tokens`.
Each chat request consumes the next scripted `Reply` (status, content or raw body, delay,
Retry-After); an exhausted script answers 500 so a test that calls too often fails loudly.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self


@dataclass
class Reply:
    content: str | None = None  # the assistant's text (wrapped in a chat.completion)
    status: int = 200
    body: Any = None  # raw JSON body instead (errors); a str is sent as-is
    delay_s: float = 0.0
    retry_after: str | None = None
    completion_tokens: int | None = None


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    t: float = field(default_factory=time.monotonic)


def estimate_tokens(messages: list[dict[str, str]]) -> int:
    # about four characters a token, plus per-message overhead, like a chat template adds
    return sum(len(m.get("content", "")) // 4 + 4 for m in messages)


class ScriptedLLMServer:
    def __init__(self, script: list[Reply] | None = None, *, models: tuple[str, ...] = ("qwen2.5-coder-7b",),
                 max_context_tokens: int = 32768) -> None:
        self.script = list(script or [])
        self.models = models
        self.max_context_tokens = max_context_tokens
        self.requests: list[Seen] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._httpd.block_on_close = False  # a handler sleeping past a client timeout must not block shutdown
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    @property
    def chat_requests(self) -> list[Seen]:
        return [r for r in self.requests if r.path.endswith("/chat/completions")]

    def push(self, *replies: Reply) -> None:
        with self._lock:
            self.script.extend(replies)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def reply_for(self, body: Any) -> Reply:
        """The reply to one chat request: the script's next (a subclass may read the request first)."""
        return self._next()

    def _next(self) -> Reply:
        with self._lock:
            if not self.script:
                return Reply(status=500, body={"error": {"message": "test script exhausted", "type": "InternalError"}})
            return self.script.pop(0)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep pytest output clean
                pass

            def _send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
                data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for k, v in (headers or {}).items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout); that is the point of the test

            def _record(self, body: Any) -> None:
                with server._lock:
                    server.requests.append(Seen(self.command, self.path, dict(self.headers), body))

            def do_GET(self) -> None:
                self._record(None)
                if self.path.rstrip("/") == "/v1/models":
                    data = [{"id": m, "object": "model", "owned_by": "vllm"} for m in server.models]
                    self._send(200, {"object": "list", "data": data})
                else:
                    self._send(404, {"detail": "Not Found"})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = raw.decode(errors="replace")
                self._record(body)
                if self.path.rstrip("/") != "/v1/chat/completions":
                    return self._send(404, {"detail": "Not Found"})
                model = body.get("model") if isinstance(body, dict) else None
                if model not in server.models:
                    return self._send(404, {"object": "error", "message": f"The model `{model}` does not exist.",
                                            "type": "NotFoundError", "param": None, "code": 404})
                prompt = estimate_tokens(body.get("messages", []))
                asked = int(body.get("max_tokens") or 0)
                if prompt + asked > server.max_context_tokens:
                    return self._send(400, {"object": "error", "type": "BadRequestError", "param": None, "code": 400,
                                            "message": f"This model's maximum context length is {server.max_context_tokens} "
                                            f"tokens. However, you requested {prompt + asked} tokens ({prompt} in the "
                                            f"messages, {asked} in the completion). Please reduce the length of the "
                                            "messages or completion."})
                reply = server.reply_for(body)
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                headers = {"Retry-After": reply.retry_after} if reply.retry_after is not None else {}
                if reply.status != 200 or reply.body is not None:
                    return self._send(reply.status, reply.body if reply.body is not None else {}, headers)
                text = reply.content or ""
                completion = reply.completion_tokens if reply.completion_tokens is not None else max(1, len(text) // 4)
                self._send(200, {
                    "id": f"chatcmpl-{len(server.requests)}", "object": "chat.completion", "created": int(time.time()),
                    "model": model,
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                              "total_tokens": prompt + completion},
                }, headers)

        return Handler
