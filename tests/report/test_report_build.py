"""build_report over two hand-made runs of the real sample: comparison, published rows,
summary.json = metrics summary, escaping, worst questions, efficiency, default folders."""

from __future__ import annotations

import json
import re

import pytest
from PIL import Image
from report_fakes import BLANK_METHOD, BUILD_USAGE, ORACLE_METHOD, SCRIPT, make_runs

from h2hmem.data import MainCategory, TaskType
from h2hmem.metrics import NOT_COMPARABLE, evaluate_run
from h2hmem.report import build_report, default_out_dir, load_run, published_quality
from h2hmem.testing import ScriptedChatModel

SAMPLE_SESSIONS = 32
"""Sessions with a session.json in the sample (its README: 32 sessions, 945 turns)."""


@pytest.fixture()
def runs(tmp_path, sample_root):
    a, b, qs = make_runs(tmp_path, sample_root)
    evaluate_run(a, n_boot=200)  # the blank run is left unscored: the report must score it
    return a, b, qs


def _agg(run_dir, source="lexical"):
    return json.loads((run_dir / "scores" / "summary.json").read_text())["metrics"][source]["aggregate"]["splits"][
        "all"
    ]


def test_two_run_report(runs, tmp_path):
    a, b, qs = runs
    assert not (b / "scores").exists()
    paths = build_report([a, b], tmp_path / "out", n_boot=200)
    # the unscored run was scored offline only, never judged
    assert (b / "scores" / "summary.json").is_file() and not (b / "scores" / "judge.jsonl").exists()
    summary = json.loads(paths.summary.read_text())
    assert summary["headline_metric"]["field"] == "f1" and not summary["headline_metric"]["comparable_with_published"]

    cmp_rows = summary["tables"]["comparison"]["rows"]
    runs_rows = [r for r in cmp_rows if r["kind"] == "run"]
    assert [r["run"] for r in runs_rows] == [ORACLE_METHOD, BLANK_METHOD]  # best micro first
    assert runs_rows[0]["method"] == "Naive RAG" and runs_rows[0]["rank"] == 1

    # hand values: the oracle answers every question with its gold (F1 1: every gold of the sample has
    # content words) except the first (UPR, Memory Recall) with stopwords only (F1 0); the blank run
    # answers stopwords only (F1 0), the first question with a <script> sharing no word with its gold.
    assert "alert" not in qs[0].gold.lower() and "1" not in qs[0].gold and qs[0].task_type is TaskType.UPR
    n_cat = {c: sum(q.main_category is c for q in qs) for c in MainCategory}
    oracle, blank = runs_rows
    assert oracle[MainCategory.RECALL.value] == pytest.approx(
        (n_cat[MainCategory.RECALL] - 1) / n_cat[MainCategory.RECALL]
    )
    assert oracle[MainCategory.REASONING.value] == 1.0 and oracle[MainCategory.APPLICATION.value] == 1.0
    assert oracle["micro"] == pytest.approx((len(qs) - 1) / len(qs))
    n_upr = sum(q.task_type is TaskType.UPR for q in qs)
    assert oracle["macro"] == pytest.approx((8 + (n_upr - 1) / n_upr) / 9)
    assert blank["micro"] == 0.0 and blank["n"] == len(qs)
    assert blank["n_failed"] == sum(1 for i in range(len(qs)) if i % 7 == 3)

    # every number equals the metrics summary's
    for row, d in ((oracle, a), (blank, b)):
        agg = _agg(d)
        for c in MainCategory:
            m = agg["main_category"][c.value]["metrics"]["f1"]
            assert row[c.value] == m["mean"] and row[f"{c.value}_ci"] == m["ci"]
        m = agg["overall"]["metrics"]["f1"]
        assert (row["micro"], row["micro_ci"], row["macro"], row["macro_ci"], row["n"]) == (
            m["mean"],
            m["ci"],
            m["macro"],
            m["macro_ci"],
            m["n"],
        )
        sub = next(r for r in summary["tables"]["subtypes"]["rows"] if r["run"] == row["run"])
        for t in TaskType:
            assert sub[t.abbr] == agg["task_type"][t.abbr]["metrics"]["f1"]["mean"]

    # published reference rows: the spec's numbers, labelled, not comparable with F1
    pub = [r for r in cmp_rows if r["kind"] == "published"]
    assert [r["method"] for r in pub] == ["Full (Text)", "Naive RAG", "A-Mem", "Full (MM)", "MuRAG", "NGM"]
    amem = pub[2]
    assert (amem["Memory Recall"], amem["Memory Reasoning"], amem["Memory Application"]) == (0.60, 0.43, 0.64)
    assert all("published" in r["run"] and "not comparable" in r["metric"] for r in pub)
    assert len(published_quality()) == 6

    # evidence: the oracle names its first gold session; session0 questions have none and are excluded
    ev = summary["tables"]["evidence"]["rows"]
    rec = next(r for r in ev if r["run"] == ORACLE_METHOD and r["metric"] == "recall@5")
    # … and so are questions whose gold sessions are all absent from the sample (their own reason)
    from h2hmem.data import load_dataset

    manifest = json.loads((a / "manifest.json").read_text())
    absent = {
        (d.split, d.name, s.name)
        for d in load_dataset(manifest["data_root"], strict=False).dialogues
        for s in d.sessions
        if s.absent
    }
    present = [
        q
        for q in qs
        if q.session != "session0" and not all((q.split, q.dialogue, s) in absent for s in q.answer_sessions)
    ]
    assert rec["all"] == 1.0 and rec["n"] == len(present)
    assert next(r for r in ev if r["run"] == BLANK_METHOD)["metric"].startswith("n/a")

    # efficiency: hand-made usage
    eff = {r["run"]: r for r in summary["tables"]["efficiency"]["rows"]}
    o = eff[ORACLE_METHOD]
    assert o["sessions"] == SAMPLE_SESSIONS
    assert o["build_tokens"] == pytest.approx((BUILD_USAGE["prompt_tokens"] + BUILD_USAGE["completion_tokens"]) / 32)
    assert o["build_time"] == pytest.approx(16.0 / 32) and o["build_cost"] == pytest.approx(0.032 / 32)
    assert (o["answer_tokens"], o["answer_time"], o["queries"]) == (110, 0.5, len(qs))
    bl = eff[BLANK_METHOD]
    assert bl["answer_time"] == 0.25 and bl["queries"] == len(qs) - blank["n_failed"] and bl["build_calls"] == 0
    assert eff["A-Mem [published]"]["build_time"] == 351.08
    assert eff["A-Mem [published]"]["answer_time"] == pytest.approx(0.02 + 4.57)

    # worst questions: lowest mean F1 first; nobody outside the list scores lower than its last row
    worst = summary["tables"]["worst_questions"]["rows"]
    assert len(worst) == 15 and worst[0]["question_id"] == qs[0].id and worst[0]["answer_1"] == SCRIPT
    means = [w["mean"] for w in worst]
    assert means == sorted(means)
    f1a = {q.id: (0.0 if i == 0 else 1.0) for i, q in enumerate(qs)}
    expect = {q.id: f1a[q.id] / 2 for q in qs}  # blank run: 0 everywhere
    assert all(w["mean"] == pytest.approx(expect[w["question_id"]]) for w in worst)
    shown = {w["question_id"] for w in worst}
    assert all(expect[q] >= means[-1] for q in expect if q not in shown)

    # escaping: the <script> answer and the <i> method name are text, in HTML and Markdown
    html = paths.html.read_text()
    assert "<script" not in html.lower()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "rag &lt;i&gt;v2&lt;/i&gt;" in html
    assert "<i>v2" not in html
    md = paths.markdown.read_text()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in md and "<script" not in md
    assert "A-Mem [published]" in md and "Naive RAG" in md

    # figures: PNG files, embedded in the HTML (no external assets)
    assert set(paths.figures) == {"main_categories", "subtypes", "difficulty", "evidence", "efficiency", "paired"}
    for p in paths.figures.values():
        with Image.open(p) as im:
            assert im.format == "PNG" and im.width > 600
    srcs = re.findall(r'<img src="([^"]+)"', html)
    assert len(srcs) == 6 and all(s.startswith("data:image/png;base64,") for s in srcs)
    # the only other links are the (hidden) h2hmem view links of the worst questions: no external asset
    assert not re.search(r'(href|src)="(?!data:|#|/runs/|/compare/)', html)
    assert all(m.group(0).startswith('<a class="viewer-link"') for m in re.finditer(r'<a [^>]*href="/[^"]*"', html))


