"""bench.retrieval: the leave-one-dialogue-out protocol and the abstention discrimination (hand-computed)."""

from __future__ import annotations

import json

import pytest

from bench._heldout import choose, heldout, lodo_choices, switch_check, table
from bench.retrieval import abstention, per_question


def test_leave_one_dialogue_out_choice_and_figures():
    # setting 0 (default) is better on d1 and d3, setting 1 on d2 (one question each; d1 twice)
    s0 = {"q1": ("d1", "T", 1.0), "q1b": ("d1", "U", 1.0), "q2": ("d2", "T", 0.0), "q3": ("d3", "T", 1.0)}
    s1 = {"q1": ("d1", "T", 0.5), "q1b": ("d1", "U", 0.5), "q2": ("d2", "T", 1.0), "q3": ("d3", "T", 0.5)}
    # d1 held out: on d2+d3 s0 = 0.5, s1 = 0.75 → s1; d2: on d1+d3 s0 = 1.0, s1 = 0.5 → s0; d3: on d1+d2
    # s0 = 2/3, s1 = 2/3 → tie → s0 (the default)
    assert lodo_choices([s0, s1]) == {"d1": 1, "d2": 0, "d3": 0}
    # session hit rows (s1 never lowers them: the guard excludes nothing, but it breaks d3's tie: on
    # d1+d2 s1's session hit 1.0 > s0's 0.5 → d3 is scored by s1)
    h0 = {"q1": ("d1", "T", 0.0), "q2": ("d2", "T", 1.0), "q3": ("d3", "T", 1.0), "q4": ("d4", "T", 0.0)}
    h1 = {"q1": ("d1", "T", 1.0), "q2": ("d2", "T", 1.0), "q3": ("d3", "T", 1.0), "q4": ("d4", "T", 1.0)}
    base = {"q1": ("d1", "T", 0.0), "q1b": ("d1", "U", 1.0), "q2": ("d2", "T", 1.0), "q3": ("d3", "T", 0.0)}
    out = heldout({"turn_recall@5": [s0, s1], "hit@5": [h0, h1]}, {"b": {"turn_recall@5": base}})
    ho = out["metrics"]["turn_recall@5"]["heldout"]
    assert out["choices"] == {"d1": 1, "d2": 0, "d3": 1}
    # held out: d1 by s1 (0.5, 0.5), d2 by s0 (0.0), d3 by s1 (0.5) → overall 1.5/4; T: (0.5 + 0 + 0.5) / 3
    assert ho["overall"]["mean"] == 0.375 and ho["overall"]["n"] == 4
    assert ho["T"]["mean"] == pytest.approx(1 / 3, abs=1e-4) and ho["U"]["mean"] == 0.5
    assert ho["overall"]["folds"] == {"d1": 0.5, "d2": 0.0, "d3": 0.5}
    assert (ho["overall"]["min"], ho["overall"]["max"]) == (0.0, 0.5)
    # in-sample: on all of d1..d3 s0 = 3/4 > s1 = 2.5/4 → s0 everywhere
    assert out["in_sample_choice"] == 0
    assert out["metrics"]["turn_recall@5"]["in_sample"]["overall"]["mean"] == 0.75
    # hit@5 with the turn-recall choices; d4 (no labelled question) gets the in-sample choice s0
    hit = out["metrics"]["hit@5"]["heldout"]["overall"]
    assert hit["folds"] == {"d1": 1.0, "d2": 1.0, "d3": 1.0, "d4": 0.0} and hit["mean"] == 0.75
    assert out["baselines"]["b"]["turn_recall@5"]["overall"]["mean"] == 0.5
    md = table(out, "turn_recall@5", [("all", "overall"), ("T", "T"), ("X", "X")])
    assert "| all | 4 | 0.500 (0.00–1.00) | 0.750 (0.00–1.00) | 0.375 (0.00–0.50) |" in md
    assert "| X |" not in md  # a task type with no question has no row


def test_a_setting_that_lowers_session_hit_is_not_chosen():
    s0 = {"q1": ("d1", "T", 0.5), "q2": ("d2", "T", 0.5)}
    s1 = {"q1": ("d1", "T", 1.0), "q2": ("d2", "T", 1.0)}  # better turn recall …
    h0 = {"q1": ("d1", "T", 1.0), "q2": ("d2", "T", 1.0)}
    h1 = {"q1": ("d1", "T", 1.0), "q2": ("d2", "T", 0.0)}  # … bought with a session miss on d2
    assert choose([s0, s1], {"d1", "d2"}) == 1
    assert choose([s0, s1], {"d1", "d2"}, guard=[h0, h1]) == 0
    assert choose([s0, s1], {"d1"}, guard=[h0, h1]) == 1  # on d1 alone it costs nothing
    out = heldout({"turn_recall@5": [s0, s1], "hit@5": [h0, h1]})
    assert out["choices"] == {"d1": 0, "d2": 1}  # d1 is chosen on d2 (guard fails), d2 on d1
    assert out["metrics"]["hit@5"]["heldout"]["overall"]["mean"] == 0.5
    # with a baseline, the bar is the best baseline's session hit, not the default's
    weak = {"q1": ("d1", "T", 0.0), "q2": ("d2", "T", 0.0)}
    assert choose([s0, s1], {"d1", "d2"}, guard=[h0, h1], floor=[weak]) == 1  # 0.5 ≥ 0.0
    assert choose([s0, s1], {"d1", "d2"}, guard=[h0, h1], floor=[weak, h0]) == 0  # 0.5 < 1.0
    out = heldout({"turn_recall@5": [s0, s1], "hit@5": [h0, h1]}, {"b": {"turn_recall@5": s0, "hit@5": weak}})
    assert out["choices"] == {"d1": 1, "d2": 1}


