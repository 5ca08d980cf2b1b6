"""OCR captions over ``h2hmem data synth --scale small``, whose ``synth_meta.json`` records each
image's rendered text."""

from __future__ import annotations

import json
import re

from typer.testing import CliRunner

from h2hmem.caption import CaptionStore, ImageId
from h2hmem.cli import app


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def test_ocr_on_synthetic_small_dataset(tmp_path):
    root, caps = tmp_path / "ds", tmp_path / "caps"
    r = CliRunner().invoke(app, ["data", "synth", str(root), "--scale", "small", "--seed", "0"])
    assert r.exit_code == 0, r.output
    meta = json.loads((root / "synth_meta.json").read_text(encoding="utf-8"))["images"]
    r = CliRunner().invoke(
        app, ["caption", str(root), "--model", "ocr", "--captions-dir", str(caps), "--concurrency", "2", "--json"]
    )
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert (out["images"], out["captioned"], out["failed"], out["missing"]) == (len(meta), len(meta), 0, 0)
    store = CaptionStore(root, caps)
    found = total = 0
    for key, info in meta.items():
        have = _words(store.get(ImageId(*key.split("/"))) or "")
        want = _words(info["text"])
        found += sum(w in have for w in want)
        total += len(want)
    print(f"\nOCR word recall on synth --scale small ({len(meta)} images): {found}/{total} = {found / total:.1%}")
    assert found / total >= 0.90
