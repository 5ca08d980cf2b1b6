"""Registry of memory methods: name → ``"module:Class"``, loaded lazily.

Built-in baselines (and our own method ``h2h``) are listed here; plugins join through the entry-point group ``h2hmem.memory``
or are named directly as ``"my_pkg.module:MyMemory"``. Unknown names get a did-you-mean message.
Every method is a :class:`~._method.MemoryMethod` subclass.
"""

from __future__ import annotations

import difflib
import importlib
from importlib.metadata import entry_points
from typing import Any

from ._method import MemoryMethod

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
    "cognee": "h2hmem.memory.products.cognee:CogneeMemory",
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


def resolve_method(name: str) -> type[MemoryMethod[Any]]:
    """The :class:`~._method.MemoryMethod` subclass behind a method name or a ``"module:Class"`` spec.

    Raises:
        UnknownMethodError: unknown name (with close matches), a spec that cannot be imported, or a
            class that does not subclass :class:`~._method.MemoryMethod` (a method written for the old
            duck-typed protocol: the message says how to port it).
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
    if not (isinstance(obj, type) and issubclass(obj, MemoryMethod)):
        raise UnknownMethodError(
            f"{target!r} is not a memory method: a method subclasses h2hmem.memory.MemoryMethod and declares "
            "its options as an Options model (a class with only observe()/answer() follows the old protocol; "
            "see docs/custom-memory.md)"
        )
    if getattr(obj, "__abstractmethods__", None):
        missing = ", ".join(sorted(obj.__abstractmethods__))
        raise UnknownMethodError(f"{target!r} does not implement {missing}")
    return obj
