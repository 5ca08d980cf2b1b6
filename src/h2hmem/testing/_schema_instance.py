"""A deterministic instance of a JSON schema: what the mock answers when a request asks for one.

Products ask for structured replies with ``response_format={"type": "json_schema", …}`` (and
function-calling tools, whose ``parameters`` are a JSON schema). The mock must answer with an
instance their own validation accepts. Generators from the ecosystem (``jsf``,
``hypothesis-jsonschema``) draw random values; a mock needs the same reply for the same request
(the request cache and the "second run makes no model call" tests depend on it), so this is a
small deterministic generator for the subset products use:

- ``const``, ``enum`` (the first value), ``type`` (one name or a list; ``"null"`` only when it is
  the sole choice), ``anyOf`` / ``oneOf`` (the first branch that is not ``null``), ``allOf`` (the
  branches merged), ``$ref`` to ``#/$defs/…`` / ``#/definitions/…`` (recursion cut at depth 8 by
  leaving optional properties out and arrays empty where ``minItems`` allows);
- objects: every property (required and optional, so readers of optional fields are exercised);
  ``additionalProperties`` adds nothing;
- arrays: ``max(minItems, 1)`` items (``maxItems`` caps it), ``prefixItems`` honoured;
- strings: ``"mock <property name>"`` fitted to ``minLength`` / ``maxLength``; the formats
  ``date-time``, ``date``, ``time``, ``email``, ``uri``, ``uuid``; a ``pattern`` is met only when
  the default text happens to match (else :class:`SchemaNotSupported`);
- numbers and integers: ``0`` moved into ``minimum`` / ``maximum`` / ``exclusive*`` and onto
  ``multipleOf``; booleans: ``true``.

Everything else (``not``, ``if``/``then``, ``patternProperties`` …) is ignored; tests validate
every generated instance with ``jsonschema`` against the schema it came from.
"""

from __future__ import annotations

import math
import re
from typing import Any

MAX_DEPTH = 8
"""``$ref`` nesting after which optional parts are left out (recursive schemas terminate)."""

_FORMATS = {
    "date-time": "2023-05-08T13:56:00Z",
    "date": "2023-05-08",
    "time": "13:56:00Z",
    "email": "mock@example.com",
    "uri": "https://example.com/mock",
    "uuid": "00000000-0000-4000-8000-000000000000",
}


class SchemaNotSupported(ValueError):
    """The schema uses a construct the generator cannot satisfy (the message names it and its path)."""


def schema_instance(schema: Any) -> Any:
    """A JSON value valid against ``schema`` (a JSON-schema dict; ``True``/``{}`` accept anything).

    The same schema always gives the same value. Raises :class:`SchemaNotSupported` for an
    unresolvable ``$ref`` or a ``pattern`` the default text does not match.
    """
    return _Gen(schema if isinstance(schema, dict) else {}).value(schema, "value", 0, "$")


class _Gen:
    def __init__(self, root: dict[str, Any]):
        self.root = root

    def resolve(self, ref: str, path: str) -> Any:
        if not ref.startswith("#"):
            raise SchemaNotSupported(f"{path}: only local $ref ('#/...') is supported, got {ref!r}")
        node: Any = self.root
        for part in [p for p in ref[1:].split("/") if p]:
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(node, dict) or part not in node:
                raise SchemaNotSupported(f"{path}: $ref {ref!r} does not resolve")
            node = node[part]
        return node

    def value(self, schema: Any, name: str, depth: int, path: str) -> Any:
        if schema is True or schema is None or schema == {}:
            return f"mock {name}"
        if schema is False:
            raise SchemaNotSupported(f"{path}: the schema 'false' accepts no value")
        if not isinstance(schema, dict):
            raise SchemaNotSupported(f"{path}: a schema is an object or a boolean, got {type(schema).__name__}")
        if "$ref" in schema:
            target = self.resolve(schema["$ref"], path)
            rest = {k: v for k, v in schema.items() if k != "$ref"}
            merged = _merge([target, rest]) if rest and isinstance(target, dict) else target
            return self.value(merged, name, depth + 1, path)
        if "const" in schema:
            return schema["const"]
        if isinstance(schema.get("enum"), list) and schema["enum"]:
            return schema["enum"][0]
        if isinstance(schema.get("allOf"), list):
            rest = {k: v for k, v in schema.items() if k != "allOf"}
            return self.value(_merge([*schema["allOf"], rest]), name, depth, path)
        for key in ("anyOf", "oneOf"):
            if isinstance(schema.get(key), list) and schema[key]:
                branches = schema[key]
                branch = next((b for b in branches if not _is_null(b)), branches[0])
                rest = {k: v for k, v in schema.items() if k != key}
                return self.value(_merge([branch, rest]) if rest else branch, name, depth, path)
        kind = _type_of(schema)
        if kind == "object":
            return self.object(schema, depth, path)
        if kind == "array":
            return self.array(schema, name, depth, path)
        if kind == "string":
            return _string(schema, name, path)
        if kind in ("integer", "number"):
            return _number(schema, kind == "integer", path)
        if kind == "boolean":
            return True
        if kind == "null":
            return None
        return f"mock {name}"

    def object(self, schema: dict[str, Any], depth: int, path: str) -> dict[str, Any]:
        props = schema.get("properties") or {}
        required = set(schema.get("required") or [])
        out: dict[str, Any] = {}
        for key, sub in props.items():
            if depth >= MAX_DEPTH and key not in required:
                continue
            out[key] = self.value(sub, key, depth, f"{path}.{key}")
        for key in sorted(required - set(out)):  # required but not described: anything goes
            out[key] = f"mock {key}"
        return out

    def array(self, schema: dict[str, Any], name: str, depth: int, path: str) -> list[Any]:
        low = int(schema.get("minItems") or 0)
        prefix = schema.get("prefixItems") or []
        n = max(low if depth >= MAX_DEPTH else max(low, 1), len(prefix))
        if isinstance(schema.get("maxItems"), int):
            n = min(n, schema["maxItems"])
        items = schema.get("items", {})
        out = []
        for i in range(n):
            sub = prefix[i] if i < len(prefix) else items
            out.append(self.value(sub, _singular(name), depth, f"{path}[{i}]"))
        return out


