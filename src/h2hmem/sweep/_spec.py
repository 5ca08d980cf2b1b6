"""The sweep specification: a small declarative file (TOML, YAML or JSON) naming a grid of runs.

Example (TOML)::

    name = "paper-grid"
    data = "data/h2hmem"
    out = "sweeps/paper-grid"          # run directories under <out>/runs/, the report under <out>/report/
    splits = ["all"]
    presets = ["paper"]
    protocols = ["full"]
    metrics = ["lexical", "evidence", "judge"]
    retries = 2                        # rounds of --retry-failed for runs that end with failed questions

    [run]                              # any other `RunConfig` field, applied to every run
    limit = 40

    [[methods]]
    name = "naive-rag"
    params = { top_k = 5 }

    [[methods]]
    name = "murag"
    resources = { num_gpus = 1 }       # what one run needs from a Ray cluster (ignored by `local`)

    [[models]]
    label = "gpt-4.1-nano"
    spec = "openai:gpt-4.1-nano"
    base_url = ["https://api.openai.com/v1"]
    concurrency = 32                   # requests in flight on these servers, across all runs of the sweep

    [judge]
    model = "openai:gpt-4o-mini"
    concurrency = 16

    [executor]
    kind = "local"                     # or "ray"
    max_parallel_runs = 4
    run_concurrency = 8                # requests in flight of one run (at most its endpoint's concurrency)

The JSON Schema of this format is :func:`sweep_json_schema` (published as ``docs/schemas/sweep.schema.json``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator, model_validator

from .. import defaults
from ..presets import DEFAULT_PRESET, PRESETS

_Split = Literal["dyadic", "multi-party", "all"]
_Protocol = Literal["full", "online"]
_Metric = Literal["lexical", "evidence", "judge"]


# Typed default factories (a lambda's list literal would be inferred as ``list[str]``).
def _default_splits() -> list[_Split]:
    return ["all"]


def _default_presets() -> list[str]:
    return [DEFAULT_PRESET]


def _default_protocols() -> list[_Protocol]:
    return ["full"]


def _default_metrics() -> list[_Metric]:
    return ["lexical", "evidence"]


class SweepSpecError(ValueError):
    """The sweep file cannot be read or does not describe a valid sweep (names the file and field)."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _one_url_is_a_list(v: object) -> object:
    """``base_url = "http://…"`` is the one-server list (as in a run's settings and ``--base-url``)."""
    return [v] if isinstance(v, str) else v


class MethodEntry(_Strict):
    """One method of the grid."""

    name: str
    """Method name (``h2hmem methods``) or plugin ``pkg.module:Class``."""
    label: str | None = None
    """Row name in the report (default: ``name``; give one when the same method appears twice)."""
    params: dict[str, Any] = Field(default_factory=dict)
    """Constructor keyword arguments (``--param``)."""
    resources: dict[str, float] = Field(default_factory=dict)
    """Ray resources one run needs (``num_cpus``, ``num_gpus``, custom names); ignored by ``local``."""

    @property
    def display(self) -> str:
        return self.label or self.name


class ModelEntry(_Strict):
    """One answer model (backbone) and the servers behind it."""

    spec: str
    """``openai:<model>`` or ``local:<name>``."""
    label: str | None = None
    """Column group name in the report (default: the spec)."""
    base_url: list[str] = Field(default_factory=list)
    """OpenAI-compatible server URL(s), served round-robin; empty = ``$OPENAI_BASE_URL``; one URL may
    be given as a string."""
    concurrency: int = Field(defaults.CONCURRENCY, ge=1)
    """Requests in flight on these servers, summed over every run of the sweep that uses them."""
    build_model: str | None = None
    """Separate memory-construction model (A-Mem's note writer); served by the same servers."""

    _urls = field_validator("base_url", mode="before")(_one_url_is_a_list)

    @property
    def display(self) -> str:
        return self.label or self.spec


class JudgeEntry(_Strict):
    """The LLM judge (used when ``metrics`` has ``"judge"``)."""

    model: str = defaults.JUDGE_MODEL
    base_url: list[str] = Field(default_factory=list)
    """As a model's ``base_url``."""
    concurrency: int = Field(defaults.CONCURRENCY, ge=1)

    _urls = field_validator("base_url", mode="before")(_one_url_is_a_list)


class ExecutorEntry(_Strict):
    """Where the runs execute."""

    kind: Literal["local", "ray"] = "local"
    address: str | None = None
    """Ray cluster address (``auto``, ``ray://host:10001``); None = start a local Ray instance."""
    max_parallel_runs: int = Field(4, ge=1)
    """Runs executing at once (besides the per-endpoint bound)."""
    run_concurrency: int = Field(defaults.CONCURRENCY, ge=1)
    """Model requests in flight of one run; capped at its endpoint's ``concurrency``."""


