"""The gateway's HTTP routes (FastAPI): chat completions, embeddings and the model list.

Routes are served under ``/v1`` and, for clients configured without it, at the root as well.
Every error is OpenAI error JSON (:mod:`._errors`); bad input is a 400 naming the field.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import numpy as np
from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from ..llm import ChatResult, count_tokens
from ._core import GatewayCore
from ._errors import GatewayError, invalid
from ._tags import TAG_HEADER, TagError, parse_tag_header
from ._tools import plan_tools, read_tool_reply, with_instruction
from ._wire import (
    ChatCompletionRequest,
    EmbeddingRequest,
    check_supported,
    generation_config,
    parse_body,
    response_schema,
    to_messages,
)

log = logging.getLogger(__name__)


def build_app(gw: GatewayCore) -> FastAPI:
    """The FastAPI application serving ``gw``'s model and embedder."""
    app = FastAPI(title="h2hmem model gateway", docs_url=None, redoc_url=None, openapi_url=None)
    router = APIRouter()

    @router.get("/models")
    async def models(request: Request) -> dict[str, Any]:
        _tag(gw, request)  # an unknown tag path is a 404 here too
        return {"object": "list", "data": [_model_card(m) for m in gw.model_ids()]}

    @router.get("/models/{model_id:path}")
    async def model(model_id: str, request: Request) -> dict[str, Any]:
        _tag(gw, request)
        if model_id not in gw.model_ids():
            raise GatewayError(404, f"model {model_id!r} is not served here", code="model_not_found", param="model")
        return _model_card(model_id)

    @router.post("/chat/completions")
    async def chat_completions(request: Request) -> Response:
        req = parse_body(await request.body(), ChatCompletionRequest)
        tag = _tag(gw, request)
        check_supported(req)
        plan = plan_tools(req)
        messages = await asyncio.to_thread(to_messages, req, gw.image_dir)
        schema = response_schema(req)
        if plan is not None:
            messages, schema = with_instruction(messages, plan.instruction), plan.schema
        config = generation_config(req, schema)
        result = await gw.call_chat(messages, config, tag, requested_model=req.model)
        content, tool_calls = read_tool_reply(plan, result.text) if plan is not None else (result.text, None)
        finish = "tool_calls" if tool_calls else (result.finish_reason or "stop")
        reply = _Completion(req.model, content, tool_calls, finish, result)
        if req.stream:
            include_usage = bool((req.stream_options or {}).get("include_usage"))
            return StreamingResponse(
                reply.chunks(include_usage), media_type="text/event-stream", headers=_cache_header(result)
            )
        return JSONResponse(reply.body(), headers=_cache_header(result))

    @router.post("/embeddings")
    async def embeddings(request: Request) -> Response:
        req = parse_body(await request.body(), EmbeddingRequest)
        tag = _tag(gw, request)
        texts = [req.input] if isinstance(req.input, str) else req.input
        if not texts:
            raise invalid("'input' is empty", "input")
        if not all(isinstance(t, str) for t in texts):
            raise invalid("'input' must be text: token arrays are not supported", "input")
        vectors = await gw.call_embed([str(t) for t in texts], tag, dimensions=req.dimensions)
        tokens = sum(count_tokens(str(t)) for t in texts)
        data = [
            {"object": "embedding", "index": i, "embedding": _encode(v, req.encoding_format)}
            for i, v in enumerate(vectors)
        ]
        return JSONResponse(
            {
                "object": "list",
                "model": req.model,
                "data": data,
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            }
        )

    app.include_router(router, prefix="/v1")
    app.include_router(router, prefix="/t/{tag_token}/v1")  # ModelGateway.tagged_base_url
    app.include_router(router)

    @app.exception_handler(GatewayError)
    async def on_gateway_error(request: Request, exc: GatewayError) -> JSONResponse:
        if exc.status < 500:
            gw.stats.rejected += exc.status != 429
        return JSONResponse(exc.body(), status_code=exc.status, headers=exc.headers)

    @app.exception_handler(StarletteHTTPException)
    async def on_http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        message = f"no route {request.method} {request.url.path}" if exc.status_code in (404, 405) else str(exc.detail)
        err = GatewayError(exc.status_code, message, code="not_found" if exc.status_code == 404 else None)
        return JSONResponse(err.body(), status_code=exc.status_code)

    @app.exception_handler(Exception)
    async def on_bug(request: Request, exc: Exception) -> JSONResponse:
        log.exception("model gateway: unexpected error serving %s %s", request.method, request.url.path)
        err = GatewayError(500, f"internal gateway error: {type(exc).__name__}: {exc}", type="server_error")
        return JSONResponse(err.body(), status_code=500)

    return app


def _tag(gw: GatewayCore, request: Request) -> dict[str, Any]:
    """The request's tag: the one registered for its ``/t/<token>/v1`` path, updated by its header."""
    base: dict[str, Any] = {}
    token = request.path_params.get("tag_token")
    if token is not None:
        if token not in gw.url_tags:
            raise GatewayError(404, f"unknown tag path /t/{token}/v1", code="not_found")
        base = gw.url_tags[token]
    try:
        return {**base, **parse_tag_header(request.headers.get(TAG_HEADER))}
    except TagError as e:
        raise invalid(str(e), TAG_HEADER) from None


def _model_card(model_id: str) -> dict[str, Any]:
    return {"id": model_id, "object": "model", "created": 0, "owned_by": "h2hmem"}


def _cache_header(result: ChatResult) -> dict[str, str]:
    return {"x-h2hmem-cached": "true" if result.cached else "false"}


def _encode(vector: np.ndarray, fmt: str) -> list[float] | str:
    """A vector as OpenAI sends it: a list of floats, or base64 of little-endian float32."""
    if fmt == "base64":
        return base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii")
    return [float(x) for x in vector]


class _Completion:
    """One chat completion, as a JSON body or as server-sent-event chunks."""

    def __init__(
        self,
        model: str,
        content: str | None,
        tool_calls: list[dict[str, Any]] | None,
        finish: str,
        result: ChatResult,
    ):
        self.id = f"chatcmpl-h2hmem-{uuid.uuid4().hex[:24]}"
        self.created = int(time.time())
        self.model, self.content, self.tool_calls, self.finish = model, content, tool_calls, finish
        u = result.usage
        self.usage = {
            "prompt_tokens": u.prompt_tokens,
            "completion_tokens": u.completion_tokens,
            "total_tokens": u.prompt_tokens + u.completion_tokens,
        }

    def _head(self, kind: str) -> dict[str, Any]:
        return {"id": self.id, "object": kind, "created": self.created, "model": self.model, "system_fingerprint": None}

    def body(self) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": self.content, "refusal": None}
        if self.tool_calls:
            message["tool_calls"] = self.tool_calls
        choice = {"index": 0, "message": message, "finish_reason": self.finish, "logprobs": None}
        return {**self._head("chat.completion"), "choices": [choice], "usage": self.usage}

    async def chunks(self, include_usage: bool) -> AsyncIterator[str]:
        for data in self._events(include_usage):
            yield f"data: {json.dumps(data, ensure_ascii=False)}\n\n"
        yield "data: [DONE]\n\n"

    def _events(self, include_usage: bool) -> Iterator[dict[str, Any]]:
        delta: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            delta["tool_calls"] = [{"index": i, **c} for i, c in enumerate(self.tool_calls)]
        head = self._head("chat.completion.chunk")
        yield {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": None, "logprobs": None}]}
        yield {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": self.finish, "logprobs": None}]}
        if include_usage:
            yield {**head, "choices": [], "usage": self.usage}
