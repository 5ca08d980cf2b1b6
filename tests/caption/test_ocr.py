"""Offline OCR captions: rendered words recovered, Pillow facts, bad files, resume, truncation."""

from __future__ import annotations

import json
import re
from pathlib import Path

from caption_helpers import render_text_image, write_dialogue
from PIL import Image

from h2hmem.caption import CaptionStore, ImageFacts, ImageId, caption_dataset, image_facts, open_image
from h2hmem.llm import count_tokens, truncate_tokens


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def _image_id(key: str) -> ImageId:
    split, dialogue, session, file = key.split("/")
    return ImageId(split, dialogue, session, file)


def test_ocr_captions_contain_rendered_words(text_dataset, tmp_path):
    root, truth = text_dataset
    caps = tmp_path / "caps"
    s = caption_dataset(root, "ocr", out_dir=caps, concurrency=2, progress=False)
    # 5 distinct images although session1/1.png and session2/1.png are also named by questions
    assert (s.images, s.captioned, s.failed, s.missing, s.cached) == (5, 5, 0, 0, 0)
    assert s.usage.calls == 0 and s.usage.cost_usd == 0.0
    store = CaptionStore(root, caps)
    found = total = 0
    for key, lines in truth.items():
        caption = store.get(_image_id(key))
        assert caption is not None and caption.startswith("Image 900×400 ")
        have = _words(caption)
        want = _words(" ".join(lines))
        found += sum(w in have for w in want)
        total += len(want)
    recall = found / total
    print(f"\nOCR word recall on {len(truth)} rendered images: {found}/{total} = {recall:.1%}")
    assert recall >= 0.90


def test_second_run_is_cached_and_changed_image_is_redone(text_dataset, tmp_path):
    root, truth = text_dataset
    caps = tmp_path / "caps"
    first = caption_dataset(root, "ocr", out_dir=caps, progress=False)
    assert first.captioned == 5
    second = caption_dataset(root, "ocr", out_dir=caps, progress=False)
    assert (second.captioned, second.cached) == (0, 5)
    # new pixels → new content hash → only that image is captioned again
    changed = root / "dyadic/dialogue1/scenes/session2/image/1.png"
    render_text_image(changed, ["Completely new words", "about seven oranges"])
    third = caption_dataset(root, "ocr", out_dir=caps, progress=False)
    assert (third.captioned, third.cached) == (1, 4)
    assert "oranges" in CaptionStore(root, caps).get(ImageId("dyadic", "dialogue1", "session2", "1.png"))
    # another caption limit is another cache key
    fourth = caption_dataset(root, "ocr", out_dir=caps, max_tokens=100, progress=False)
    assert (fourth.captioned, fourth.cached) == (5, 0)
    # --no-cache recaptions everything
    assert caption_dataset(root, "ocr", out_dir=caps, max_tokens=100, use_cache=False, progress=False).captioned == 5


def test_truncation_to_max_tokens(text_dataset, tmp_path):
    root, _ = text_dataset
    caps = tmp_path / "caps"
    s = caption_dataset(root, "ocr", out_dir=caps, max_tokens=8, progress=False, preset="harmonized")
    assert s.truncated == 5
    data = json.loads((caps / "dyadic/dialogue1/scenes/session1/caption/1.json").read_text(encoding="utf-8"))
    full, final = data["description"]["full_text"], data["description"]["final_text"]
    stats = data["description"]["token_stats"]
    assert final == truncate_tokens(full, 8) and full.startswith(final) and len(final) < len(full)
    assert stats == {
        "original_tokens": count_tokens(full),
        "final_tokens": count_tokens(final),
        "was_truncated": True,
        "limit": 8,
    }
    assert count_tokens(final) <= 8
    assert data["image_info"]["filename"] == "1.png" and len(data["image_info"]["sha256"]) == 64
    assert data["model_info"]["model"] == "ocr" and data["model_info"]["identity"].startswith("ocr/tesseract-")


