"""Preset options: every choice where the ``paper`` and ``harmonized`` presets differ, by name.

A method lists its choices as :class:`PresetOption` rows (the value under each preset and what it
means); :func:`resolve_options` turns the run's preset plus the user's overrides (``--param
NAME=VALUE``) into the resolved values, which the method reports in ``describe()["options"]`` and
the runner records in the manifest. ``docs/protocol.md`` lists every option with its source.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..presets import DEFAULT_PRESET, check_preset


@dataclass(frozen=True)
class PresetOption:
    """One named choice of a method.

    Attributes:
        name: the option's name, also the constructor parameter that overrides it.
        paper: value under the preset ``paper`` (what the official script does).
        harmonized: value under the preset ``harmonized``.
        doc: one line: what the option decides.
        choices: allowed values, or ``None`` for free values (numbers, ``None``).
    """

    name: str
    paper: Any
    harmonized: Any
    doc: str
    choices: tuple[Any, ...] | None = None

    def default(self, preset: str) -> Any:
        """The value under ``preset``."""
        return self.paper if check_preset(preset) == "paper" else self.harmonized


def resolve_options(
    method: str, table: Sequence[PresetOption], preset: str | None, given: Mapping[str, Any]
) -> dict[str, Any]:
    """Resolved value of every option in ``table``: ``given[name]`` when it is not ``None``, else the preset's.

    Args:
        method: method name, for error messages.
        table: the method's options.
        preset: ``"paper"`` or ``"harmonized"`` (``None`` = :data:`~h2hmem.presets.DEFAULT_PRESET`).
        given: explicit values by option name (``None`` = not given).

    Returns:
        ``{name: value}`` in table order.

    Raises:
        ValueError: unknown preset, an option name not in ``table``, or a value outside ``choices``.

    Example::

        >>> t = [PresetOption("truncation", "head", "recent", "which turns survive", ("head", "recent"))]
        >>> resolve_options("full-text", t, "paper", {"truncation": None})
        {'truncation': 'head'}
    """
    preset = check_preset(preset or DEFAULT_PRESET)
    names = {o.name for o in table}
    unknown = sorted(k for k in given if k not in names)
    if unknown:
        raise ValueError(f"{method}: unknown option {', '.join(unknown)}; its options: {', '.join(sorted(names))}")
    out: dict[str, Any] = {}
    for opt in table:
        value = given.get(opt.name)
        value = opt.default(preset) if value is None else value
        if opt.choices is not None and value not in opt.choices:
            raise ValueError(
                f"{method} option {opt.name}: expected one of {', '.join(map(repr, opt.choices))}, got {value!r}"
            )
        out[opt.name] = value
    return out


def options_table(table: Sequence[PresetOption]) -> list[dict[str, Any]]:
    """The table as plain rows (name, paper, harmonized, doc) for docs and ``describe()``."""
    return [{"name": o.name, "paper": o.paper, "harmonized": o.harmonized, "doc": o.doc} for o in table]
