"""How much work each mode does. ``full`` is the measured benchmark; ``quick`` is a reduced
version for a few minutes on 2 cores; ``tiny`` is what the smoke test runs."""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Profile:
    name: str
    data_scale: str
    """``synthesize_dataset`` scale of the base dataset ("full" = the published size)."""
    latency_s: float
    """Mock model latency L per call (seconds)."""
    methods: tuple[str, ...]
    concurrencies: tuple[int, ...]
    run_questions: int | None
    """Questions answered per run at C > 1 (None = all)."""
    c1_questions: int
    """Questions at C = 1 and for the sequential reference (the same subset: the first N)."""
    minilm_run: bool
    """Also run naive-rag once with the real MiniLM embedder (embedding cost inside the run)."""
    index_embedder: str
    index_turns: int | None
    """Turns embedded by the index workload (None = all)."""
    index_queries: int | None
    score_questions: int | None
    n_boot: int
    scale_mode: str
    """``"x10"``: compare with the x10 dataset; ``"limit"``: compare N with 10·N questions of the
    base dataset (no x10 data is generated); ``"off"``."""
    scale_base_questions: int | None = None
    scale_base_turns: int | None = None
    scale_index: bool = True
    """Include the index build in the scaling comparison."""
    repeats: int = 1
    """Runs of each C = 32 step (harness and floor) in the ``run`` workload; the row is the median
    run (a shared machine's load moves single runs by ±20%)."""


FULL = Profile(
    name="full",
    data_scale="full",
    latency_s=0.2,
    methods=("naive-rag", "full-text"),
    concurrencies=(1, 8, 32, 64),
    run_questions=None,
    c1_questions=200,
    minilm_run=True,
    index_embedder="minilm",
    index_turns=None,
    index_queries=None,
    score_questions=None,
    n_boot=1000,
    scale_mode="x10",
    scale_index=False,
    repeats=3,
)

QUICK = Profile(
    name="quick",
    data_scale="full",
    latency_s=0.2,
    methods=("naive-rag", "full-text"),
    concurrencies=(1, 8, 32, 64),
    run_questions=640,
    c1_questions=30,
    minilm_run=False,
    index_embedder="minilm",
    index_turns=500,
    index_queries=100,
    score_questions=None,
    n_boot=1000,
    scale_mode="limit",
    scale_base_questions=160,
    scale_base_turns=None,
    scale_index=False,
)

TINY = Profile(
    name="tiny",
    data_scale="small",
    latency_s=0.02,
    methods=("naive-rag", "full-text"),
    concurrencies=(32,),
    run_questions=None,
    c1_questions=6,
    minilm_run=False,
    index_embedder="hashed",
    index_turns=None,
    index_queries=None,
    score_questions=None,
    n_boot=100,
    scale_mode="limit",
    scale_base_questions=5,
    scale_base_turns=10,
)

PROFILES = {p.name: p for p in (FULL, QUICK, TINY)}


def with_overrides(
    p: Profile,
    *,
    concurrencies: tuple[int, ...] | None = None,
    repeats: int | None = None,
    reference_questions: int | None = None,
) -> Profile:
    """``p`` with some of its sizes replaced (``python -m bench --concurrency/--repeats/--reference-questions``),
    renamed ``<name>-c<C>[_<C>…]-r<repeats>-ref<N>`` so its rows, run dirs and default results folder
    never pass for the profile's own. ``p`` itself when nothing is replaced.

    Raises:
        ValueError: a concurrency, ``repeats`` or ``reference_questions`` below 1.
    """
    if concurrencies is None and repeats is None and reference_questions is None:
        return p
    if concurrencies is not None and (not concurrencies or min(concurrencies) < 1):
        raise ValueError(f"concurrencies must be ≥ 1, got {concurrencies}")
    for label, value in (("repeats", repeats), ("reference_questions", reference_questions)):
        if value is not None and value < 1:
            raise ValueError(f"{label} must be ≥ 1, got {value}")
    cs = tuple(sorted(set(concurrencies))) if concurrencies is not None else p.concurrencies
    r = repeats if repeats is not None else p.repeats
    ref = reference_questions if reference_questions is not None else p.c1_questions
    name = f"{p.name}-c{'_'.join(map(str, cs))}-r{r}-ref{ref}"
    return replace(p, name=name, concurrencies=cs, repeats=r, c1_questions=ref)
