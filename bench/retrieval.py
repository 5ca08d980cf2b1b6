"""Retrieval comparison on a labelled dataset: every method in retrieval-only mode, turn and session metrics.

    python -m bench.retrieval [--data ROOT] [--labels DIR] [--out DIR] [--methods a,b] [--ablation]

What it does (``docs/h2h-memory.md`` reports its output on the shared sample):

1. copies the dataset with every question's image field emptied (``question.image = ""``): a
   question-image *file name* must not reach a retrieval query (it names the very turn that
   shared the file); the sample has no image files, hence no captions, so nothing else is lost;
2. runs each method with ``run --retrieval-only`` semantics (memory built, no answer call) —
   A-Mem's note writer is a scripted fake whose replies are not JSON, so every note is A-Mem's
   counted fallback note (turn content without keywords/tags/context); MuRAG/NGM use their
   offline text fallback encoder (MiniLM over turn text + caption); every method uses MiniLM;
3. scores with the turn-level labels (``evaluate --evidence-labels``) and prints per sub-type
   turn recall@5, nDCG@5 and session hit@5, writing ``retrieval.json`` and ``retrieval.md`` to ``--out``.
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
        for c in ("bm25", "context", "speakers", "time_anchors", "pictures", "decompose", "clean_query", "recency")
    ),
    ("h2h +session_prior", {"session_prior": True}),
    ("h2h +session_cap=3", {"session_cap": 3}),
)
FIELDS = ("turn_recall@5", "turn_ndcg@5", "hit@5")


class FallbackNoteChat:
    """A note writer that never writes a note (replies are not JSON): A-Mem falls back on every turn."""

    spec = "fake:fallback-notes"
    supports_images = False

    async def chat(self, messages, config=None, *, stage="answer") -> ChatResult:
        if stage == "answer":
            raise RuntimeError("retrieval-only harness: the answer model must not be called")
        return ChatResult(text="(no note)", model=self.spec, usage=Usage(calls=1), latency_s=0.0)


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
    data: Path, out: Path, labels: Path, method: str, params: dict[str, Any], run_id: str, embedder: Any = None
) -> dict:
    from h2hmem.metrics import evaluate_run
    from h2hmem.run import RunConfig, run_benchmark

    config = RunConfig(
        data_root=data,
        method=method,
        method_params=params,
        out_dir=out,
        run_id=run_id,
        retrieval_only=True,
        model="fake:none",
        use_cache=False,
    )
    summary = run_benchmark(config, chat_model=FallbackNoteChat(), embedder=embedder, progress=False)
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


def main(argv: list[str] | None = None) -> None:
    here = Path(__file__).resolve().parent.parent
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", type=Path, default=here.parent / "shared" / "data" / "h2hmem-sample")
    p.add_argument("--labels", type=Path, default=None, help="default: <data>-labels")
    p.add_argument("--out", type=Path, default=here / "bench" / ".data" / "retrieval")
    p.add_argument("--methods", default=",".join((*BASELINES, "h2h")))
    p.add_argument("--ablation", action="store_true", help="also run h2h with each component switched off")
    args = p.parse_args(argv)
    labels = args.labels or args.data.with_name(args.data.name + "-labels")
    args.out.mkdir(parents=True, exist_ok=True)
    data = strip_question_images(args.data, args.out / "data")
    runs: list[tuple[str, str, dict]] = [(m, m, {}) for m in args.methods.split(",") if m]
    if args.ablation:
        runs += [(label, "h2h", params) for label, params in ABLATION]
    from h2hmem.embed import load_embedder

    embedder = load_embedder("minilm")  # one instance for every run: its cache makes the ablation cheap
    results: dict[str, dict] = {}
    for label, method, params in runs:
        run_id = label.replace(" −", "-no-").replace(" +", "-with-").replace("=", "")
        shutil.rmtree(args.out / "runs" / run_id, ignore_errors=True)
        results[label] = run_method(data, args.out / "runs", labels, method, params, run_id, embedder)
        print(f"done {label}", flush=True)
    md, rows = table(results)
    (args.out / "retrieval.md").write_text(md + "\n", encoding="utf-8")
    (args.out / "retrieval.json").write_text(json.dumps(rows, indent=1), encoding="utf-8")
    print(md)


if __name__ == "__main__":
    main()
