"""Registry of scorers: name → :class:`~h2hmem.metrics.Scorer` class.

The built-in scorers (``lexical``, ``evidence``, ``turn_evidence``, ``judge``) are listed here;
plugins join through the entry-point group ``h2hmem.scorers`` (``name = "package.module:Class"``)
or, inside one process, :func:`register_scorer`. Unknown names get a did-you-mean message.
"""

from __future__ import annotations

import difflib
import re
import warnings
from importlib.metadata import entry_points

from ._scorer import Scorer
from ._scorer_evidence import EvidenceScorer, TurnEvidenceScorer
from ._scorer_judge import JudgeScorer
from ._scorer_lexical import LexicalScorer

ENTRY_POINT_GROUP = "h2hmem.scorers"
BUILTIN_SCORERS: dict[str, type[Scorer]] = {
    s.name: s for s in (LexicalScorer, EvidenceScorer, TurnEvidenceScorer, JudgeScorer)
}
"""The built-in scorers, in the order they run and appear in ``summary.json``."""
_REGISTERED: dict[str, type[Scorer]] = {}
_NAME = re.compile(r"^[a-z][a-z0-9_-]*$")


class UnknownScorerError(ValueError):
    """A metric name that is neither built in nor registered (the message lists close matches)."""


class ScorerLoadError(ValueError):
    """A registered scorer that cannot be imported or is not a :class:`Scorer` (names the entry point)."""


def _check(cls: object, where: str) -> type[Scorer]:
    if not (isinstance(cls, type) and issubclass(cls, Scorer)):
        raise ScorerLoadError(f"{where} is not a h2hmem.metrics.Scorer subclass")
    if _abstract_methods(cls):
        raise ScorerLoadError(f"{where} leaves abstract methods unimplemented: {', '.join(_abstract_methods(cls))}")
    for attr in ("name", "record_type", "fields"):
        if not hasattr(cls, attr):
            raise ScorerLoadError(f"{where} does not set the class attribute {attr!r}")
    if not _NAME.match(cls.name):
        raise ScorerLoadError(f"{where}: scorer name {cls.name!r} must be lower case letters, digits, '-' or '_'")
    record_fields = getattr(cls.record_type, "model_fields", None)
    if record_fields is not None and cls.record_type.model_config.get("extra") != "allow":
        stray = [f for f in cls.fields if f not in record_fields]
        if stray:  # every mean would be over no value: a table of '–' and n 0, silently
            raise ScorerLoadError(
                f"{where}: fields {stray} are not fields of its record_type {cls.record_type.__name__} "
                f"(its fields: {', '.join(record_fields)})"
            )
    return cls


def _abstract_methods(cls: type) -> list[str]:
    return sorted(getattr(cls, "__abstractmethods__", ()))


def register_scorer(cls: type[Scorer]) -> type[Scorer]:
    """Register ``cls`` under ``cls.name`` in this process (usable as a class decorator).

    Raises:
        ScorerLoadError: not a complete :class:`Scorer`, or a bad name.
        ValueError: the name is taken by another scorer.
    """
    _check(cls, f"{cls.__module__}:{cls.__qualname__}")
    taken = {**BUILTIN_SCORERS, **_REGISTERED}.get(cls.name)
    if taken is not None and taken is not cls:
        raise ValueError(f"scorer name {cls.name!r} is taken by {taken.__module__}:{taken.__qualname__}")
    _REGISTERED[cls.name] = cls
    return cls


def unregister_scorer(name: str) -> None:
    """Drop a scorer registered with :func:`register_scorer` (built-ins and entry points stay)."""
    _REGISTERED.pop(name, None)


class ScorerPluginWarning(UserWarning):
    """A scorer plugin (entry point) that cannot be loaded: left out of the registry; only an
    evaluation that asks for it fails."""


def _entry_point_scorers(taken: dict[str, type[Scorer]]) -> tuple[dict[str, type[Scorer]], dict[str, str]]:
    """``(loaded, broken)``: the entry points' scorers by name, and the name → reason of each one
    that cannot be imported, is not a complete :class:`Scorer`, or names itself otherwise."""
    loaded: dict[str, type[Scorer]] = {}
    broken: dict[str, str] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        where = f"entry point {ep.name!r} = {ep.value!r} (group {ENTRY_POINT_GROUP})"
        try:
            obj = ep.load()
        except Exception as e:  # a broken plugin names itself instead of a bare traceback
            broken[ep.name] = f"cannot load scorer {where}: {type(e).__name__}: {e}"
            continue
        try:
            cls = _check(obj, where)
        except ScorerLoadError as e:
            broken[ep.name] = str(e)
            continue
        if cls.name != ep.name:
            broken[ep.name] = f"{where}: the class is named {cls.name!r}, the entry point {ep.name!r}"
            continue
        if ep.name in taken and taken[ep.name] is not cls:
            raise ValueError(f"plugin scorer name {ep.name!r} ({ep.value}) clashes with a scorer already registered")
        loaded[ep.name] = cls
    return loaded, broken


def _scorers() -> tuple[dict[str, type[Scorer]], dict[str, str]]:
    loaded, broken = _entry_point_scorers(BUILTIN_SCORERS)
    out = {**BUILTIN_SCORERS, **loaded}
    for name, cls in _REGISTERED.items():
        out.setdefault(name, cls)
    return out, {n: r for n, r in broken.items() if n not in out}


_WARNED: set[str] = set()


def _warn_left_out(broken: dict[str, str]) -> None:
    for reason in broken.values():
        if reason not in _WARNED:  # once a process, however many lookups
            _WARNED.add(reason)
            warnings.warn(
                f"{reason}; it is left out (only an evaluation that asks for it fails)", ScorerPluginWarning, 3
            )


def available_scorers() -> dict[str, type[Scorer]]:
    """Every scorer: built-ins, then entry points (``h2hmem.scorers``), then :func:`register_scorer`'s.

    An entry point that cannot be loaded (import error, not a :class:`Scorer`, a name that differs
    from its class's) is left out with a :class:`ScorerPluginWarning` naming it, so one broken
    plugin does not stop evaluations and reports that do not use it (:func:`resolve_scorers`
    refuses it when asked for by name).

    Raises:
        ValueError: a plugin registers a name that is already taken.
    """
    out, broken = _scorers()
    _warn_left_out(broken)
    return out


def resolve_scorers(names: list[str] | tuple[str, ...]) -> list[Scorer]:
    """Instances of the scorers named (and of those each brings along: ``evidence`` brings
    ``turn_evidence``), in registry order.

    Raises:
        UnknownScorerError: an unknown name (with close matches and the known names).
        ScorerLoadError: a name whose plugin cannot be loaded (the reason, naming the entry point).
    """
    known, broken = _scorers()
    asked_broken = [n for n in names if n in broken]
    if asked_broken:
        raise ScorerLoadError("; ".join(broken[n] for n in asked_broken))
    _warn_left_out(broken)
    unknown = [n for n in names if n not in known]
    if unknown:
        close = sorted({c for n in unknown for c in difflib.get_close_matches(n, list(known), n=3)})
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise UnknownScorerError(
            f"unknown metric {', '.join(unknown)}{hint}; known: {', '.join(known)} "
            f"(plugins register under the entry-point group {ENTRY_POINT_GROUP})"
        )
    chosen = set(names)
    return [cls() for name, cls in known.items() if name in chosen or chosen & set(cls.selected_with)]
