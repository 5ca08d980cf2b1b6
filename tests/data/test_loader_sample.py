"""Must-show figures of issue 2 on the real sample."""

import json

from typer.testing import CliRunner

from h2hmem.cli import app
from h2hmem.data import IssueLog, load_dataset
from h2hmem.data._stats import dataset_stats


def test_sample_counts(sample_root):
    stats = dataset_stats(load_dataset(sample_root, strict=False))
    dy, mp = stats["splits"]["dyadic"], stats["splits"]["multi-party"]
    assert (dy["dialogues"], dy["questions"], dy["sessions"], dy["turns"], dy["image_turns"]) == (3, 289, 26, 489, 87)
    assert (mp["dialogues"], mp["questions"], mp["sessions"], mp["turns"], mp["image_turns"]) == (4, 152, 6, 456, 87)
    assert stats["task_types"] == {
        "UPR": 71,
        "CRR": 77,
        "KR": 10,
        "TR": 10,
        "MCR": 63,
        "RET": 63,
        "TTL": 46,
        "CD": 47,
        "AR": 54,
    }


def test_sample_structure(sample_root):
    log = IssueLog()
    ds = load_dataset(sample_root, strict=False, log=log)
    assert not log.errors
    d10 = next(d for d in ds.dialogues if d.id == "dyadic/dialogue10")
    # numeric order, session0 excluded from sessions
    assert [s.number for s in d10.sessions] == list(range(1, 17))
    assert d10.session("session1").absent and not d10.session("session10").absent
    s16 = d10.session("session16")
    assert s16.raw_date == "2025-01-01 上午" and s16.date.isoformat() == "2025-01-01"
    # stable ids from position
    q = d10.questions[0]
    assert q.id == f"dyadic/dialogue10/{q.session}/q0"
    # session0 questions name other sessions' images as sessionK/<file>
    pooled = [q for d in ds.dialogues for q in d.questions if q.session == "session0" and q.images]
    assert pooled and all(img.session != "session0" for q in pooled for img in q.images)
    # multi-party answer_session labels like "S4-3" map to folders
    labelled = [q for q in ds.questions if any(r.startswith("S") for r in q.raw_answer_sessions)]
    assert labelled and all(all(a.startswith("session") for a in q.answer_sessions) for q in labelled)
    codes = log.counts()["warning"]
    assert codes["absent-session"] == 30 and codes["missing-image"] > 0 and codes["speaker-variants"] >= 1


def test_validate_cli_warns_and_exits_zero(sample_root):
    res = CliRunner().invoke(app, ["data", "validate", str(sample_root), "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["errors"] == 0
    assert out["counts"]["warning"]["absent-session"] == 30
    assert out["counts"]["warning"]["missing-image"] > 0


def test_stats_cli_json(sample_root):
    res = CliRunner().invoke(app, ["data", "stats", str(sample_root), "--json"])
    assert res.exit_code == 0
    out = json.loads(res.output)
    assert out["splits"]["multi-party"]["turns"] == 456
    assert out["task_types"]["CRR"] == 77