def test_a_turn_recall_tie_goes_to_the_higher_session_hit():
    same = {"q1": ("d1", "T", 1.0), "q2": ("d2", "T", 0.0)}
    h0 = {"q1": ("d1", "T", 0.0), "q2": ("d2", "T", 1.0)}
    h1 = {"q1": ("d1", "T", 1.0), "q2": ("d2", "T", 1.0)}  # same turn recall, one more session hit on d1
    assert choose([same, dict(same)], {"d1", "d2"}, guard=[h0, h1]) == 1
    assert choose([same, dict(same)], {"d2"}, guard=[h0, h1]) == 0  # a tie on both → the default
    out = switch_check(same, dict(same), (h0, h1))
    # d1 held out: on d2 both tie → without (0.0); d2 held out: on d1 with wins (1.0) → hit 1/2
    assert (out["guard_without"], out["guard_with"], out["guard_heldout"]) == (0.5, 1.0, 0.5)
    assert out["folds_with"] == 1 and out["heldout"] == out["without"] == 0.5


def test_ties_go_to_the_default_and_errors():
    same = {"q1": ("d1", "T", 1.0), "q2": ("d2", "T", 0.0)}
    assert choose([same, dict(same)], {"d1", "d2"}) == 0
    better = {"q1": ("d1", "T", 1.0), "q2": ("d2", "T", 0.5)}
    assert choose([same, better], {"d1", "d2"}) == 1
    with pytest.raises(ValueError, match="turn_recall@5"):
        heldout({"hit@5": [same]})
    with pytest.raises(ValueError, match="hit@5 has 1 settings"):
        heldout({"turn_recall@5": [same, better], "hit@5": [same]})


def test_per_question_reads_scored_rows_only(tmp_path):
    (tmp_path / "scores").mkdir()
    recs = [
        {"question_id": "a", "split": "dyadic", "dialogue": "dialogue5", "task_type": "UPR", "hit@5": 1.0},
        {"question_id": "b", "split": "dyadic", "dialogue": "dialogue5", "task_type": "AR", "excluded": "no gold"},
        {"question_id": "c", "split": "dyadic", "dialogue": "dialogue5", "task_type": "CD", "failed": True},
    ]
    (tmp_path / "scores" / "evidence.jsonl").write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    assert per_question(tmp_path, "evidence", "hit@5") == {"a": ("dyadic/dialogue5", "UPR", 1.0)}


def _pred(qid, task, signal):
    return {
        "question_id": qid,
        "split": "dyadic",
        "dialogue": "dialogue1",
        "session": "session1",
        "task_type": task,
        "main_category": "Memory Recall",
        "difficulty": "easy",
        "question": "?",
        "gold": "x",
        "answer": "I don't know.",
        "evidence": [],
        "method": "h2h",
        "details": {"abstain_signal": signal},
    }


def test_abstention_auroc_and_threshold(tmp_path):
    rows = [_pred("q1", "AR", 0.2), _pred("q2", "AR", 0.5), _pred("q3", "UPR", 0.3), _pred("q4", "UPR", 0.9)]
    (tmp_path / "predictions.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    out = abstention(tmp_path, 0.35)
    # pairs (AR, other) where AR's signal is lower: (0.2, 0.3), (0.2, 0.9), (0.5, 0.9) of 4 → 0.75
    assert out["auroc"] == 0.75
    # flagged below 0.35: q1 (AR) and q3 (UPR) → precision 1/2, recall 1/2
    assert (out["precision"], out["recall"], out["flagged"]) == (0.5, 0.5, 2)
    with pytest.raises(ValueError, match="abstain_signal"):
        (tmp_path / "predictions.jsonl").write_text(json.dumps(_pred("q1", "AR", 0.2)) + "\n")
        abstention(tmp_path, 0.35)


def test_switch_check_separates_transfer_from_in_sample_gain():
    without = {"q1": ("d1", "T", 0.0), "q2": ("d2", "T", 1.0), "q3": ("d3", "T", 0.0)}
    # a gain on d1 only, a loss on d2: d1 held out chooses on d2+d3 (loss) → without; d2 on d1+d3 (gain) → with
    only_d1 = {"q1": ("d1", "T", 1.0), "q2": ("d2", "T", 0.5), "q3": ("d3", "T", 0.0)}
    out = switch_check(without, only_d1)
    assert (out["without"], out["with"]) == (0.3333, 0.5)
    # held out: d1 without (0.0), d2 with (0.5), d3 chosen on d1+d2 (gain 1 − 0.5 > 0) → with (0.0)
    assert out["heldout"] == pytest.approx(0.1667) and out["folds_with"] == 2
    # a gain on two dialogues transfers to each: every fold sees the other's gain
    both = {"q1": ("d1", "T", 1.0), "q2": ("d2", "T", 1.0), "q3": ("d3", "T", 1.0)}
    assert switch_check(without, both)["heldout"] == 1.0


def test_run_method_runs_with_its_scripted_models(sample_root, tmp_path):
    # `python -m bench.retrieval` crashed before its first run when RunConfig started checking model
    # specs ('fake:none', the label of the scripted model it passes in); one method on the sample
    from bench._embedders import HashedEmbedder
    from bench.retrieval import run_method

    labels = sample_root.parent / "h2hmem-sample-labels"
    summary = run_method(
        sample_root, tmp_path, labels, "naive-rag", {}, "nrag", embedder=HashedEmbedder(), split="multi-party"
    )
    turns = summary["metrics"]["turn_evidence"]
    assert turns["aggregate"] is not None and turns["labelled"] > 0
