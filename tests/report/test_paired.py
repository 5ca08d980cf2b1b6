"""Paired differences between runs (bootstrap CI, sign-flip p) and pooled repeated runs."""

import json
import random
import shutil
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from h2hmem.cli import app
from h2hmem.metrics._paired import paired_difference, pool_runs
from h2hmem.report import build_report
from h2hmem.run import RunConfig, Selection, run_benchmark

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "run"))
from fakes import fake_chat


def test_hand_computed_statistics():
    d = paired_difference([0, 0, 1], [1, 0, 1], n_boot=0)
    assert d.diff == pytest.approx(1 / 3) and d.p_value == 1.0 and d.test == "exact sign-flip"
    # five questions all better by 1: of the 2^5 sign patterns only all-plus and all-minus reach |5|
    assert paired_difference([0] * 5, [1] * 5, n_boot=0).p_value == pytest.approx(2 / 32)
    same = paired_difference([0.2, 0.5, 1.0], [0.2, 0.5, 1.0], n_boot=200)
    assert same.diff == 0 and same.p_value == 1.0 and same.ci == (0.0, 0.0)
    p = pool_runs([[1, 0], [1, 1]], n_boot=200)
    assert p.mean == pytest.approx(0.75) and p.sd == pytest.approx(0.353553, abs=1e-6)
    assert p.pooled_n == 4 and p.pooled_mean == pytest.approx(0.75) and p.pooled_ci[0] <= 0.75 <= p.pooled_ci[1]


@pytest.fixture()
def runs(sample_root, tmp_path):
    cfg = RunConfig(
        data_root=sample_root,
        split="multi-party",
        method="full-text",
        out_dir=tmp_path / "runs",
        use_cache=False,
        run_id="A",
    )
    a = run_benchmark(cfg, chat_model=fake_chat(), progress=False).run_dir
    b = tmp_path / "runs" / "B"
    shutil.copytree(a, b)
    lines = [json.loads(x) for x in (b / "predictions.jsonl").read_text().splitlines()]
    rng = random.Random(0)
    for rec in rng.sample(lines, k=len(lines) // 5):  # 20% of the answers replaced by the gold
        rec["answer"] = rec["gold"]
    (b / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    m = json.loads((b / "manifest.json").read_text())
    m["run_id"] = "B"
    (b / "manifest.json").write_text(json.dumps(m))
    c = tmp_path / "runs" / "C"
    shutil.copytree(a, c)
    return a, b, c


def test_known_difference_is_found_and_identical_runs_give_p_1(runs, tmp_path):
    a, b, c = runs
    paths = build_report([a, b, c], tmp_path / "rep", n_boot=300)
    rows = {(r["pair"], r["group"]): r for r in paths.tables["paired"].rows}
    labels = [r["run"] for r in paths.tables["runs"].rows]
    la, lb, lc = labels
    better = rows[(f"{lb} − {la}", "overall")]
    assert better["n"] == 152 and better["diff"] > 0.1 and better["p"] < 0.05
    assert better["diff_ci"][0] > 0 and better["diff"] == pytest.approx(better["mean_b"] - better["mean_a"])
    same = rows[(f"{lc} − {la}", "overall")]
    assert same["diff"] == 0 and same["p"] == 1.0
    cats = {g for (pair, g) in rows if pair == f"{lb} − {la}"}
    assert {"Memory Recall", "Memory Reasoning", "Memory Application"} <= cats
    assert "paired" in paths.figures and paths.figures["paired"].stat().st_size > 0
    assert not paths.tables["paired"].notes  # same question sets
    # each pair's overall row stands out; its main categories under it are plain rows
    md = paths.markdown.read_text()
    table = md[md.index("**Paired differences") :].split("\n\n")[1].splitlines()[2:]
    bold = [line for line in table if line.startswith("| **")]
    assert len(table) == 3 * 4 and len(bold) == 3
    assert all("| **overall** |" in line for line in bold)


def test_different_question_sets_are_noted_and_group_pools(runs, tmp_path):
    a, b, c = runs
    paths = build_report(
        [a, c], tmp_path / "rep", n_boot=200, group=True, selection=Selection(task_types=["UPR", "CRR"])
    )
    pooled = [r for r in paths.tables["groups"].rows if r["group"] == "overall"]
    assert len(pooled) == 1 and pooled[0]["runs"] == 2 and pooled[0]["sd"] == 0.0
    n = pooled[0]["pooled_n"]
    assert n == 2 * sum(
        1 for x in (a / "predictions.jsonl").read_text().splitlines() if json.loads(x)["task_type"] in ("UPR", "CRR")
    )
    assert json.loads(paths.summary.read_text())["selection"] == {"task_types": ["UPR", "CRR"]}
    # a run over fewer questions: the pair uses the common ones, and says so
    lines = (c / "predictions.jsonl").read_text().splitlines()
    (c / "predictions.jsonl").write_text("\n".join(lines[:100]) + "\n")
    shutil.rmtree(c / "scores", ignore_errors=True)
    res = CliRunner().invoke(app, ["report", str(a), str(c), "--out", str(tmp_path / "rep2"), "--bootstrap", "100"])
    assert res.exit_code == 0, res.output
    notes = json.loads((tmp_path / "rep2" / "summary.json").read_text())["tables"]["paired"]["notes"]
    assert notes and "different question sets (152 and 100" in notes[0] and "the 100 both scored" in notes[0]
    assert "difference +0.000" in res.output and "p = 1" in res.output
    res = CliRunner().invoke(
        app, ["report", str(a), str(b), "--group", "--out", str(tmp_path / "rep3"), "--bootstrap", "100"]
    )
    assert res.exit_code == 0, res.output
    assert " ± " in res.output and "(sd over 2 runs); pooled" in res.output and "over 304 questions" in res.output


def test_runs_with_no_question_in_common_say_so_and_markdown_keeps_ampersands(runs, tmp_path):
    a, _, c = runs
    lines = (a / "predictions.jsonl").read_text().splitlines()
    (a / "predictions.jsonl").write_text("\n".join(lines[:50]) + "\n")
    (c / "predictions.jsonl").write_text("\n".join(lines[100:150]) + "\n")
    for d in (a, c):
        shutil.rmtree(d / "scores", ignore_errors=True)
    paths = build_report([a, c], tmp_path / "rep", n_boot=50)
    notes = paths.tables["paired"].notes
    assert len(notes) == 1 and "scored no question in common (50 and 50 questions): no paired comparison" in notes[0]
    md = paths.markdown.read_text()
    assert "&amp;" not in md  # "Reference & Evolution Tracking" reads as written in the raw Markdown
    assert "Reference & Evolution Tracking" in md or "Evolution" not in md
