"""What one grid cell does (run, retry failed questions, evaluate) and the two executors.

- ``local``: runs execute as asyncio tasks in this process (one event loop; evaluation in a worker
  thread, since :func:`~h2hmem.metrics.evaluate_run` is a sync entry point).
- ``ray``: each step is a Ray task (``@ray.remote`` with the method's ``resources``, e.g. one GPU
  for a GME encoder); results land in the same folder layout, which must be on a filesystem every
  node sees. The driver schedules the tasks under the same endpoint budgets as ``local``.

State lives only in the run directories, so a sweep whose driver crashed resumes by running it
again: finished runs are skipped, interrupted ones resume from their ``predictions.jsonl``.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Protocol

from ..records import ScoresSummary
from ..run import RunConfig, arun_benchmark
from ._grid import SweepRun
from ._spec import JudgeEntry


async def arun_cell(config: RunConfig, retries: int) -> dict[str, Any]:
    """Run (or resume) one run, then up to ``retries`` rounds of ``retry_failed`` while questions
    are recorded as failed. Returns counts: ``questions``, ``failed``, ``answered_now``, ``rounds``."""
    summary = await arun_benchmark(config, progress=False)
    answered, rounds = summary.answered_now, 1
    while summary.failed and rounds <= retries:
        summary = await arun_benchmark(config.model_copy(update={"retry_failed": True}), progress=False)
        answered += summary.answered_now
        rounds += 1
    return {
        "run_dir": str(summary.run_dir),
        "questions": summary.questions,
        "failed": summary.failed,
        "answered_now": answered,
        "rounds": rounds,
    }


def evaluate_cell(
    run_dir: str, metrics: list[str], judge: JudgeEntry | None, use_cache: bool = True, cache_path: str | None = None
) -> dict[str, Any]:
    """Score one run directory (sync; builds its own judge client). Returns ``{"run_dir", "metrics"}``."""
    from ..metrics import evaluate_run

    model = None
    if "judge" in metrics and judge is not None:
        from ..llm import default_cache_path, load_chat_model

        cache = (cache_path or default_cache_path()) if use_cache else None
        model = load_chat_model(
            judge.model, base_url=judge.base_url or None, cache=cache, concurrency=judge.concurrency
        )
    summary = evaluate_run(run_dir, metrics, judge_model=model)
    return {"run_dir": run_dir, "metrics": sorted(ScoresSummary.model_validate(summary).metrics.sections())}


class Executor(Protocol):
    """Starts the two kinds of step; awaitable results, exceptions propagate."""

    async def run(self, cell: SweepRun, retries: int) -> dict[str, Any]: ...

    async def evaluate(self, cell: SweepRun, metrics: list[str], judge: JudgeEntry | None) -> dict[str, Any]: ...

    def close(self) -> None: ...


class LocalExecutor:
    """Runs in this process."""

    async def run(self, cell: SweepRun, retries: int) -> dict[str, Any]:
        return await arun_cell(cell.config, retries)

    async def evaluate(self, cell: SweepRun, metrics: list[str], judge: JudgeEntry | None) -> dict[str, Any]:
        return await asyncio.to_thread(
            evaluate_cell,
            str(cell.config.run_dir),
            metrics,
            judge,
            cell.config.execution.use_cache,
            _opt_str(cell.config.execution.cache_path),
        )

    def close(self) -> None:
        pass


def _ray_run(config_json: dict[str, Any], retries: int) -> dict[str, Any]:
    return asyncio.run(arun_cell(RunConfig.model_validate(config_json), retries))


def _ray_evaluate(
    run_dir: str, metrics: list[str], judge_json: dict[str, Any] | None, use_cache: bool, cache_path: str | None
) -> dict[str, Any]:
    return evaluate_cell(
        run_dir, metrics, JudgeEntry.model_validate(judge_json) if judge_json else None, use_cache, cache_path
    )


class RayExecutor:
    """Runs each step as a Ray task on an existing cluster (``address``) or a local instance.

    Raises:
        RuntimeError: Ray is not installed (``pip install 'h2hmem[ray]'``).
    """

    def __init__(self, address: str | None = None):
        try:
            import ray
        except ModuleNotFoundError:
            raise RuntimeError("the ray executor needs Ray: pip install 'h2hmem[ray]'") from None
        self._ray = ray
        self._started = False
        if not ray.is_initialized():
            ray.init(address=address, include_dashboard=False, log_to_driver=False)
            self._started = True
        self._run = ray.remote(_ray_run)
        self._evaluate = ray.remote(_ray_evaluate)

    async def run(self, cell: SweepRun, retries: int) -> dict[str, Any]:
        opts = _ray_options(cell.method.resources)
        ref = self._run.options(**opts).remote(cell.config.model_dump(mode="json"), retries)
        return await asyncio.wrap_future(ref.future())

    async def evaluate(self, cell: SweepRun, metrics: list[str], judge: JudgeEntry | None) -> dict[str, Any]:
        ref = self._evaluate.options(num_cpus=1).remote(
            str(cell.config.run_dir),
            metrics,
            judge.model_dump() if judge else None,
            cell.config.execution.use_cache,
            _opt_str(cell.config.execution.cache_path),
        )
        return await asyncio.wrap_future(ref.future())

    def close(self) -> None:
        if self._started:
            self._ray.shutdown()


def _ray_options(resources: dict[str, float]) -> dict[str, Any]:
    """``{"num_cpus": 1, "num_gpus": 1, "my_res": 2}`` → Ray ``.options`` keywords (custom names under ``resources``)."""
    opts: dict[str, Any] = {"num_cpus": resources.get("num_cpus", 1)}
    if "num_gpus" in resources:
        opts["num_gpus"] = resources["num_gpus"]
    custom = {k: v for k, v in resources.items() if k not in ("num_cpus", "num_gpus")}
    if custom:
        opts["resources"] = custom
    return opts


def _opt_str(p: Path | None) -> str | None:
    return None if p is None else str(p)


def make_executor(kind: str, address: str | None = None) -> Executor:
    """``"local"`` or ``"ray"`` (see the module docstring)."""
    if kind == "local":
        return LocalExecutor()
    if kind == "ray":
        return RayExecutor(address)
    raise ValueError(f"unknown executor {kind!r}; choose local or ray")
