"""Memory products next to the baselines on a labelled dataset: retrieval-only turn recall@5 and
session hit@5, with the model calls and the time each memory costs per dialogue.

    python -m bench.products [--data ROOT] [--labels DIR] [--out DIR] [--dialogue ID] [--rows a,b] [--fresh a,b]

It reuses :mod:`bench.retrieval`'s pieces: question images stripped from the queries, MiniLM for every
method with its embeddings cached under ``--out``, runs scored with ``evaluate --evidence-labels``.
Rows (:data:`ROWS`) differ in their memory and in the model that builds it:

- ``none``: no model (naive-rag, h2h, mem0 with ``infer=false``: memories are the turns); A-Mem gets
  the scripted note writer of ``bench.retrieval``, so every note is its counted fallback (the turn);
- ``qwen``: ``local:qwen2.5-coder-1.5b`` (llama.cpp in-process) writes the product's memories,
  served to it by the model gateway; requests go to a cache under ``--out``, and a row's run
  folder is resumed, not deleted, so a stopped run loses at most its call in flight (``--fresh``
  starts a row anew);
- ``mock``: h2hmem's mock server (schema-valid JSON, no real content) builds the memory: the row
  counts the product's calls and prompt sizes per dialogue; its recall is **not** a quality figure
  and the table does not show it.

Rows of scope ``sample`` run on every dialogue, rows of scope ``dialogue`` on ``--dialogue`` only
(the same dialogue for every method, so they compare). Writes ``products.json`` and
``products.md`` to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .retrieval import _cell, run_method, strip_question_images

QWEN = "local:qwen2.5-coder-1.5b"
DEFAULT_DIALOGUE = "multi-party/dialogue3"
"""The smallest sample dialogue with a session file: one session of 81 turns, 38 questions (6 labelled)."""

Model = Literal["none", "mock", "qwen"]


@dataclass(frozen=True)
class Row:
    """One measured memory: a method with its options, the model that builds it, and its scope."""

    label: str
    method: str
    model: Model = "none"
    scope: Literal["sample", "dialogue"] = "sample"
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def run_id(self) -> str:
        return self.label.replace(" ", "-").replace(",", "").replace("=", "").replace("(", "").replace(")", "")


def _rows() -> tuple[Row, ...]:
    plain = (
        ("naive-rag", "naive-rag", {}),
        ("a-mem (fallback notes)", "a-mem", {}),
        ("h2h", "h2h", {}),
        ("mem0 infer=false", "mem0", {"infer": False}),
    )
    return (
        *(Row(f"{label} [sample]", method, params=params) for label, method, params in plain),
        *(Row(f"{label} [dialogue]", method, scope="dialogue", params=params) for label, method, params in plain),
        Row("mem0 infer=true qwen [dialogue]", "mem0", "qwen", "dialogue", {"infer": True}),
        Row(
            "mem0 infer=true batch_turns=6 qwen [dialogue]",
            "mem0",
            "qwen",
            "dialogue",
            {"infer": True, "batch_turns": 6},
        ),
        Row("mem0 infer=true mock [dialogue]", "mem0", "mock", "dialogue", {"infer": True}),
        Row("langmem mock [dialogue]", "langmem", "mock", "dialogue"),
        Row("graphiti mock [dialogue]", "graphiti", "mock", "dialogue"),
        Row("langmem qwen [dialogue]", "langmem", "qwen", "dialogue"),
        Row("graphiti qwen [dialogue]", "graphiti", "qwen", "dialogue"),
    )


ROWS: tuple[Row, ...] = _rows()
DEFAULT_ROWS = tuple(r.label for r in ROWS if r.model != "qwen" or r.params.get("batch_turns") == 6)
"""Rows run when ``--rows`` is not given. Of the Qwen rows only mem0 with ``batch_turns=6`` (14 calls on
multi-party/dialogue3, ~1 h on 2 CPU cores); mem0 at its default ``batch_turns=2`` (41 calls, ~3 h), LangMem
and Graphiti with Qwen only when asked for (their estimated time is in the mock rows)."""


def flat_prompt(messages: list[dict[str, Any]]) -> str:
    """The text of a call's messages, in order (what a prefix cache compares)."""
    parts = []
    for m in messages:
        content = m.get("content")
        if isinstance(content, list):
            content = "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
        parts.append(f"<{m.get('role')}>{content or ''}")
    return "".join(parts)


