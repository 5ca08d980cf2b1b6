"""The synthetic dataset generator: format, exact sizes, determinism, gold consistency, images."""

from __future__ import annotations

import hashlib
import json
import random
import re
from pathlib import Path

import pytest
from PIL import Image
from typer.testing import CliRunner

from h2hmem.cli import app
from h2hmem.data import TaskType, load_dataset, parse_date, synthesize_dataset
from h2hmem.data._stats import dataset_stats
from h2hmem.data._synth import FULL_SIZE, plan_dataset
from h2hmem.data._validate import validate_dataset

SMALL_SEED = 7


@pytest.fixture(scope="module")
def small(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("synth") / "small"
    synthesize_dataset(root, "small", seed=SMALL_SEED)
    return root


@pytest.fixture(scope="module")
def full(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("synth") / "full"
    synthesize_dataset(root, "full", seed=0)
    return root


def _hashes(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_small_is_valid_with_expected_counts(small):
    log, stats = validate_dataset(small)
    assert log.errors == []
    # warnings are only the realistic date oddities ("2024-02-20 (extra)")
    assert {i.code for i in log.warnings} <= {"odd-date"}
    assert stats["splits"]["all"] == {
        "dialogues": 3,
        "sessions": 8,
        "absent_sessions": 0,
        "turns": 120,
        "image_turns": 28,
        "questions": 60,
    }
    assert stats["splits"]["dyadic"]["dialogues"] == 2 and stats["splits"]["multi-party"]["dialogues"] == 1
    assert all(n > 0 for n in stats["task_types"].values()), stats["task_types"]


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_every_task_type_in_small_for_several_seeds(tmp_path, seed):
    res = synthesize_dataset(tmp_path / "s", "small", seed=seed)
    assert set(res["task_types"]) == {t.abbr for t in TaskType}
    assert all(n > 0 for n in res["task_types"].values()), res["task_types"]
    assert res["splits"]["all"]["questions"] == 60


def test_full_matches_published_size_exactly(full):
    ds = load_dataset(full)
    stats = dataset_stats(ds)
    for split, size in FULL_SIZE.items():
        got = stats["splits"][split]
        assert (got["dialogues"], got["sessions"], got["turns"], got["image_turns"], got["questions"]) == (
            size["dialogues"],
            size["sessions"],
            size["turns"],
            size["images"],
            size["questions"],
        )
    assert stats["splits"]["all"]["dialogues"] == 25
    assert stats["splits"]["all"]["sessions"] == 309
    assert stats["splits"]["all"]["turns"] == 7078
    assert stats["splits"]["all"]["image_turns"] == 1300
    assert stats["splits"]["all"]["questions"] == 2236
    # image turns = image files on disk (question images reuse them)
    assert len(list(full.glob("*/dialogue*/scenes/session*/image/*"))) == 1300
    log, _ = validate_dataset(full)
    assert log.errors == []


def test_xn_plan_multiplies_everything():
    plans = plan_dataset("x3", random.Random(0))
    for split, size in FULL_SIZE.items():
        ps = [p for p in plans if p.split == split]
        assert len(ps) == 3 * size["dialogues"]
        assert sum(len(p.sessions) for p in ps) == 3 * size["sessions"]
        assert sum(s.turns for p in ps for s in p.sessions) == 3 * size["turns"]
        assert sum(s.images for p in ps for s in p.sessions) == 3 * size["images"]
        assert sum(p.pool_questions + sum(s.questions for s in p.sessions) for p in ps) == 3 * size["questions"]


@pytest.mark.parametrize("scale,seeds", [("full", range(6)), ("x2", range(1))])
def test_every_plan_is_met_exactly(scale, seeds):
    """Composition (no files) meets each session's turn, image and question budget for many seeds."""
    from h2hmem.data._synth_dialogue import compose_dialogue

    for seed in seeds:
        turn_counts = set()
        for p in plan_dataset(scale, random.Random(f"h2hmem-synth:{seed}:{scale}")):
            d = compose_dialogue(random.Random(f"h2hmem-synth:{seed}:{p.split}:{p.number}"), p)
            assert len(d.sessions) == len(p.sessions) and len(d.pool) == p.pool_questions
            for s, sp in zip(d.sessions, p.sessions):
                assert len(s.turns) == sp.turns and len(s.questions) == sp.questions
                assert sum(t.card is not None for t in s.turns) == sp.images
                turn_counts.add(len(s.turns))
        assert len(turn_counts) > 5  # sizes vary between sessions, as in the public files


def test_bad_scale_and_non_empty_folder(tmp_path):
    with pytest.raises(ValueError, match="unknown scale 'huge'"):
        synthesize_dataset(tmp_path / "a", "huge")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "notes.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="not empty"):
        synthesize_dataset(tmp_path / "b", "small")


def test_deterministic_bytes_and_seed_changes_content(small, tmp_path):
    again = tmp_path / "again"
    synthesize_dataset(again, "small", seed=SMALL_SEED)
    assert _hashes(again) == _hashes(small)
    other = tmp_path / "other"
    synthesize_dataset(other, "small", seed=SMALL_SEED + 1)
    h1, h2 = _hashes(small), _hashes(other)
    common = set(h1) & set(h2)
    changed = [p for p in common if h1[p] != h2[p] and p.endswith(".json")]
    assert len(changed) >= 0.9 * sum(p.endswith(".json") for p in common)
    with pytest.raises(FileExistsError, match="seed=8"):
        synthesize_dataset(other, "small", seed=SMALL_SEED)


def test_same_bytes_in_another_process_with_another_hash_seed(small, tmp_path):
    """No output depends on set/dict hash order: a fresh interpreter with PYTHONHASHSEED=1 agrees."""
    import os
    import subprocess
    import sys

    out = tmp_path / "proc"
    code = f"from h2hmem.data import synthesize_dataset; synthesize_dataset({str(out)!r}, 'small', seed={SMALL_SEED})"
    subprocess.run([sys.executable, "-c", code], check=True, env={**os.environ, "PYTHONHASHSEED": "1"}, timeout=120)
    assert _hashes(out) == _hashes(small)


def test_interrupted_run_is_completed(small, tmp_path):
    out = tmp_path / "resume"
    synthesize_dataset(out, "small", seed=SMALL_SEED)
    # simulate a crash: marker back, meta and some files gone
    (out / ".synth-incomplete.json").write_text(json.dumps({"scale": "small", "seed": SMALL_SEED}))
    (out / "synth_meta.json").unlink()
    for p in list(out.glob("dyadic/dialogue2/scenes/*/image/*"))[:3]:
        p.unlink()
    synthesize_dataset(out, "small", seed=SMALL_SEED)
    assert _hashes(out) == _hashes(small)


def _meta(root: Path) -> dict:
    return json.loads((root / "synth_meta.json").read_text(encoding="utf-8"))


def test_session_files_have_the_public_keys(small):
    for f in small.glob("dyadic/*/scenes/*/session.json"):
        d = json.loads(f.read_text(encoding="utf-8"))
        assert list(d) == ["session_id", "session_title", "theme", "generated_at", "dialogue", "timeline_date"]
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT10:00:00\.000000", d["generated_at"])
    for f in small.glob("multi-party/*/scenes/*/session.json"):
        d = json.loads(f.read_text(encoding="utf-8"))
        assert list(d) == [
            "session_id",
            "group_id",
            "target_turns",
            "actual_turns",
            "dialogue",
            "meta",
            "timeline_date",
        ]
        dia, ses = re.search(r"dialogue(\d+)/scenes/session(\d+)", f.as_posix()).groups()
        assert d["session_id"] == f"S{dia}-{ses}"
        assert d["actual_turns"] == len(d["dialogue"])
        assert d["meta"]["images_used"] == [t["content"]["image"] for t in d["dialogue"] if t["content"]["image"]]
    assert not list(small.glob("*/*/scenes/session0/session.json"))
    for f in small.glob("*/*/scenes/*/questions.json"):
        qf = json.loads(f.read_text(encoding="utf-8"))
        assert list(qf) == ["metadata", "session_info", "questions"]
        for q in qf["questions"]:
            assert q["validated"] is True and q["difficulty"] in ("easy", "medium", "hard")
            assert q["answer_dialogue"] == re.search(r"(dialogue\d+)", f.as_posix()).group(1)
            assert q["question_type"]["sub_type"] != "Multimodal Causal Reasoning"  # the files' own spelling


def test_speakers_and_dates(full):
    ds = load_dataset(full)
    extra = 0
    for d in ds.dialogues:
        speakers = {t.speaker for s in d.sessions for t in s.turns}
        assert len(speakers) == 2 if d.split == "dyadic" else 4 <= len(speakers) <= 6
        dates = [s.date for s in d.sessions]
        assert dates == sorted(dates) and len(set(dates)) == len(dates)
        extra += sum(s.raw_date != s.date.isoformat() for s in d.sessions)
        if d.split == "dyadic":  # two speakers take turns
            for s in d.sessions:
                assert all(a.speaker != b.speaker for a, b in zip(s.turns, s.turns[1:]))
    assert 10 <= extra <= 80  # some dates carry extra text, as in the public files


def _sources(ds, meta_q: dict, dialogue) -> list[str]:
    sessions = {s.name: s for s in dialogue.sessions}
    out = []
    for ev in meta_q["evidence"]:
        s = sessions[ev["session"]]
        if ev["source"] == "date":
            out.append(s.raw_date)
        elif ev["source"] == "image":
            out.append(ds["images"][f"{dialogue.split}/{dialogue.name}/{s.name}/{ev['image']}"]["text"])
        else:
            out.append(s.turns[ev["turn"]].text)
    return out


@pytest.mark.parametrize("which", ["small", "full"])
def test_golds_follow_from_evidence(which, request):
    root = request.getfixturevalue(which)
    meta = _meta(root)
    ds = load_dataset(root)
    by_dialogue = {(d.split, d.name): d for d in ds.dialogues}
    assert set(meta["questions"]) == {q.id for q in ds.questions}
    for q in ds.questions:
        m = meta["questions"][q.id]
        d = by_dialogue[(q.split, q.dialogue)]
        assert m["task"] == q.task_type.abbr
        sources = _sources(meta, m, d)
        for part in m["gold_parts"]:  # case-insensitive: "Drink warm milk" applies "… I drink warm milk"
            assert part.lower() in q.gold.lower(), (q.id, part, q.gold)
            assert any(part.lower() in src.lower() for src in sources), (q.id, part, sources)
        if q.task_type in (TaskType.UPR, TaskType.KR):
            assert m["gold_parts"] and all(e["source"] == "text" for e in m["evidence"])
        if q.task_type == TaskType.CRR:
            if m["gold_parts"]:  # a value printed on the image only, not in the sharing turn's text
                img = [e for e in m["evidence"] if e["source"] == "image"]
                assert img
                turn = d.sessions[int(img[0]["session"][7:]) - 1].turns[img[0]["turn"]]
                assert turn.image is not None and turn.image.file == img[0]["image"]
                assert all(p not in turn.text for p in m["gold_parts"]), q.id
            else:  # "find the image": "<file> in sessionK" of the turn described
                ev = m["evidence"][0]
                turn = d.sessions[int(ev["session"][7:]) - 1].turns[ev["turn"]]
                assert q.gold == f"{turn.image.file} in {ev['session']}" and turn.image.exists
        if q.task_type == TaskType.MCR and q.gold.endswith(tuple(f" in {s.name}" for s in d.sessions)):
            file, sname = q.gold.split(" in ")
            reply = d.sessions[int(sname[7:]) - 1].turns[m["evidence"][0]["turn"]]
            prompt = d.sessions[int(sname[7:]) - 1].turns[reply.index - 1]
            assert prompt.image is not None and prompt.image.file == file  # the image right before the remark
        if q.task_type == TaskType.CD:
            assert q.gold in ("Yes", "No")
        if q.task_type == TaskType.AR:
            assert q.gold == "Not mentioned" and m["evidence"] == []
        if q.task_type == TaskType.TR and q.gold.endswith(" days"):
            d1, d2 = (parse_date(_sources(meta, {"evidence": [e]}, d)[0]) for e in m["evidence"])
            assert q.gold == f"{abs((d2 - d1).days)} days"
        if m["evidence"]:
            assert list(q.answer_sessions) == list(dict.fromkeys(e["session"] for e in m["evidence"]))


def test_no_question_asked_twice_in_a_dialogue(full):
    ds = load_dataset(full)
    for d in ds.dialogues:
        keys = [(q.text, tuple(r.key for r in q.images)) for q in d.questions]
        assert len(keys) == len(set(keys)), d.name


def test_kr_gold_is_the_latest_value(full):
    """A KR gold is stated in the last evidence session, and no later turn of the chain changes it."""
    meta = _meta(full)
    ds = load_dataset(full)
    by_dialogue = {(d.split, d.name): d for d in ds.dialogues}
    n = 0
    for q in ds.questions:
        if q.task_type != TaskType.KR:
            continue
        n += 1
        m = meta["questions"][q.id]
        d = by_dialogue[(q.split, q.dialogue)]
        last = max(m["evidence"], key=lambda e: int(e["session"][7:]))
        assert q.gold in d.sessions[int(last["session"][7:]) - 1].turns[last["turn"]].text
        assert len(m["evidence"]) >= 2
    assert n >= 25


def test_question_images_resolve(full):
    ds = load_dataset(full)
    qimgs = [(q, r) for q in ds.questions for r in q.images]
    assert len(qimgs) >= 50
    assert all(r.exists for _, r in qimgs)
    pool = [(q, r) for q, r in qimgs if q.session == "session0"]
    assert pool and all(r.session != "session0" for _, r in pool)
    assert all(
        q.original_question_id and q.original_question_id.startswith("CSQ")
        for q in ds.questions
        if q.session == "session0"
    )


def test_images_are_real_and_match_meta(small):
    meta = _meta(small)
    assert len(meta["images"]) == 28
    for key, info in meta["images"].items():
        split, dia, ses, file = key.split("/")
        path = small / split / dia / "scenes" / ses / "image" / file
        with Image.open(path) as im:
            assert im.size == (400, 240)
            assert im.format == {"png": "PNG", "jpg": "JPEG"}[file.rsplit(".", 1)[1]]
            assert not im.info.get("exif")
        assert info["text"] == "\n".join([info["title"], *info["lines"]])


def test_rendered_text_is_legible_to_tesseract(small):
    pytesseract = pytest.importorskip("pytesseract")
    try:
        pytesseract.get_tesseract_version()
    except Exception:
        pytest.skip("tesseract binary not installed")
    meta = _meta(small)
    words = found = 0
    for key in sorted(meta["images"])[:4]:
        split, dia, ses, file = key.split("/")
        with Image.open(small / split / dia / "scenes" / ses / "image" / file) as im:
            ocr = pytesseract.image_to_string(im)
        want = meta["images"][key]["text"].split()
        words += len(want)
        found += sum(w in ocr for w in want)
    assert found >= 0.95 * words, (found, words)


def test_cli_synth(tmp_path):
    r = CliRunner().invoke(app, ["data", "synth", str(tmp_path / "s"), "--scale", "small", "--seed", "4"])
    assert r.exit_code == 0, r.output
    assert "60" in r.output and (tmp_path / "s" / "synth_meta.json").is_file()
    r = CliRunner().invoke(app, ["data", "synth", str(tmp_path / "t"), "--scale", "tiny"])
    assert r.exit_code == 2 and "unknown scale 'tiny'" in r.output and "Traceback" not in r.output
    r = CliRunner().invoke(app, ["data", "validate", str(tmp_path / "s")])
    assert r.exit_code == 0 and "0 error(s)" in r.output
