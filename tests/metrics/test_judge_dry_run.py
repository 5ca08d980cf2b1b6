"""`evaluate --dry-run`: the judge calls counted (not sent) equal those a real pass sends; selections."""

import json

from typer.testing import CliRunner

from h2hmem.cli import app
from h2hmem.llm import load_chat_model
from h2hmem.metrics import JudgeOptions, evaluate_run
from h2hmem.metrics._judge_cost import estimate_judge
from h2hmem.run import Selection
from h2hmem.testing import MockOpenAIServer

from .test_evaluate import judge_model, run  # noqa: F401  (fixture)

HARMONIZED = JudgeOptions(preset="harmonized")  # judge_model speaks the harmonized format


def test_judge_estimate_matches_the_real_pass(run, tmp_path):  # noqa: F811
    d, qs = run
    sel = Selection(task_types=["UPR", "CD"])
    with MockOpenAIServer(responder=judge_model().responder) as srv:
        est = estimate_judge(
            d, "openai:mock", base_url=srv.base_url, use_cache=False, selection=sel, options=HARMONIZED
        )
        assert srv.calls == 0 and not (d / "scores").exists()
        model = load_chat_model("openai:mock", base_url=srv.base_url)
        summary = evaluate_run(d, ["judge"], judge_model=model, n_boot=0, selection=sel, preset="harmonized")
        judged = summary["metrics"]["judge"]
        assert summary["selection"] == {"task_types": ["UPR", "CD"]}
        assert judged["coverage"]["total"] == sum(q.task_type.abbr in ("UPR", "CD") for q in qs)
        stage = est.stages["judge"]
        # no re-asks with this judge: the calls and prompt tokens are exactly the real ones
        assert stage.calls == srv.calls == judged["usage"]["calls"]
        assert stage.prompt_tokens == judged["usage"]["prompt_tokens"]
        # judged questions are not counted again
        again = estimate_judge(
            d, "openai:mock", base_url=srv.base_url, use_cache=False, selection=sel, options=HARMONIZED
        )
        assert again.already_recorded == judged["coverage"]["judged"] and "judge" not in again.stages


def test_evaluate_cli_dry_run_and_selection(run, tmp_path):  # noqa: F811
    d, _ = run
    r = CliRunner().invoke(
        app,
        [
            "evaluate",
            str(d),
            "--metrics",
            "judge",
            "--dry-run",
            "--judge-model",
            "openai:gpt-4o-mini",
            "--judge-base-url",
            "http://127.0.0.1:9/v1",
            "--no-cache",
            "--difficulty",
            "hard",
        ],
    )
    assert r.exit_code == 0, r.output
    assert "dry run of the judge" in r.output and not (d / "scores").exists()
    r = CliRunner().invoke(app, ["evaluate", str(d), "--dry-run"])
    assert r.exit_code == 2 and "--metrics judge" in r.output
    r = CliRunner().invoke(app, ["evaluate", str(d), "--bootstrap", "0", "--task-type", "AR", "--quiet"])
    assert r.exit_code == 0, r.output
    lex = [json.loads(x) for x in (d / "scores" / "lexical.jsonl").read_text().splitlines()]
    assert lex and {x["task_type"] for x in lex} == {"AR"}
