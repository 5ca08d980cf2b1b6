"""``run_sweep``: expand the grid, run what is not finished, evaluate, write the sweep report."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._aio import run_sync
from ..records import exclusive_lock
from ._execute import Executor, make_executor
from ._grid import SweepRun, endpoint_capacities, expand_grid
from ._report import build_sweep_report
from ._schedule import EndpointBudget, Outcome, run_jobs
from ._spec import SweepSpec, SweepSpecError, load_spec
from ._status import CellStatus, cell_status, sweep_status


@dataclass
class SweepResult:
    """What one invocation of a sweep did."""

    out: Path
    cells: list[SweepRun]
    status: list[CellStatus]
    """State of every run at the end (grid order)."""
    errors: dict[str, str] = field(default_factory=dict)
    """``run_id → error`` of the steps that raised (their cells stay partial/failed; rerun to resume)."""
    report: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        return not self.errors and all(s.state == "done" and s.evaluated for s in self.status)


def run_sweep(
    spec: SweepSpec | str | Path, *, executor: Executor | None = None, on_event: Callable[[str], None] | None = None
) -> SweepResult:
    """Run a sweep to completion (sync entry point); see :func:`arun_sweep`.

    Raises:
        InRunningLoopError: called inside a running event loop (use :func:`arun_sweep`).
    """
    return run_sync(lambda: arun_sweep(spec, executor=executor, on_event=on_event), "arun_sweep")


async def arun_sweep(
    spec: SweepSpec | str | Path, *, executor: Executor | None = None, on_event: Callable[[str], None] | None = None
) -> SweepResult:
    """Expand ``spec`` into runs and bring every one to *done and evaluated*.

    Steps: (1) every run that is not done runs or resumes (finished runs are skipped; runs that end
    with failed questions get ``spec.retries`` rounds of ``retry_failed``), scheduled so that the
    requests in flight on one endpoint never exceed its ``concurrency``; (2) every run with recorded
    answers whose scores do not cover them is evaluated with ``spec.metrics`` (the judge under the
    judge endpoint's budget); (3) the sweep report is written to ``<out>/report/``.

    A step that raises is recorded in :attr:`SweepResult.errors` and the others go on. Killing the
    driver loses nothing: every answer is already in its run's ``predictions.jsonl``, so running
    the same sweep again resumes.

    Args:
        spec: a :class:`SweepSpec` or the path of a sweep file.
        executor: where steps run (default: ``spec.executor.kind``).
        on_event: called with one line per finished step (the CLI prints them).

    Raises:
        SweepSpecError: the spec is invalid, or its dataset root is not a folder (names the file and field).
        SweepBusyError: another process is running a sweep in the same ``out`` folder.
    """
    if not isinstance(spec, SweepSpec):
        spec, _ = load_spec(spec)
    cells = expand_grid(spec)
    check_data(spec)
    with exclusive_lock(spec.out / SWEEP_LOCK, "h2hmem sweep") as holder:
        if holder is not None:
            raise SweepBusyError(
                f"{spec.out} is being run by another sweep ({holder}); `h2hmem sweep status` shows its progress"
            )
        return await _run_locked(spec, cells, executor, on_event)


SWEEP_LOCK = ".sweep.lock"
"""The file in the sweep folder a running sweep holds locked (``flock``): one driver per folder."""


class SweepBusyError(RuntimeError):
    """Another process is running the same sweep folder (the message names it)."""


def check_data(spec: SweepSpec) -> None:
    """Refuse a sweep whose dataset root is not a folder before any run starts.

    Raises:
        SweepSpecError: ``grid.toml: data: dataset root /x does not exist``.
    """
    if not spec.data.is_dir():
        what = "is not a folder" if spec.data.exists() else "does not exist"
        raise SweepSpecError(spec.where(f"data: dataset root {spec.data} {what}"))


async def _run_locked(
    spec: SweepSpec, cells: list[SweepRun], executor: Executor | None, on_event: Callable[[str], None] | None
) -> SweepResult:
    say = on_event or (lambda _m: None)
    own = executor is None
    ex = executor or make_executor(spec.executor.kind, spec.executor.address)
    errors: dict[str, str] = {}
    try:
        budget = EndpointBudget(endpoint_capacities(spec))
        todo = [c for c in cells if cell_status(c).state != "done"]
        say(f"{len(cells)} runs in the grid, {len(cells) - len(todo)} already done")

        def finished(step: str) -> Callable[[Outcome], None]:
            def note(o: Outcome) -> None:
                if o.error is not None:
                    errors[o.job.run_id] = f"{step}: {type(o.error).__name__}: {o.error}"
                    say(f"{step} {o.job.run_id}: FAILED ({type(o.error).__name__}: {o.error})")
                else:
                    assert o.result is not None  # an Outcome holds its result or its error
                    say(
                        f"{step} {o.job.run_id}: "
                        + ", ".join(f"{k} {v}" for k, v in o.result.items() if k != "run_dir")
                    )

            return note

        await run_jobs(
            todo,
            lambda c: c.need,
            budget,
            lambda c: ex.run(c, spec.retries),
            max_parallel=spec.executor.max_parallel_runs,
            on_done=finished("run"),
        )
        judge_ep = None
        if "judge" in spec.metrics:
            from ._grid import endpoint_key

            judge_ep = endpoint_key(spec.judge.model, spec.judge.base_url)
        to_score = [c for c in cells if c.run_id not in errors and (s := cell_status(c)).recorded and not s.evaluated]
        await run_jobs(
            to_score,
            lambda c: {judge_ep: spec.judge.concurrency} if judge_ep else {},
            budget,
            lambda c: ex.evaluate(c, list(spec.metrics), spec.judge if judge_ep else None),
            max_parallel=spec.executor.max_parallel_runs,
            on_done=finished("evaluate"),
        )
    finally:
        if own:
            ex.close()
    status = sweep_status(cells)
    report = build_sweep_report(spec, cells, status)
    say(f"report: {spec.out / 'report' / 'sweep.html'}")
    return SweepResult(out=spec.out, cells=cells, status=status, errors=errors, report=report)


async def aestimate_sweep(spec: SweepSpec | str | Path) -> list[tuple[SweepRun, Any]]:
    """Dry run of every run of the grid that is not done: ``(cell, CostEstimate)`` pairs in grid order
    (:func:`h2hmem.run.estimate_run`: the real prompts, nothing sent, nothing written). The judge pass is
    not included: its prompts hold the answers, which exist only after the runs
    (``h2hmem evaluate RUN --metrics judge --dry-run`` estimates it then)."""
    from ..run import aestimate_run

    if not isinstance(spec, SweepSpec):
        spec, _ = load_spec(spec)
    cells = expand_grid(spec)
    check_data(spec)
    out = []
    for cell in cells:
        if cell_status(cell).state != "done":
            out.append((cell, await aestimate_run(cell.config)))
    return out


def estimate_sweep(spec: SweepSpec | str | Path) -> list[tuple[SweepRun, Any]]:
    """Sync form of :func:`aestimate_sweep` (``InRunningLoopError`` inside a running event loop)."""
    return run_sync(lambda: aestimate_sweep(spec), "aestimate_sweep")
