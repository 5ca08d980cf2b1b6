"""Retrieval comparison on a labelled dataset: every method in retrieval-only mode, turn and session metrics.

    python -m bench.retrieval [--data ROOT] [--labels DIR] [--out DIR] [--methods a,b] [--ablation]
                              [--preset paper|harmonized] [--reuse a,b] [--heldout] [--abstain]

What it does (``docs/h2h-memory.md`` reports its output on the shared sample):

1. copies the dataset with every question's image field emptied (``question.image = ""``): a
   question-image *file name* must not reach a retrieval query (it names the very turn that
   shared the file); the sample has no image files, hence no captions, so nothing else is lost;
2. runs each method with ``run --retrieval-only`` semantics (memory built, no answer call) —
   A-Mem's note writer is a scripted fake whose replies are not JSON, so every note is A-Mem's
   counted fallback note (turn content without keywords/tags/context); MuRAG/NGM use their
   offline text fallback encoder (MiniLM over turn text + caption); every method uses MiniLM;
3. scores with the turn-level labels (``evaluate --evidence-labels``) and prints per sub-type
   turn recall@5, nDCG@5 and session hit@5, writing ``retrieval.json`` and ``retrieval.md`` to ``--out``;
4. ``--heldout``: the held-out check of the switches in :data:`HELDOUT_GRID` (:func:`heldout`);
5. ``--abstain``: an answer run of ``h2h`` with a fixed-answer fake model, and the discrimination of
   its abstention signal, refusal (AR) vs answerable questions (:func:`abstention`).

Embeddings go to a persistent cache beside the output (``--out/embeddings.sqlite``), so reruns and
the ablation embed nothing twice.
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path
from typing import Any

from h2hmem.data import TaskType
from h2hmem.llm import ChatResult, Usage

BASELINES = ("full-text", "naive-rag", "a-mem", "full-mm", "murag", "ngm")
ABLATION: tuple[tuple[str, dict[str, Any]], ...] = (
    *(
        (f"h2h −{c}", {c: False})
        for c in (
            "bm25",
            "context",
            "speakers",
            "time_anchors",
            "pictures",
            "decompose",
            "clean_query",
            "recency",
            "both_sides",
            "revisions",
        )
    ),
    ("h2h +session_prior", {"session_prior": True}),
    ("h2h +session_cap=3", {"session_cap": 3}),
)
FIELDS = ("turn_recall@5", "turn_ndcg@5", "hit@5")
HELDOUT_GRID: tuple[dict[str, bool], ...] = tuple(
    {"both_sides": b, "revisions": r} for b in (False, True) for r in (False, True)
)
"""Settings the held-out check chooses among (first = the switches off: preferred on ties)."""


class FallbackNoteChat:
    """A note writer that never writes a note (replies are not JSON): A-Mem falls back on every turn."""

    spec = "fake:fallback-notes"
    supports_images = False

    async def chat(self, messages, config=None, *, stage="answer") -> ChatResult:
        if stage == "answer":
            raise RuntimeError("retrieval-only harness: the answer model must not be called")
        return ChatResult(text="(no note)", model=self.spec, usage=Usage(calls=1), latency_s=0.0)


class FixedAnswerChat(FallbackNoteChat):
    """Answers every question "I don't know." (an answer run whose answers are not read)."""

    spec = "fake:fixed-answer"

    async def chat(self, messages, config=None, *, stage="answer") -> ChatResult:
        return ChatResult(text="I don't know.", model=self.spec, usage=Usage(calls=1), latency_s=0.0)


def strip_question_images(src: Path, dst: Path) -> Path:
    """Copy dataset ``src`` to ``dst`` with every ``question.image`` emptied; returns ``dst``."""
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst)
    for qf in dst.glob("*/dialogue*/scenes/session*/questions.json"):
        data = json.loads(qf.read_text(encoding="utf-8"))
        items = data["questions"] if isinstance(data, dict) else data
        for q in items:
            if isinstance(q.get("question"), dict):
                q["question"]["image"] = ""
        qf.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return dst


def run_method(
    data: Path,
    out: Path,
    labels: Path,
    method: str,
    params: dict[str, Any],
    run_id: str,
    embedder: Any = None,
    preset: str = "paper",
    retrieval_only: bool = True,
) -> dict:
    from h2hmem.metrics import evaluate_run
    from h2hmem.run import RunConfig, run_benchmark

    config = RunConfig(
        data_root=data,
        method=method,
        method_params=params,
        out_dir=out,
        run_id=run_id,
        retrieval_only=retrieval_only,
        models={"model": "fake:none"},
        execution={"use_cache": False},
        preset=preset,
    )
    chat = FallbackNoteChat() if retrieval_only else FixedAnswerChat()
    summary = run_benchmark(config, chat_model=chat, embedder=embedder, progress=False)
    if summary.failed:
        raise RuntimeError(f"{method}: {summary.failed} questions failed: {list(summary.failed_questions.items())[:3]}")
    return evaluate_run(summary.run_dir, ("evidence",), evidence_labels=labels, n_boot=0)


def _cell(summary: dict, metric: str, field: str, group: str | None, key: str | None) -> tuple[float | None, int]:
    m = summary["metrics"].get(metric)
    if not m or not m.get("aggregate"):
        return None, 0
    split = m["aggregate"]["splits"]["all"]
    cell = split["overall"] if group is None else split[group].get(key)
    if not cell:
        return None, 0
    v = cell["metrics"][field]
    return v["mean"], v["n"]


def table(results: dict[str, dict]) -> tuple[str, dict]:
    """Markdown table (rows: overall + sub-types; per method turn R@5 / nDCG@5 / session hit@5) and its data."""
    rows = [("overall", None, None)] + [(t.abbr, "task_type", t.abbr) for t in TaskType]
    head = "| sub-type | n (turn / session) | " + " | ".join(results) + " |"
    lines = [head, "|" + "---|" * (2 + len(results))]
    data: dict[str, Any] = {}
    for label, group, key in rows:
        cells, n_turn, n_sess = [], 0, 0
        for name, summary in results.items():
            vals = []
            for f in FIELDS:
                metric = "evidence" if f == "hit@5" else "turn_evidence"
                v, n = _cell(summary, metric, f, group, key)
                n_turn = max(n_turn, n) if metric == "turn_evidence" else n_turn
                n_sess = max(n_sess, n) if metric == "evidence" else n_sess
                vals.append(v)
                data.setdefault(label, {}).setdefault(name, {})[f] = v
            cells.append(" / ".join("–" if v is None else f"{v:.3f}" for v in vals))
        data[label]["n"] = {"turn": n_turn, "session": n_sess}
        lines.append(f"| {label} | {n_turn} / {n_sess} | " + " | ".join(cells) + " |")
    return "\n".join(lines), data


def per_question(run_dir: Path, field: str = "turn_recall@5") -> dict[str, tuple[str, str, float]]:
    """``question_id → (split/dialogue, task type, value)`` of the labelled, scored questions of a run."""
    out = {}
    with (run_dir / "scores" / "turn_evidence.jsonl").open(encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            if not r.get("excluded") and not r.get("failed"):
                out[r["question_id"]] = (f"{r['split']}/{r['dialogue']}", r["task_type"], r[field])
    return out


def _means(rows: list[tuple[str, str, float]]) -> dict[str, float]:
    """Mean value overall and per task type of ``(dialogue, task type, value)`` rows."""
    by: dict[str, list[float]] = {"overall": []}
    for _, t, v in rows:
        by["overall"].append(v)
        by.setdefault(t, []).append(v)
    return {k: round(sum(v) / len(v), 4) for k, v in by.items() if v}


def heldout(scores: list[dict[str, tuple[str, str, float]]], *, ties_to_last: bool = False) -> dict[str, Any]:
    """Held-out check of a choice among settings (``scores[i]`` = :func:`per_question` of setting i).

    Leave-one-dialogue-out: for each dialogue, the setting with the best mean turn recall@5 over the
    *other* dialogues' questions (ties → the lower index, i.e. the switches off; with
    ``ties_to_last`` the higher index, i.e. the design default, all on) scores that
    dialogue's questions; split-half: dialogues alternately in halves A and B (sorted by id), the
    setting chosen on one half scores the other. Returns the held-out means (overall and per task
    type), the choices, and every setting's full-sample means.

    Example: two settings, dialogues d1 (setting 1 better) and d2 (setting 0 better): LODO scores d1
    with the choice made on d2 (setting 0) and d2 with setting 1.
    """
    dialogues = sorted({d for s in scores for d, _, _ in s.values()})

    def best(on: set[str]) -> int:
        means = [
            sum(v for d, _, v in s.values() if d in on) / max(1, sum(d in on for d, _, _ in s.values())) for s in scores
        ]
        return max(range(len(scores)), key=lambda i: (round(means[i], 9), i if ties_to_last else -i))

    lodo_rows, lodo_choice = [], {}
    for d in dialogues:
        i = best(set(dialogues) - {d})
        lodo_choice[d] = i
        lodo_rows += [row for row in scores[i].values() if row[0] == d]
    halves = {"A": set(dialogues[0::2]), "B": set(dialogues[1::2])}
    half_rows, half_choice = [], {}
    for name, other in (("A", "B"), ("B", "A")):
        i = best(halves[other])
        half_choice[f"{name} (chosen on {other})"] = i
        half_rows += [row for s_i, s in enumerate(scores) if s_i == i for row in s.values() if row[0] in halves[name]]
    return {
        "dialogues": dialogues,
        "halves": {k: sorted(v) for k, v in halves.items()},
        "lodo": _means(lodo_rows),
        "lodo_choice": lodo_choice,
        "split_half": _means(half_rows),
        "split_half_choice": half_choice,
        "full_sample": [_means(list(s.values())) for s in scores],
    }


def abstention(run_dir: Path, threshold: float) -> dict[str, Any]:
    """Discrimination of ``details.abstain_signal`` (best question–turn cosine) for AR vs other questions.

    AUROC of the *negated* signal (low similarity ⇒ refusal; 0.5 = chance) by
    ``sklearn.metrics.roc_auc_score``, and precision / recall / F1 of "signal < ``threshold``" as a
    refusal detector. Raises ``ValueError`` when the run recorded no signal.
    """
    from sklearn.metrics import precision_recall_fscore_support, roc_auc_score

    from h2hmem.records import read_predictions

    ys, sig = [], []
    for p in read_predictions(run_dir / "predictions.jsonl"):
        v = (p.details or {}).get("abstain_signal")
        if v is not None:
            ys.append(int(p.task_type == "AR"))
            sig.append(float(v))
    if not ys or len(set(ys)) < 2:
        raise ValueError(f"{run_dir}: no abstain_signal for both AR and other questions")
    pred = [int(v < threshold) for v in sig]
    prec, rec, f1, _ = precision_recall_fscore_support(ys, pred, average="binary", zero_division=0)
    ar = sorted(v for v, y in zip(sig, ys, strict=True) if y)
    other = sorted(v for v, y in zip(sig, ys, strict=True) if not y)
    return {
        "n_ar": len(ar),
        "n_other": len(other),
        "auroc": round(float(roc_auc_score(ys, [-v for v in sig])), 4),
        "threshold": threshold,
        "precision": round(float(prec), 4),
        "recall": round(float(rec), 4),
        "f1": round(float(f1), 4),
        "flagged": sum(pred),
        "median_signal_ar": ar[len(ar) // 2],
        "median_signal_other": other[len(other) // 2],
    }


def run_id_of(label: str) -> str:
    """Run folder name of a table label (``"h2h −bm25"`` → ``"h2h-no-bm25"``)."""
    return label.replace(" −", "-no-").replace(" +", "-with-").replace("=", "")


def main(argv: list[str] | None = None) -> None:
    here = Path(__file__).resolve().parent.parent
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", type=Path, default=here.parent / "shared" / "data" / "h2hmem-sample")
    p.add_argument("--labels", type=Path, default=None, help="default: <data>-labels")
    p.add_argument("--out", type=Path, default=here / "bench" / ".data" / "retrieval")
    p.add_argument("--methods", default=",".join((*BASELINES, "h2h")))
    p.add_argument("--preset", default="paper", choices=("paper", "harmonized"), help="the runs' preset")
    p.add_argument("--ablation", action="store_true", help="also run h2h with each component switched off")
    p.add_argument("--heldout", action="store_true", help="held-out check of the switches in HELDOUT_GRID")
    p.add_argument("--abstain", action="store_true", help="answer run of h2h; discrimination of its abstention signal")
    p.add_argument(
        "--reuse",
        default="",
        help="comma-separated labels whose run folder under --out/runs is kept and only re-evaluated (e.g. the baselines)",
    )
    args = p.parse_args(argv)
    labels = args.labels or args.data.with_name(args.data.name + "-labels")
    args.out.mkdir(parents=True, exist_ok=True)
    data = strip_question_images(args.data, args.out / "data")
    runs: list[tuple[str, str, dict]] = [(m, m, {}) for m in args.methods.split(",") if m]
    if args.ablation:
        runs += [(label, "h2h", params) for label, params in ABLATION]
    from h2hmem.embed import load_embedder
    from h2hmem.metrics import evaluate_run

    # one instance for every run, with a persistent cache beside the output: reruns embed nothing twice
    embedder = load_embedder("minilm", cache=args.out / "embeddings.sqlite")
    reuse = {x for x in args.reuse.split(",") if x}
    results: dict[str, dict] = {}
    for label, method, params in runs:
        run_id = run_id_of(label)
        if label in reuse and (args.out / "runs" / run_id / "predictions.jsonl").exists():
            results[label] = evaluate_run(args.out / "runs" / run_id, ("evidence",), evidence_labels=labels, n_boot=0)
        else:
            shutil.rmtree(args.out / "runs" / run_id, ignore_errors=True)
            results[label] = run_method(data, args.out / "runs", labels, method, params, run_id, embedder, args.preset)
        print(f"done {label}", flush=True)
    md, rows = table(results)
    if args.heldout:
        grid = []
        for i, params in enumerate(HELDOUT_GRID):
            run_id = f"heldout-{i}"
            shutil.rmtree(args.out / "runs" / run_id, ignore_errors=True)
            run_method(data, args.out / "runs", labels, "h2h", dict(params), run_id, embedder, args.preset)
            grid.append(per_question(args.out / "runs" / run_id))
        rows["heldout"] = {"grid": list(HELDOUT_GRID), **heldout(grid)}
        rows["heldout_ties_to_default"] = heldout(grid, ties_to_last=True)
        print(json.dumps({k: rows[k] for k in ("heldout", "heldout_ties_to_default")}, indent=1))
    if args.abstain:
        shutil.rmtree(args.out / "runs" / "h2h-answers", ignore_errors=True)
        run_method(
            data, args.out / "runs", labels, "h2h", {}, "h2h-answers", embedder, args.preset, retrieval_only=False
        )
        answers = args.out / "runs" / "h2h-answers"
        manifest = json.loads((answers / "manifest.json").read_text(encoding="utf-8"))
        rows["abstain"] = abstention(answers, float(manifest["components"]["memory"]["options"]["abstain_threshold"]))
        print(json.dumps(rows["abstain"], indent=1))
    (args.out / "retrieval.md").write_text(md + "\n", encoding="utf-8")
    (args.out / "retrieval.json").write_text(json.dumps(rows, indent=1), encoding="utf-8")
    print(md)


if __name__ == "__main__":
    main()
