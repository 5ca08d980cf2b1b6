"""``h2hmem report``: files written, compact comparison printed, bad input → a clear error (no traceback)."""

from __future__ import annotations

import json

from report_fakes import make_runs
from typer.testing import CliRunner

from h2hmem.cli import app
from h2hmem.cli._app import console

runner = CliRunner()


def test_report_command(tmp_path, sample_root, monkeypatch):
    monkeypatch.setattr(console, "_width", 160)  # one table row per line
    a, b, qs = make_runs(tmp_path, sample_root)
    out = tmp_path / "rep"
    res = runner.invoke(app, ["report", str(a), str(b), "--out", str(out), "--bootstrap", "100", "--worst", "5"])
    assert res.exit_code == 0, res.output
    assert "naive-rag" in res.output and "A-Mem [published]" in res.output and "Rows marked [published]" in res.output
    failed = sum(1 for i in range(len(qs)) if i % 7 == 3)
    assert f"{len(qs)} ({failed} failed)" in res.output
    for name in ("report.md", "report.html", "summary.json", "figures/subtypes.png"):
        assert (out / name).is_file()
    summary = json.loads((out / "summary.json").read_text())
    assert len(summary["tables"]["worst_questions"]["rows"]) == 5
    assert summary["tables"]["comparison"]["rows"][0]["n"] == len(qs)

    quiet = runner.invoke(app, ["report", str(a), "--quiet", "--bootstrap", "0"])
    assert quiet.exit_code == 0 and "Comparison" not in quiet.output and (a / "report.html").is_file()


def test_report_command_errors(tmp_path, sample_root):
    a, b, _ = make_runs(tmp_path, sample_root)
    res = runner.invoke(app, ["report", str(tmp_path / "nowhere")])
    assert res.exit_code == 2 and "not a directory" in res.output and "Traceback" not in res.output
    res = runner.invoke(app, ["report", str(tmp_path)])
    assert res.exit_code == 2 and "no predictions.jsonl" in res.output
    res = runner.invoke(app, ["report", str(a), "--worst", "-1"])
    assert res.exit_code == 2 and "--worst" in res.output

    lines = (b / "predictions.jsonl").read_text().splitlines()
    lines[5] = '{"question_id": 3'
    (b / "predictions.jsonl").write_text("\n".join(lines) + "\n")
    res = runner.invoke(app, ["report", str(a), str(b), "--out", str(tmp_path / "x"), "--bootstrap", "0"])
    assert res.exit_code == 2 and "predictions.jsonl: line 6" in res.output.replace("\n", "")
    assert res.exception is None or isinstance(res.exception, SystemExit)

    (a / "scores").mkdir(exist_ok=True)
    (a / "scores" / "summary.json").write_text("{not json")
    res = runner.invoke(app, ["report", str(a)])
    assert res.exit_code == 2 and "summary.json: not valid JSON" in res.output.replace("\n", "")


def test_a_report_that_cannot_be_written_names_the_path(tmp_path, sample_root, monkeypatch):
    """A full disk while writing the report is h2hmem's own files, as for `run` and `evaluate`: exit 4
    naming the file (before: exit 2). An --out under a regular file is a bad option: exit 2, named."""
    import errno

    from h2hmem.report import _build

    a, _, _ = make_runs(tmp_path, sample_root)
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    res = runner.invoke(app, ["report", str(a), "--out", str(blocker / "rep"), "--bootstrap", "0", "--quiet"])
    assert res.exit_code == 2, res.output
    text = " ".join(res.output.split())
    assert "cannot write the report: [Errno 20] Not a directory" in text and str(blocker / "rep") in text
    assert "free space" not in text and "Traceback" not in res.output

    def full(path, text):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(_build, "_write", full)
    out = tmp_path / "rep"
    res = runner.invoke(app, ["report", str(a), "--out", str(out), "--bootstrap", "0", "--quiet"])
    assert res.exit_code == 4, res.output
    text = " ".join(res.output.split())
    assert f"cannot write the report: local I/O error: {out / 'report.md'}: [Errno 28] No space left on device" in text
