"""Offline captions: Pillow facts plus the text Tesseract reads in the image.

``"Image 1080×2340 PNG (portrait screenshot). Visible text: Meet at Blue Bottle at 10."``

Far weaker than a VLM (it says nothing about scenes, people or objects), but free, offline and
exact on screenshots, receipts and signs, which is where many H2HMem questions look.
"""

from __future__ import annotations

import asyncio
import os
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from PIL import Image

from .. import defaults
from ._image import image_facts, open_image
from ._protocol import CaptionError, CaptionOutput
from ._settings import OCR_MODEL, CaptionSettings

OCR_LANG = "eng"
"""Tesseract language pack (Debian ``tesseract-ocr-eng``)."""

_WORD = re.compile(r"[0-9A-Za-z]")


class OCRSetupError(RuntimeError):
    """Tesseract (or its English data) is not installed; the message says what to install."""


class OCRCaptioner:
    """Captions images with Pillow + Tesseract in a thread pool of ``concurrency`` workers.

    Raises:
        OCRSetupError: on construction, when the ``tesseract`` binary or its ``eng`` data is missing.
    """

    spec = OCR_MODEL
    uses_prompt = False

    def __init__(self, concurrency: int = defaults.CONCURRENCY):
        import pytesseract

        self._tess = pytesseract
        try:
            version = str(pytesseract.get_tesseract_version()).split()[0]
            langs = pytesseract.get_languages(config="")
        except (pytesseract.TesseractNotFoundError, OSError) as e:
            raise OCRSetupError(
                "the 'ocr' captioner needs Tesseract: install the Debian packages tesseract-ocr and tesseract-ocr-eng"
            ) from e
        if OCR_LANG not in langs:
            raise OCRSetupError(
                f"Tesseract has no '{OCR_LANG}' language data (found: {', '.join(langs) or 'none'}); "
                "install the Debian package tesseract-ocr-eng"
            )
        self.identity = f"ocr/tesseract-{version}/{OCR_LANG}"
        """What decides the OCR output: part of the cache key."""
        # Tesseract's OpenMP threads fight each other when several run at once on few cores.
        os.environ.setdefault("OMP_THREAD_LIMIT", "1")
        self._pool = ThreadPoolExecutor(max_workers=max(1, concurrency), thread_name_prefix="h2hmem-ocr")

    async def caption(self, path: Path, settings: CaptionSettings | None = None, name: str = "") -> CaptionOutput:
        """Caption of one image; usage is zero (no model call). ``settings`` is unused: OCR has
        no prompt or temperature (the token cut is applied by the caller).

        Raises:
            CaptionError: the image cannot be decoded (zero-byte, corrupt, unknown format) or
                Tesseract fails on it.
        """
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, self._caption_sync, path)

    def _caption_sync(self, path: Path) -> CaptionOutput:
        img = open_image(path)
        facts = image_facts(img)
        try:
            raw = self._tess.image_to_string(_for_ocr(img), lang=OCR_LANG)
        except (self._tess.TesseractError, RuntimeError, OSError) as e:
            raise CaptionError(f"Tesseract failed: {e}") from e
        text = clean_ocr_text(raw)
        caption = facts.describe() + (f". Visible text: {text}" if text else ". No legible text.")
        info = {
            "format": facts.format,
            "width": facts.width,
            "height": facts.height,
            "kind": facts.kind,
            "exif_date": facts.exif_date,
            "ocr_text": text,
        }
        return CaptionOutput(text=caption, image_info=info)

    async def aclose(self) -> None:
        await asyncio.to_thread(self._pool.shutdown, wait=True)


def _for_ocr(img: Image.Image) -> Image.Image:
    """Grey-scale on white: transparent pixels become white rather than black."""
    if img.mode in ("RGBA", "LA") or (img.mode == "P" and "transparency" in img.info):
        rgba = img.convert("RGBA")
        back = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        img = Image.alpha_composite(back, rgba)
    return img.convert("L")


def clean_ocr_text(raw: str) -> str:
    """Tesseract output as one line: lines without a letter or digit (noise) dropped,
    whitespace collapsed."""
    lines = [" ".join(line.split()) for line in raw.splitlines()]
    return " ".join(line for line in lines if _WORD.search(line))
