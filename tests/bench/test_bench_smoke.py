"""Smoke test of the benchmark harness (``bench/``) in its tiny mode: the synthetic ``small``
dataset (60 questions), a 20 ms mock model, C = 32, both caption baselines, the sequential
reference, the transport floor, then the warm rerun (cache and resume)."""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from pathlib import Path

import pytest
from rich.console import Console

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from bench import PROFILES, run_workloads  # noqa: E402
from bench._core import percentile  # noqa: E402
from bench._mockserve import prefix_cached_count  # noqa: E402


def test_percentile_matches_the_linear_definition():
    # numpy's default: position (n-1)·p/100 = 1.5 between 20 and 30 → 25; p95 of 1..20 → 19.05
    assert percentile([40.0, 10.0, 30.0, 20.0], 50) == 25.0
    assert percentile([float(x) for x in range(1, 21)], 95) == pytest.approx(19.05)


def test_prefix_cached_count_equals_tiktoken_on_answer_prompts():
    from h2hmem.llm import count_tokens

    memory = "[2024-03-20] Lin Sen: I paid 128.50 yuan.\n[2024-03-21] Xu: Fine!\n\n"
    for tail in ("Question: What did Lin pay?\nAnswer:", "Question: 1.png?"):
        for mem in (memory, memory.rstrip(), memory + "  "):
            text = f"Memory:\n{mem}\n{tail}"
            assert prefix_cached_count(text) == count_tokens(text)


WARM_METHODS = ("naive-rag",)
"""The warm rerun is checked for one method only: every step is a child process (~1 s of imports)."""


