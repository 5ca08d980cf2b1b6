"""CaptionStore: official files read as they are, our files round-trip, two folders, same-stem images."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from h2hmem.caption import CaptionRecord, CaptionStore, ImageId
from h2hmem.data import ImageRef
from h2hmem.memory._protocol import MemoryContext

OFFICIAL = {  # the official captioner's shape, trimmed to what a reader may rely on
    "id": "1b9e",
    "success": True,
    "timestamp": "2025-05-01T10:00:00",
    "image_info": {
        "path": "/home/x/dataset/dyadic/dialogue5/scenes/session2/image/3.png",
        "filename": "3.png",
        "size": 123,
        "modified_time": "2025-05-01T09:00:00",
    },
    "model_info": {"model": "gpt-4o", "detail_level": "auto", "caption_max_tokens": 256},
    "description": {
        "full_text": "A cat on a sofa.",
        "final_text": "A cat on a sofa.",
        "token_stats": {"original_tokens": 6, "final_tokens": 6, "was_truncated": False, "limit": 256},
    },
}


def _layout(root: Path) -> Path:
    (root / "dyadic" / "dialogue5" / "scenes" / "session2").mkdir(parents=True)
    return root / "dyadic" / "dialogue5" / "scenes" / "session2" / "caption"


def _record(text: str, file: str, key: str = "k") -> CaptionRecord:
    return CaptionRecord(
        image_info={"filename": file},
        model_info={"model": "ocr"},
        description={"full_text": text, "final_text": text},
        cache_key=key,
    )


def test_reads_official_caption_file(tmp_path):
    cdir = _layout(tmp_path)
    cdir.mkdir()
    (cdir / "3.json").write_text(json.dumps(OFFICIAL, ensure_ascii=False), encoding="utf-8")
    # a minimal official-style file: only description.final_text
    (cdir / "4.json").write_text(json.dumps({"description": {"final_text": "Receipt: 12.50 EUR"}}))
    store = CaptionStore(tmp_path)
    assert store.get(ImageId("dyadic", "dialogue5", "session2", "3.png")) == "A cat on a sofa."
    assert store.get(ImageId("dyadic", "dialogue5", "session2", "4.jpg")) == "Receipt: 12.50 EUR"
    assert store.record(ImageId("dyadic", "dialogue5", "session2", "3.png")).cache_key is None
    assert store.get(ImageId("dyadic", "dialogue5", "session1", "3.png")) is None  # other session
    assert store.get(ImageId("dyadic", "dialogue6", "session2", "3.png")) is None  # other dialogue
    # the runner passes this callable as MemoryContext.captions
    ctx = MemoryContext(
        dialogue_id="dyadic/dialogue5",
        chat=None,  # type: ignore[arg-type]
        captions=store.for_dialogue("dyadic", "dialogue5"),
    )
    assert ctx.captions(ImageRef(session="session2", file="3.png")) == "A cat on a sofa."
    assert ctx.captions(ImageRef(session="session2", file="9.png")) is None
    assert not store.issues.issues


def test_put_round_trip_and_txt(tmp_path):
    _layout(tmp_path)
    store = CaptionStore(tmp_path)
    img = ImageId("dyadic", "dialogue5", "session2", "1.png")
    path = store.put(img, _record("Two dogs in snow.", "1.png", key="abc"))
    assert path == tmp_path / "dyadic/dialogue5/scenes/session2/caption/1.json"
    assert path.with_suffix(".txt").read_text(encoding="utf-8") == "Two dogs in snow."
    assert json.loads(path.read_text())["description"]["final_text"] == "Two dogs in snow."
    assert store.get(img) == "Two dogs in snow."
    assert store.record(img).cache_key == "abc"
    assert not list(path.parent.glob(".*tmp"))  # atomic write left no temporary file


def test_dataset_root_first_then_captions_dir(tmp_path):
    root, extra = tmp_path / "ds", tmp_path / "caps"
    cdir = _layout(root)
    cdir.mkdir()
    (cdir / "3.json").write_text(json.dumps(OFFICIAL))
    store = CaptionStore(root, captions_dir=extra)
    assert store.write_dir == extra
    store.put(ImageId("dyadic", "dialogue5", "session2", "3.png"), _record("ours", "3.png"))
    store.put(ImageId("dyadic", "dialogue5", "session2", "5.png"), _record("only ours", "5.png"))
    assert (extra / "dyadic/dialogue5/scenes/session2/caption/5.json").is_file()
    look = store.for_dialogue("dyadic", "dialogue5")
    assert look(ImageRef(session="session2", file="3.png")) == "A cat on a sofa."  # dataset root wins
    assert look(ImageRef(session="session2", file="5.png")) == "only ours"
    assert [r.final_text for r in store.records(ImageId("dyadic", "dialogue5", "session2", "3.png"))] == [
        "A cat on a sofa.",
        "ours",
    ]


def test_same_stem_images_do_not_collide(tmp_path):
    _layout(tmp_path)
    store = CaptionStore(tmp_path)
    png, jpg = ImageId("dyadic", "dialogue5", "session2", "1.png"), ImageId("dyadic", "dialogue5", "session2", "1.jpg")
    p1 = store.put(png, _record("png caption", "1.png"))
    p2 = store.put(jpg, _record("jpg caption", "1.jpg"))
    assert (p1.name, p2.name) == ("1.json", "1.jpg.json")
    assert (store.get(png), store.get(jpg)) == ("png caption", "jpg caption")
    assert store.put(jpg, _record("jpg v2", "1.jpg")) == p2  # rewrites its own file
    assert store.get(jpg) == "jpg v2" and store.get(png) == "png caption"


def test_malformed_caption_file_is_reported_not_raised(tmp_path, caplog):
    cdir = _layout(tmp_path)
    cdir.mkdir()
    (cdir / "1.json").write_text("{not json")
    (cdir / "2.json").write_text(json.dumps({"description": {"text": "no final_text"}}))
    store = CaptionStore(tmp_path)
    with caplog.at_level(logging.WARNING, logger="h2hmem.caption._store"):
        for _ in range(3):  # looked up by every question that shows the image: said once a file
            assert store.get(ImageId("dyadic", "dialogue5", "session2", "1.png")) is None
            assert store.get(ImageId("dyadic", "dialogue5", "session2", "2.png")) is None
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 2 and said[0].startswith(
        "caption file dyadic/dialogue5/scenes/session2/caption/1.json: not valid"
    )
    assert said[1].endswith("no string description.final_text; its image is used without a caption")
    issues = store.issues.issues
    assert [(i.code, i.file) for i in issues] == [
        ("bad-caption-file", "dyadic/dialogue5/scenes/session2/caption/1.json"),
        ("bad-caption-file", "dyadic/dialogue5/scenes/session2/caption/2.json"),
    ]
    assert issues[1].field == "description.final_text"
