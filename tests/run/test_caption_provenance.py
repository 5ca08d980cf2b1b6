"""A run names the captions its memories were given, and says when a resume changed them.

Before: the manifest named no captioner at all, and a run resumed after `h2hmem caption` (or after
captions were rewritten by another model) recorded answers made with two caption states, with
nothing to tell them apart.
"""

from __future__ import annotations

import hashlib

from fakes import fake_chat
from typer.testing import CliRunner

from h2hmem.caption import CaptionRecord, CaptionStore, ImageId
from h2hmem.cli._run import _warn_caption_mix
from h2hmem.data import load_dataset
from h2hmem.records import read_manifest
from h2hmem.run import RunConfig, run_benchmark

runner = CliRunner()
DIALOGUE = "dialogue10"


def _turn_images(sample_root) -> list[str]:
    ds = load_dataset(sample_root, "dyadic")
    d = next(x for x in ds.dialogues if x.name == DIALOGUE)
    return sorted({t.image.key for s in d.sessions for t in s.turns if t.image is not None})


def _caption(store: CaptionStore, key: str, text: str, model: str, *, official: bool = False) -> None:
    """A caption file as h2hmem writes it (a cache key), or as the official captioner does (none)."""
    session, file = key.split("/")
    store.put(
        ImageId("dyadic", DIALOGUE, session, file),
        CaptionRecord(
            description={"final_text": text},
            model_info={"model": model},
            image_info={"filename": file},
            cache_key=None if official else f"key-{text}",
        ),
    )


def _sha16(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def test_the_manifest_names_each_images_caption_and_a_resume_that_changed_them(sample_root, tmp_path):
    images = _turn_images(sample_root)
    assert len(images) >= 6
    caps = tmp_path / "caps"
    caps.mkdir()
    store = CaptionStore(sample_root, captions_dir=caps)
    # three by one model, two by another, one official captioner's file, the rest uncaptioned
    models = ["openai:gpt-4o"] * 3 + ["ocr"] * 2 + ["gpt-4o"]
    for i, key in enumerate(images[:6]):
        _caption(store, key, f"caption {i}", models[i], official=i == 5)
    cfg = RunConfig(
        data_root=sample_root,
        split="dyadic",
        method="full-text",  # renders every turn: looks up every image of the dialogue
        out_dir=tmp_path / "runs",
        use_cache=False,
        captions_dir=caps,
        selection={"dialogues": [DIALOGUE]},
    )
    first = run_benchmark(cfg, chat_model=fake_chat(fail_on="coffee brand"), progress=False)
    assert first.failed == 1
    m = read_manifest(first.run_dir)
    assert m.caption_sources == {"ocr": 2, "official:gpt-4o": 1, "openai:gpt-4o": 3}
    assert first.caption_sources == m.caption_sources and first.captions_changed == {}
    uses = m.captions_by_dialogue[f"dyadic/{DIALOGUE}"]
    assert sorted(uses) == images[:6]
    assert uses[images[3]].source == "ocr" and uses[images[3]].sha256 == _sha16("caption 3")
    questions = [q for q in load_dataset(sample_root, "dyadic").questions if q.dialogue == DIALOGUE]
    asked = set(images) | {ref.key for q in questions for ref in q.images}  # question images too
    assert m.images_without_caption == len(asked) - 6

    # between invocations: one caption rewritten by another model, one uncaptioned image captioned
    _caption(store, images[0], "caption 0, again", "ocr")
    _caption(store, images[6], "caption 6", "ocr")
    second = run_benchmark(cfg.replace(retry_failed=True), chat_model=fake_chat(), progress=False)
    assert second.answered_now == 1  # the failed question, redone: the dialogue was rebuilt
    m = read_manifest(second.run_dir)
    assert m.invocations[-1].captions_changed == {f"dyadic/{DIALOGUE}": sorted([images[0], images[6]])}
    assert second.captions_changed == m.invocations[-1].captions_changed
    assert m.caption_sources == {"ocr": 4, "official:gpt-4o": 1, "openai:gpt-4o": 2}
    assert m.captions_by_dialogue[f"dyadic/{DIALOGUE}"][images[0]].sha256 == _sha16("caption 0, again")

    # the same captions again: no change is reported (the earlier change stays in its invocation)
    (first.run_dir / "predictions.jsonl").write_text(
        "".join(
            line + "\n"
            for line in (first.run_dir / "predictions.jsonl").read_text().splitlines()
            if "coffee brand" not in line
        )
    )
    third = run_benchmark(cfg, chat_model=fake_chat(), progress=False)
    assert third.answered_now == 1 and third.captions_changed == {}
    m = read_manifest(third.run_dir)
    assert [inv.captions_changed for inv in m.invocations] == [{}, second.captions_changed, {}]


def test_the_run_command_notes_mixed_captioners_and_changed_captions(capsys):
    from h2hmem.cli import _app

    _app.err_console.width = 300
    _warn_caption_mix({"ocr": 2, "openai:gpt-4o": 5}, {"dyadic/dialogue1": ["session2/1.png", "session3/2.jpg"]})
    err = " ".join(capsys.readouterr().err.split())
    assert "the captions came from more than one captioner: openai:gpt-4o (5 images), ocr (2 images)" in err
    assert "2 captions of 1 dialogue(s) changed since an earlier invocation of this run" in err
    _warn_caption_mix({"ocr": 7}, {})
    assert capsys.readouterr().err == ""
