"""The run manifest, ``runs/<run-id>/manifest.json``: how a run was made and what it cost.

Written by the runner when a run starts and again when each invocation ends (resumes update it);
read by evaluate, report, view, sweep, leaderboard export and the CLI. Every field has a default,
so a partial manifest (hand-written, or from an older h2hmem) still loads; fields this version does
not know are kept as they are (``model_extra``) and written back unchanged.
JSON Schema: ``docs/schemas/manifest.schema.json``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import ConfigDict, Field

from ._base import Record
from ._jsonfile import read_record, write_record
from ._provenance import ComponentSpec, Environment
from ._usage import Usage
from ._versioned import Versioned

MANIFEST = "manifest.json"


class Invocation(Record):
    """One ``h2hmem run`` invocation of the run (the first one, then every resume)."""

    started_at: str
    """ISO 8601 time (UTC, seconds)."""
    command: str = ""
    retry_failed: bool = False
    settings_changed: dict[str, Any] = {}
    """Setting (a ``config`` name) → its value in this invocation, for each one that differs from the
    run's ``config`` (which the first invocation wrote): e.g. another ``base_url`` or ``concurrency``
    on a resume. Empty for the first invocation and for a resume with the same settings."""
    captions_changed: dict[str, list[str]] = {}
    """Dialogue → the images (``"sessionK/<file>"``) whose caption differs from the one an earlier
    invocation gave the same dialogue's memory (another caption text or source, or a caption where
    there was none, or none where there was one): the caption files changed between invocations, so
    this dialogue's answers before and after were made with different captions. Empty when none did."""


class CaptionUse(Record):
    """The caption a memory was given for one image."""

    source: str
    """Who wrote it: for h2hmem's caption files the captioning model's spec (``model_info.model``, e.g.
    ``openai:gpt-4o`` or ``ocr``); for a file h2hmem did not write (no ``cache_key``: the official
    captioner's) ``official:<model_info.model>`` (``official:gpt-4o``), or ``official`` when it names no
    model."""
    sha256: str
    """SHA-256 (hex, first 16 characters) of the caption text."""


class Repair(Record):
    """A torn tail cut off a file when the run resumed (a crash during a write)."""

    at: str
    torn_bytes_removed: int | None = None
    """Bytes cut off ``predictions.jsonl``."""
    transcript_bytes_removed: int | None = None
    """Bytes cut off ``transcripts.jsonl.gz``."""


class BudgetEntry(Record):
    """One invocation's spending limit (``--max-cost``) and what it spent."""

    at: str
    max_cost_usd: float
    spent_usd: float
    stopped: str | None = None
    """Why the invocation stopped early (the limit was reached), else None."""


class RunSettings(Record):
    """``config``: the run's :class:`~h2hmem.run.RunConfig` as dumped to JSON. The fields readers use
    are typed here; every other setting is kept as written (``model_extra``)."""

    model_config = ConfigDict(extra="allow")
    concurrency: int | None = None
    limit: int | None = None
    """``--limit``: only the first N questions (None: all)."""
    preset: str | None = None
    selection: dict[str, Any] | None = None
    """The recorded :class:`~h2hmem.run.Selection` (filters, sample), None for all questions."""


class Counts(Record):
    """Question counts of the run (``questions`` = selected after ``--limit``)."""

    questions: int = 0
    recorded: int | None = None
    """Selected questions with a record in ``predictions.jsonl`` (None: not recorded)."""
    failed: int = 0
    answered_this_invocation: int = 0
    skipped_already_recorded: int = 0


class Timing(Record):
    """Wall time of ``observe()`` (memory build, embedding included), summed over invocations."""

    memory_build_s: float = 0.0
    sessions_observed: int = 0
    memory_build_s_per_session: float | None = None


class EmbeddingCounts(Record):
    """What an embedder did with the texts asked of it. Every requested text is exactly one of
    ``memory_hits``, ``cache_hits`` or ``computed`` (so the three add up to ``texts``). The one
    owner of these counter names: the embedders' live :class:`~h2hmem.embed.EmbeddingStats`
    extends it, and the manifest's :class:`EmbeddingRecord` records it."""

    texts: int = 0
    """Texts asked for, repeats included (= memory_hits + cache_hits + computed)."""
    memory_hits: int = 0
    """Served from the process's memory (an earlier call, or a repeat within the same call)."""
    cache_hits: int = 0
    """Read from the persistent embedding cache file."""
    computed: int = 0
    """Computed by the model (each distinct text once per model call)."""
    model_calls: int = 0
    """Batches handed to the model."""
    compute_s: float = 0.0
    """Wall seconds the model spent computing."""


class EmbeddingRecord(EmbeddingCounts):
    """The embedder's cache description and its counts during the run (all invocations)."""

    model_config = ConfigDict(extra="allow")
    model: str | None = None
    cache: str | None = None
    """Cache file (None = in memory only)."""
    refresh: bool | None = None


class MethodDescription(Record):
    """A memory's ``describe()`` (open: each method adds its own keys). The runner reads ``stats``
    (numeric counters it sums over dialogues); the method's options are in its :class:`ComponentSpec`."""

    model_config = ConfigDict(extra="allow")
    # left out of the file when unset, so the record keeps the shape describe() gave it
    stats: dict[str, Any] = Field({}, exclude_if=lambda v: not v)
    describe_error: str | None = Field(None, exclude_if=lambda v: v is None)
    """Set instead when ``describe()`` raised (``"TypeError: …"``)."""


