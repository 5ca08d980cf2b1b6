"""The scorer component: one metric of ``h2hmem evaluate``, built in or from a plugin.

A :class:`Scorer` turns the run's predictions into one score record per question (a
:class:`~h2hmem.records.ScoreKey` subclass: the question's labels, ``failed``,
``prediction_hash`` and the metric values), which :func:`~h2hmem.metrics.evaluate_run` writes to
``scores/<name>.jsonl``; it then aggregates them into the ``metrics.<name>`` section of
``scores/summary.json`` (:meth:`Scorer.summarize`, by default :func:`~h2hmem.metrics.aggregate`
over :attr:`Scorer.fields`). Tables, the report and ``runs list`` read that section by name, so a
new scorer needs no edit anywhere else.

Writing one (the whole of ``examples/answer_length_scorer``; ``docs/custom-metric.md``)::

    class AnswerLengthScore(ScoreKey):            # one line of scores/answer-length.jsonl
        answer_tokens: int | None = None
        excluded: str | None = None

    class AnswerLengthScorer(Scorer):
        name = "answer-length"
        record_type = AnswerLengthScore
        fields = ("answer_tokens",)

        def score(self, predictions, context):
            return [AnswerLengthScore(**score_key(p), excluded="failed_answer") if p.failed
                    else AnswerLengthScore(**score_key(p), answer_tokens=len(p.answer.split()))
                    for p in predictions]

and register it under the entry-point group ``h2hmem.scorers`` (``answer-length =
"my_pkg:AnswerLengthScorer"``).
"""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from .. import defaults
from .._atomic import atomic_write_text
from .._localio import local_io
from ..records import Aggregate, Manifest, MetricSection, Prediction, Record, ScoreSet, prediction_hash
from ._aggregate import aggregate

_LABELS = ("split", "task_type", "main_category", "difficulty", "dialogue")


def score_key(p: Prediction) -> dict[str, Any]:
    """The fields every score line starts with (:class:`~h2hmem.records.ScoreKey`) for prediction
    ``p``: question id, its labels, ``failed`` and ``prediction_hash``."""
    return {
        "question_id": p.question_id,
        **{k: getattr(p, k) for k in _LABELS},
        "failed": p.failed,
        "prediction_hash": prediction_hash(p),
    }


@dataclass
class ScoringContext:
    """What an evaluation gives every scorer (one per :func:`~h2hmem.metrics.evaluate_run` call).

    Gold answers and labels in the predictions are already the dataset's when ``data_root`` is known.
    """

    run_dir: Path
    predictions: list[Prediction]
    """The predictions scored in this call (after the selection), in question order."""
    scores_dir: Path
    """``run_dir/scores``: a scorer that keeps side files (labels info, its own cache) puts them here."""
    manifest: Manifest
    data_root: Path | None = None
    gold_sessions: dict[str, list[str]] | None = None
    """Question id → gold answer sessions from the dataset (None: use the copies in the predictions)."""
    absent_sessions: dict[str, set[str]] | None = None
    """``"<split>/<dialogue>"`` → names of the dialogue's sessions absent from the dataset."""
    n_boot: int = defaults.N_BOOT
    seed: int = 0
    selected: frozenset[str] = frozenset()
    """Names of the scorers asked for in this call."""
    model: Any = None
    """The model of a scorer that :attr:`~Scorer.needs_model` (the judge's ChatModel); None otherwise."""
    judge_options: Any = None
    """The resolved :class:`~h2hmem.metrics.JudgeOptions` (the judge scorer's settings)."""
    refresh: bool = False
    """Redo model-made scores already on file (``--refresh-judge``)."""
    show_progress: bool = False
    transcripts: Path | None = None
    """Where a model-using scorer appends its calls (``transcripts-judge.jsonl.gz``); None: not recorded."""
    evidence_labels: Any = None
    """Supporting-turn labels given by the caller (a path or loaded labels); None: found next to the dataset."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Free room for plugin scorers' settings (the Python API only)."""
    score_set: ScoreSet | None = None
    """The evaluation's staged files (:class:`~h2hmem.records.ScoreSet`); None outside ``evaluate_run``."""
    unselected: list[Prediction] = field(default_factory=list)
    """The run's predictions outside the evaluation's selection (empty without one): a scorer with a
    :attr:`~Scorer.kept_file_name` keeps their current lines there (:meth:`Scorer.kept_outside`)."""

    def write_side_file(self, name: str, text: str) -> None:
        """Write ``scores/<name>`` (a scorer's side file) as part of the evaluation's set of files:
        staged with the score files and put in place with them, so a failed evaluation leaves the
        previous one as it was (written at once when there is no :attr:`score_set`).

        Raises:
            LocalIOError: the file cannot be written (names it).
        """
        if self.score_set is not None:
            self.score_set.stage_text(name, text)
        else:
            with local_io(self.scores_dir / name):
                atomic_write_text(self.scores_dir / name, text, fsync=True)


