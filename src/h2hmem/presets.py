"""Protocol presets: ``paper`` (default) and ``harmonized``.

``paper`` behaves as the newest official H2HMem scripts do, choice for choice, so published numbers
can be reproduced (``docs/protocol.md``); ``harmonized`` is the corrected protocol that
compares memories on equal terms (one shared answer prompt, no head truncation, strict judge levels).
Each stage (run, caption, judge) resolves a preset into named options of its own and records the
resolved values in its manifest; this module owns only the preset names and the default.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, get_args

Preset = Literal["paper", "harmonized"]
"""The preset names."""

DEFAULT_PRESET: Preset = "paper"
"""Default for ``run``, ``caption`` and ``evaluate``: reproduce the official scripts."""

PRESETS: tuple[str, ...] = get_args(Preset)


def check_preset(name: str) -> Preset:
    """Return ``name`` as a :data:`Preset`.

    Raises:
        ValueError: ``name`` is not one of :data:`PRESETS` (the message lists them).
    """
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; choose one of: {', '.join(PRESETS)}")
    return name  # type: ignore[return-value]


def fill_from_preset(data: Any, table: Mapping[str, Mapping[str, Any]], keep_none: tuple[str, ...] = ()) -> Any:
    """Fill a stage's option mapping from its preset (a pydantic ``mode="before"`` validator's body).

    ``data["preset"]`` (default :data:`DEFAULT_PRESET`) picks the row of ``table`` (preset → option
    → value); options given explicitly win, options given as None take the preset's value (except
    the names in ``keep_none``, for which None is a value). Non-mapping input is returned unchanged.

    Raises:
        ValueError: unknown preset name.
    """
    if not isinstance(data, dict):
        return data
    preset = check_preset(data.get("preset") or DEFAULT_PRESET)
    out = {k: v for k, v in data.items() if v is not None or k in keep_none}
    for name, value in table[preset].items():
        out.setdefault(name, value)
    out["preset"] = preset
    return out
