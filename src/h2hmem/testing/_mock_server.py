"""An OpenAI-compatible HTTP server on 127.0.0.1 for tests and benchmarks.

It is a small asyncio server (``asyncio.start_server`` + the ``h11`` HTTP/1.1 parser, keep-alive
supported) running in a background thread with its own event loop. Plain asyncio rather than
uvicorn/starlette: it needs raw socket control for the injected faults (TCP reset, body cut
short) and per-request overhead stays well under a millisecond, so 64+ concurrent connections
with sleeps (latency) cost nothing but the sleeps.

Endpoints: ``POST /v1/chat/completions``, ``POST /v1/embeddings``, ``GET /v1/models``.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import json
import re
import socket
import struct
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import h11
import numpy as np

from ..llm import count_tokens, truncate_tokens
from ._faults import Fault, Script, ScriptItem
from ._protocols import forced_tool, json_object_reply, mock_answer, structured_reply

Responder = Callable[[dict[str, Any]], "str | Awaitable[str]"]

IMAGE_PART_TOKENS = 85
"""Prompt tokens counted per image part: OpenAI's base cost of one low-detail image (OpenAI
vision pricing docs); only used for the mock's usage figures."""

_WORD = re.compile(r"\w+", re.UNICODE)


def message_text(content: Any) -> str:
    """Text of an OpenAI message ``content`` (a string or a list of parts; text parts joined by newlines)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "\n".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")


def last_user_text(body: dict[str, Any]) -> str:
    for msg in reversed(body.get("messages") or []):
        if isinstance(msg, dict) and msg.get("role") == "user":
            return message_text(msg.get("content"))
    return ""


def default_responder(body: dict[str, Any]) -> str:
    """The default answer, by what the request asks for (see :func:`~h2hmem.testing.structured_reply`):
    a judge prompt of either preset gets valid judgments; a forced tool call an instance of the
    tool's ``parameters`` (the server wraps it as the call's arguments); ``response_format``
    ``json_schema`` an instance of the schema; ``json_object`` the object ``{"answer": A}``;
    anything else the text A = ``"mock-" + sha256(last user message text)[:16]`` (hex)."""
    fmt = body.get("response_format") or {}
    tool = forced_tool(body)
    schema = (
        {"schema": tool[1]}
        if tool is not None
        else fmt.get("json_schema")
        if fmt.get("type") == "json_schema"
        else None
    )
    all_text = "\n".join(message_text(m.get("content")) for m in body.get("messages") or [] if isinstance(m, dict))
    structured = structured_reply(all_text, schema)
    if structured is not None:
        return structured
    answer = mock_answer(last_user_text(body))
    return json_object_reply(answer) if fmt.get("type") == "json_object" else answer


def prompt_tokens(body: dict[str, Any]) -> int:
    """cl100k_base tokens of all message texts plus :data:`IMAGE_PART_TOKENS` per image part."""
    total = 0
    for msg in body.get("messages") or []:
        content = msg.get("content") if isinstance(msg, dict) else None
        total += count_tokens(message_text(content))
        if isinstance(content, list):
            total += IMAGE_PART_TOKENS * sum(1 for p in content if isinstance(p, dict) and p.get("type") == "image_url")
    return total


def hashed_embedding(text: str, dim: int) -> list[float]:
    """Deterministic unit vector: signed feature hashing of the lower-cased words of ``text``
    (so texts sharing words have positive cosine); the empty text maps to the first basis vector."""
    vec = np.zeros(dim, dtype=np.float64)
    for word in _WORD.findall(text.lower()):
        h = hashlib.sha256(word.encode("utf-8")).digest()
        vec[int.from_bytes(h[:4], "little") % dim] += 1.0 if h[4] & 1 else -1.0
    norm = float(np.linalg.norm(vec))
    if norm == 0:
        vec[0] = 1.0
        norm = 1.0
    return (vec / norm).tolist()


class _Reply:
    def __init__(
        self, status: int, payload: Any = None, *, raw: bytes | None = None, headers: Sequence[tuple[str, str]] = ()
    ):
        self.status = status
        self.body = raw if raw is not None else json.dumps(payload).encode("utf-8")
        self.headers = [("content-type", "application/json"), *headers]


class MockOpenAIServer:
    """OpenAI-compatible server on ``127.0.0.1`` (random free port), as a context manager::

        with MockOpenAIServer(latency_s=0.2, script=[Fault.http(500)] * 3) as srv:
            model = load_chat_model("openai:mock", base_url=srv.base_url)

    Args:
        latency_s: seconds every API request waits before replying.
        tokens_per_s: if set, a chat reply also waits ``completion_tokens / tokens_per_s`` seconds.
        responder: ``responder(request_json) -> str`` (or an awaitable) gives the answer text;
            default :func:`default_responder`. If it raises, the reply is HTTP 500.
        script: faults per request (see :class:`~h2hmem.testing.Rule`); replace later with
            :meth:`set_script`.
        embedding_dim: dimension of ``/v1/embeddings`` vectors (request field ``dimensions`` overrides).
        keep_requests: keep every request body in :attr:`requests` (set False for long load tests:
            thousands of full-context prompts take hundreds of MB).
        host, port: where to listen; port 0 (default) takes a free port, read it from :attr:`port`.

    Chat replies honour ``max_tokens`` (answer cut to that many cl100k tokens, ``finish_reason``
    ``"length"``) and report usage: prompt tokens per :func:`prompt_tokens`, completion tokens =
    cl100k tokens of the answer. A request forcing a tool call (``tool_choice`` ``"required"`` or
    naming a function) gets the answer as the arguments of one call of that tool
    (``message.tool_calls``, ``finish_reason`` ``"tool_calls"``); a ``tool_choice`` naming an
    unknown function, or ``stream: true``, gets HTTP 400.

    Attributes (read after or during use): ``calls`` (API requests received, faults included),
    ``requests`` (their JSON bodies, in arrival order), ``endpoints`` (``"chat"``/``"embeddings"``
    per request), ``faults`` (the :class:`Fault` or ``None`` served per request),
    ``in_flight`` / ``max_in_flight`` (concurrent API requests being handled).
    """

    def __init__(
        self,
        latency_s: float = 0.0,
        tokens_per_s: float | None = None,
        responder: Responder | None = None,
        script: Sequence[ScriptItem] | None = None,
        *,
        embedding_dim: int = 64,
        keep_requests: bool = True,
        host: str = "127.0.0.1",
        port: int = 0,
    ):
        self.latency_s = latency_s
        self.keep_requests = keep_requests
        self.tokens_per_s = tokens_per_s
        self.responder: Responder = responder or default_responder
        self.embedding_dim = embedding_dim
        self._script = Script(script)
        self.calls = 0
        self.requests: list[dict[str, Any]] = []
        self.endpoints: list[str] = []
        self.faults: list[Fault | None] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.host = host
        self._listen_port = port
        self.port: int | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.base_events.Server | None = None
        self._thread: threading.Thread | None = None
        self._tasks: set[asyncio.Task] = set()
        self._ready = threading.Event()
        self._error: BaseException | None = None

    # ----- lifecycle -------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        if self.port is None:
            raise RuntimeError("MockOpenAIServer is not running; use it as a context manager or call start()")
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/v1"

    def start(self) -> MockOpenAIServer:
        if self._thread is not None:
            raise RuntimeError("MockOpenAIServer already started")
        self._thread = threading.Thread(target=self._run, name="MockOpenAIServer", daemon=True)
        self._thread.start()
        self._ready.wait(30)
        if self._error is not None:
            self._thread = None
            raise RuntimeError(
                f"MockOpenAIServer failed to start on {self.host}:{self._listen_port}: {self._error}"
            ) from self._error
        return self

    def stop(self) -> None:
        if self._loop is None or self._thread is None:
            return
        if self._loop.is_running():
            self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._thread = None
        self.port = None

    def __enter__(self) -> MockOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def set_script(self, script: Sequence[ScriptItem] | None) -> None:
        """Replace the fault script (thread-safe)."""
        self._script.replace(script)

    def reset_stats(self) -> None:
        self.calls = 0
        self.requests.clear()
        self.endpoints.clear()
        self.faults.clear()
        self.max_in_flight = self.in_flight

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            self._server = loop.run_until_complete(
                asyncio.start_server(self._on_connection, self.host, self._listen_port, backlog=2048)
            )
            self.port = self._server.sockets[0].getsockname()[1]
        except BaseException as exc:  # pragma: no cover - reported to start()
            self._error = exc
            self._ready.set()
            loop.close()
            return
        self._ready.set()
        try:
            loop.run_forever()
        finally:
            self._server.close()
            for task in list(self._tasks):
                task.cancel()
            if self._tasks:
                loop.run_until_complete(asyncio.gather(*self._tasks, return_exceptions=True))
            loop.run_until_complete(self._server.wait_closed())
            loop.close()

    # ----- HTTP plumbing ---------------------------------------------------------------------
    async def _on_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        conn = h11.Connection(h11.SERVER)
        try:
            while True:
                request = await self._next_event(conn, reader)
                if not isinstance(request, h11.Request):
                    break
                chunks = []
                while True:
                    event = await self._next_event(conn, reader)
                    if isinstance(event, h11.Data):
                        chunks.append(bytes(event.data))
                    elif isinstance(event, h11.EndOfMessage):
                        break
                    else:
                        return
                keep_going = await self._serve(conn, writer, request, b"".join(chunks))
                if not keep_going or conn.our_state is h11.MUST_CLOSE:
                    break
                conn.start_next_cycle()
        except (h11.RemoteProtocolError, ConnectionError, asyncio.IncompleteReadError):
            pass
        except asyncio.CancelledError:
            pass
        finally:
            self._tasks.discard(task)
            if not writer.is_closing():
                writer.close()

    @staticmethod
    async def _next_event(conn: h11.Connection, reader: asyncio.StreamReader) -> Any:
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                conn.receive_data(await reader.read(65536))
                continue
            return event

    @staticmethod
    async def _send(conn: h11.Connection, writer: asyncio.StreamWriter, reply: _Reply) -> None:
        headers = [*reply.headers, ("content-length", str(len(reply.body)))]
        writer.write(conn.send(h11.Response(status_code=reply.status, headers=headers)))
        writer.write(conn.send(h11.Data(data=reply.body)))
        writer.write(conn.send(h11.EndOfMessage()))
        await writer.drain()

    async def _serve(
        self, conn: h11.Connection, writer: asyncio.StreamWriter, request: h11.Request, raw: bytes
    ) -> bool:
        method = request.method.decode()
        path = request.target.decode().split("?", 1)[0].rstrip("/")
        if method == "GET" and path in ("/v1/models", "/models"):
            await self._send(
                conn,
                writer,
                _Reply(200, {"object": "list", "data": [{"id": "mock", "object": "model", "owned_by": "h2hmem"}]}),
            )
            return True
        endpoint = {
            "/v1/chat/completions": "chat",
            "/chat/completions": "chat",
            "/v1/embeddings": "embeddings",
            "/embeddings": "embeddings",
        }.get(path)
        if method != "POST" or endpoint is None:
            await self._send(conn, writer, _Reply(404, _error_body(f"no route {method} {path}", "not_found")))
            return True
        try:
            body = json.loads(raw)
            if not isinstance(body, dict):
                raise ValueError("body is not a JSON object")
        except ValueError as exc:
            await self._send(
                conn, writer, _Reply(400, _error_body(f"invalid JSON body: {exc}", "invalid_request_error"))
            )
            return True

        self.calls += 1
        if self.keep_requests:
            self.requests.append(body)
        self.endpoints.append(endpoint)
        fault = self._script.next_fault(endpoint, body)
        self.faults.append(fault)
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            return await self._answer(conn, writer, endpoint, body, fault)
        finally:
            self.in_flight -= 1

    async def _answer(
        self,
        conn: h11.Connection,
        writer: asyncio.StreamWriter,
        endpoint: str,
        body: dict[str, Any],
        fault: Fault | None,
    ) -> bool:
        if self.latency_s > 0:
            await asyncio.sleep(self.latency_s)
        if fault is not None:
            if fault.kind == "reset":
                sock = writer.get_extra_info("socket")
                if sock is not None:  # SO_LINGER 0: close() sends RST instead of FIN
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                writer.transport.abort()
                return False
            if fault.kind == "timeout":
                await asyncio.sleep(fault.delay_s)
            if fault.kind == "http":
                headers = []
                if fault.retry_after is not None:
                    headers.append(("retry-after", fault.retry_after))
                if fault.retry_after_ms is not None:
                    headers.append(("retry-after-ms", str(fault.retry_after_ms)))
                kind = "rate_limit_exceeded" if fault.status == 429 else "server_error"
                await self._send(conn, writer, _Reply(fault.status, _error_body(fault.message, kind), headers=headers))
                return True
        try:
            reply_payload = await (self._chat(body, fault) if endpoint == "chat" else self._embeddings(body))
        except _InvalidRequest as exc:
            await self._send(conn, writer, _Reply(400, _error_body(str(exc), "invalid_request_error")))
            return True
        except Exception as exc:  # the responder failed: say so, as a real server would
            await self._send(conn, writer, _Reply(500, _error_body(f"responder failed: {exc!r}", "server_error")))
            return True
        if fault is not None and fault.kind == "empty_choices":
            reply_payload["choices"] = []
        if fault is not None and fault.kind == "missing_choices":
            reply_payload.pop("choices", None)
        data = json.dumps(reply_payload).encode("utf-8")
        if fault is not None and fault.kind == "malformed_json":
            await self._send(conn, writer, _Reply(200, raw=data[: max(1, len(data) // 2)]))
            return True
        if fault is not None and fault.kind == "truncated_body":
            head = conn.send(
                h11.Response(
                    status_code=200, headers=[("content-type", "application/json"), ("content-length", str(len(data)))]
                )
            )
            writer.write(head + data[: len(data) // 2])
            await writer.drain()
            writer.transport.abort()
            return False
        await self._send(conn, writer, _Reply(200, raw=data))
        return True

    # ----- API semantics ---------------------------------------------------------------------
    async def _chat(self, body: dict[str, Any], fault: Fault | None) -> dict[str, Any]:
        if body.get("stream"):
            raise _InvalidRequest("streaming is not supported by the mock server")
        try:
            tool = forced_tool(body)
        except ValueError as exc:
            raise _InvalidRequest(str(exc)) from None
        text = self.responder(body)
        if inspect.isawaitable(text):
            text = await text
        if not isinstance(text, str):
            raise TypeError(f"responder returned {type(text).__name__}, expected str")
        finish = "stop"
        max_tokens = body.get("max_tokens") or body.get("max_completion_tokens")
        if isinstance(max_tokens, int) and count_tokens(text) > max_tokens:
            text = truncate_tokens(text, max_tokens)
            finish = "length"
        content: str | None = text
        if fault is not None and fault.kind == "finish":
            finish = fault.finish_reason or finish
            if finish == "content_filter":
                content = None
        completion = count_tokens(text) if content is not None else 0
        if self.tokens_per_s:
            await asyncio.sleep(completion / self.tokens_per_s)
        prompt = prompt_tokens(body)
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if tool is not None and content is not None and finish == "stop":
            # a forced tool call: the reply text is the call's arguments
            call = {
                "id": f"call_mock_{self.calls}",
                "type": "function",
                "function": {"name": tool[0], "arguments": text},
            }
            message = {"role": "assistant", "content": None, "tool_calls": [call]}
            finish = "tool_calls"
        return {
            "id": f"chatcmpl-mock-{self.calls}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "mock"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
        }

    async def _embeddings(self, body: dict[str, Any]) -> dict[str, Any]:
        inputs = body.get("input")
        if isinstance(inputs, str):
            inputs = [inputs]
        if not isinstance(inputs, list) or not all(isinstance(t, str) for t in inputs):
            raise ValueError("'input' must be a string or a list of strings")
        dim = int(body.get("dimensions") or self.embedding_dim)
        tokens = sum(count_tokens(t) for t in inputs)
        return {
            "object": "list",
            "model": body.get("model", "mock"),
            "data": [
                {"object": "embedding", "index": i, "embedding": hashed_embedding(t, dim)} for i, t in enumerate(inputs)
            ],
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }


class _InvalidRequest(ValueError):
    """A request the API would refuse with HTTP 400 (the message says why)."""


def _error_body(message: str, kind: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": kind}}
