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
4. ``--heldout``: the leave-one-dialogue-out protocol (:mod:`bench._heldout`): every setting of
   ``h2h`` in :data:`HELDOUT_GRID` chosen on the other labelled dialogues, scored on the held-out
   one, per task type, against the baselines run in the same call (``heldout.md``);
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

from ._heldout import heldout, switch_check
from ._heldout import table as heldout_table

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
        )
    ),
    ("h2h −chain", {"chain": 0}),
    ("h2h +chain=2", {"chain": 2}),
    *((f"h2h +bm25_weight={w}", {"bm25_weight": w}) for w in (0.1, 0.15, 0.25, 0.3, 0.4)),
    ("h2h +session_prior", {"session_prior": True}),
    ("h2h +session_cap=3", {"session_cap": 3}),
    ("h2h +session_cap=4", {"session_cap": 4}),
    ("h2h −ar_session_cap", {"ar_session_cap": 0}),
    ("h2h +ar_session_cap=2", {"ar_session_cap": 2}),
    *((f"h2h +context_after={n}", {"context_after": n}) for n in (1, 3)),
)
FIELDS = ("turn_recall@5", "turn_ndcg@5", "hit@5")
HELDOUT_GRID: tuple[tuple[str, dict[str, Any]], ...] = (("h2h", {}), *ABLATION)
"""The settings of ``h2h`` the held-out protocol chooses among (first = the default, kept on ties)."""
HELDOUT_ROWS: tuple[tuple[str, str], ...] = (("overall", "overall"), *((t.abbr, t.abbr) for t in TaskType))


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
    *,
    real_model: bool = False,
    **settings: Any,
) -> dict:
    """Run ``method`` (retrieval-only by default) into ``out/run_id`` and score it with ``labels``;
    returns ``evaluate_run``'s summary. The model is a scripted fake (:class:`FallbackNoteChat`,
    :class:`FixedAnswerChat`) unless ``real_model``: then the run loads the model its ``settings``
    name (``models``, ``execution`` and any other :class:`~h2hmem.run.RunConfig` field override the
    defaults). Raises ``RuntimeError`` when a question failed."""
    from h2hmem.metrics import evaluate_run
    from h2hmem.run import RunConfig, run_benchmark

    config = RunConfig(
        **{
            "data_root": data,
            "method": method,
            "method_params": params,
            "out_dir": out,
            "run_id": run_id,
            "retrieval_only": retrieval_only,
            "models": {"model": "fake:none"},
            "execution": {"use_cache": False},
            "preset": preset,
            **settings,
        }
    )
    chat = None if real_model else FallbackNoteChat() if retrieval_only else FixedAnswerChat()
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


def per_question(
    run_dir: Path, scores: str = "turn_evidence", field: str = "turn_recall@5"
) -> dict[str, tuple[str, str, float]]:
    """``question_id → (split/dialogue, task type, value)`` of the scored (not excluded, not failed)
    questions of a run, from ``scores/<scores>.jsonl`` (``evidence`` for session ``hit@5``)."""
    out = {}
    with (run_dir / "scores" / f"{scores}.jsonl").open(encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            if not r.get("excluded") and not r.get("failed") and r.get(field) is not None:
                out[r["question_id"]] = (f"{r['split']}/{r['dialogue']}", r["task_type"], float(r[field]))
    return out


def run_rows(run_dir: Path) -> dict[str, dict[str, tuple[str, str, float]]]:
    """A scored run's rows of the two held-out metrics: turn recall@5 and session hit@5."""
    return {"turn_recall@5": per_question(run_dir), "hit@5": per_question(run_dir, "evidence", "hit@5")}


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


def heldout_protocol(
    out: Path, data: Path, labels: Path, embedder: Any, preset: str, done: dict[str, dict]
) -> dict[str, Any]:
    """Run every setting of :data:`HELDOUT_GRID` (a run already in ``done`` is reused) and apply
    the leave-one-dialogue-out protocol (:func:`bench._heldout.heldout`) against the baselines in
    ``done`` that report turns. Returns its result, the settings, and the tables (``markdown``)."""
    grid: dict[str, list] = {"turn_recall@5": [], "hit@5": []}
    for label, params in HELDOUT_GRID:
        run_dir = out / "runs" / run_id_of(label)
        if label not in done:
            shutil.rmtree(run_dir, ignore_errors=True)
            done[label] = run_method(
                data, out / "runs", labels, "h2h", dict(params), run_id_of(label), embedder, preset
            )
            print(f"done {label}", flush=True)
        for metric, rows in run_rows(run_dir).items():
            grid[metric].append(rows)
    h2h_labels = {label for label, _ in HELDOUT_GRID}
    baselines = {
        name: by_metric
        for name in done
        if name not in h2h_labels and not name.startswith("h2h")
        for by_metric in [run_rows(out / "runs" / run_id_of(name))]
        if by_metric["turn_recall@5"]
    }
    result = heldout(grid, baselines)
    recall, hit = grid["turn_recall@5"], grid["hit@5"]
    checks = {}
    for i, (label, _) in enumerate(HELDOUT_GRID[1:], start=1):  # "h2h −x": x is on in the default
        pair = (i, 0) if " −" in label else (0, i)
        floor = [b["hit@5"] for b in baselines.values()]
        checks[label] = switch_check(recall[pair[0]], recall[pair[1]], (hit[pair[0]], hit[pair[1]]), floor)
    result["switches"] = checks
    settings = [label for label, _ in HELDOUT_GRID]
    result["settings"] = settings
    result["choices"] = {d: settings[i] for d, i in result["choices"].items()}
    result["in_sample_choice"] = settings[result["in_sample_choice"]]
    result["markdown"] = "\n\n".join(
        [
            "Turn recall@5, mean (min–max over the held-out dialogues):",
            heldout_table(result, "turn_recall@5", HELDOUT_ROWS),
            "Session hit@5, mean (min–max over the held-out dialogues):",
            heldout_table(result, "hit@5", HELDOUT_ROWS),
            "Each component on its own (turn recall@5 and session hit@5 overall, each without → with → *held "
            "out*: with or without it, as chosen on the other dialogues — by turn recall@5, a tie by session "
            "hit@5, a tie on both → without; never when session hit@5 there falls below the best baseline's):",
            "\n".join(
                [
                    "| component | turn R@5 without | with | held out | session hit@5 without | with | held out "
                    "| folds choosing it |",
                    "|---|---|---|---|---|---|---|---|",
                ]
                + [
                    f"| {label.removeprefix('h2h ')[1:]} | {c['without']:.3f} | {c['with']:.3f} | {c['heldout']:.3f} "
                    f"| {c['guard_without']:.3f} | {c['guard_with']:.3f} | {c['guard_heldout']:.3f} "
                    f"| {c['folds_with']} / {len(result['choices'])} |"
                    for label, c in checks.items()
                ]
            ),
            "Chosen per held-out dialogue: "
            + ", ".join(f"{d} → {c}" for d, c in result["choices"].items())
            + f"; on all labelled dialogues (in-sample): {result['in_sample_choice']}",
        ]
    )
    return result


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
    p.add_argument(
        "--heldout", action="store_true", help="leave-one-dialogue-out choice among the h2h settings in HELDOUT_GRID"
    )
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
        rows["heldout"] = heldout_protocol(args.out, data, labels, embedder, args.preset, results)
        (args.out / "heldout.md").write_text(rows["heldout"]["markdown"] + "\n", encoding="utf-8")
        print(rows["heldout"]["markdown"])
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