class SweepSpec(_Strict):
    """A grid of runs: ``methods × models × presets × protocols × splits``, then evaluation and a report."""

    name: str = "sweep"
    data: Path
    """Dataset root (relative paths are taken from the spec file's folder)."""
    out: Path = Path("sweeps/sweep")
    """Sweep folder: ``runs/<run-id>/`` per run, ``report/`` for the sweep report (relative to the spec file)."""
    splits: list[_Split] = Field(default_factory=_default_splits)
    presets: list[str] = Field(default_factory=_default_presets)
    protocols: list[_Protocol] = Field(default_factory=_default_protocols)
    methods: list[MethodEntry]
    models: list[ModelEntry]
    run: dict[str, Any] = Field(default_factory=dict)
    """Other :class:`~h2hmem.run.RunConfig` fields applied to every run (``limit``, ``embedder``, selection…)."""
    metrics: list[_Metric] = Field(default_factory=_default_metrics)
    judge: JudgeEntry = Field(default_factory=JudgeEntry)
    retries: int = Field(1, ge=0)
    """Rounds of ``retry_failed`` for a run whose questions failed (transient errors); 0 = none."""
    executor: ExecutorEntry = Field(default_factory=ExecutorEntry)
    _source: Path | None = PrivateAttr(None)

    @property
    def source(self) -> Path | None:
        """The sweep file this spec was read from (:func:`load_spec`), None for one built in Python."""
        return self._source

    def where(self, field: str) -> str:
        """``"grid.toml: methods[0].name"``: a field named with the file it is in, when there is one."""
        return f"{self._source}: {field}" if self._source is not None else field

    @field_validator("presets")
    @classmethod
    def _known_presets(cls, v: list[str]) -> list[str]:
        bad = [p for p in v if p not in PRESETS]
        if bad:
            raise ValueError(f"unknown preset(s) {bad}; choose from {list(PRESETS)}")
        return v

    @field_validator("run")
    @classmethod
    def _no_grid_fields(cls, v: dict[str, Any]) -> dict[str, Any]:
        owned = sorted(set(v) & _GRID_FIELDS)
        if owned:
            raise ValueError(
                f"{owned} are set by the grid (methods, models, presets, protocols, splits, out), not in [run]"
            )
        return v

    @model_validator(mode="after")
    def _unique_labels(self) -> SweepSpec:
        for what, labels in (
            ("methods", [m.display for m in self.methods]),
            ("models", [m.display for m in self.models]),
        ):
            dup = sorted({x for x in labels if labels.count(x) > 1})
            if dup:
                raise ValueError(f"{what}: {dup} appear twice; give each a distinct label")
        if not self.methods or not self.models:
            raise ValueError("a sweep needs at least one method and one model")
        return self


_GRID_FIELDS = {
    "data_root",
    "split",
    "method",
    "method_params",
    "model",
    "base_url",
    "build_model",
    "protocol",
    "preset",
    "out_dir",
    "run_id",
    "concurrency",
    "retry_failed",
}


def load_spec(path: str | Path) -> tuple[SweepSpec, Path]:
    """Read a sweep file (``.toml``, ``.yaml``/``.yml`` or ``.json``).

    Returns:
        ``(spec, folder)``: the spec with ``data`` and ``out`` made absolute against the file's folder.

    Raises:
        SweepSpecError: unreadable file, unknown extension, syntax error, or a field that fails
            validation (``file: field.path: message`` per problem).
    """
    path = Path(path)
    try:
        raw = _parse(path)
    except FileNotFoundError:
        raise SweepSpecError(f"{path}: no such sweep file") from None
    except SweepSpecError:
        raise
    except Exception as e:  # the parsers' own syntax errors carry line numbers
        raise SweepSpecError(f"{path}: cannot parse: {e}") from None
    if not isinstance(raw, dict):
        raise SweepSpecError(f"{path}: the top level must be a table/object, got {type(raw).__name__}")
    try:
        spec = SweepSpec.model_validate(raw)
    except ValidationError as e:
        lines = [f"{path}: {'.'.join(str(x) for x in err['loc']) or '(top)'}: {err['msg']}" for err in e.errors()]
        raise SweepSpecError("\n".join(lines)) from None
    base = path.resolve().parent
    spec = spec.model_copy(update={"data": (base / spec.data).resolve(), "out": (base / spec.out).resolve()})
    spec._source = path
    return spec, base


def _parse(path: Path) -> Any:
    suffix = path.suffix.lower()
    text = path.read_text(encoding="utf-8")
    if suffix == ".toml":
        if sys.version_info >= (3, 11):
            import tomllib
        else:  # Python 3.10
            import tomli as tomllib
        return tomllib.loads(text)
    if suffix in (".yaml", ".yml"):
        import yaml

        return yaml.safe_load(text)
    if suffix == ".json":
        return json.loads(text)
    raise SweepSpecError(f"{path}: unknown sweep file type {suffix!r}; use .toml, .yaml or .json")


def sweep_json_schema() -> dict[str, Any]:
    """The JSON Schema of the sweep file (``docs/schemas/sweep.schema.json``)."""
    schema = SweepSpec.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "h2hmem sweep specification"
    return schema