class Scorer(ABC):
    """One metric: per-question score records and their summary section.

    Class attributes a scorer sets:

    - ``name``: the metric's name (``evaluate --metrics NAME``, ``scores/<name>.jsonl``,
      ``metrics.<name>`` in ``summary.json``); lower case, digits, ``-`` and ``_``;
    - ``record_type``: its per-question record, a :class:`~h2hmem.records.Record` (usually a
      :class:`~h2hmem.records.ScoreKey` subclass, filled with :func:`score_key`) whose fields named
      in ``fields`` hold the values (``None`` = not scored, left out of the means);
    - ``fields``: the record fields aggregated (micro/macro means and bootstrap CIs per split and
      group), in display order;
    - ``needs_model``: it calls a model (the judge): the caller must give one;
    - ``needs_answers``: False for a metric of retrieval alone (scores retrieval-only runs too);
    - ``offline``: cheap and deterministic: recomputed on every evaluation while its file exists,
      so no line ever describes an older prediction (a model-made score is kept instead, and
      :meth:`refresh_kept` drops what no longer holds);
    - ``titles``: field → display title (tables, report); default the field name.
    """

    name: ClassVar[str]
    record_type: ClassVar[type[Record]]
    fields: ClassVar[tuple[str, ...]]
    section_type: ClassVar[type[MetricSection]] = MetricSection
    """The summary section type (extra keys of :meth:`summarize` go in as they are)."""
    needs_model: ClassVar[bool] = False
    needs_answers: ClassVar[bool] = True
    offline: ClassVar[bool] = True
    titles: ClassVar[dict[str, str]] = {}
    selected_with: ClassVar[tuple[str, ...]] = ()
    """Other scorer names that select this one too (turn evidence comes with ``evidence``)."""

    @property
    def file_name(self) -> str:
        """``"<name>.jsonl"`` in ``scores/``."""
        return f"{self.name}.jsonl"

    def title(self, field_name: str) -> str:
        return self.titles.get(field_name, f"{self.name} {field_name}")

    def options(self, context: ScoringContext) -> dict[str, Any]:
        """The resolved options recorded in the scorer's :class:`~h2hmem.records.ComponentSpec`."""
        return {}

    @abstractmethod
    def score(
        self, predictions: list[Prediction], context: ScoringContext
    ) -> Sequence[Record] | None | Awaitable[Sequence[Record] | None]:
        """One ``record_type`` per prediction, in the order given (sync, or a coroutine).

        Failed predictions are included (``failed`` true on their line): :func:`~h2hmem.metrics.aggregate`
        scores a failed line's ``None`` as 0 and keeps it in the denominators (the paper's rule);
        a metric that leaves failures out sets an ``excluded`` reason on their lines (the default
        :meth:`summarize` skips excluded lines). Return None when the metric does not apply to this
        run (no labels…): nothing is written and an existing file is kept.
        """

    def refresh_kept(self, predictions: list[Prediction], context: ScoringContext) -> Sequence[Record] | None:
        """For a scorer that is not :attr:`offline`, when it was not asked for but its file exists:
        the records its file should hold now, without scoring (the judge drops judgments of changed
        answers), written with the evaluation's other files; None: the file is kept as it is.
        Default: None."""
        return None

    kept_file_name: str | None = None
    """``scores/<name>`` where :meth:`kept_outside`'s lines are written when the evaluation scores a
    selection (the judge: ``judge.kept.jsonl``); None: nothing is kept (an :attr:`offline` scorer's
    lines are recomputed for free)."""

    def kept_outside(self, others: list[Prediction], context: ScoringContext) -> Sequence[Record]:
        """When the evaluation scores a selection: this scorer's lines for the run's other predictions
        (``others``) that still describe them, written to :attr:`kept_file_name` (the scorer's own file
        covers the selection, as the summary does), so that an evaluation of a subset does not throw
        away what was paid for. Default: none."""
        return []

    def summarize(self, records: list[dict[str, Any]], context: ScoringContext) -> MetricSection:
        """The summary section of this scorer's records (those of the scored predictions, as file
        dicts). Default: :func:`~h2hmem.metrics.aggregate` over :attr:`fields` of the records
        that are not ``excluded``."""
        included = [r for r in records if not r.get("excluded")]
        agg = aggregate(included, list(self.fields), n_boot=context.n_boot, seed=context.seed)
        return self.section_type(fields=list(self.fields), aggregate=Aggregate.model_validate(agg))


class ScorerError(ValueError):
    """A plugin scorer's ``score()`` or ``summarize()`` raised: the message names the scorer, its
    class and the step, with the original exception chained."""


@contextmanager
def blamed_on(scorer: Scorer, step: str) -> Iterator[None]:
    """Re-raise an exception of a plugin scorer's ``step`` as :class:`ScorerError` naming it (a
    ``KeyError`` of a plugin would otherwise reach the user as a bare traceback, or as a message
    with no scorer's name). h2hmem's own scorers raise as they are."""
    cls = type(scorer)
    try:
        yield
    except ScorerError:
        raise
    except Exception as e:
        if cls.__module__.split(".")[0] == "h2hmem":
            raise
        raise ScorerError(
            f"scorer {scorer.name!r} ({cls.__module__}:{cls.__qualname__}) failed in {step}(): {type(e).__name__}: {e}"
        ) from e


async def run_score(scorer: Scorer, predictions: list[Prediction], context: ScoringContext) -> Sequence[Record] | None:
    """:meth:`Scorer.score`, awaited when it is a coroutine.

    Raises:
        ValueError: a record count or question order that differs from ``predictions``, or a
            record that is not the scorer's ``record_type`` (names the scorer).
        ScorerError: a plugin scorer's ``score()`` raised (names the scorer).
    """
    with blamed_on(scorer, "score"):
        out = scorer.score(predictions, context)
        if inspect.isawaitable(out):
            out = await out
    if out is None:
        return None
    records = list(out)
    if [getattr(r, "question_id", None) for r in records] != [p.question_id for p in predictions]:
        raise ValueError(
            f"scorer {scorer.name!r} returned {len(records)} records that do not match the "
            f"{len(predictions)} predictions one for one, in order"
        )
    bad = next((r for r in records if not isinstance(r, scorer.record_type)), None)
    if bad is not None:
        raise ValueError(
            f"scorer {scorer.name!r} returned a {type(bad).__name__}, not its record_type {scorer.record_type.__name__}"
        )
    return records
