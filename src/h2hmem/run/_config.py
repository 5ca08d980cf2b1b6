"""Run configuration: everything that decides what a run computes (recorded in the manifest).

:class:`RunConfig` groups its settings by what they configure — :class:`AnswerGeneration`
(``generation``), :class:`RunModels` (``models``), :class:`Execution` (``execution``) and
:class:`~h2hmem.run.Selection` (``selection``) — beside the top-level settings that name the run
(data, split, method, preset, protocol, limit, …). Settings are read from their group
(``config.models.model``, ``config.execution.concurrency``). As *input*, the flat names of the
command line and the manifest (``RunConfig(data_root=..., model=..., concurrency=...)``, a sweep's
``[run]`` table) are routed into their group (:data:`FLAT_FIELDS`). The manifest records the flat
form (:meth:`RunConfig.recorded`), and the run id and identity of a configuration do not depend on
the grouping.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .. import defaults
from ..llm import valid_price
from ..presets import DEFAULT_PRESET, Preset
from ._selection import Selection

Protocol = Literal["full", "online"]


class AnswerGeneration(BaseModel):
    """Generation settings of the answer call (defaults: :mod:`h2hmem.defaults`, the published ones)."""

    model_config = ConfigDict(extra="forbid")

    temperature: float = Field(defaults.ANSWER_TEMPERATURE, ge=0.0, le=2.0)
    """Answer temperature (published: 0.1), 0–2 (the range OpenAI's API accepts)."""
    max_tokens: int = Field(defaults.ANSWER_MAX_TOKENS, ge=1)
    """New-token limit of the answer call (published: 1,024), at least 1; a lower value is a recorded deviation."""


class RunModels(BaseModel):
    """Which models a run calls, and where."""

    model_config = ConfigDict(extra="forbid")

    model: str = defaults.ANSWER_MODEL
    """Answer model spec: ``openai:<model>`` or ``local:smollm2`` (:func:`h2hmem.llm.check_model_spec`;
    checked when the runner loads the model: a chat model passed to ``run_benchmark`` is recorded
    under this name, whatever it is)."""
    base_url: list[str] | None = None
    """OpenAI-compatible server(s); several are served round-robin."""
    build_model: str | None = None
    """Separate memory-construction model (A-Mem's note writer); defaults to ``model``."""
    embedder: str = defaults.EMBEDDER
    """Text embedder spec: ``minilm`` or ``openai:<model>``."""

    @field_validator("base_url", mode="before")
    @classmethod
    def _one_url_is_a_list(cls, v: object) -> object:
        """``base_url="http://…"`` is the one-server list ``["http://…"]`` (as ``--base-url`` given once)."""
        return [v] if isinstance(v, str) else v


class Execution(BaseModel):
    """How one invocation is carried out: parallelism, timeouts, cache, spending (not the run's identity)."""

    model_config = ConfigDict(extra="forbid")

    concurrency: int = defaults.CONCURRENCY
    """Maximum calls through the answer model in flight (``run/_slots.py``); twice as many questions are
    answered at once, the rest preparing theirs."""
    dialogue_concurrency: int = defaults.DIALOGUE_CONCURRENCY
    """Dialogues whose memory is built at the same time."""
    cache_path: Path | None = None
    """Request cache file; ``None`` = the default location."""
    use_cache: bool = True
    refresh_cache: bool = False
    retry_failed: bool = False
    """Redo only questions whose recorded prediction has an error."""
    timeout_s: float = defaults.TIMEOUT_S
    """Seconds one model call may take before it is retried."""
    max_retries: int = defaults.MAX_RETRIES
    """Retries of a failed model call."""
    max_cost_usd: float | None = None
    """Stop cleanly (resumable) before this invocation's model calls would cost more than this (USD)."""
    prices: dict[str, tuple[float, float]] = Field(default_factory=dict)
    """``{model: (USD per 1M input tokens, USD per 1M output tokens)}`` beside the built-in table."""
    transcripts: bool = True
    """Keep every model call in ``transcripts.jsonl.gz`` (prompt, reply, usage; not part of the run's identity)."""

    @field_validator("prices")
    @classmethod
    def _finite_prices(cls, v: dict[str, tuple[float, float]]) -> dict[str, tuple[float, float]]:
        bad = [f"{k}={a}/{b}" for k, (a, b) in v.items() if not valid_price((a, b))]
        if bad:
            raise ValueError(f"prices must be finite and not negative (USD per million tokens), got {', '.join(bad)}")
        return v

    @field_validator("max_cost_usd")
    @classmethod
    def _non_negative(cls, v: float | None) -> float | None:
        if v is not None and (math.isnan(v) or v < 0):  # NaN compares false: a limit that never stops
            raise ValueError("max cost must be >= 0 (USD)")
        return v

    @field_validator("concurrency", "dialogue_concurrency")
    @classmethod
    def _at_least_one(cls, v: int) -> int:
        if v < 1:
            raise ValueError("concurrency must be at least 1")
        return v


FLAT_FIELDS: dict[str, tuple[str, str]] = {
    "model": ("models", "model"),
    "base_url": ("models", "base_url"),
    "build_model": ("models", "build_model"),
    "embedder": ("models", "embedder"),
    "answer_max_tokens": ("generation", "max_tokens"),
    "answer_temperature": ("generation", "temperature"),
    **{name: ("execution", name) for name in Execution.model_fields},
}
"""Flat setting name (as in the manifest and on the command line) → (group, name in the group)."""


class RunConfig(BaseModel):
    """Settings of one ``h2hmem run``.

    The default preset ``paper`` makes every method send what the official script sends
    (``docs/protocol.md``); its choices live in the methods as named options (overridable through
    ``method_params``). Protocol ``full`` = observe every session, then ask — the official protocol.
    Unknown keyword arguments are refused (a misspelt ``out=`` must not be silently ignored), and so
    is one setting given both flat and in its group (``concurrency=2, execution={"concurrency": 3}``).
    Defaults come from :mod:`h2hmem.defaults`.
    """

    model_config = ConfigDict(extra="forbid")

    data_root: Path
    split: Literal["dyadic", "multi-party", "all"] = defaults.SPLIT
    method: str = defaults.METHOD
    method_params: dict[str, Any] = Field(default_factory=dict)
    """Keyword arguments of the method's constructor (e.g. ``{"top_k": 5}``); a preset option of the method
    given here (e.g. ``{"truncation": "recent"}``) overrides the preset's value for that one choice."""
    preset: Preset = DEFAULT_PRESET
    """``paper`` (default: send what the official scripts send) or ``harmonized`` (one shared answer prompt,
    no head truncation, …); see ``docs/protocol.md``. Each method records its resolved options in the manifest."""
    protocol: Protocol = defaults.PROTOCOL
    generation: AnswerGeneration = Field(default_factory=AnswerGeneration)
    """The answer call's temperature and token limit."""
    models: RunModels = Field(default_factory=RunModels)
    """Answer model, servers, build model and embedder."""
    execution: Execution = Field(default_factory=Execution)
    """Parallelism, timeouts, retries, cache, spending limit and transcripts of this invocation."""
    out_dir: Path = defaults.RUNS_DIR
    run_id: str | None = None
    limit: int | None = None
    """Answer only the first N questions (dataset order, after ``selection``) — for smoke tests;
    ``selection.sample`` is the representative subset."""
    captions_dir: Path | None = None
    """Extra folder with captions written by ``h2hmem caption --captions-dir``."""
    retrieval_only: bool = False
    """Record each question's ranked evidence (``MemoryMethod.retrieve_evidence``) without calling
    the answer model; memory is still built as usual (A-Mem's notes use the build model)."""
    # --- research workflow (issue 16): which questions ---
    selection: Selection = Field(default_factory=Selection)
    """Filters and stratified sample applied before ``limit`` (see :mod:`h2hmem.run._selection`)."""

    def __init__(self, **data: Any) -> None:
        """Keyword arguments: the fields above, or the flat names of :data:`FLAT_FIELDS` (``model=``,
        ``concurrency=``, ``answer_temperature=``…), routed into their group."""
        super().__init__(**data)

    @model_validator(mode="before")
    @classmethod
    def _group_flat_settings(cls, data: Any) -> Any:
        """Route flat keyword arguments (``model=``, ``concurrency=``, …) into their group."""
        if not isinstance(data, dict) or not any(k in FLAT_FIELDS for k in data):
            return data
        data = dict(data)
        for flat, (group, name) in FLAT_FIELDS.items():
            if flat not in data:
                continue
            given = data.get(group)
            if isinstance(given, BaseModel):
                given = given.model_dump(exclude_unset=True)
            members = dict(given or {})
            if name in members:
                raise ValueError(f"{flat} is given twice: as {flat}= and as {group}.{name}")
            members[name] = data.pop(flat)
            data[group] = members
        return data

    @field_validator("limit")
    @classmethod
    def _positive(cls, v: int | None) -> int | None:
        if v is not None and v < 1:
            raise ValueError("limit must be at least 1")
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

    @classmethod
    def flat_default(cls, name: str) -> Any:
        """The default of a flat setting (``"concurrency"``, ``"answer_temperature"``, ``"split"``…).

        Raises:
            KeyError: no such setting, or one without a plain default (``data_root``).
        """
        if name in FLAT_FIELDS:
            group, member = FLAT_FIELDS[name]
            field = _GROUPS[group].model_fields[member]
        else:
            field = cls.model_fields[name]
        if field.is_required():
            raise KeyError(f"RunConfig setting {name!r} has no default")
        return field.get_default(call_default_factory=True)

    @staticmethod
    def flat_name(loc: tuple[int | str, ...]) -> str:
        """The flat setting name of a validation error location: ``("execution", "timeout_s")`` →
        ``"timeout_s"``, ``("generation", "temperature")`` → ``"answer_temperature"``, ``("limit",)`` →
        ``"limit"`` (``""`` for an error of the whole config)."""
        if len(loc) >= 2 and loc[0] in _GROUPS:
            for flat, where in FLAT_FIELDS.items():
                if where == (loc[0], loc[1]):
                    return flat
        return str(loc[0]) if loc else ""

    def recorded(self) -> dict[str, Any]:
        """The configuration as the manifest records it (``config``): JSON-ready, each setting once
        under its flat name (:data:`FLAT_FIELDS`; the shape readers of older manifests know)."""
        nested = self.model_dump(mode="json")
        flat: dict[str, Any] = {k: v for k, v in nested.items() if k not in _GROUPS}
        for name, (group, member) in FLAT_FIELDS.items():
            flat[name] = nested[group][member]
        return flat

    def replace(self, **changes: Any) -> RunConfig:
        """A validated copy with ``changes`` applied; flat names (``retry_failed=True``) and groups
        (``execution={...}``, merged into the current group) are both accepted.

        Raises:
            pydantic.ValidationError: a change is not a valid setting.
        """
        data = self.model_dump()
        for flat in [k for k in changes if k in FLAT_FIELDS]:
            group, member = FLAT_FIELDS[flat]
            data[group][member] = changes.pop(flat)
        for group in [k for k in changes if k in _GROUPS]:
            value = changes.pop(group)
            data[group].update(value.model_dump(exclude_unset=True) if isinstance(value, BaseModel) else value)
        data.update(changes)
        return type(self).model_validate(data)

    def model_copy(self, *, update: Any = None, deep: bool = False) -> RunConfig:
        """As pydantic's, but ``update`` goes through :meth:`replace` (validated, flat names routed)."""
        if update:
            return self.replace(**dict(update))
        return super().model_copy(deep=deep)

    def default_run_id(self) -> str:
        """Deterministic id from what defines the run, so re-running the same command resumes it."""
        parts = [self.method, self.models.model, self.split, self.protocol]
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
            "model": self.models.model,
            "build_model": self.models.build_model,
            "embedder": self.models.embedder,
            "protocol": self.protocol,
            "limit": self.limit,
            "answer_max_tokens": self.generation.max_tokens,
            "answer_temperature": self.generation.temperature,
        }
        if not self.selection.is_empty:  # absent when empty: runs recorded before selections still resume
            identity["selection"] = self.selection.recorded()
        if self.retrieval_only:  # only when set, so runs recorded before the option existed keep their identity
            identity["retrieval_only"] = True
        return identity


_GROUPS: dict[str, type[BaseModel]] = {"generation": AnswerGeneration, "models": RunModels, "execution": Execution}

_DEFAULT_IDENTITY: dict[str, Any] = {
    "method_params": {},
    "build_model": None,
    "embedder": defaults.EMBEDDER,
    "answer_max_tokens": defaults.ANSWER_MAX_TOKENS,
    "answer_temperature": defaults.ANSWER_TEMPERATURE,
}
"""Identity values that leave the default run id unchanged (the published settings)."""
