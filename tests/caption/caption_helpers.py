"""Helpers for caption tests: rendered-text images and small H2HMem-shaped datasets."""

from __future__ import annotations

import json
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

FONT_CANDIDATES = (
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
)


def font(size: int = 40) -> ImageFont.ImageFont:
    for f in FONT_CANDIDATES:
        if Path(f).is_file():
            return ImageFont.truetype(f, size)
    return ImageFont.load_default(size=size)


def render_text_image(
    path: Path,
    lines: list[str],
    size: tuple[int, int] = (900, 400),
    fmt: str | None = None,
    exif_date: str | None = None,
) -> Path:
    """Dark text on a light background, one line per entry, legible at 40 px."""
    img = Image.new("RGB", size, (245, 245, 240))
    draw = ImageDraw.Draw(img)
    f = font()
    y = 30
    for line in lines:
        draw.text((30, y), line, fill=(20, 20, 20), font=f)
        y += 60
    path.parent.mkdir(parents=True, exist_ok=True)
    kwargs = {}
    if exif_date:
        exif = Image.Exif()
        exif[306] = exif_date
        kwargs["exif"] = exif
    img.save(path, format=fmt, **kwargs)
    return path


def write_dialogue(
    root: Path,
    split: str,
    dialogue: str,
    sessions: dict[str, list[str]],
    question_images: dict[str, list[str]] | None = None,
) -> None:
    """A dialogue whose session ``K`` has one turn per image name in ``sessions[K]`` and one question
    per entry of ``question_images[K]`` (an image name, possibly ``sessionJ/<file>``)."""
    scenes = root / split / dialogue / "scenes"
    question_images = question_images or {}
    for i, (sname, images) in enumerate(sorted(sessions.items())):
        sdir = scenes / sname
        sdir.mkdir(parents=True, exist_ok=True)
        turns = [
            {"role": "Ann" if j % 2 == 0 else "Bo", "content": {"text": f"look {j}", "image": img}}
            for j, img in enumerate(images)
        ] or [{"role": "Ann", "content": {"text": "hi", "image": ""}}]
        (sdir / "session.json").write_text(json.dumps({"timeline_date": f"2024-01-{i + 1:02d}", "dialogue": turns}))
    for sname, imgs in {**{s: [] for s in sessions}, **question_images}.items():
        qs = [
            {
                "question": {"text": f"What is in image {k}?", "image": img},
                "original_answer": "x",
                "answer_session": [sname],
                "question_type": {"sub_type": "Retrieval"},
            }
            for k, img in enumerate(imgs)
        ]
        (scenes / sname).mkdir(parents=True, exist_ok=True)
        (scenes / sname / "questions.json").write_text(json.dumps({"questions": qs}))


WORDS = [
    ["Meet Anna at the Blue", "Bottle cafe on Friday"],
    ["Parking ticket number", "forty two paid in cash"],
    ["Train to Boston leaves", "platform seven at noon"],
    ["Birthday dinner for", "Grandma Rosa on Sunday"],
    ["Library books due back", "Tuesday morning please"],
]
"""Rendered text of the five synthetic images (two lines each)."""