@pytest.fixture(scope="module")
def tiny_results(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench")
    quiet = Console(file=open(os.devnull, "w"))
    kwargs = {"results_dir": out / "results", "data_dir": out / "data", "console": quiet}
    results = run_workloads(["run"], PROFILES["tiny"], **kwargs)
    results += run_workloads(["warm"], dataclasses.replace(PROFILES["tiny"], methods=WARM_METHODS), **kwargs)
    return out / "results", {r.name: r for r in results}


def test_run_rows_count_calls_and_compute_the_bound(tiny_results):
    results_dir, results = tiny_results
    tiny = PROFILES["tiny"]
    saved = json.loads((results_dir / "run.json").read_text())
    assert saved["profile"] == "tiny" and saved["machine"]["cpus"] >= 1
    rows = saved["rows"]
    harness = [r for r in rows if r["step"] == "harness cold"]
    assert {(r["method"], r["C"]) for r in harness} == {(m, c) for m in tiny.methods for c in tiny.concurrencies}
    for r in harness:
        # the small dataset has 60 questions; C=1 answers the first c1_questions
        assert r["questions"] == (tiny.c1_questions if r["C"] == 1 else 60)
        assert r["answered"] == r["questions"] and r["failed"] == 0
        # every answer is one model call (duplicates of a prompt may hit the run's own cache)
        assert r["calls"] + r["cached_calls"] == r["questions"]
        bound = r["calls"] * tiny.latency_s / r["C"]  # N·L/C
        assert r["bound_s"] == pytest.approx(bound, abs=1e-4)
        assert r["ratio_to_bound"] == pytest.approx(r["wall_s"] / bound, rel=1e-3)
        assert r["wall_s"] >= r["bound_s"]  # no client can beat the latency bound
        assert 10 < r["peak_rss_mb"] < 2500
    refs = [r for r in rows if r["step"] == "sequential reference"]
    assert [r["questions"] for r in refs] == [tiny.c1_questions] * len(tiny.methods)
    assert all(r["calls"] == tiny.c1_questions for r in refs)  # no cache: one call per question
    floors = [r for r in rows if r["step"] == "transport floor"]
    assert len(floors) == len(tiny.methods)
    names = [t.name for t in results["run"].targets]
    assert any("overhead at C=32" in n for n in names) and any("speed-up" in n for n in names)


def test_warm_rerun_makes_no_model_calls(tiny_results):
    results_dir, _ = tiny_results
    rows = json.loads((results_dir / "warm.json").read_text())["rows"]
    by = {(r["method"], r["step"]): r for r in rows}
    for method in WARM_METHODS:
        cold, cache, resume = by[(method, "cold")], by[(method, "warm cache")], by[(method, "resume")]
        assert cold["calls"] > 0
        assert cache["calls"] == 0 and cache["cached_calls"] == cache["questions"] == 60
        assert resume["calls"] == 0 and resume["skipped"] == 60 and resume["answered"] == 0


def test_transcripts_workload_measures_the_file_it_wrote(tmp_path):
    quiet = Console(file=open(os.devnull, "w"))
    tiny = dataclasses.replace(PROFILES["tiny"], methods=("full-text",))
    (res,) = run_workloads(
        ["transcripts"], tiny, results_dir=tmp_path / "results", data_dir=tmp_path / "data", console=quiet
    )
    rows = {r["step"]: r for r in res.rows}
    on, off = rows["transcripts on"], rows["transcripts off"]
    path = Path(on["run_dir"]) / "transcripts.jsonl.gz"
    assert not (Path(off["run_dir"]) / "transcripts.jsonl.gz").exists()
    assert on["file_bytes"] == path.stat().st_size and on["records"] == on["calls"] == on["questions"] == 60
    assert on["bytes_per_question"] == round(on["file_bytes"] / 60) and on["compression"] > 1.5
    from h2hmem.records import ENGINE

    writer = rows[f"encoder, {ENGINE} level 1 (the writer's)"]
    assert writer["file_mb"] == round(on["file_bytes"] / 1e6, 2)  # the writer's engine and level wrote the file
    zlib = [next(r for step, r in rows.items() if step.startswith(f"encoder, zlib level {n}")) for n in (1, 6, 9)]
    assert zlib[0]["file_mb"] >= zlib[1]["file_mb"] >= zlib[2]["file_mb"]  # higher levels: smaller files
    assert [t.name for t in res.targets] == [
        "full-text: wall-time overhead of transcripts at C=32",
        "full-text: harness CPU added by transcripts",
        "full-text: transcripts of the whole dataset (2,236 questions)",
    ]


def test_embed_workload_counts_cold_and_cached(tmp_path):
    """The ``embed`` workload in tiny mode (hashed stand-in behind the real embedding cache): the
    cold rows compute every distinct text, the warm rows compute none and read them all back."""
    quiet = Console(file=open(os.devnull, "w"))
    (res,) = run_workloads(
        ["embed"], PROFILES["tiny"], results_dir=tmp_path / "r", data_dir=tmp_path / "d", console=quiet
    )
    rows = {r["what"].split(":")[0].split(",")[-1].strip(): r for r in res.rows}
    cold, warm = rows["index cold"], rows["index warm"]
    assert cold["turns"] == warm["turns"] > 0 and cold["build_cache_hits"] == 0
    assert warm["build_computed"] == 0 and warm["build_cache_hits"] == cold["build_computed"]
    run_cold, run_warm = rows["cold"], rows["warm embedding cache"]
    assert run_cold["embed_cache_hits"] == 0 and run_cold["embed_computed"] > 0
    assert run_warm["embed_computed"] == 0 and run_warm["embed_model_calls"] == 0
    assert run_warm["embed_cache_hits"] == run_cold["embed_computed"]
    assert run_warm["embed_texts"] == run_cold["embed_texts"]
    met = {t.name: t.met for t in res.targets}
    assert met["naive-rag warm-embedding run: texts computed"] and met["index build, warm cache: turns computed"]


def _cpu_workload(tmp_path, monkeypatch, method):
    """The ``cpu`` workload in tiny mode for ``method`` alone, ``paper`` only, no reference."""
    from bench import cpu

    monkeypatch.setattr(cpu, "METHODS", (method,))
    monkeypatch.setattr(cpu, "PRESETS", ("paper",))
    monkeypatch.setattr(cpu, "REFERENCE_METHODS", ())
    quiet = Console(file=open(os.devnull, "w"))
    (res,) = run_workloads(
        ["cpu"], PROFILES["tiny"], results_dir=tmp_path / "r", data_dir=tmp_path / "d", console=quiet
    )
    return res


def test_cpu_workload_reports_cpu_per_question_and_a_fully_cached_rerun(tmp_path, monkeypatch):
    """The ``cpu`` workload in tiny mode for naive-rag (one preset): CPU per question with the
    retrieval step's CPU apart, the floor beside the cold run, and a rerun served wholly from the cache."""
    res = _cpu_workload(tmp_path, monkeypatch, "naive-rag")
    rows = {r["step"]: r for r in res.rows}
    cold, floor, rerun = rows["harness cold"], rows["transport floor"], rows["harness cached rerun"]
    assert cold["questions"] == cold["calls"] == floor["calls"] == 60 and cold["preset"] == "paper"
    assert cold["cpu_ms_per_q"] == round(1000 * cold["cpu_s"] / 60, 3)
    assert 0 < cold["retrieval_s"] < cold["cpu_s"]  # naive-rag's _hits was timed, inside the run's CPU
    assert cold["cpu_ms_per_q_excl"] == round(1000 * (cold["cpu_s"] - cold["retrieval_s"]) / 60, 3)
    assert cold["ratio_to_floor"] == round(cold["wall_s"] / floor["wall_s"], 3)
    # the harness's CPU without retrieval in units of the bare loop's CPU for the same calls
    assert cold["floor_cpu_s"] == floor["cpu_s"] > 0
    assert cold["cpu_excl_per_floor_cpu"] == round((cold["cpu_s"] - cold["retrieval_s"]) / floor["cpu_s"], 2)
    # the collector's time is counted inside the run's CPU; its full collections come from the same counter
    assert 0 <= cold["gc_s"] < cold["cpu_s"] and len(cold["gc_collections"]) == 3
    assert cold["gc_full"] == cold["gc_collections"][2]
    assert rerun["calls"] == 0 and rerun["cached_calls"] == 60 and rerun["questions"] == 60
    met = {t.name: t.met for t in res.targets}
    assert met["naive-rag (paper) cached rerun: model calls"] is True
    assert met["naive-rag (paper): harness ÷ floor at C=32"] is None  # 60 questions: reported, not judged


def test_cpu_workload_runs_h2h_with_a_remote_embedder_against_the_same_floor(tmp_path, monkeypatch):
    """``h2h``'s third row: the stand-in embedder answering after 20 ms a request (the retrieval
    waits), the same calls as the cold run, and its ratio against the cold run's floor."""
    res = _cpu_workload(tmp_path, monkeypatch, "h2h")
    rows = {r["step"]: r for r in res.rows}
    cold, floor, remote = rows["harness cold"], rows["transport floor"], rows["harness cold, remote embedder"]
    assert remote["calls"] == cold["calls"] == floor["calls"] == 60
    assert remote["floor_s"] == floor["wall_s"] and remote["ratio_to_floor"] == round(
        remote["wall_s"] / floor["wall_s"], 3
    )
    assert remote["retrieval_s"] is None and remote["cpu_ms_per_q_excl"] is None  # not separable when it waits
    # the same vectors as the hashed stand-in, after a wait on the loop
    import asyncio

    from bench._embedders import HashedEmbedder, RemoteHashedEmbedder

    texts = ["the copper lock", "Old Tea's health records"]
    assert (asyncio.run(RemoteHashedEmbedder().embed(texts)) == asyncio.run(HashedEmbedder().embed(texts))).all()


def test_profile_overrides_replace_sizes_under_a_name_of_their_own():
    from bench._profile import with_overrides

    full = PROFILES["full"]
    assert with_overrides(full) is full  # nothing replaced: the profile itself, its results where they were
    p = with_overrides(full, concurrencies=(64, 32, 32), repeats=1, reference_questions=30)
    assert (p.concurrencies, p.repeats, p.c1_questions) == ((32, 64), 1, 30)
    assert p.name == "full-c32_64-r1-ref30"  # never "full": bench/results/cpu.json is not overwritten
    assert (p.latency_s, p.run_questions, p.data_scale) == (full.latency_s, full.run_questions, full.data_scale)
    only_repeats = with_overrides(PROFILES["quick"], repeats=5)
    assert only_repeats.name == "quick-c1_8_32_64-r5-ref30" and only_repeats.concurrencies == (1, 8, 32, 64)
    for bad in ({"concurrencies": (0,)}, {"concurrencies": ()}, {"repeats": 0}, {"reference_questions": -1}):
        with pytest.raises(ValueError, match="must be ≥ 1"):
            with_overrides(full, **bad)
