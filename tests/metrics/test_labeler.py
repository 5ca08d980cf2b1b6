"""Supporting-turn labelling: agreement by hand, the offline labeller, a scripted model labeller, resume."""

from __future__ import annotations

import json

import pytest

from h2hmem.llm import Usage
from h2hmem.metrics import EvidenceLabel, load_evidence_labels
from h2hmem.metrics._labeler import label_agreement, label_evidence, labeling_prompt, parse_labeling
from h2hmem.testing import ScriptedChatModel


def _lab(qid, status="labelled", turns=()):
    return EvidenceLabel(question_id=qid, status=status, turns=[{"session": s, "turn": t} for s, t in turns])


def test_agreement_by_hand():
    ref = {
        "a": _lab("a", turns=[("s1", 1), ("s1", 2)]),
        "b": _lab("b", turns=[("s2", 0)]),
        "c": _lab("c", "no_support_expected"),
        "d": _lab("d", turns=[("s3", 3)]),
    }
    pred = {
        "a": _lab("a", turns=[("s1", 1), ("s1", 5), ("s1", 6)]),
        "b": _lab("b", turns=[("s2", 0)]),
        "c": _lab("c", "no_support_expected"),
    }  # d not labelled by pred
    ag = label_agreement(pred, ref)
    # overlap 1 (a) + 1 (b) = 2; predicted 3 + 1 = 4; reference 2 + 1 + 1 (d) = 4
    assert ag["precision"] == 0.5 and ag["recall"] == 0.5
    assert ag["status_agreement"] == 1.0 and ag["questions"] == 3 and ag["reference_labelled"] == 3


def test_parse_labeling_drops_turns_outside_the_candidates():
    class Q:
        id = "dyadic/dialogue1/session1/q0"

    valid = {("session1", 0), ("session1", 1)}
    reply = (
        'Sure: {"turns": [{"session": "session1", "turn": 1}, {"session": "session1", "turn": 1}, '
        '{"session": "session7", "turn": 0}, {"turn": "x"}], "status": "labelled"}'
    )
    lab = parse_labeling(reply, Q(), valid)
    assert lab.status == "labelled" and lab.turn_keys == [("session1", 1)] and "2 invalid" in lab.note
    assert parse_labeling('{"turns": [], "status": "labelled"}', Q(), valid).status == "unclear"
    with pytest.raises(ValueError, match="no JSON object"):
        parse_labeling("no idea", Q(), valid)


def test_offline_labels_and_agreement_on_the_sample(sample_root, tmp_path):
    ref = sample_root.with_name(sample_root.name + "-labels")
    if not ref.is_dir():
        pytest.skip("sample labels not found")
    report = label_evidence(sample_root, "offline", tmp_path / "labels", split="multi-party", reference=ref)
    assert report["labeller"] == "offline" and report["labelled_now"] == 152
    labs = load_evidence_labels(tmp_path / "labels")
    assert len(labs.labels) == 152 and labs.meta["labeller"] == "offline"
    ar = [lab for lab in labs.labels.values() if lab.status == "no_support_expected"]
    assert len(ar) == 20  # every Answer Refusal question, as in the reference
    ag = report["agreement"]
    assert 0 < ag["precision"] <= 1 and 0 < ag["recall"] <= 1
    again = label_evidence(sample_root, "offline", tmp_path / "labels", split="multi-party")
    assert again["labelled_now"] == 0  # resumed: nothing relabelled


def _name_turn_0_and_a_missing_turn(req) -> str:
    """Names turn 0 and a turn that does not exist of the first candidate turn's session."""
    session = req.user_text.split("\nTurns:\n[", 1)[1].split(" ", 1)[0]
    reply = {"turns": [{"session": session, "turn": 0}, {"session": session, "turn": 9999}], "status": "labelled"}
    return json.dumps(reply)


def test_model_labeller_is_checked_recorded_and_resumable(sample_root, tmp_path):
    chat = ScriptedChatModel([_name_turn_0_and_a_missing_turn], spec="fake:labeller", usage=Usage(calls=1))
    report = label_evidence(sample_root, chat, tmp_path / "l", split="multi-party")
    assert all(r.system == labeling_prompt() and r.field("Gold answer") is not None for r in chat.requests)
    assert {r.stage for r in chat.requests} == {"label"}
    labs = load_evidence_labels(tmp_path / "l")
    assert labs.meta["labeller"] == "fake:labeller" and labs.meta["prompt_hash"]
    called = [lab for lab in labs.labels.values() if lab.note and lab.note.startswith("model")]
    assert chat.calls == len(called) > 0
    assert all(len(lab.turns) == 1 and lab.turns[0].turn == 0 for lab in called)  # turn 9999 dropped
    assert all("1 invalid" in lab.note for lab in called)
    rows = [json.loads(x) for x in (tmp_path / "l" / "multi-party.jsonl").read_text().splitlines()]
    assert all(r["labeller"] == "fake:labeller" for r in rows) and rows == sorted(rows, key=lambda r: r["question_id"])
    label_evidence(sample_root, chat, tmp_path / "l", split="multi-party")
    assert chat.calls == len(called) and report["labelled_now"] == 152
    with pytest.raises(ValueError, match="holds labels by"):
        label_evidence(sample_root, "offline", tmp_path / "l", split="multi-party")