def test_default_folders_are_deterministic(runs, tmp_path, monkeypatch):
    a, b, _ = runs
    monkeypatch.chdir(tmp_path)
    p1 = build_report([a, b], n_boot=100)
    assert p1.out_dir == default_out_dir([load_run(a), load_run(b)])
    assert p1.out_dir.as_posix() == "reports/oracle-1-vs-blank-1"
    first = p1.summary.read_text()
    p2 = build_report([a, b])
    assert p2.out_dir == p1.out_dir and p2.summary.read_text() == first
    one = build_report([a])
    assert one.out_dir == a and (a / "report.html").is_file() and (a / "summary.json").is_file()
    with pytest.raises(ValueError, match="twice"):
        build_report([a, a])
    with pytest.raises(FileNotFoundError, match="no predictions.jsonl"):
        build_report([tmp_path])


def _judge(spec: str) -> ScriptedChatModel:
    """A judge stand-in: 1 when the answer is the gold answer, else 0, per item of the request."""

    def grade(req) -> str:
        out = [
            {"question_id": i["id"], "score": int(i["Assistant's answer"] == i["Reference answer"]), "reasoning": "r"}
            for i in req.items()
            if "id" in i
        ]
        return json.dumps({"judgments": out})

    return ScriptedChatModel([grade], spec=spec)


