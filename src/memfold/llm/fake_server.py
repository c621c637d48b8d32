"""A scripted OpenAI-compatible HTTP server on 127.0.0.1, for tests and examples.

It implements ``POST /v1/chat/completions`` and answers each request with the next
scripted :class:`FakeReply`: a normal completion, an HTTP error (429, 500, ...), a body
that is not JSON, or a hang longer than the client's timeout. With
``reject_response_format=True`` it behaves like servers that refuse JSON mode: any request
carrying ``response_format`` gets a 400 without consuming the script.

A ``handler`` sees each chat request first (its JSON body as a dict) and may answer it (a
:class:`FakeReply` or a string) or return None to leave it to the script; this tells
apart calls that share a server, e.g. an agent's chat calls and memfold's extraction
calls. :func:`reject_json_schema_like_llama_cpp` is a handler that answers ``json_schema``
requests exactly as llama-cpp-python's server does.

``POST /v1/embeddings`` answers from ``embed`` (text → vector; by default a deterministic
hash of the text's words, 64 dimensions), or with the next reply queued by
``script_embeddings`` (errors, hangs). Embedding requests are kept apart from chat ones
(``embedding_requests``) and never consume the chat script.

    with FakeOpenAIServer() as server:
        server.script(FakeReply.text('{"newFacts": []}'))
        model = OpenAIChatModel("fake", base_url=server.base_url, api_key_env=None)
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
import struct
import threading
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from memfold.llm._formats import reset_negotiations

__all__ = [
    "LLAMA_CPP_JSON_SCHEMA_ERROR",
    "FakeOpenAIServer",
    "FakeReply",
    "Handler",
    "hashed_embedding",
    "is_extraction_request",
    "reject_json_schema_like_llama_cpp",
]

Embed = Callable[[str], Sequence[float]]
_WORDS = re.compile(r"\w+")


def hashed_embedding(text: str, dimensions: int = 64) -> list[float]:
    """A deterministic unit vector of the text's lower-cased words (each word hashed to
    one dimension): texts sharing words are close, others nearly orthogonal."""
    vector = [0.0] * dimensions
    for word in _WORDS.findall(text.lower()):
        digest = hashlib.sha256(word.encode("utf-8")).digest()
        vector[int.from_bytes(digest[:4], "big") % dimensions] += 1.0
    norm = math.sqrt(sum(v * v for v in vector)) or 1.0
    return [v / norm for v in vector] if any(vector) else [1.0] + [0.0] * (dimensions - 1)


@dataclass(frozen=True, slots=True)
class FakeReply:
    """One scripted answer: an HTTP status, a body, extra headers, an optional hang."""

    status: int = 200
    body: str = ""
    headers: tuple[tuple[str, str], ...] = ()
    hang_seconds: float = 0.0

    @classmethod
    def text(
        cls, content: Any, *, prompt_tokens: int | None = 10, completion_tokens: int = 5
    ) -> FakeReply:
        """A successful completion whose message content is ``content`` (a string or a
        list of content parts); ``prompt_tokens=None`` leaves out the usage block."""
        payload: dict[str, Any] = {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": 0,
            "model": "fake",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
            ],
        }
        if prompt_tokens is not None:
            payload["usage"] = {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            }
        return cls(body=json.dumps(payload))

    @classmethod
    def error(cls, status: int, message: str = "scripted error") -> FakeReply:
        """An HTTP error with an OpenAI-shaped error body; 429 asks for a 10 ms retry."""
        body = json.dumps({"error": {"message": message, "type": "fake_error", "code": status}})
        headers = (("retry-after-ms", "10"),) if status == 429 else ()
        return cls(status=status, body=body, headers=headers)

    @classmethod
    def malformed(cls, body: str = '{"choices": [') -> FakeReply:
        """A 200 whose body is not valid JSON."""
        return cls(body=body)

    @classmethod
    def hang(cls, seconds: float = 5.0) -> FakeReply:
        """Wait ``seconds`` (or until the server stops) before answering."""
        return cls(hang_seconds=seconds, body=FakeReply.text("{}").body)


#: Answers a request (its JSON body) or returns None to leave it to the script.
Handler = Callable[[dict[str, Any]], "FakeReply | str | None"]


@dataclass
class _State:
    script: deque[FakeReply] = field(default_factory=deque)
    requests: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    stopping: threading.Event = field(default_factory=threading.Event)
    reject_response_format: bool = False
    handler: Handler | None = None
    embed: Embed = hashed_embedding
    embedding_script: deque[FakeReply] = field(default_factory=deque)
    embedding_requests: list[dict[str, Any]] = field(default_factory=list)


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet in tests
        return

    def do_POST(self) -> None:
        state = self.server.state
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            request = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            request = {"_unparsed": raw.decode("utf-8", "replace")}
        if self.path.rstrip("/").endswith("/embeddings"):
            self._embeddings(request)
            return
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send(FakeReply.error(404, f"unknown path {self.path}"))
            return
        with state.lock:
            state.requests.append(request)
            handler = state.handler
        answer = _ask(handler, request)
        with state.lock:
            if answer is not None:
                reply = answer
            elif state.reject_response_format and "response_format" in request:
                reply = FakeReply.error(400, "response_format is not supported by this server")
            elif state.script:
                reply = state.script.popleft()
            else:
                reply = FakeReply.error(500, "fake server: the script is exhausted")
        if reply.hang_seconds and state.stopping.wait(reply.hang_seconds):
            return
        self._send(reply)

    def _embeddings(self, request: dict[str, Any]) -> None:
        state = self.server.state
        with state.lock:
            state.embedding_requests.append(request)
            scripted = state.embedding_script.popleft() if state.embedding_script else None
        if scripted is not None:
            if scripted.hang_seconds and state.stopping.wait(scripted.hang_seconds):
                return
            self._send(scripted)
            return
        texts = request.get("input")
        texts = [texts] if isinstance(texts, str) else texts
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            self._send(FakeReply.error(400, "input must be a string or a list of strings"))
            return
        data = []
        for index, text in enumerate(texts):
            vector = [float(v) for v in state.embed(text)]
            if request.get("encoding_format") == "base64":
                packed = struct.pack(f"<{len(vector)}f", *vector)
                encoded: Any = base64.b64encode(packed).decode("ascii")
            else:
                encoded = vector
            data.append({"object": "embedding", "index": index, "embedding": encoded})
        tokens = sum(len(text.split()) for text in texts)
        body = {
            "object": "list",
            "data": data,
            "model": request.get("model", "fake"),
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }
        self._send(FakeReply(body=json.dumps(body)))

    def _send(self, reply: FakeReply) -> None:
        body = reply.body.encode("utf-8")
        try:
            self.send_response(reply.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            for name, value in reply.headers:
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout); nothing to answer


def _ask(handler: Handler | None, request: dict[str, Any]) -> FakeReply | None:
    if handler is None:
        return None
    try:
        answer = handler(request)
    except Exception as exc:  # a broken handler is a visible 500, not a hung client
        return FakeReply.error(500, f"fake server handler raised {type(exc).__name__}: {exc}")
    return FakeReply.text(answer) if isinstance(answer, str) else answer


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    state: _State


#: The body llama-cpp-python's server (0.3.x) answers a ``json_schema`` response format
#: with, as HTTP 500: a request-validation error that names ``response_format``.
LLAMA_CPP_JSON_SCHEMA_ERROR = (
    "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', "
    "'type'), 'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema', "
    "'ctx': {'expected': \"'text' or 'json_object'\"}}\n\n  File \"/usr/lib/python3/"
    'site-packages/llama_cpp/server/app.py", line 376, in create_chat_completion\n    '
    "POST /v1/chat/completions"
)


def reject_json_schema_like_llama_cpp(request: dict[str, Any]) -> FakeReply | None:
    """A handler that answers a ``json_schema`` request exactly as llama-cpp-python's
    server does (HTTP 500, :data:`LLAMA_CPP_JSON_SCHEMA_ERROR`) and leaves every other
    request, ``{"type": "json_object", "schema": ...}`` included, to the script."""
    response_format = request.get("response_format")
    if isinstance(response_format, dict) and response_format.get("type") == "json_schema":
        body = {
            "error": {
                "message": LLAMA_CPP_JSON_SCHEMA_ERROR,
                "type": "internal_server_error",
                "param": None,
                "code": None,
            }
        }
        return FakeReply(status=500, body=json.dumps(body))
    return None


def is_extraction_request(request: dict[str, Any]) -> bool:
    """True for a request memfold's LLM extractor sent (its reply schema is attached, or
    a message holds the prompt's ``<conversation>`` section); False for, e.g., an agent's
    own chat call to the same server."""
    response_format = request.get("response_format")
    if isinstance(response_format, dict):
        named = response_format.get("json_schema")
        if isinstance(named, dict) and named.get("name") == "memfold_reply":
            return True
        if "schema" in response_format:
            return True
    messages = request.get("messages")
    if not isinstance(messages, list):
        return False
    return any(
        isinstance(m, dict) and "<conversation>" in str(m.get("content", "")) for m in messages
    )


class FakeOpenAIServer:
    """Starts on a free port of 127.0.0.1; ``base_url`` ends in ``/v1``. Thread-safe."""

    def __init__(
        self,
        *,
        reject_response_format: bool = False,
        handler: Handler | None = None,
        embed: Embed | None = None,
    ) -> None:
        self._state = _State(reject_response_format=reject_response_format, handler=handler)
        if embed is not None:
            self._state.embed = embed
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    def __enter__(self) -> FakeOpenAIServer:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def start(self) -> None:
        if self._server is not None:
            return
        server = _Server(("127.0.0.1", 0), _Handler)
        server.state = self._state
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        # A new server at this address: what an old one there accepted says nothing.
        reset_negotiations(self.base_url)

    def stop(self) -> None:
        """Release hanging requests, stop serving and close the socket."""
        server, self._server = self._server, None
        if server is None:
            return
        self._state.stopping.set()
        server.shutdown()
        server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    @property
    def base_url(self) -> str:
        if self._server is None:
            raise RuntimeError("FakeOpenAIServer is not started; use it as a context manager")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    @property
    def reject_response_format(self) -> bool:
        return self._state.reject_response_format

    @reject_response_format.setter
    def reject_response_format(self, value: bool) -> None:
        with self._state.lock:
            self._state.reject_response_format = value

    @property
    def handler(self) -> Handler | None:
        return self._state.handler

    @handler.setter
    def handler(self, value: Handler | None) -> None:
        with self._state.lock:
            self._state.handler = value

    def script(self, *replies: FakeReply | str) -> None:
        """Queue replies; a plain string is a successful completion with that text."""
        with self._state.lock:
            for reply in replies:
                self._state.script.append(
                    FakeReply.text(reply) if isinstance(reply, str) else reply
                )

    @property
    def requests(self) -> list[dict[str, Any]]:
        """The JSON bodies received so far (a copy)."""
        with self._state.lock:
            return list(self._state.requests)

    @property
    def pending(self) -> int:
        """Scripted replies not used yet."""
        with self._state.lock:
            return len(self._state.script)

    def script_embeddings(self, *replies: FakeReply) -> None:
        """Queue replies for the next ``/v1/embeddings`` requests (then ``embed`` answers)."""
        with self._state.lock:
            self._state.embedding_script.extend(replies)

    @property
    def embedding_requests(self) -> list[dict[str, Any]]:
        """The JSON bodies of ``/v1/embeddings`` requests received so far (a copy)."""
        with self._state.lock:
            return list(self._state.embedding_requests)