def _is_null(schema: Any) -> bool:
    return isinstance(schema, dict) and (schema.get("type") == "null" or schema.get("const", 0) is None)


def _type_of(schema: dict[str, Any]) -> str | None:
    kind = schema.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"]
        return kinds[0] if kinds else ("null" if kind else None)
    if isinstance(kind, str):
        return kind
    if "properties" in schema or "required" in schema:
        return "object"
    if "items" in schema or "prefixItems" in schema:
        return "array"
    return None


def _merge(schemas: list[Any]) -> dict[str, Any]:
    """allOf: the keywords of every branch; ``properties`` and ``required`` are united."""
    out: dict[str, Any] = {}
    for s in schemas:
        if not isinstance(s, dict):
            continue
        for k, v in s.items():
            if k == "properties" and isinstance(out.get(k), dict):
                out[k] = {**out[k], **v}
            elif k == "required" and isinstance(out.get(k), list):
                out[k] = [*out[k], *[r for r in v if r not in out[k]]]
            else:
                out[k] = v
    return out


def _singular(name: str) -> str:
    return name[:-1] if name.endswith("s") and len(name) > 1 else name


def _string(schema: dict[str, Any], name: str, path: str) -> str:
    text = _FORMATS.get(str(schema.get("format")), f"mock {name}")
    low = int(schema.get("minLength") or 0)
    if len(text) < low:
        text = text + "x" * (low - len(text))
    if isinstance(schema.get("maxLength"), int):
        text = text[: schema["maxLength"]]
    pattern = schema.get("pattern")
    if isinstance(pattern, str) and re.search(pattern, text) is None:
        raise SchemaNotSupported(f"{path}: cannot generate a string matching pattern {pattern!r}")
    return text


def _number(schema: dict[str, Any], integer: bool, path: str) -> int | float:
    """The number nearest 0 within the bounds, on ``multipleOf`` (and whole for integers)."""

    def num(key: str) -> float | None:
        v = schema.get(key)
        return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None

    low, high, xlow, xhigh = num("minimum"), num("maximum"), num("exclusiveMinimum"), num("exclusiveMaximum")
    step = num("multipleOf") or (1.0 if integer else None)

    def above(v: float) -> float:
        return (math.floor(v / step) + 1) * step if step else v + 0.5

    def below(v: float) -> float:
        return (math.ceil(v / step) - 1) * step if step else v - 0.5

    x = 0.0
    if low is not None and x < low:
        x = low
    if xlow is not None and x <= xlow:
        x = above(xlow)
    if high is not None and x > high:
        x = high
    if xhigh is not None and x >= xhigh:
        x = below(xhigh)
    if step:
        x = math.ceil(x / step - 1e-9) * step
    fits = (
        (low is None or x >= low)
        and (high is None or x <= high)
        and (xlow is None or x > xlow)
        and (xhigh is None or x < xhigh)
    )
    if not fits:
        raise SchemaNotSupported(f"{path}: no {'integer' if integer else 'number'} fits the bounds of the schema")
    return int(round(x)) if integer else x