@pytest.mark.parametrize("spec,comparable", [("local:tiny", False), ("openai:gpt-4o-mini", True)])
def test_judged_runs_use_the_judge_score(runs, tmp_path, spec, comparable):
    a, b, qs = runs
    for d in (a, b):
        evaluate_run(
            d,
            ["lexical", "evidence", "judge"],
            judge_model=_judge(spec),
            judge_mode="question",
            n_boot=100,
            preset="harmonized",
        )
    paths = build_report([a, b], tmp_path / f"out-{comparable}")
    summary = json.loads(paths.summary.read_text())
    assert summary["headline_metric"] == {
        "source": "judge",
        "field": "score",
        "name": f"LLM judge score ({spec})",
        "comparable_with_published": comparable,
    }
    rows = summary["tables"]["comparison"]["rows"]
    oracle = next(r for r in rows if r["run"] == ORACLE_METHOD)
    assert oracle["micro"] == pytest.approx((len(qs) - 1) / len(qs))
    assert oracle["micro"] == _agg(a, "judge")["overall"]["metrics"]["score"]["mean"]
    assert oracle["coverage"] == 1.0
    pub = [r for r in rows if r["kind"] == "published"]
    assert all(("not comparable" in r["metric"]) is (not comparable) for r in pub)
    html = paths.html.read_text()
    assert ("not comparable with published numbers" in html) is (not comparable)
    if not comparable:
        assert any(NOT_COMPARABLE in n for n in summary["notes"])
    assert f"run/{ORACLE_METHOD}/judge/score" in summary["tables"]


def test_judge_only_scores_get_the_offline_metrics_added(tmp_path, sample_root):
    a, _, qs = make_runs(tmp_path, sample_root)
    evaluate_run(a, ["judge"], judge_model=_judge("local:tiny"), judge_mode="question", n_boot=50, preset="harmonized")
    assert "lexical" not in json.loads((a / "scores" / "summary.json").read_text())["metrics"]
    paths = build_report([a], n_boot=50)
    assert paths.out_dir == a
    scores = json.loads((a / "scores" / "summary.json").read_text())["metrics"]
    assert {"lexical", "evidence", "judge"} <= set(scores)
    summary = json.loads(paths.summary.read_text())
    assert summary["headline_metric"]["source"] == "judge"
    run_tables = [k for k in summary["tables"] if k.startswith(f"run/{ORACLE_METHOD}/")]
    assert run_tables[0] == f"run/{ORACLE_METHOD}/judge/score"  # the paper's metric first
    assert f"run/{ORACLE_METHOD}/lexical/f1" in run_tables
    oracle = summary["tables"]["comparison"]["rows"][0]
    assert oracle["micro"] == pytest.approx((len(qs) - 1) / len(qs))


def test_report_of_a_real_runner_output(tmp_path, sample_root):
    """A multi-party Full (Text) run written by the runner: its manifest and predictions as they are."""
    from report_fakes import echo_chat

    from h2hmem.run import RunConfig, run_benchmark

    cfg = RunConfig(
        data_root=sample_root,
        split="multi-party",
        method="full-text",
        out_dir=tmp_path / "runs",
        use_cache=False,
        limit=30,
        concurrency=2,
    )
    run = run_benchmark(cfg, chat_model=echo_chat(), progress=False)
    paths = build_report([run.run_dir], n_boot=100)
    assert paths.out_dir == run.run_dir
    summary = json.loads(paths.summary.read_text())
    runs_row = summary["tables"]["runs"]["rows"][0]
    assert (runs_row["method"], runs_row["split"], runs_row["questions"]) == ("full-text", "multi-party", 30)
    cmp = summary["tables"]["comparison"]["rows"][0]
    assert cmp["method"] == "Full (Text)" and cmp["n"] == 30
    assert cmp["micro"] == _agg(run.run_dir)["overall"]["metrics"]["f1"]["mean"]
    eff = summary["tables"]["efficiency"]["rows"][0]
    # the echo model: 44 tokens and $0.0002 per answer; no memory-build calls for Full (Text)
    assert (eff["answer_tokens"], eff["answer_cost"], eff["build_calls"], eff["concurrency"]) == (44, 0.0002, 0, 2)
    from h2hmem.data import load_dataset

    ds = load_dataset(sample_root, "multi-party")
    dialogues = {
        p["question_id"].rsplit("/", 2)[0] for p in map(json.loads, (run.run_dir / "predictions.jsonl").open())
    }
    assert eff["sessions"] == sum(1 for d in ds.dialogues if d.id in dialogues for s in d.sessions if s.turns)
    # the dyadic split is empty in this run: its columns are blank, never an error
    f1 = summary["tables"]["run/full-text/lexical/f1"]["rows"]
    assert all(r["dyadic"] is None and r["dyadic_n"] == 0 for r in f1)
    assert "–" in paths.markdown.read_text()
