"""Workload 6 (scaling): does 10× the data cost 10× the time and no more than 10× the memory?

``full`` profile: the published-size dataset against ``synthesize_dataset(scale="x10")``
(22,360 questions, 70,780 turns). ``quick``/``tiny``: N against 10·N questions (and turns) of the
base dataset, so no x10 data has to be generated. Per part (harness run at C = 32 per method,
index build, lexical scoring, aggregation): x10 time ÷ (10 × base time) and x10 peak RSS ÷
(10 × base peak RSS) — the goal is ≤ 1.2 for both; "RSS ×" is the plain ratio x10 ÷ base.
"""

from __future__ import annotations

from typing import Any

from ._core import Bench, Target, WorkloadResult, now_iso, ratio
from ._mock import MockServerProcess
from .index import index_row
from .run import TARGET_C, harness_row, median_of
from .score import score_row

LINEAR_GOAL = 1.2

COLUMNS = [
    ("what", "what"),
    ("base_n", "base n"),
    ("x10_n", "x10 n"),
    ("base_s", "base s"),
    ("x10_s", "x10 s"),
    ("time_ratio", "x10 s ÷ 10·base s"),
    ("base_rss_mb", "base RSS MiB"),
    ("x10_rss_mb", "x10 RSS MiB"),
    ("rss_x", "RSS ×"),
    ("rss_ratio", "x10 RSS ÷ 10·base RSS"),
]


def _pair(what: str, n_key: str, t_key: str, base: dict[str, Any], big: dict[str, Any]) -> dict[str, Any]:
    return {
        "what": what,
        "base_n": base[n_key],
        "x10_n": big[n_key],
        "base_s": base[t_key],
        "x10_s": big[t_key],
        "time_ratio": round(ratio(big[t_key], 10 * base[t_key]) or 0, 3),
        "base_rss_mb": base["peak_rss_mb"],
        "x10_rss_mb": big["peak_rss_mb"],
        "rss_x": round(big["peak_rss_mb"] / base["peak_rss_mb"], 2),
        "rss_ratio": round(big["peak_rss_mb"] / (10 * base["peak_rss_mb"]), 3),
        "items_ratio": round(big[n_key] / base[n_key], 3),
    }


def measure(b: Bench) -> WorkloadResult:
    p = b.profile
    started = now_iso()
    base_root = b.dataset(p.data_scale)
    res = WorkloadResult("scale", f"scale: base vs 10× ({p.scale_mode}) — {p.name}", COLUMNS)
    if p.scale_mode == "x10":
        big_root = b.dataset("x10")
        base_q, big_q = p.run_questions, p.run_questions
        base_t, big_t = p.index_turns, p.index_turns
        index_q = p.index_queries if p.index_queries is not None else 2236
        res.settings = {"base": "synthesize_dataset(scale='full')", "x10": "synthesize_dataset(scale='x10')"}
    else:
        big_root = base_root
        base_q, big_q = p.scale_base_questions, 10 * (p.scale_base_questions or 0)
        base_t, big_t = p.scale_base_turns, 10 * (p.scale_base_turns or 0)
        index_q = min(p.index_queries or 100, 100)
        res.settings = {"base": f"first {base_q} questions / {base_t} turns", "x10": f"first {big_q} / {big_t}"}
    res.settings.update({"latency_s": p.latency_s, "concurrency": TARGET_C})

    with MockServerProcess(p.latency_s) as srv:
        for method in p.methods:
            # the base is the median of the run workload's repeated runs (shared in `all`); x10 runs once
            base = median_of(
                [
                    harness_row(b, srv, base_root, method, TARGET_C, base_q, tag=f"cold #{i + 1}" if i else "cold")
                    for i in range(p.repeats)
                ]
            )
            big = harness_row(b, srv, big_root, method, TARGET_C, big_q)
            res.rows.append(_pair(f"{method} run C={TARGET_C}", "questions", "wall_s", base, big))
    if p.scale_index:
        base = index_row(b, base_root, base_t, index_q)
        big = index_row(b, big_root, big_t, index_q)
        res.rows.append(_pair(f"index build ({p.index_embedder})", "turns", "build_s", base, big))
    else:
        res.notes.append(
            "index build not repeated at 10×: MiniLM embeds each turn independently (batches of 64), "
            "so its cost is turns ÷ (turns/s of the index workload); 70,780 turns would take ~10× "
            "the full build on shared CPUs for no new information"
        )
    base = score_row(b, base_root, base_q if p.scale_mode != "x10" else p.score_questions)
    big = score_row(b, big_root, big_q if p.scale_mode != "x10" else p.score_questions)
    res.rows.append(_pair("lexical scoring", "questions", "lexical_s", base, big))
    res.rows.append(_pair(f"aggregate judge (bootstrap {p.n_boot})", "questions", "aggregate_judge_s", base, big))

    for r in res.rows:
        if abs(r["items_ratio"] - 10) > 0.5:
            res.notes.append(f"{r['what']}: x10 has {r['items_ratio']}× the items of base, not 10×")
        res.targets.append(
            Target(
                f"{r['what']}: time", f"≤ {LINEAR_GOAL}× linear", r["time_ratio"], "", r["time_ratio"] <= LINEAR_GOAL
            )
        )
        res.targets.append(
            Target(
                f"{r['what']}: peak RSS", f"≤ {LINEAR_GOAL}× linear", r["rss_ratio"], "", r["rss_ratio"] <= LINEAR_GOAL
            )
        )
    b.write(res, started)
    return res
