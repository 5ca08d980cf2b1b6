"""Registry of memory methods: name → ``"module:Class"``, loaded lazily.

Built-in baselines (and our own method ``h2h``) are listed here; plugins join through the entry-point group ``h2hmem.memory``
or are named directly as ``"my_pkg.module:MyMemory"``. Unknown names get a did-you-mean message.
"""

from __future__ import annotations

import difflib
import importlib
from importlib.metadata import entry_points
from typing import Any

BUILTIN: dict[str, str] = {
    "full-text": "h2hmem.memory.full_text._memory:FullTextMemory",
    "naive-rag": "h2hmem.memory.naive_rag._memory:NaiveRAGMemory",
    "a-mem": "h2hmem.memory.amem._memory:AMemMemory",
    "full-mm": "h2hmem.memory.full_mm._memory:FullMMMemory",
    "murag": "h2hmem.memory.murag._memory:MuRAGMemory",
    "ngm": "h2hmem.memory.ngm._memory:NGMMemory",
    "h2h": "h2hmem.memory.h2h._memory:H2HMemory",
    # memory products, each behind its optional extra (pip install 'h2hmem[mem0]', …)
    "mem0": "h2hmem.memory.products.mem0:Mem0Memory",
    "langmem": "h2hmem.memory.products.langmem:LangMemMemory",
    "graphiti": "h2hmem.memory.products.graphiti:GraphitiMemory",
}
ENTRY_POINT_GROUP = "h2hmem.memory"


class UnknownMethodError(LookupError):
    """A method name that is neither built in, nor a plugin, nor ``module:Class``."""


def available_methods() -> dict[str, str]:
    """Every known method name → its ``"module:attr"`` target (built-ins, then entry points).

    Raises:
        ValueError: a plugin registers a name that is already taken.
    """
    out = dict(BUILTIN)
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name in out and out[ep.name] != ep.value:
            raise ValueError(f"plugin method name {ep.name!r} ({ep.value}) clashes with {out[ep.name]}")
        out[ep.name] = ep.value
    return out


def resolve_method(name: str) -> type[Any]:
    """The class behind a method name or a ``"module:Class"`` spec.

    Raises:
        UnknownMethodError: unknown name (with close matches), or a spec that cannot be imported.
    """
    methods = available_methods()
    target = methods.get(name)
    if target is None and ":" in name:
        target = name
    if target is None:
        close = difflib.get_close_matches(name, list(methods), n=3)
        hint = f" Did you mean {', '.join(close)}?" if close else ""
        raise UnknownMethodError(
            f"unknown method {name!r}.{hint} Known: {', '.join(methods)}; or give a plugin as 'package.module:Class'."
        )
    module, _, attr = target.partition(":")
    try:
        obj: Any = importlib.import_module(module)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as e:
        raise UnknownMethodError(f"cannot load method {name!r} from {target!r}: {e}") from e
    for required in ("observe", "answer"):
        if not callable(getattr(obj, required, None)):
            raise UnknownMethodError(f"{target!r} is not a MemorySystem: it has no {required}() method")
    method: type[Any] = obj  # an imported attribute: only its observe/answer are checked, above
    return method


def check_params(cls: type[Any], params: dict[str, Any]) -> None:
    """Refuse parameters the method's constructor does not take, or whose value has the wrong type
    (checked against the type of the parameter's default: a bool, int or float default needs a
    value of that kind; ints are accepted for floats; a ``Literal[...]`` annotation lists the allowed
    values), before any work starts. Value ranges are left to the constructor.

    Raises:
        ValueError: names the method, the unknown parameters and the ones it accepts, or the
            parameter, its default and the value given.
    """
    import inspect

    sig = inspect.signature(cls.__init__)
    if any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values()):
        return
    accepted = [n for n, p in sig.parameters.items() if n not in ("self", "ctx") and p.kind is not p.VAR_POSITIONAL]
    unknown = sorted(set(params) - set(accepted))
    name = getattr(cls, "name", cls.__name__)
    if unknown:
        raise ValueError(
            f"method {name!r} takes no parameter {', '.join(unknown)}; "
            f"its parameters: {', '.join(accepted) or '(none)'}"
        )
    for key, value in params.items():
        choices = _literal_choices(cls, key)
        if choices is not None and value not in choices:
            raise ValueError(
                f"method {name!r} parameter {key}: expected one of {', '.join(map(repr, choices))}, got {value!r}"
            )
        if key in sig.parameters and not _same_kind(sig.parameters[key].default, value):
            default = sig.parameters[key].default
            raise ValueError(
                f"method {name!r} parameter {key}: expected {_KIND[type(default)]} (default {default!r}), got {value!r}"
            )


def _literal_choices(cls: type[Any], key: str) -> tuple[Any, ...] | None:
    """The allowed values of a ``Literal[...]``-annotated constructor parameter, else ``None``."""
    import typing

    try:
        hint = typing.get_type_hints(cls.__init__).get(key)
    except Exception:  # a plugin's unresolvable annotation: leave the check to its constructor
        return None
    return typing.get_args(hint) if typing.get_origin(hint) is typing.Literal else None


_KIND = {bool: "true or false", int: "an integer", float: "a number"}


def _same_kind(default: Any, value: Any) -> bool:
    """Whether ``value`` fits a parameter whose default is ``default`` (only bool/int/float defaults
    are checked; anything else is left to the constructor)."""
    if type(default) is bool:
        return isinstance(value, bool)
    if type(default) is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if type(default) is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return True
