"""Expanding a :class:`SweepSpec` into runs: one :class:`~h2hmem.run.RunConfig` per grid cell."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from ..presets import DEFAULT_PRESET
from ..run import RunConfig
from ._spec import MethodEntry, ModelEntry, SweepSpec, SweepSpecError


@dataclass(frozen=True)
class SweepRun:
    """One cell of the grid and the run that fills it."""

    method: MethodEntry
    model: ModelEntry
    preset: str
    protocol: str
    split: str
    config: RunConfig
    endpoint: str
    """Key of the servers the run's requests go to (its concurrency budget)."""
    need: dict[str, int] = field(default_factory=dict)
    """Requests in flight the run may have, per endpoint key (what the scheduler reserves)."""

    @property
    def key(self) -> tuple[str, str, str, str, str]:
        return (self.method.display, self.model.display, self.preset, self.protocol, self.split)

    @property
    def run_id(self) -> str:
        return self.config.resolved_run_id


def endpoint_key(spec: str, base_url: list[str]) -> str:
    """Servers a model spec talks to: the sorted base URLs, ``$OPENAI_BASE_URL`` when none, or the
    in-process model itself (``local:…``)."""
    if spec.startswith("local:"):
        return spec
    return " ".join(sorted(u.rstrip("/") for u in base_url)) if base_url else "$OPENAI_BASE_URL"


def endpoint_capacities(spec: SweepSpec) -> dict[str, int]:
    """Requests in flight allowed per endpoint key; two model entries on the same servers share the
    smaller of their ``concurrency`` values; a local in-process model serves one request at a time."""
    caps: dict[str, int] = {}
    entries: list[tuple[str, list[str], int]] = [(m.spec, m.base_url, m.concurrency) for m in spec.models]
    if "judge" in spec.metrics:
        entries.append((spec.judge.model, spec.judge.base_url, spec.judge.concurrency))
    for s, urls, c in entries:
        k = endpoint_key(s, urls)
        caps[k] = min(caps.get(k, c), 1 if s.startswith("local:") else c)
    return caps


_SELECTION_KEYS = ("task_types", "dialogues", "question_ids", "difficulties", "sample", "seed")
"""``[run]`` keys that choose questions: gathered into the run's ``selection`` (as ``--sample``,
``--seed``, ``--task-type``… of ``h2hmem run``), beside any ``selection = {…}`` table."""


def _run_fields(run: dict[str, Any]) -> dict[str, Any]:
    """``[run]`` with its question-selection keys moved into ``selection``."""
    fields = {k: v for k, v in run.items() if k not in _SELECTION_KEYS}
    chosen = {k: run[k] for k in _SELECTION_KEYS if k in run}
    if chosen:
        given = fields.get("selection") or {}
        fields["selection"] = {**(given if isinstance(given, dict) else {}), **chosen}
    return fields


def spec_problems(spec: SweepSpec) -> list[str]:
    """What in the grid's entries no run could start with, one line per problem naming its field
    (``methods[0].name: unknown method 'nope'…``): an unknown method, a method option that is unknown
    or invalid under one of the presets, a malformed model spec (answer, build or judge model)."""
    from ..llm import check_model_spec
    from ..memory import MethodOptionsError, UnknownMethodError, method_options, resolve_method

    problems: list[str] = []
    for i, m in enumerate(spec.methods):
        try:
            cls = resolve_method(m.name)
        except UnknownMethodError as e:
            problems.append(f"methods[{i}].name: {e}")
            continue
        for preset in spec.presets:
            try:
                method_options(m.name, cls.Options, m.params, preset)
            except MethodOptionsError as e:
                problems.append(f"methods[{i}].params: {e}")
                break
    specs = [
        (f"models[{i}].{f}", v)
        for i, m in enumerate(spec.models)
        for f, v in (("spec", m.spec), ("build_model", m.build_model))
    ]
    if "judge" in spec.metrics:
        specs.append(("judge.model", spec.judge.model))
    for name, value in specs:
        if value is not None:
            try:
                check_model_spec(value)
            except ValueError as e:
                problems.append(f"{name}: {e}")
    return problems


def _config_error(where: str, error: ValidationError, run_keys: set[str]) -> str:
    """One clean line per invalid field: ``[run] limt: unknown setting (a typo?)`` for a field of the
    ``[run]`` table (the same for every cell, so the cell is not named), else ``<cell>: field: msg``."""
    lines = []
    for err in error.errors():
        field = RunConfig.flat_name(tuple(err["loc"]))
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown setting (a typo?); see `h2hmem run --help` for the settings a run takes"
        got = repr(err.get("input"))
        detail = msg if err["type"] == "extra_forbidden" or got in msg else f"{msg} (got {got})"
        lines.append(f"[run] {field}: {detail}" if field in run_keys else f"{where}: {field}: {detail}")
    return "\n".join(dict.fromkeys(lines))


def expand_grid(spec: SweepSpec) -> list[SweepRun]:
    """Every cell of ``methods × models × presets × protocols × splits``, in that nesting order.

    Each run's ``concurrency`` is ``min(executor.run_concurrency, endpoint capacity)``; a run with a
    separate build model holds that many requests twice (the runner builds two clients).

    Raises:
        SweepSpecError: a cell's settings are not a valid ``RunConfig`` (names the cell and field), or
            presets other than the default are asked for while this version has no ``preset`` setting.
        ValueError: two cells resolve to the same run directory.
    """
    problems = spec_problems(spec)
    if problems:
        raise SweepSpecError("\n".join(spec.where(p) for p in problems))
    caps = endpoint_capacities(spec)
    has_preset = "preset" in RunConfig.model_fields
    if not has_preset and any(p != DEFAULT_PRESET for p in spec.presets):
        raise SweepSpecError(f"presets {spec.presets}: this h2hmem has no preset setting on runs")
    runs: list[SweepRun] = []
    for method, model, preset, protocol, split in itertools.product(
        spec.methods, spec.models, spec.presets, spec.protocols, spec.splits
    ):
        ep = endpoint_key(model.spec, model.base_url)
        conc = min(spec.executor.run_concurrency, caps[ep])
        fields: dict[str, Any] = {
            **_run_fields(spec.run),
            "data_root": spec.data,
            "split": split,
            "method": method.name,
            "method_params": method.params,
            "model": model.spec,
            "base_url": model.base_url or None,
            "build_model": model.build_model,
            "protocol": protocol,
            "out_dir": spec.out / "runs",
            "concurrency": conc,
        }
        if has_preset:
            fields["preset"] = preset
        try:
            config = RunConfig(**fields)
        except ValidationError as e:
            where = f"cell {method.display} × {model.display} × {preset} × {protocol} × {split}"
            lines = _config_error(where, e, set(_run_fields(spec.run))).splitlines()
            raise SweepSpecError("\n".join(spec.where(line) for line in lines)) from None
        except Exception as e:
            raise SweepSpecError(
                spec.where(f"cell {method.display} × {model.display} × {preset} × {protocol} × {split}: {e}")
            ) from None
        need = {ep: conc * (2 if model.build_model else 1)}
        runs.append(SweepRun(method, model, preset, protocol, split, config, ep, need))
    seen: dict[str, SweepRun] = {}
    for r in runs:
        if r.run_id in seen:
            raise ValueError(
                f"cells {seen[r.run_id].key} and {r.key} resolve to the same run {r.run_id}; "
                "give the methods different parameters or labels"
            )
        seen[r.run_id] = r
    return runs
