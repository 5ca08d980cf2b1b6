"""The paper's published numbers, kept as package data (``published.json``) with their source.

Source: the H2HMem project page, restated in ``docs/baselines.md`` ("Published quality":
LLM-judge weighted average per main category, 2 decimals, judge gpt-4o-mini; "Published
efficiency": seconds of wall time per session / per query).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from ..data import MainCategory


@dataclass(frozen=True)
class PublishedQuality:
    """One published method's LLM-judge weighted average per main category (range 0–1)."""

    method: str
    """The paper's name, e.g. ``"A-Mem"``."""
    scores: dict[MainCategory, float]


@dataclass(frozen=True)
class PublishedEfficiency:
    """One published method's efficiency figures (seconds of wall time)."""

    method: str
    memory_build_per_session_s: float
    retrieval_per_query_s: float
    answer_per_query_s: float


@lru_cache(maxsize=1)
def _data() -> dict[str, Any]:
    return json.loads(resources.files(__package__).joinpath("published.json").read_text(encoding="utf-8"))


def published_source() -> dict[str, str]:
    """``{"source", "judge", "quality_metric", "efficiency_metric"}``: where the numbers come from."""
    d = _data()
    return {
        "source": d["source"],
        "judge": d["judge"],
        "quality_metric": d["quality"]["metric"],
        "efficiency_metric": d["efficiency"]["metric"],
    }


def published_quality() -> list[PublishedQuality]:
    """The six published baselines in the paper's order (Full (Text), Naive RAG, A-Mem, Full (MM),
    MuRAG, NGM) with their judge score per main category."""
    q = _data()["quality"]
    cats = [MainCategory(c) for c in q["columns"]]
    return [PublishedQuality(name, dict(zip(cats, vals))) for name, vals in q["rows"].items()]


def published_efficiency() -> list[PublishedEfficiency]:
    """The six published baselines' efficiency rows, in the paper's order."""
    return [PublishedEfficiency(name, *vals) for name, vals in _data()["efficiency"]["rows"].items()]


def paper_method_name(method: str | None) -> str | None:
    """The paper's name of a registry method name (``"a-mem"`` → ``"A-Mem"``); None if not a baseline."""
    return _data()["method_names"].get(method or "")
