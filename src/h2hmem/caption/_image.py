"""Facts about one image file from Pillow (format, size, shape, EXIF date), with clear errors for
zero-byte, truncated or unrecognised files."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from PIL import Image, ImageOps, UnidentifiedImageError

from ._protocol import CaptionError

SCREENSHOT_RATIO = 1.7
"""Height/width at or above which an image is called a (phone) screenshot: phone screens run
from 16:9 (1.78) to 19.5:9 (2.17), while camera photos are 4:3 (1.33) or 3:2 (1.5)."""

_EXIF_IFD = 0x8769
_DATETIME_ORIGINAL = 36867
_DATETIME = 306


@dataclass(frozen=True)
class ImageFacts:
    """What Pillow can tell about an image without a model."""

    format: str
    """Pillow format name: ``"PNG"``, ``"JPEG"``…"""
    width: int
    """Pixels, after applying the EXIF orientation."""
    height: int
    exif_date: str | None = None
    """``YYYY-MM-DD HH:MM:SS`` from EXIF ``DateTimeOriginal`` (or ``DateTime``), when present."""

    @property
    def orientation(self) -> str:
        if self.width == self.height:
            return "square"
        return "portrait" if self.height > self.width else "landscape"

    @property
    def kind(self) -> str:
        """``"screenshot"`` for tall phone-shaped images (see :data:`SCREENSHOT_RATIO`), else ``"photo"``."""
        return "screenshot" if self.height >= SCREENSHOT_RATIO * self.width else "photo"

    def describe(self) -> str:
        """``"Image 1080×2340 PNG (portrait screenshot), taken 2024-02-20 10:11:12"``."""
        text = f"Image {self.width}×{self.height} {self.format} ({self.orientation} {self.kind})"
        return text + (f", taken {self.exif_date}" if self.exif_date else "")


def open_image(path: Path) -> Image.Image:
    """Open and fully decode ``path``, upright (EXIF orientation applied).

    Raises:
        CaptionError: zero-byte, unrecognised, truncated or otherwise undecodable file; the
            reason names the problem.
    """
    try:
        size = path.stat().st_size
    except OSError as e:
        raise CaptionError(f"cannot read image file: {e.strerror or e}") from e
    if size == 0:
        raise CaptionError("zero-byte image file")
    try:
        img = Image.open(path)
    except UnidentifiedImageError as e:
        raise CaptionError(f"not a recognised image format ({size} bytes; Pillow cannot identify it)") from e
    except Image.DecompressionBombError as e:
        raise CaptionError(f"image too large to decode safely: {e}") from e
    except (OSError, SyntaxError, ValueError) as e:
        raise CaptionError(f"corrupt image header: {e}") from e
    try:
        img.load()
    except Image.DecompressionBombError as e:
        img.close()
        raise CaptionError(f"image too large to decode safely: {e}") from e
    except (OSError, SyntaxError, ValueError) as e:
        img.close()
        raise CaptionError(f"corrupt or truncated image data: {e}") from e
    try:
        upright = ImageOps.exif_transpose(img)
    except (OSError, ValueError, SyntaxError):
        upright = None  # broken EXIF block: the pixels are still fine
    if upright is not None:
        upright.format = img.format
        return upright
    return img


def image_facts(img: Image.Image) -> ImageFacts:
    """Format, upright size and EXIF date of an image opened with :func:`open_image`."""
    return ImageFacts(format=img.format or "unknown", width=img.width, height=img.height, exif_date=_exif_date(img))


def _exif_date(img: Image.Image) -> str | None:
    try:
        exif = img.getexif()
        raw = exif.get_ifd(_EXIF_IFD).get(_DATETIME_ORIGINAL) or exif.get(_DATETIME)
    except (OSError, ValueError, SyntaxError, KeyError, TypeError):
        return None
    if isinstance(raw, bytes):
        raw = raw.decode("ascii", errors="ignore")
    if not isinstance(raw, str) or len(raw) < 10:
        return None
    raw = raw.strip().rstrip("\x00")
    date, _, time = raw.partition(" ")
    date = date.replace(":", "-")
    if len(date) != 10 or not date[:4].isdigit() or date.startswith("0000"):
        return None
    return f"{date} {time}".strip()
