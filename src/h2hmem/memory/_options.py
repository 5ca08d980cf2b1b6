"""Typed method options: one pydantic model per method, filled from the run's preset.

A method declares its options once, as the fields of a :class:`MethodOptions` subclass: the type
(``Literal[...]`` for a fixed set of values), the range (``Field(ge=…, le=…)``), the default and a
one-line doc (``description``). An option whose value differs between the presets is declared with
:func:`preset_option` (its value under ``paper`` and under ``harmonized``); the model's validator
fills every option left out from the row of the preset, through :func:`h2hmem.presets.fill_from_preset`,
the same mechanism as the captioner's and the judge's settings. ``--param NAME=VALUE`` and
``RunConfig.method_params`` are validated against the model: :func:`method_options` turns a
:class:`pydantic.ValidationError` into a :class:`MethodOptionsError` naming the option and what it
accepts.

Shared knobs mean the same in every method that has them: :data:`TopK`, :data:`TopP`,
:data:`DateFormat`, :data:`AttachQuestionImage` (defaults in :mod:`h2hmem.defaults`).
"""

from __future__ import annotations

import typing
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic.fields import FieldInfo

from ..presets import DEFAULT_PRESET, PRESETS, Preset, fill_from_preset

_PRESETS_KEY = "presets"


def preset_option(paper: Any, harmonized: Any, doc: str, **constraints: Any) -> Any:
    """A field whose default depends on the preset: ``paper`` under ``paper``, ``harmonized`` under
    ``harmonized``; ``doc`` is its one-line description; ``constraints`` go to :func:`pydantic.Field`
    (``ge``, ``le``…)."""
    return Field(
        default=paper,
        description=doc,
        json_schema_extra={_PRESETS_KEY: {"paper": paper, "harmonized": harmonized}},
        **constraints,
    )


class MethodOptions(BaseModel):
    """Base of every method's ``Options`` model: frozen, unknown names refused, preset-filled.

    ``preset`` is the preset the per-preset defaults came from; every other field is an option.
    Options given as ``None`` take the preset's value (as with the judge and the captioner).

    Raises:
        pydantic.ValidationError: unknown option, wrong type or value out of range.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    preset: Preset = DEFAULT_PRESET
    """The preset whose defaults filled the options not given."""

    @model_validator(mode="before")
    @classmethod
    def _fill_from_preset(cls, data: Any) -> Any:
        return fill_from_preset(data, cls.preset_table())

    @classmethod
    def preset_table(cls) -> dict[str, dict[str, Any]]:
        """``{preset: {option: value}}`` for every option declared with :func:`preset_option`."""
        table: dict[str, dict[str, Any]] = {p: {} for p in PRESETS}
        for name, info in cls.model_fields.items():
            by_preset = _presets_of(info)
            if by_preset is not None:
                for p in PRESETS:
                    table[p][name] = by_preset[p]
        return table

    @classmethod
    def option_rows(cls) -> list[dict[str, Any]]:
        """One row per option (``preset`` excluded): ``name``, ``type`` (as text), ``paper`` and
        ``harmonized`` (the default under each preset), ``doc``. Used by ``h2hmem methods show`` and
        the docs' option tables."""
        rows = []
        for name, info in cls.model_fields.items():
            if name == "preset":
                continue
            by_preset = _presets_of(info) or {p: info.get_default(call_default_factory=True) for p in PRESETS}
            rows.append(
                {
                    "name": name,
                    "type": type_text(info),
                    "paper": by_preset["paper"],
                    "harmonized": by_preset["harmonized"],
                    "doc": " ".join((info.description or "").split()),  # one line, however the doc was written
                }
            )
        return rows

    def values(self) -> dict[str, Any]:
        """Every option with its resolved value (``preset`` included), as JSON-able values."""
        return self.model_dump(mode="json")


def _presets_of(info: FieldInfo) -> dict[str, Any] | None:
    extra = info.json_schema_extra
    if isinstance(extra, dict) and isinstance(extra.get(_PRESETS_KEY), dict):
        return dict(extra[_PRESETS_KEY])  # type: ignore[arg-type]
    return None


def type_text(info: FieldInfo) -> str:
    """The option's type as a user reads it: ``int >= 1``, ``'head' | 'recent'``, ``float | None``."""
    text = _hint_text(info.annotation)
    bounds = []
    for m in info.metadata:
        for attr, sign in (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<")):
            v = getattr(m, attr, None)
            if v is not None:
                bounds.append(f"{sign} {v}")
    return f"{text} {', '.join(bounds)}" if bounds else text


def _hint_text(hint: Any) -> str:
    origin = typing.get_origin(hint)
    if origin is Literal:
        return " | ".join(repr(a) for a in typing.get_args(hint))
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        return " | ".join(_hint_text(a) for a in typing.get_args(hint))
    if origin is Annotated:
        return _hint_text(typing.get_args(hint)[0])
    if hint is type(None):
        return "None"
    return getattr(hint, "__name__", str(hint))


class MethodOptionsError(ValueError):
    """``--param``/``method_params`` refused by a method's ``Options`` model: the message names the
    method, the option and what it accepts."""


def method_options(method: str, model: type[MethodOptions], params: Mapping[str, Any], preset: str | None) -> Any:
    """``model`` validated from ``params`` under ``preset`` (``None`` = the default preset).

    Raises:
        MethodOptionsError: an unknown option (the message lists the method's options), or a value of
            the wrong type or out of range (the message names the option, its type and the value given).
    """
    data = {**params, "preset": preset or DEFAULT_PRESET}
    if "preset" in params:
        raise MethodOptionsError(f"method {method!r}: the preset is chosen with --preset, not --param preset=…")
    try:
        return model.model_validate(data)
    except ValidationError as e:
        raise MethodOptionsError(options_error_message(method, model, e)) from None


def options_error_message(method: str, model: type[MethodOptions], error: ValidationError) -> str:
    """One clause per refused option: ``method 'naive-rag' option top_k: expected int >= 1, got 'x'``."""
    names = [n for n in model.model_fields if n != "preset"]
    clauses = []
    for err in error.errors():
        loc = ".".join(str(p) for p in err["loc"]) or "?"
        if err["type"] == "extra_forbidden":
            clauses.append(f"method {method!r} has no option {loc}; its options: {', '.join(names) or '(none)'}")
            continue
        if err["loc"] and err["loc"][0] == "preset":
            clauses.append(f"unknown preset {err.get('input')!r}; choose one of: {', '.join(PRESETS)}")
            continue
        field = model.model_fields.get(str(err["loc"][0])) if err["loc"] else None
        accepts = type_text(field) if field is not None else "?"
        msg = err["msg"].removeprefix("Value error, ")
        clauses.append(f"method {method!r} option {loc}: expected {accepts}, got {err.get('input')!r} ({msg})")
    return "; ".join(clauses)


TopK = Annotated[int, Field(ge=1, description="memory units retrieved per question (published: 5)")]
"""The shared ``top_k`` knob (default :data:`h2hmem.defaults.TOP_K`)."""
TopP = Annotated[
    float | None, Field(ge=0.0, le=1.0, description="nucleus sampling of the answer call; None = not sent")
]
"""The shared ``top_p`` knob of the answer call."""
DateFormat = Literal["raw", "iso"]
"""Session dates as written in ``timeline_date`` (``raw``) or as the ISO date."""
AttachQuestionImage = bool
"""Send the question's image as an image part instead of its caption text."""
