"""Fixtures: a small H2HMem-shaped dataset with rendered-text images, built in a temporary folder."""

from __future__ import annotations

from pathlib import Path

import pytest
from caption_helpers import WORDS, render_text_image, write_dialogue


@pytest.fixture
def text_dataset(tmp_path: Path) -> tuple[Path, dict[str, list[str]]]:
    """Dataset with 5 distinct rendered-text images in dyadic/dialogue1 (sessions 1–2) and
    multi-party/dialogue1 (session1); image ``session1/1.png`` of dyadic/dialogue1 is also named
    by a question (deduplicated). Returns ``(root, {image id: rendered lines})``."""
    root = tmp_path / "ds"
    truth: dict[str, list[str]] = {}
    layout = [
        ("dyadic", "dialogue1", "session1", "1.png"),
        ("dyadic", "dialogue1", "session1", "2.jpg"),
        ("dyadic", "dialogue1", "session2", "1.png"),
        ("multi-party", "dialogue1", "session1", "1.png"),
        ("multi-party", "dialogue1", "session1", "img3.jpg"),
    ]
    for (split, dlg, sess, file), lines in zip(layout, WORDS):
        render_text_image(root / split / dlg / "scenes" / sess / "image" / file, lines)
        truth[f"{split}/{dlg}/{sess}/{file}"] = lines
    write_dialogue(
        root,
        "dyadic",
        "dialogue1",
        {"session1": ["1.png", "2.jpg"], "session2": ["1.png"]},
        {"session1": ["1.png"], "session0": ["session2/1.png"]},
    )
    write_dialogue(root, "multi-party", "dialogue1", {"session1": ["1.png", "img3.jpg"]})
    return root, truth
