"""Run configuration: everything that decides what a run computes (recorded in the manifest)."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..presets import DEFAULT_PRESET, Preset
from ._selection import Selection

Protocol = Literal["full", "online"]


class RunConfig(BaseModel):
    """Settings of one ``h2hmem run``.

    The default preset ``paper`` makes every method send what the official script sends
    (``docs/protocol.md``); its choices live in the methods as named options (overridable through
    ``method_params``). Protocol ``full`` = observe every session, then ask — the official protocol.
    Unknown keyword arguments are refused (a misspelt ``out=`` must not be silently ignored).
    """

    model_config = ConfigDict(extra="forbid")

    data_root: Path
    split: Literal["dyadic", "multi-party", "all"] = "all"
    method: str = "naive-rag"
    method_params: dict[str, Any] = Field(default_factory=dict)
    """Keyword arguments of the method's constructor (e.g. ``{"top_k": 5}``); a preset option of the method
    given here (e.g. ``{"truncation": "recent"}``) overrides the preset's value for that one choice."""
    preset: Preset = DEFAULT_PRESET
    """``paper`` (default: send what the official scripts send) or ``harmonized`` (one shared answer prompt,
    no head truncation, …); see ``docs/protocol.md``. Each method records its resolved options in the manifest."""
    model: str = "local:smollm2"
    """Answer model spec: ``openai:<model>`` or ``local:smollm2``."""
    base_url: list[str] | None = None
    """OpenAI-compatible server(s); several are served round-robin."""
    build_model: str | None = None
    """Separate memory-construction model (A-Mem's note writer); defaults to ``model``."""
    embedder: str = "minilm"
    protocol: Protocol = "full"
    answer_max_tokens: int = 1024
    """New-token limit of the answer call (published: 1,024); a lower value is a recorded deviation."""
    answer_temperature: float = 0.1
    """Answer temperature (published: 0.1)."""
    out_dir: Path = Path("runs")
    run_id: str | None = None
    limit: int | None = None
    """Answer only the first N questions (dataset order, after ``selection``) — for smoke tests;
    ``selection.sample`` is the representative subset."""
    concurrency: int = 8
    """Maximum model calls in flight (and questions answered at once)."""
    dialogue_concurrency: int = 4
    """Dialogues whose memory is built at the same time."""
    cache_path: Path | None = None
    """Request cache file; ``None`` = the default location."""
    use_cache: bool = True
    refresh_cache: bool = False
    captions_dir: Path | None = None
    """Extra folder with captions written by ``h2hmem caption --captions-dir``."""
    retry_failed: bool = False
    """Redo only questions whose recorded prediction has an error."""
    timeout_s: float = 120.0
    max_retries: int = 5
    retrieval_only: bool = False
    """Record each question's ranked evidence (``MemorySystem.retrieve_evidence``) without calling
    the answer model; memory is still built as usual (A-Mem's notes use the build model)."""
    # --- research workflow (issue 16): which questions, and what this invocation may spend ---
    selection: Selection = Field(default_factory=Selection)
    """Filters and stratified sample applied before ``limit`` (see :mod:`h2hmem.run._selection`)."""
    max_cost_usd: float | None = None
    """Stop cleanly (resumable) before this invocation's model calls would cost more than this (USD)."""
    prices: dict[str, tuple[float, float]] = Field(default_factory=dict)
    """``{model: (USD per 1M input tokens, USD per 1M output tokens)}`` beside the built-in table."""
    transcripts: bool = True
    """Keep every model call in ``transcripts.jsonl.gz`` (prompt, reply, usage; not part of the run's identity)."""

    @field_validator("limit")
    @classmethod
    def _positive(cls, v: int | None) -> int | None:
        if v is not None and v < 1:
            raise ValueError("limit must be at least 1")
        return v

    @field_validator("max_cost_usd")
    @classmethod
    def _non_negative(cls, v: float | None) -> float | None:
        if v is not None and v < 0:
            raise ValueError("max cost must be >= 0 (USD)")
        return v

    @field_validator("concurrency", "dialogue_concurrency")
    @classmethod
    def _at_least_one(cls, v: int) -> int:
        if v < 1:
            raise ValueError("concurrency must be at least 1")
        return v

    @field_validator("run_id")
    @classmethod
    def _one_folder_name(cls, v: str | None) -> str | None:
        # the run directory is out_dir/run_id: a path here would write outside out_dir (or into it)
        if v is not None and v != "" and (v in (".", "..") or "/" in v or "\\" in v or "\0" in v):
            raise ValueError(
                f"run id {v!r} must be a single folder name (no '/', not '.' or '..'); "
                "use --out for the folder holding runs"
            )
        return v

    def default_run_id(self) -> str:
        """Deterministic id from what defines the run, so re-running the same command resumes it."""
        parts = [self.method, self.model, self.split, self.protocol]
        if self.preset != DEFAULT_PRESET:
            parts.append(self.preset)
        if not self.selection.is_empty:
            parts.append(self.selection.slug())
        if self.limit:
            parts.append(f"limit{self.limit}")
        if self.retrieval_only:
            parts.append("retrieval")
        # settings that change answers but are not in the name: a short hash keeps ids readable and distinct
        extra = {
            k: v
            for k, v in self.identity().items()
            if k in ("method_params", "build_model", "embedder", "answer_max_tokens", "answer_temperature")
            and v != _DEFAULT_IDENTITY[k]
        }
        if extra:
            parts.append("h" + hashlib.sha256(json.dumps(extra, sort_keys=True, default=str).encode()).hexdigest()[:8])
        return re.sub(r"[^A-Za-z0-9._-]+", "-", "_".join(parts)).strip("-")

    @property
    def resolved_run_id(self) -> str:
        return self.run_id or self.default_run_id()

    @property
    def run_dir(self) -> Path:
        return self.out_dir / self.resolved_run_id

    def identity(self) -> dict[str, Any]:
        """The settings a resumed run must share with the original (else it is a different run)."""
        identity = {
            "split": self.split,
            "method": self.method,
            "method_params": self.method_params,
            "preset": self.preset,
            "model": self.model,
            "build_model": self.build_model,
            "embedder": self.embedder,
            "protocol": self.protocol,
            "limit": self.limit,
            "answer_max_tokens": self.answer_max_tokens,
            "answer_temperature": self.answer_temperature,
        }
        if not self.selection.is_empty:  # absent when empty: runs recorded before selections still resume
            identity["selection"] = self.selection.recorded()
        if self.retrieval_only:  # only when set, so runs recorded before the option existed keep their identity
            identity["retrieval_only"] = True
        return identity


_DEFAULT_IDENTITY = {
    "method_params": {},
    "build_model": None,
    "embedder": "minilm",
    "answer_max_tokens": 1024,
    "answer_temperature": 0.1,
}
"""Identity values that leave the default run id unchanged (the published settings)."""
