"""``h2hmem caption`` on the real sample (no image files) and its error messages."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from h2hmem.cli import app


def _named_images(root: Path) -> set[str]:
    """Distinct (split, dialogue, session, file) named by turns and questions, read straight from the JSON."""
    out: set[str] = set()
    for sf in root.glob("*/dialogue*/scenes/session*/session.json"):
        split, dlg, _, sess = sf.parent.relative_to(root).parts
        for turn in json.loads(sf.read_text(encoding="utf-8"))["dialogue"]:
            if turn["content"].get("image"):
                out.add(f"{split}/{dlg}/{sess}/{turn['content']['image'].strip()}")
    for qf in root.glob("*/dialogue*/scenes/session*/questions.json"):
        split, dlg, _, sess = qf.parent.relative_to(root).parts
        for q in json.loads(qf.read_text(encoding="utf-8"))["questions"]:
            value = q["question"].get("image") or ""
            for v in value if isinstance(value, list) else value.split(","):
                v = v.strip()
                if v:
                    out.add(f"{split}/{dlg}/{v}" if "/" in v else f"{split}/{dlg}/{sess}/{v}")
    return out


def test_sample_reports_every_image_missing_and_exits_0(sample_root, tmp_path):
    expected = _named_images(sample_root)
    caps = tmp_path / "caps"
    r = CliRunner().invoke(app, ["caption", str(sample_root), "--model", "ocr", "--captions-dir", str(caps), "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["images"] == len(expected) == 204
    assert (out["missing"], out["captioned"], out["failed"], out["cached"]) == (204, 0, 0, 0)
    assert set(out["missing_images"]) == expected
    report = json.loads((caps / "caption_failures.json").read_text())
    assert len(report["missing"]) == 204 and report["failed"] == []
    # the table form says so in words, too
    r = CliRunner().invoke(app, ["caption", str(sample_root), "--model", "ocr", "--captions-dir", str(caps), "--quiet"])
    assert r.exit_code == 0 and "204 image file(s) named by the dataset are missing" in r.output
    assert not (sample_root / "caption_failures.json").exists()


def test_read_only_root_without_captions_dir_is_a_clear_error(sample_root):
    r = CliRunner().invoke(app, ["caption", str(sample_root), "--model", "ocr"])
    assert r.exit_code == 2
    assert "read-only" in r.output and "--captions-dir" in r.output and "Traceback" not in r.output
    assert not (sample_root / "caption_failures.json").exists()


def test_bad_arguments(tmp_path, text_dataset):
    root, _ = text_dataset
    r = CliRunner().invoke(app, ["caption", str(tmp_path / "nowhere"), "--model", "ocr"])
    assert r.exit_code == 2 and "does not exist" in r.output
    r = CliRunner().invoke(app, ["caption", str(root), "--model", "ocr", "--split", "triadic"])
    assert r.exit_code == 2 and "unknown split 'triadic'" in r.output
    r = CliRunner().invoke(app, ["caption", str(root), "--model", "nonsense"])
    assert r.exit_code == 2 and "invalid model spec 'nonsense'" in r.output


def test_writes_beside_images_by_default_and_exits_1_on_failures(text_dataset):
    root, _ = text_dataset
    (root / "dyadic/dialogue1/scenes/session1/image/2.jpg").write_bytes(b"")  # now zero-byte
    r = CliRunner().invoke(app, ["caption", str(root), "--model", "ocr", "--quiet"])
    assert r.exit_code == 1
    assert "failed dyadic/dialogue1/session1/2.jpg: zero-byte image file" in r.output
    assert (root / "dyadic/dialogue1/scenes/session1/caption/1.json").is_file()
    assert (root / "caption_failures.json").is_file()
