"""`--preset` on `h2hmem run`: default paper, harmonized kept working, one option overridable, run ids apart."""

import json

from typer.testing import CliRunner

from h2hmem.cli import app
from h2hmem.run import RunConfig

runner = CliRunner()


def test_run_ids_separate_presets_and_overridden_options(tmp_path):
    paper = RunConfig(data_root=tmp_path, method="full-text")
    harmonized = RunConfig(data_root=tmp_path, method="full-text", preset="harmonized")
    override = RunConfig(data_root=tmp_path, method="full-text", method_params={"truncation": "recent"})
    assert paper.preset == "paper" and paper.resolved_run_id == "full-text_local-smollm2_all_full"
    assert harmonized.resolved_run_id == "full-text_local-smollm2_all_full_harmonized"
    assert len({paper.resolved_run_id, harmonized.resolved_run_id, override.resolved_run_id}) == 3
    assert paper.identity()["preset"] == "paper" and harmonized.identity()["preset"] == "harmonized"


def test_cli_preset_is_recorded_with_every_resolved_option(tmp_path, monkeypatch):
    from h2hmem.data import synthesize_dataset
    from h2hmem.testing import MockOpenAIServer

    synthesize_dataset(tmp_path / "data", "small", 0)
    monkeypatch.setenv("H2HMEM_CACHE_DIR", str(tmp_path / "cache"))
    seen: set = set()
    with MockOpenAIServer() as srv:
        for extra, top_p, fmt in (
            ([], 0.9, "json"),
            (["--preset", "harmonized"], None, "plain"),
            (["--param", "top_p=0.5"], 0.5, "json"),
        ):
            args = [
                "run",
                "--data",
                str(tmp_path / "data"),
                "--method",
                "naive-rag",
                "--model",
                "openai:mock",
                "--base-url",
                srv.base_url,
                "--out",
                str(tmp_path / "runs"),
                "--limit",
                "2",
                "--quiet",
                *extra,
            ]
            result = runner.invoke(app, args, env={"COLUMNS": "300"})
            assert result.exit_code == 0, result.output
            new = set((tmp_path / "runs").iterdir()) - seen
            assert len(new) == 1, extra  # each protocol gets its own run directory
            seen |= new
            m = json.loads((new.pop() / "manifest.json").read_text())
            body = [b for b, e in zip(srv.requests, srv.endpoints) if e == "chat"][-1]
            assert m["config"]["preset"] == ("harmonized" if "harmonized" in extra else "paper")
            options = m["components"]["memory"]["options"]
            assert options["top_p"] == top_p and body.get("top_p") == top_p
            assert options["answer_format"] == fmt
            assert set(options) == {
                "top_k",
                "min_similarity",
                "layout",
                "prompt",
                "answer_format",
                "query_format",
                "date_format",
                "attach_question_image",
                "top_p",
            }


def test_unknown_preset_is_refused(tmp_path):
    result = runner.invoke(app, ["run", "--data", str(tmp_path), "--preset", "official"])
    assert result.exit_code == 2 and "unknown preset 'official'" in result.output
