"""`h2hmem export` writes the official baselines' results files, where and as the official evaluators read them.

The official judge and lexical scorers walk ``<base>/dialogue*/scenes/session*/<folder>/results_*.json``
(the judge: ``evaluation_results_qwen_3B`` or ``evaluation_results``; the lexical scorer only the
first), group rows by ``metadata.memory_type`` + ``metadata.vlm_model`` and read each row's
``question_id``, ``question_text``, ``system_answer``, ``original_answer``, ``category`` and ``success``.
Before: the files lay directly in the session folder (neither evaluator found them), had no
``metadata`` (every method grouped as ``unknown``) and no ``question_text`` (the judge was sent
empty questions).
"""

from __future__ import annotations

import json
from pathlib import Path

from fakes import fake_chat
from typer.testing import CliRunner

from h2hmem.cli import app
from h2hmem.data import load_dataset
from h2hmem.run import RunConfig, export_official, run_benchmark

runner = CliRunner()


def _official_walk(base: Path, folders: tuple[str, ...]) -> dict[str, list[dict]]:
    """What an official evaluator finds under ``base`` (a split folder): rows by method key."""
    found: dict[str, list[dict]] = {}
    for dialogue in sorted(base.glob("dialogue*")):
        for session in sorted((dialogue / "scenes").iterdir()):
            for name in folders:
                if (session / name).is_dir():
                    for f in (session / name).glob("results_*.json"):
                        data = json.loads(f.read_text(encoding="utf-8"))
                        meta = data.get("metadata", {})
                        key = f"{meta.get('memory_type', 'unknown')}_{meta.get('vlm_model', 'unknown')}"
                        found.setdefault(key, []).extend(data["results"])
                    break
    return found


def test_export_is_found_and_read_by_the_official_evaluators(sample_root, tmp_path):
    # dialogue10's session0 asks about an image of session4 ("session4/1.jpg" in questions.json)
    chat = fake_chat(fail_on="coffee brand")  # one question fails: its row says so
    cfg = RunConfig(
        data_root=sample_root,
        split="dyadic",
        method="full-text",
        out_dir=tmp_path / "runs",
        use_cache=False,
        selection={"dialogues": ["dialogue10"]},
    )
    summary = run_benchmark(cfg, chat_model=chat, progress=False)
    questions = [q for q in load_dataset(sample_root, "dyadic").questions if q.dialogue == "dialogue10"]

    paths = export_official(summary.run_dir)
    sessions = sorted({q.session for q in questions})
    assert sorted(p.relative_to(summary.run_dir / "official").as_posix() for p in paths) == sorted(
        f"dyadic/dialogue10/scenes/{s}/evaluation_results/results_full-text.json" for s in sessions
    )
    judge_view = _official_walk(
        summary.run_dir / "official" / "dyadic", ("evaluation_results_qwen_3B", "evaluation_results")
    )
    assert list(judge_view) == ["full-text_fake:scripted"]
    rows = {r["h2hmem_question_id"]: r for r in judge_view["full-text_fake:scripted"]}
    assert set(rows) == {q.id for q in questions}
    for q in questions:
        row = rows[q.id]
        assert row["question_id"] == q.id.rsplit("/", 1)[1]  # "q<index>" within the session
        assert row["question_text"] == q.text and row["original_answer"] == q.gold
        assert row["category"] == row["question_type"]["sub_type"] == q.task_type.value
        failed = "coffee brand" in q.text
        assert row["success"] is not failed
        assert row["system_answer"] == ("" if failed else f"A:{q.text[:8]}".strip())  # the reply as the method read it
        assert bool(row["error_message"]) is failed
    assert any("coffee brand" in q.text for q in questions)
    cross = [q for q in questions if q.session == "session0" and q.images]
    assert cross and rows[cross[0].id]["question_image"] == "session4/1.jpg"  # as questions.json writes it
    # rows in question order, metadata of the run
    session0 = json.loads(
        (
            summary.run_dir / "official/dyadic/dialogue10/scenes/session0/evaluation_results/results_full-text.json"
        ).read_text()
    )
    assert [r["question_id"] for r in session0["results"]] == [
        f"q{i}" for i in sorted(int(q.id.rsplit("/q", 1)[1]) for q in questions if q.session == "session0")
    ]
    assert session0["metadata"] == {
        "session_id": "session0",
        "session_dir_name": "session0",
        "memory_type": "full-text",
        "vlm_model": "fake:scripted",
        "run_id": summary.run_dir.name,
        "preset": "paper",
    }
    # the lexical scorer reads only evaluation_results_qwen_3B: nothing there by default
    assert _official_walk(summary.run_dir / "official" / "dyadic", ("evaluation_results_qwen_3B",)) == {}

    result = runner.invoke(
        app,
        [
            "export",
            str(summary.run_dir),
            "--out",
            str(tmp_path / "lex"),
            "--results-folder",
            "evaluation_results_qwen_3B",
        ],
    )
    assert result.exit_code == 0, result.output
    lexical_view = _official_walk(tmp_path / "lex" / "dyadic", ("evaluation_results_qwen_3B",))
    assert sorted(r["h2hmem_question_id"] for r in lexical_view["full-text_fake:scripted"]) == sorted(rows)


def test_a_results_folder_that_is_a_path_is_refused(sample_root, tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "predictions.jsonl").write_text("")
    result = runner.invoke(app, ["export", str(run_dir), "--results-folder", "../elsewhere"])
    assert result.exit_code == 2
    assert "results_folder must be one folder name, got '../elsewhere'" in " ".join(result.output.split())


def test_a_full_disk_is_a_local_io_error_exit_4(sample_root, tmp_path, monkeypatch):
    """As run, evaluate and report: a disk failure while writing the export is exit 4 naming the file
    (was exit 2, 'cannot write the export')."""
    import errno

    cfg = RunConfig(
        data_root=sample_root, split="dyadic", method="full-text", out_dir=tmp_path / "runs", use_cache=False, limit=2
    )
    summary = run_benchmark(cfg, chat_model=fake_chat(), progress=False)

    def full(path, text, **kw):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr("h2hmem.run._export.atomic_write_text", full)
    result = runner.invoke(app, ["export", str(summary.run_dir)])
    out = " ".join(result.output.split())
    assert (
        result.exit_code == 4 and "local I/O error:" in out and "No space left on device; free space and rerun" in out
    )