class Manifest(Versioned):
    """``manifest.json``. Identity and settings first, then what the invocations produced."""

    model_config = ConfigDict(extra="allow")
    KIND = "manifest"
    VERSION = 2
    schema_: Literal["h2hmem.manifest/2"] = Field("h2hmem.manifest/2", alias="schema")
    run_id: str | None = None
    package: str = "h2hmem"
    version: str | None = None
    """h2hmem version that started the run."""
    command: str | None = None
    """The command line of the invocation that started the run (each launch's is in ``invocations``)."""
    started_at: str | None = None
    finished_at: str | None = None
    """End of the latest invocation (None while the first one runs)."""
    status: Literal["complete", "incomplete"] | None = None
    """``complete`` when every selected question has a record (failed ones included)."""
    resumes: int = 0
    invocations: list[Invocation] = []
    config: RunSettings = RunSettings()
    """The settings of the invocation that started the run; a resume's other settings (those outside
    ``identity``) are in its ``invocations[].settings_changed``."""
    identity: dict[str, Any] = {}
    """The settings that define the run (:meth:`~h2hmem.run.RunConfig.identity`): a resume must match them."""
    method: str | None = None
    model: str | None = None
    protocol: str | None = None
    split: str | None = None
    data_root: str | None = None
    dataset_fingerprint: str | None = None
    """SHA-256 over the dataset's JSON files (captions excluded)."""
    prompt_hashes: dict[str, str] = {}
    components: dict[str, ComponentSpec] = {}
    """Kind (``memory``, ``answer_model``, ``build_model``, ``embedder``, ``captioner``) → the component,
    recorded once: its name, implementing code, distribution and version, and resolved options (the
    memory method's resolved options appear here and nowhere else)."""
    environment: Environment | None = None
    """The software the run started on (:func:`~h2hmem.records.capture_environment`)."""
    transcripts: str | None = None
    """File name of the model-call transcripts in the run directory, None when not kept."""
    question_fields: list[str] = []
    retrieval_only: bool = False
    repairs: list[Repair] = []
    embedding: EmbeddingRecord | None = None
    method_description: MethodDescription = MethodDescription()
    """The first dialogue's ``describe()``."""
    method_stats: dict[str, int | float] = {}
    """``describe()["stats"]`` summed over dialogues (numeric entries)."""
    method_stats_by_dialogue: dict[str, dict[str, Any]] = {}
    images_without_caption: int = 0
    """Distinct images a method asked a caption for and got none (all invocations)."""
    captions_missing_by_dialogue: dict[str, list[str]] = {}
    caption_sources: dict[str, int] = {}
    """Caption source (:attr:`CaptionUse.source`) → distinct images whose caption it gave a memory, over
    the latest captions of every dialogue (``captions_by_dialogue``). More than one source means the
    run mixes captioners."""
    captions_by_dialogue: dict[str, dict[str, CaptionUse]] = {}
    """``"<split>/<dialogue>"`` → image (``"sessionK/<file>"``) → the caption its memory was given, as
    of the latest invocation that rebuilt the dialogue (a change is in ``invocations[].captions_changed``)."""
    usage: dict[str, Usage] = {}
    """Stage (``answer``, ``memory_build``…) → tokens, calls and cost, summed over invocations."""
    counts: Counts | None = None
    timing: Timing | None = None
    failed_questions: dict[str, str] = {}
    """``question_id → error`` of the questions whose latest record failed."""
    budget: list[BudgetEntry] = []

    @classmethod
    def upgrade(cls, data: dict[str, Any], version: int) -> dict[str, Any]:
        """A version-1 manifest in the version-2 shape: ``models``, ``method_arguments``, ``options``
        and ``preset`` become ``components`` (the memory method's options merged once) and
        ``config.preset``; ``method_description.options`` is dropped (the same values)."""
        data = dict(data)
        models = data.pop("models", None) or {}
        arguments = data.pop("method_arguments", None) or {}
        options = data.pop("options", None) or {}
        preset = data.pop("preset", None)
        desc = dict(data.get("method_description") or {})
        options = {**arguments, **(desc.pop("options", None) or {}), **options}
        data["method_description"] = desc
        config = dict(data.get("config") or {})
        if preset and not config.get("preset"):
            config["preset"] = preset
        data["config"] = config
        components: dict[str, Any] = dict(data.get("components") or {})
        if data.get("method"):
            components.setdefault("memory", {"kind": "memory", "name": data["method"], "options": options})
        for kind, name in (
            ("answer_model", models.get("answer") or data.get("model")),
            ("build_model", models.get("build")),
            ("embedder", models.get("embedder")),
        ):
            if name:
                components.setdefault(kind, {"kind": kind, "name": name})
        data["components"] = components
        return data

    def component(self, kind: str) -> ComponentSpec | None:
        """The recorded component of ``kind`` (``memory``, ``answer_model``…), or None."""
        return self.components.get(kind)

    @property
    def preset(self) -> str | None:
        """The run's preset (``config.preset``)."""
        return self.config.preset

    def dataset_root(self) -> Path | None:
        """``data_root`` when it is a folder on this machine, else None (moved, or another machine)."""
        return Path(self.data_root) if self.data_root and Path(self.data_root).is_dir() else None


def read_manifest(run_dir: str | Path) -> Manifest | None:
    """The manifest of ``run_dir`` (a run directory or the ``manifest.json`` path); None when there is none.

    Raises:
        ValueError: the file is not valid JSON, a field has the wrong type, or it is of a newer
            schema version (names the file and the field).
    """
    p = Path(run_dir)
    path = p if p.name == MANIFEST and not p.is_dir() else p / MANIFEST
    if not path.is_file():
        return None
    return read_record(path, Manifest, "manifest")


def write_manifest(run_dir: str | Path, manifest: Manifest) -> None:
    """Write ``run_dir/manifest.json`` atomically (temporary file, fsync, rename)."""
    write_record(Path(run_dir) / MANIFEST, manifest)
