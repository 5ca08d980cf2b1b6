"""``h2hmem evaluate --dry-run``: the judge calls a scoring pass would make, counted, none sent.

The requests are the real ones (the preset's messages over
:func:`~h2hmem.metrics._judge.judge_batches`, the same generation settings), counted by a
:class:`~h2hmem.run._dryrun.CountingChat`; questions whose judgment in ``scores/judge.jsonl`` still
holds are not counted (a scoring pass keeps them). Re-asks after an unusable verdict are not
foreseeable and not counted.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .._aio import run_sync
from ..records import Manifest, RunStore, read_predictions
from ..run import CostEstimate, collect, counting_model
from ._evaluate import _gold_from_dataset, question_order
from ._judge import _Judge, judge_batches
from ._judge_options import JudgeMode, JudgeOptions
from ._scorer_judge import already_judged, judging_rounds


async def aestimate_judge(
    run_dir: str | Path,
    judge_spec: str,
    *,
    mode: JudgeMode | None = None,
    data_root: str | Path | None = None,
    selection: Any = None,
    base_url: str | None = None,
    use_cache: bool = True,
    refresh: bool = False,
    prices: dict[str, tuple[float, float]] | None = None,
    options: JudgeOptions | None = None,
) -> CostEstimate:
    """Count the judge requests of scoring ``run_dir`` with ``judge_spec`` (stage ``"judge"``) under
    ``options`` (default: the ``paper`` preset; ``mode`` overrides its ``batching``). Async twin of
    :func:`estimate_judge`.

    Raises:
        FileNotFoundError / ValueError: as :func:`~h2hmem.metrics.evaluate_run` for a bad run directory.
    """
    run_dir = Path(run_dir)
    if not (run_dir / "predictions.jsonl").is_file():
        raise FileNotFoundError(f"{run_dir}: no predictions.jsonl (is this a run directory?)")
    preds = sorted(read_predictions(run_dir), key=lambda p: question_order(p.question_id))
    if selection is not None and not selection.is_empty:
        preds = selection.apply(preds, strict=False)
    manifest = RunStore(run_dir).read_manifest() or Manifest()
    root = Path(data_root) if data_root is not None else manifest.dataset_root()
    if root is not None and preds:
        preds = _gold_from_dataset(preds, root, manifest.split or "all")[0]
    chat = counting_model(
        judge_spec, base_url=base_url, cache_path=None, use_cache=use_cache, refresh=refresh, prices=prices
    )
    options = options or JudgeOptions()
    if mode is not None:
        options = options.model_copy(update={"batching": mode})
    path = run_dir / "scores" / "judge.jsonl"
    keep = already_judged(preds, path, chat.spec, options, refresh)
    todo = [p for p in preds if p.question_id not in keep]
    # its request builders and judging rounds: the very requests (and cache keys) a scoring pass sends
    judge = _Judge(chat, options, None, judging_rounds(todo, path, chat.spec, options))

    for batch in judge_batches(todo, options.batching):
        items = list(zip(judge._local_ids(batch), batch))
        config = judge._config(len(items), judge._attempt(batch))
        await chat.chat(judge._messages(items), config, stage="judge", items=len(items))
    estimate = CostEstimate(questions=len(preds), already_recorded=len(keep))
    collect(estimate, chat)
    failed = sum(p.failed for p in todo)
    if failed:
        estimate.notes.append(f"{failed} failed answers score 0 without a judge call")
    return estimate


def estimate_judge(
    run_dir: str | Path,
    judge_spec: str,
    *,
    mode: JudgeMode | None = None,
    data_root: str | Path | None = None,
    selection: Any = None,
    base_url: str | None = None,
    use_cache: bool = True,
    refresh: bool = False,
    prices: dict[str, tuple[float, float]] | None = None,
    options: JudgeOptions | None = None,
) -> CostEstimate:
    """Sync entry point of :func:`aestimate_judge` (same arguments, returns and errors).

    Raises:
        InRunningLoopError: called inside a running event loop: ``await aestimate_judge(...)`` there.
    """
    return run_sync(
        lambda: aestimate_judge(
            run_dir,
            judge_spec,
            mode=mode,
            data_root=data_root,
            selection=selection,
            base_url=base_url,
            use_cache=use_cache,
            refresh=refresh,
            prices=prices,
            options=options,
        ),
        "aestimate_judge",
    )
