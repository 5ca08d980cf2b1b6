"""The OpenAI request bodies the gateway accepts, and their translation into h2hmem's model layer.

A chat request becomes ``(messages, GenerationConfig)`` for :class:`~h2hmem.llm.ChatModel`:

- roles ``system``/``developer`` → system, ``user`` → user, ``assistant`` → assistant (its
  ``tool_calls`` written out as JSON text), ``tool``/``function`` → a user message
  ``Result of tool call <id>: <content>`` (the model layer has no tool roles);
- content parts ``text`` and ``image_url`` with a ``data:image/...;base64,`` URL (written once,
  content-addressed, under the gateway's image folder and sent on as that file, so the cache key
  is the image's SHA-256); an ``http(s)`` image URL is refused (the gateway fetches nothing);
- ``temperature`` (OpenAI's default 1 when absent), ``max_completion_tokens`` or ``max_tokens``,
  ``top_p``, ``seed``; ``response_format`` ``json_object`` → JSON mode, ``json_schema`` → the
  schema (``GenerationConfig.json_schema``).

Refused with 400 (the model layer cannot honour them, and ignoring them would change the
reply silently): ``n`` > 1, ``stop``, ``logprobs``, non-zero ``presence_penalty`` /
``frequency_penalty``, ``audio``/``file`` parts. Other OpenAI fields (``user``, ``metadata``,
``store``, ``parallel_tool_calls``, ``service_tier`` …) do not change the reply and are ignored.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .._atomic import atomic_write_text
from ..llm import ContentPart, GenerationConfig, ImagePart, Message, TextPart
from ._errors import invalid

_DATA_URL = re.compile(r"^data:(image/[A-Za-z0-9.+-]+);base64,(.*)$", re.DOTALL)
_EXTENSIONS = {
    "image/jpeg": ".jpg",
    "image/jpg": ".jpg",
    "image/png": ".png",
    "image/webp": ".webp",
    "image/gif": ".gif",
}
OPENAI_DEFAULT_TEMPERATURE = 1.0
"""What OpenAI uses when a request sends no ``temperature``."""


class _Open(BaseModel):
    model_config = ConfigDict(extra="ignore")


class ImageURL(_Open):
    url: str
    detail: Literal["auto", "low", "high"] | None = None


class TextContent(_Open):
    type: Literal["text"]
    text: str


class ImageContent(_Open):
    type: Literal["image_url"]
    image_url: ImageURL


class OtherContent(_Open):
    type: Literal["input_audio", "file", "refusal"]


Part = Annotated[TextContent | ImageContent | OtherContent, Field(discriminator="type")]


class ToolCallFunction(_Open):
    name: str
    arguments: str


class ToolCall(_Open):
    id: str
    type: Literal["function"] = "function"
    function: ToolCallFunction


class ChatMessage(_Open):
    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[Part] | None = None
    name: str | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None


class FunctionDef(_Open):
    name: str
    description: str | None = None
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})
    strict: bool | None = None


class Tool(_Open):
    type: Literal["function"]
    function: FunctionDef


class NamedFunction(_Open):
    name: str


class NamedToolChoice(_Open):
    type: Literal["function"]
    function: NamedFunction


class JSONSchemaFormat(_Open):
    name: str = "response"
    description: str | None = None
    schema_: dict[str, Any] = Field(alias="schema")
    strict: bool | None = None


class ResponseFormat(_Open):
    type: Literal["text", "json_object", "json_schema"]
    json_schema: JSONSchemaFormat | None = None


class ChatCompletionRequest(_Open):
    """``POST /v1/chat/completions`` body (the fields the gateway reads)."""

    model: str
    messages: list[ChatMessage] = Field(min_length=1)
    temperature: float | None = Field(None, ge=0, le=2)
    top_p: float | None = Field(None, gt=0, le=1)
    max_tokens: int | None = Field(None, ge=1)
    max_completion_tokens: int | None = Field(None, ge=1)
    n: int | None = Field(None, ge=1)
    stream: bool | None = False
    stream_options: dict[str, Any] | None = None
    response_format: ResponseFormat | None = None
    tools: list[Tool] | None = None
    tool_choice: Literal["none", "auto", "required"] | NamedToolChoice | None = None
    seed: int | None = None
    stop: str | list[str] | None = None
    logprobs: bool | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None


class EmbeddingRequest(_Open):
    """``POST /v1/embeddings`` body."""

    model: str
    input: str | list[str] | list[int] | list[list[int]]
    encoding_format: Literal["float", "base64"] = "float"
    dimensions: int | None = Field(None, ge=1)


def parse_body(raw: bytes, model: type[_Open]) -> Any:
    """``raw`` JSON validated as ``model``; raises a 400 :class:`GatewayError` naming the first bad field."""
    try:
        data = json.loads(raw)
    except ValueError as e:
        raise invalid(f"the request body is not valid JSON ({e})") from None
    if not isinstance(data, dict):
        raise invalid("the request body must be a JSON object")
    try:
        return model.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(x) for x in err["loc"] if not str(x).startswith(("function-", "tagged-")))
        raise invalid(f"invalid request: {where or 'body'}: {err['msg']}", param=where or None) from None


def check_supported(req: ChatCompletionRequest) -> None:
    """Refuse (400) the parameters the model layer cannot honour."""
    if req.n not in (None, 1):
        raise invalid(f"n={req.n} is not supported: the gateway returns one choice per request", "n")
    if req.stop:
        raise invalid("'stop' sequences are not supported by h2hmem's model layer", "stop")
    if req.logprobs:
        raise invalid("'logprobs' are not supported by h2hmem's model layer", "logprobs")
    for name in ("presence_penalty", "frequency_penalty"):
        if getattr(req, name):
            raise invalid(f"a non-zero {name!r} is not supported by h2hmem's model layer", name)


def generation_config(req: ChatCompletionRequest, json_schema: dict[str, Any] | None) -> GenerationConfig:
    """The request's generation parameters; ``json_schema`` (``{"name", "schema", …}``) when the
    reply must follow one (``response_format`` ``json_schema``, or an emulated tool call)."""
    fmt = req.response_format.type if req.response_format else "text"
    return GenerationConfig(
        temperature=OPENAI_DEFAULT_TEMPERATURE if req.temperature is None else req.temperature,
        max_tokens=req.max_completion_tokens or req.max_tokens,
        json_mode=fmt != "text" or json_schema is not None,
        json_schema=json.dumps(json_schema, sort_keys=True) if json_schema is not None else None,
        seed=req.seed,
        top_p=req.top_p,
    )


def response_schema(req: ChatCompletionRequest) -> dict[str, Any] | None:
    """The ``json_schema`` object of ``response_format`` as OpenAI sends it on, or None."""
    fmt = req.response_format
    if fmt is None or fmt.type != "json_schema":
        return None
    if fmt.json_schema is None:
        raise invalid("response_format of type 'json_schema' needs a 'json_schema' object", "response_format")
    return fmt.json_schema.model_dump(by_alias=True, exclude_none=True)


def to_messages(req: ChatCompletionRequest, image_dir: Path) -> list[Message]:
    """The request's messages in h2hmem's model (see the module docstring); data-URL images are
    written under ``image_dir``. Raises a 400 :class:`GatewayError` for content it cannot carry."""
    out: list[Message] = []
    for i, m in enumerate(req.messages):
        where = f"messages.{i}"
        if m.role in ("tool", "function"):
            ref = m.tool_call_id or m.name or "?"
            out.append(Message(role="user", content=f"Result of tool call {ref}: {_text_only(m.content, where)}"))
            continue
        role: Literal["system", "user", "assistant"] = (
            "system" if m.role in ("system", "developer") else "assistant" if m.role == "assistant" else "user"
        )
        content = _content(m.content, where, image_dir)
        if m.tool_calls:
            calls = json.dumps(
                [{"id": c.id, "name": c.function.name, "arguments": c.function.arguments} for c in m.tool_calls],
                ensure_ascii=False,
            )
            text = content if isinstance(content, str) else ""
            content = f"{text}\n[tool calls] {calls}".strip()
        out.append(Message(role=role, content=content))
    return out


def _text_only(content: str | list[Any] | None, where: str) -> str:
    if content is None or isinstance(content, str):
        return content or ""
    if any(not isinstance(p, TextContent) for p in content):
        raise invalid(f"{where}: a tool result may hold text parts only", f"{where}.content")
    return "\n".join(p.text for p in content)


def _content(content: str | list[Any] | None, where: str, image_dir: Path) -> str | list[ContentPart]:
    if content is None or isinstance(content, str):
        return content or ""
    parts: list[ContentPart] = []
    for j, p in enumerate(content):
        if isinstance(p, TextContent):
            parts.append(TextPart(text=p.text))
        elif isinstance(p, ImageContent):
            parts.append(save_image(p.image_url, image_dir, f"{where}.content.{j}"))
        else:
            raise invalid(f"{where}.content.{j}: content parts of type {p.type!r} are not supported", where)
    return parts


def save_image(image: ImageURL, image_dir: Path, where: str) -> ImagePart:
    """A data-URL image as an :class:`~h2hmem.llm.ImagePart` over ``image_dir/<sha256><ext>``
    (written once; the folder is created at the first image, private to the user; the file's bytes
    are sent on as they came, ``encoding="raw"``)."""
    m = _DATA_URL.match(image.url)
    if m is None:
        if image.url.startswith(("http://", "https://")):
            raise invalid(
                f"{where}: image URLs are not fetched (the gateway makes no network connection); "
                "send the image as a data URL (data:image/png;base64,...)",
                f"{where}.image_url.url",
            )
        raise invalid(f"{where}: the image URL must be a base64 data URL of an image", f"{where}.image_url.url")
    mime, payload = m.group(1).lower(), m.group(2)
    ext = _EXTENSIONS.get(mime)
    if ext is None:
        raise invalid(f"{where}: image type {mime!r} is not supported (jpeg, png, webp, gif)", f"{where}.image_url.url")
    try:
        data = base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        raise invalid(f"{where}: the image data URL is not valid base64", f"{where}.image_url.url") from None
    digest = hashlib.sha256(data).hexdigest()
    path = image_dir / f"{digest}{ext}"
    if not path.exists():
        image_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        atomic_write_text(path, data)  # a temporary file of its own: two requests with one image may race
    return ImagePart(name=f"{digest[:12]}{ext}", path=path, encoding="raw", detail=image.detail)
