"""A copy of the real sample's ``dyadic/dialogue5`` with synthetic images (the sample ships no image
files): every image a turn or question names becomes a small PNG, so question-image parts exist."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from h2hmem.data import Dialogue, load_dataset


def with_images(sample_root: Path, dest: Path, dialogue: str = "dialogue5") -> Path:
    """Copy ``dyadic/<dialogue>`` under ``dest`` and draw one PNG per image name; returns the new root."""
    from PIL import Image

    src = sample_root / "dyadic" / dialogue
    root = dest / "sample"
    shutil.copytree(src, root / "dyadic" / dialogue)
    scenes = root / "dyadic" / dialogue / "scenes"
    names: set[tuple[str, str]] = set()
    for sdir in scenes.iterdir():
        if (sdir / "session.json").is_file():
            for turn in json.loads((sdir / "session.json").read_text(encoding="utf-8"))["dialogue"]:
                if turn["content"].get("image"):
                    names.add((sdir.name, turn["content"]["image"]))
        if (sdir / "questions.json").is_file():
            for q in json.loads((sdir / "questions.json").read_text(encoding="utf-8"))["questions"]:
                image = (q.get("question") or {}).get("image") or ""
                if "/" in image:
                    names.add(tuple(image.split("/", 1)))  # type: ignore[arg-type]
                elif image:
                    names.add((sdir.name, image))
    for i, (session, name) in enumerate(sorted(names)):
        path = scenes / session / "image" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.new("RGB", (8, 8), ((37 * i) % 256, 90, 160)).save(path)
    return root


def load_dialogue(root: Path, dialogue: str = "dialogue5") -> Dialogue:
    ds = load_dataset(root, "dyadic", strict=False)
    return next(d for d in ds.dialogues if d.name == dialogue)