def test_bad_image_files_are_recorded_failures(tmp_path):
    root = tmp_path / "ds"
    img = root / "dyadic/dialogue1/scenes/session1/image"
    render_text_image(img / "good.png", ["Hello there"])
    img.joinpath("empty.png").write_bytes(b"")
    img.joinpath("junk.png").write_bytes(b"this is not an image at all" * 10)
    png = (img / "good.png").read_bytes()
    img.joinpath("cut.png").write_bytes(png[: len(png) // 2])
    write_dialogue(
        root, "dyadic", "dialogue1", {"session1": ["good.png", "empty.png", "junk.png", "cut.png", "gone.png"]}
    )
    caps = tmp_path / "caps"
    s = caption_dataset(root, "ocr", out_dir=caps, progress=False)
    assert (s.images, s.captioned, s.failed, s.missing) == (5, 1, 3, 1)
    reasons = {f.image.split("/")[-1]: f.reason for f in s.failures}
    assert reasons["empty.png"] == "zero-byte image file"
    assert reasons["junk.png"].startswith("not a recognised image format")
    assert reasons["cut.png"].startswith("corrupt or truncated image data")
    assert s.missing_images == ["dyadic/dialogue1/session1/gone.png"]
    report = json.loads((caps / "caption_failures.json").read_text())
    assert sorted(f["image"] for f in report["failed"]) == [
        f"dyadic/dialogue1/session1/{n}" for n in ("cut.png", "empty.png", "junk.png")
    ]
    assert report["missing"] == ["dyadic/dialogue1/session1/gone.png"]
    # a rerun retries only the failed ones (the good caption is cached)
    again = caption_dataset(root, "ocr", out_dir=caps, progress=False)
    assert (again.cached, again.captioned, again.failed) == (1, 0, 3)


def _facts(tmp_path: Path, size: tuple[int, int], fmt: str, **save) -> ImageFacts:
    path = tmp_path / f"x.{fmt.lower()}"
    Image.new("RGB", size, "white").save(path, format=fmt, **save)
    return image_facts(open_image(path))


def test_pillow_facts(tmp_path):
    assert _facts(tmp_path, (1080, 2340), "PNG").describe() == "Image 1080×2340 PNG (portrait screenshot)"
    # screenshot threshold: height >= 1.7 × width
    assert _facts(tmp_path, (1000, 1700), "PNG").kind == "screenshot"
    assert _facts(tmp_path, (1000, 1699), "PNG").kind == "photo"
    exif = Image.Exif()
    exif[306] = "2024:02:20 10:11:12"
    facts = _facts(tmp_path, (1600, 1200), "JPEG", exif=exif)
    assert facts.describe() == "Image 1600×1200 JPEG (landscape photo), taken 2024-02-20 10:11:12"
    # EXIF orientation 6 (rotate 90°): stored 1600×1200, shown upright as 1200×1600
    exif = Image.Exif()
    exif[274] = 6
    facts = _facts(tmp_path, (1600, 1200), "JPEG", exif=exif)
    assert (facts.width, facts.height, facts.orientation, facts.format) == (1200, 1600, "portrait", "JPEG")


def test_link_outside_dataset_root_is_refused(tmp_path):
    root = tmp_path / "ds"
    outside = render_text_image(tmp_path / "secret.png", ["private words"])
    img_dir = root / "dyadic/dialogue1/scenes/session1/image"
    img_dir.mkdir(parents=True)
    (img_dir / "1.png").symlink_to(outside)
    write_dialogue(root, "dyadic", "dialogue1", {"session1": ["1.png"]})
    s = caption_dataset(root, "ocr", out_dir=tmp_path / "caps", progress=False)
    assert (s.captioned, s.failed) == (0, 1)
    assert s.failures[0].reason == f"image is a link to {outside.resolve()}, outside the dataset root"
