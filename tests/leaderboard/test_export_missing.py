"""`submission export` names exactly the benchmark questions a run has no answer for."""

import sys
from pathlib import Path

from typer.testing import CliRunner

from h2hmem.cli import app
from h2hmem.data import load_dataset
from h2hmem.leaderboard._export import missing_questions
from h2hmem.run import RunConfig, Selection, run_benchmark

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "run"))
from fakes import fake_chat


def test_missing_questions_are_listed(sample_root, tmp_path):
    ds = load_dataset(sample_root, "all")
    cfg = RunConfig(
        data_root=sample_root,
        method="full-text",
        out_dir=tmp_path,
        use_cache=False,
        selection=Selection(task_types=["TR"]),
    )
    tr = [q for q in ds.questions if q.task_type.abbr == "TR"]
    fails = "Black Myth"  # one TR question's answer fails: it stays missing, counted apart
    n_fail = sum(1 for q in tr if fails in q.text)
    run_dir = run_benchmark(cfg, chat_model=fake_chat(fail_on=fails), progress=False).run_dir
    want = {
        s: [q.id for q in ds.questions if q.split == s and (q.task_type.abbr != "TR" or fails in q.text)]
        for s in ("dyadic", "multi-party")
    }
    got = missing_questions(run_dir)
    assert {s: set(v) for s, v in got.items()} == {s: set(v) for s, v in want.items()}
    assert n_fail == 1 and sum(len(v) for v in got.values()) == 441 - 10 + 1  # the sample has 6 + 4 TR questions
    r = CliRunner().invoke(app, ["submission", "export", str(run_dir)])
    assert r.exit_code == 0, r.output
    listed = (run_dir / "submission" / "missing.txt").read_text().split()
    assert len(listed) == 432 and set(listed) == set(want["dyadic"]) | set(want["multi-party"])
    per_split = f"{len(want['dyadic'])} dyadic, {len(want['multi-party'])} multi-party"
    out = " ".join(r.output.split())
    assert (
        f"432 questions have no answer ({per_split}): 1 failed (redo them: h2hmem run … --retry-failed); 431 never asked"
        in out
    )