def shared_prefix(a: str, b: str) -> int:
    """Length of the longest common prefix of ``a`` and ``b`` (characters)."""
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def call_stats(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per dialogue, the memory-build calls of a run's transcript ``records`` (in call order):
    ``calls`` (paid), ``cached``, ``failed``, ``prompt_tokens``, ``completion_tokens`` (paid calls),
    ``new_prompt_tokens`` (each paid call's prompt tokens not shared, as a prefix, with the call
    before it, pro rata of characters: what a model that keeps the previous call's KV cache still
    has to read), ``model_s`` (summed latency of the paid calls) and ``latencies_s``."""
    by: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        if r.get("stage") == "memory_build":
            by[str(r.get("dialogue") or "?")].append(r)
    out = {}
    for dialogue, rs in by.items():
        prev = ""
        s: dict[str, Any] = {
            "calls": 0,
            "cached": 0,
            "failed": 0,
            "prompt_tokens": 0,
            "completion_tokens": 0,
            "new_prompt_tokens": 0.0,
            "model_s": 0.0,
            "latencies_s": [],
        }
        for r in rs:
            text = flat_prompt(r.get("messages") or [])
            if r.get("error"):
                s["failed"] += 1
            elif r.get("cached"):
                s["cached"] += 1
            else:
                usage = r.get("usage") or {}
                tokens = int(usage.get("prompt_tokens", 0))
                s["calls"] += 1
                s["prompt_tokens"] += tokens
                s["completion_tokens"] += int(usage.get("completion_tokens", 0))
                s["new_prompt_tokens"] += tokens * (len(text) - shared_prefix(prev, text)) / max(len(text), 1)
                s["model_s"] += float(r.get("latency_s") or 0.0)
                s["latencies_s"].append(round(float(r.get("latency_s") or 0.0), 3))
            prev = text
        s["new_prompt_tokens"] = round(s["new_prompt_tokens"])
        s["model_s"] = round(s["model_s"], 2)
        out[dialogue] = s
    return out


def fit_rates(records: list[dict[str, Any]]) -> dict[str, float] | None:
    """Seconds per new prompt token and per generated token of a real model's paid calls (least squares
    ``latency = a·new_prompt_tokens + b·completion_tokens``, each call's new tokens as in
    :func:`call_stats`), or None with fewer than 3 calls."""
    import numpy as np

    rows, ys, prev = [], [], ""
    for r in records:
        if r.get("stage") != "memory_build":
            continue
        text = flat_prompt(r.get("messages") or [])
        if not r.get("cached") and not r.get("error"):
            usage = r.get("usage") or {}
            tokens = int(usage.get("prompt_tokens", 0))
            rows.append(
                [
                    tokens * (len(text) - shared_prefix(prev, text)) / max(len(text), 1),
                    usage.get("completion_tokens", 0),
                ]
            )
            ys.append(float(r.get("latency_s") or 0.0))
        prev = text
    if len(rows) < 3:
        return None
    (a, b), *_ = np.linalg.lstsq(np.array(rows, dtype=float), np.array(ys), rcond=None)
    return {"s_per_prompt_token": float(a), "s_per_generated_token": float(b), "calls": len(rows)}


def measure(row: Row, data: Path, labels: Path, out: Path, dialogue: str, embedder: Any, mock_url: str | None) -> dict:
    """Run ``row`` (resuming its run folder) and return its scores, calls and times."""
    from h2hmem.records import read_manifest, read_transcripts
    from h2hmem.run import Selection

    settings: dict[str, Any] = {"preset": "harmonized"}
    if row.scope == "dialogue":
        settings["selection"] = Selection(dialogues=(dialogue,))
    if row.model != "none":
        cache = out / f"requests-{row.model}.sqlite"
        settings["execution"] = {"cache_path": cache, "concurrency": 1 if row.model == "qwen" else 4}
        settings["models"] = (
            {"model": QWEN} if row.model == "qwen" else {"model": "openai:mock", "base_url": [mock_url]}
        )
        if row.model == "mock":
            settings["execution"]["prices"] = {"mock": (0.0, 0.0)}
    t0 = time.perf_counter()
    summary = run_method(
        data,
        out / "runs",
        labels,
        row.method,
        dict(row.params),
        row.run_id,
        embedder,
        real_model=row.model != "none",
        **settings,
    )
    wall = time.perf_counter() - t0
    run_dir = out / "runs" / row.run_id
    manifest = read_manifest(run_dir)
    records = read_transcripts(run_dir)
    per_dialogue = call_stats(records)
    stats_by = dict(manifest.method_stats_by_dialogue) if manifest else {}
    dialogues = sorted(stats_by) or sorted(per_dialogue)
    recall, n_turn = _cell(summary, "turn_evidence", "turn_recall@5", None, None)
    hit, n_sess = _cell(summary, "evidence", "hit@5", None, None)
    return {
        "label": row.label,
        "method": row.method,
        "params": row.params,
        "model": {"none": None, "mock": "openai:mock (h2hmem.testing)", "qwen": QWEN}[row.model],
        "scope": row.scope,
        "dialogues": dialogues,
        "turn_recall@5": recall,
        "hit@5": hit,
        "n_turn": n_turn,
        "n_session": n_sess,
        "invocations": len(manifest.invocations) if manifest else None,
        "wall_s": round(wall, 1),
        "build_s_by_dialogue": {
            d: round(float(s.get("build_s", 0.0)), 1) for d, s in stats_by.items() if "build_s" in s
        },
        "product_calls_by_dialogue": {
            d: s["product_build_calls"] for d, s in stats_by.items() if "product_build_calls" in s
        },
        "calls_by_dialogue": per_dialogue,
        "rates": fit_rates(records) if row.model == "qwen" else None,
    }


def estimate_s(stats: dict[str, Any], rates: dict[str, float], completion_per_call: float) -> float:
    """Model seconds a dialogue's calls (``call_stats``) would take at ``rates``, each call generating
    ``completion_per_call`` tokens."""
    return (
        stats["new_prompt_tokens"] * rates["s_per_prompt_token"]
        + stats["calls"] * completion_per_call * rates["s_per_generated_token"]
    )


def table(results: list[dict]) -> str:
    """The measured table (markdown): one line per row; mock rows show calls, not recall."""
    qwen = next((r for r in results if r["rates"]), None)
    gen = None
    if qwen is not None:
        calls = sum(s["calls"] for s in qwen["calls_by_dialogue"].values())
        gen = sum(s["completion_tokens"] for s in qwen["calls_by_dialogue"].values()) / max(calls, 1)
    head = (
        "| memory | model building it | dialogues | turn recall@5 | session hit@5 | n (turn / session) "
        "| model calls / dialogue | prompt tokens / call | new prompt tokens / dialogue | model s / dialogue "
        "| wall s / dialogue |"
    )
    lines = [head, "|" + "---|" * 11]
    for r in results:
        per = r["calls_by_dialogue"]
        nd = max(len(r["dialogues"]), 1)
        calls = sum(s["calls"] + s["cached"] for s in per.values())
        prompt = sum(s["prompt_tokens"] for s in per.values())
        paid = sum(s["calls"] for s in per.values())
        model_s = sum(s["model_s"] for s in per.values())
        new = sum(s["new_prompt_tokens"] for s in per.values())
        mock = r["model"] and "mock" in r["model"]
        if mock and qwen is not None and gen is not None:
            est = sum(estimate_s(s, qwen["rates"], gen) for s in per.values()) / nd
            seconds = f"~{est:,.0f} (Qwen, estimated)"
        else:  # the mock's own latency says nothing about a real model
            seconds = f"{model_s / nd:,.0f}" if paid and not mock else "–"
        quality = ("mock: not a quality figure", "–") if mock else (_f(r["turn_recall@5"]), _f(r["hit@5"]))
        lines.append(
            f"| {r['label']} | {r['model'] or 'none'} | {nd} | {quality[0]} | {quality[1]} "
            f"| {r['n_turn']} / {r['n_session']} | {calls / nd:,.1f} | {(prompt / paid) if paid else 0:,.0f} "
            f"| {new / nd:,.0f} | {seconds} | {r['wall_s'] / nd:,.1f} |"
        )
    return "\n".join(lines)


def _f(v: float | None) -> str:
    return "–" if v is None else f"{v:.3f}"


def main(argv: list[str] | None = None) -> None:
    here = Path(__file__).resolve().parent.parent
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", type=Path, default=here.parent / "shared" / "data" / "h2hmem-sample")
    p.add_argument("--labels", type=Path, default=None, help="default: <data>-labels")
    p.add_argument("--out", type=Path, default=here / "bench" / ".data" / "products")
    p.add_argument("--dialogue", default=DEFAULT_DIALOGUE, help="the dialogue of the [dialogue] rows")
    p.add_argument(
        "--rows", default=",".join(DEFAULT_ROWS), help=f"comma-separated, of: {', '.join(r.label for r in ROWS)}"
    )
    p.add_argument(
        "--fresh", default="", help="comma-separated rows whose run folder is deleted first ('all': every row)"
    )
    args = p.parse_args(argv)
    labels = args.labels or args.data.with_name(args.data.name + "-labels")
    known = {r.label: r for r in ROWS}
    wanted = [x.strip() for x in args.rows.split(",") if x.strip()]
    unknown = [x for x in wanted if x not in known]
    if unknown:
        p.error(f"unknown row(s) {unknown}; choose from {list(known)}")
    fresh = {x.strip() for x in args.fresh.split(",") if x.strip()}
    args.out.mkdir(parents=True, exist_ok=True)
    data = args.out / "data"
    if not (data / ".stripped").is_file():  # the copy is kept: run folders record the dataset's fingerprint
        strip_question_images(args.data, data)
        (data / ".stripped").write_text("question images emptied\n", encoding="utf-8")

    from h2hmem.embed import load_embedder
    from h2hmem.testing import MockOpenAIServer

    embedder = load_embedder("minilm", cache=args.out / "embeddings.sqlite")
    results = []
    with MockOpenAIServer() as mock:
        for label in wanted:
            row = known[label]
            if "all" in fresh or label in fresh:
                shutil.rmtree(args.out / "runs" / row.run_id, ignore_errors=True)
            results.append(measure(row, data, labels, args.out, args.dialogue, embedder, mock.base_url))
            print(
                f"done {label}: {json.dumps({k: results[-1][k] for k in ('turn_recall@5', 'hit@5', 'wall_s')})}",
                flush=True,
            )
    md = table(results)
    (args.out / "products.md").write_text(md + "\n", encoding="utf-8")
    (args.out / "products.json").write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    print(md)
    for r in results:
        if r["rates"]:
            rates = r["rates"]
            print(
                f"{r['label']}: {1 / rates['s_per_prompt_token']:.1f} prompt tok/s, "
                f"{1 / rates['s_per_generated_token']:.1f} generated tok/s over {rates['calls']} calls; "
                f"latencies {statistics.median(lat for s in r['calls_by_dialogue'].values() for lat in s['latencies_s']):.1f} s median"
            )


if __name__ == "__main__":
    main()
