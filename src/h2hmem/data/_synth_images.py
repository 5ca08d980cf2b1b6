"""Render the synthetic images: small receipt / ticket / menu / screenshot cards with legible text.

Each image is a :class:`Card` (a title and a few text lines) drawn dark-on-light with a
FreeType font large enough for tesseract to read, so OCR and captioning code can be tested
against the exact rendered words (kept in ``synth_meta.json``, see :mod:`._synth`). Output bytes
depend only on the card, the Pillow version and its FreeType build: no timestamps or metadata.
"""

from __future__ import annotations

import hashlib
import io
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw, ImageFont

IMAGE_SIZE = (400, 240)
"""Width × height in pixels: small enough that 1,300 images render in seconds."""
TITLE_SIZE = 24
LINE_SIZE = 20
"""Font sizes in pixels; at 20 px tesseract reads the default font almost without errors."""
JPEG_QUALITY = 90

_DEJAVU = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")

# Light background and a darker header colour per card kind: dark text on light paper.
_STYLE = {
    "receipt": ((252, 252, 248), (60, 60, 60)),
    "ticket": ((255, 247, 220), (150, 60, 20)),
    "menu": ((250, 240, 225), (120, 40, 30)),
    "screenshot": ((235, 244, 255), (30, 80, 160)),
    "parcel": ((240, 250, 240), (20, 110, 60)),
    "vet": ((248, 240, 252), (100, 50, 130)),
    "poster": ((255, 250, 235), (170, 90, 0)),
}


@dataclass
class Card:
    """What one synthetic image shows.

    ``title`` is drawn in the card's dark accent colour on a light header band, ``lines`` in near-black below it.
    ``file``/``session`` are filled in when the image is placed in a session.
    """

    kind: str
    title: str
    lines: list[str]
    ext: str = "png"
    file: str = ""
    session: str = ""
    caption: str = ""
    """One sentence saying what the picture is (for humans; never rendered)."""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def text(self) -> str:
        """All rendered text, title first, one line per row (what a perfect OCR would return)."""
        return "\n".join([self.title, *self.lines])


@lru_cache(maxsize=8)
def _font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    try:
        return ImageFont.load_default(size=size)  # Pillow >= 10.1: bundled FreeType font
    except TypeError:  # pragma: no cover - Pillow < 10.1
        if _DEJAVU.is_file():
            return ImageFont.truetype(str(_DEJAVU), size)
        raise RuntimeError("synthetic images need Pillow >= 10.1 or DejaVu fonts for legible text") from None


def _fit(draw: ImageDraw.ImageDraw, text: str, size: int, width: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    """The largest font ≤ ``size`` (down to 14 px) in which ``text`` fits ``width`` pixels."""
    for s in range(size, 13, -1):
        f = _font(s)
        if draw.textlength(text, font=f) <= width:
            return f
    raise ValueError(f"card text too long for a {IMAGE_SIZE[0]}-pixel image: {text!r}")


def _icon(d: ImageDraw.ImageDraw, card: Card, accent: tuple[int, int, int], box: tuple[int, int, int, int]) -> None:
    """A small kind-specific drawing, so pictures differ visually and not only in their text."""
    x0, y0, x1, y1 = box
    seed = int(hashlib.sha256(card.text.encode("utf-8")).hexdigest()[:8], 16)
    light = tuple(int(c + (255 - c) * 0.55) for c in accent)
    if card.kind in ("screenshot", "receipt"):  # a bar chart whose bars follow the card's text
        n, bw = 5, (x1 - x0) // 5
        for i in range(n):
            top = y0 + ((seed >> (3 * i)) % 7) * (y1 - y0) // 8
            d.rectangle((x0 + i * bw + 2, top, x0 + (i + 1) * bw - 2, y1), fill=light if i % 2 else accent)
    elif card.kind in ("menu", "vet"):  # a plate / a paw: concentric circles
        cx, cy, r = (x0 + x1) // 2, (y0 + y1) // 2, (y1 - y0) // 2
        d.ellipse((cx - r, cy - r, cx + r, cy + r), fill=light, outline=accent, width=2)
        d.ellipse((cx - r // 2, cy - r // 2, cx + r // 2, cy + r // 2), fill=accent)
    else:  # ticket stub, parcel box, poster: a framed block with a diagonal
        d.rectangle(box, fill=light, outline=accent, width=2)
        d.line((x0, y1, x1, y0) if seed % 2 else (x0, y0, x1, y1), fill=accent, width=3)


def render_card(card: Card) -> bytes:
    """PNG or JPEG bytes (by ``card.ext``) of ``card``; deterministic.

    Raises:
        ValueError: a line is too long to fit, or more lines than the image holds.
    """
    w, h = IMAGE_SIZE
    bg, accent = _STYLE.get(card.kind, _STYLE["receipt"])
    img = Image.new("RGB", IMAGE_SIZE, bg)
    d = ImageDraw.Draw(img)
    header = 44
    band = tuple(int(c + (255 - c) * 0.8) for c in accent)  # a light tint: dark text on light paper reads best
    d.rectangle((0, 0, w, header), fill=band)
    d.text((14, 9), card.title, fill=accent, font=_fit(d, card.title, TITLE_SIZE, w - 28))
    step = 30
    if header + 12 + step * len(card.lines) > h:
        raise ValueError(f"card has {len(card.lines)} lines; at most {(h - header - 12) // step} fit")
    y = header + 12
    for line in card.lines:
        d.text((16, y), line, fill=(20, 20, 20), font=_fit(d, line, LINE_SIZE, w - 32))
        y += step
    if len(card.lines) <= 4:  # the icon sits below the fourth line, clear of the text
        _icon(d, card, accent, (w - 84, h - 58, w - 14, h - 12))
    d.rectangle((0, 0, w - 1, h - 1), outline=accent, width=2)
    buf = io.BytesIO()
    if card.ext == "png":
        img.save(buf, format="PNG", compress_level=6)
    elif card.ext == "jpg":
        img.save(buf, format="JPEG", quality=JPEG_QUALITY, optimize=False, progressive=False)
    else:
        raise ValueError(f"unknown image extension {card.ext!r}; expected png or jpg")
    return buf.getvalue()
