"""Tool calls on a model layer without them: the call is asked for as structured output.

h2hmem's :class:`~h2hmem.llm.ChatModel` returns text, so the gateway emulates OpenAI function
calling with a JSON schema (the same thing ``instructor``'s JSON mode and llama.cpp's grammar
do): the tool definitions go into the system message, the reply must follow a schema built from
the tools' ``parameters``, and the reply is handed back as ``message.tool_calls``:

- a **forced** call (``tool_choice`` naming a function, or ``"required"`` with one tool): the
  reply is the arguments object of that function (schema = its ``parameters``);
- ``"required"`` with several tools: the reply is ``{"name": <one of them>, "arguments": {...}}``;
- ``"auto"`` (or no ``tool_choice``): as above, or ``{"content": "<text>"}`` to answer in text;
- ``"none"``: the tools are left out and the model answers in text.

One call per reply (``parallel_tool_calls`` is not honoured). A reply that does not parse is
returned as it came: for a forced call as the call's ``arguments`` (the client's own validation
reports it, as with a real model's malformed arguments), otherwise as text content.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

from ..llm import Message, TextPart
from ._errors import invalid
from ._wire import ChatCompletionRequest, FunctionDef, NamedToolChoice

_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.IGNORECASE)


@dataclass(frozen=True)
class ToolPlan:
    """How one request's tools are asked for and read back."""

    functions: dict[str, FunctionDef]
    forced: str | None
    """The function whose arguments the reply is, or None (the reply names its function)."""
    allow_text: bool
    schema: dict[str, Any]
    """The ``json_schema`` object (``{"name", "schema"}``) the reply must follow."""
    instruction: str


def plan_tools(req: ChatCompletionRequest) -> ToolPlan | None:
    """The tool plan of ``req``, or None when it asks for no tool call.

    Raises a 400 :class:`GatewayError` when ``tool_choice`` names an unknown function, or tools
    come with a ``json_schema`` response format (one structure per reply).
    """
    if not req.tools or req.tool_choice == "none":
        return None
    if req.response_format is not None and req.response_format.type == "json_schema":
        raise invalid("tools and a 'json_schema' response_format cannot be combined on this gateway", "tools")
    functions = {t.function.name: t.function for t in req.tools}
    choice = req.tool_choice
    if isinstance(choice, NamedToolChoice):
        if choice.function.name not in functions:
            raise invalid(
                f"tool_choice names function {choice.function.name!r}, which is not in 'tools'", "tool_choice"
            )
        return _forced(functions, choice.function.name)
    if choice == "required" and len(functions) == 1:
        return _forced(functions, next(iter(functions)))
    allow_text = choice != "required"
    branches: list[dict[str, Any]] = [
        {
            "type": "object",
            "properties": {"name": {"const": name}, "arguments": f.parameters},
            "required": ["name", "arguments"],
            "additionalProperties": False,
        }
        for name, f in functions.items()
    ]
    if allow_text:
        branches.append(
            {
                "type": "object",
                "properties": {"content": {"type": "string"}},
                "required": ["content"],
                "additionalProperties": False,
            }
        )
    listing = "\n".join(
        f"- {name}: {f.description or '(no description)'}; arguments schema: {json.dumps(f.parameters)}"
        for name, f in functions.items()
    )
    reply = 'Reply with only a JSON object {"name": <function name>, "arguments": <its arguments>} to call one'
    instruction = f"You can call these functions:\n{listing}\n{reply}" + (
        ' or {"content": "<your answer>"} to answer without calling a function.' if allow_text else "."
    )
    return ToolPlan(functions, None, allow_text, {"name": "tool_call", "schema": {"anyOf": branches}}, instruction)


def _forced(functions: dict[str, FunctionDef], name: str) -> ToolPlan:
    f = functions[name]
    about = f": {f.description}" if f.description else ""
    instruction = (
        f"Call the function {name}{about}\nReply with only a JSON object of its arguments, following this JSON "
        f"schema:\n{json.dumps(f.parameters)}"
    )
    schema: dict[str, Any] = {"name": name, "schema": f.parameters}
    if f.strict is not None:
        schema["strict"] = f.strict
    return ToolPlan(functions, name, False, schema, instruction)


def with_instruction(messages: list[Message], instruction: str) -> list[Message]:
    """``messages`` with ``instruction`` appended to the first system message (or as a new first one)."""
    for i, m in enumerate(messages):
        if m.role == "system":
            content = (
                f"{m.content}\n\n{instruction}"
                if isinstance(m.content, str)
                else [*m.content, TextPart(text=f"\n\n{instruction}")]
            )
            return [*messages[:i], Message(role="system", content=content), *messages[i + 1 :]]
    return [Message(role="system", content=instruction), *messages]


def read_tool_reply(plan: ToolPlan, text: str) -> tuple[str | None, list[dict[str, Any]] | None]:
    """``(content, tool_calls)`` of the OpenAI reply message for the model's reply ``text``."""
    body = _FENCE.sub("", text.strip())
    if plan.forced is not None:
        return None, [_call(plan.forced, body)]
    try:
        data = json.loads(body)
    except ValueError:
        data = None
    if isinstance(data, dict) and data.get("name") in plan.functions and "arguments" in data:
        args = data["arguments"]
        return None, [_call(data["name"], args if isinstance(args, str) else json.dumps(args, ensure_ascii=False))]
    if isinstance(data, dict) and isinstance(data.get("content"), str) and plan.allow_text:
        return data["content"], None
    return text, None


def _call(name: str, arguments: str) -> dict[str, Any]:
    # deterministic id: a cached reply gives the same call id again
    digest = hashlib.sha256(f"{name}\0{arguments}".encode()).hexdigest()[:24]
    return {"id": f"call_{digest}", "type": "function", "function": {"name": name, "arguments": arguments}}
