"""Image captions for the caption-based methods: a VLM through ``ChatModel`` (paper: GPT-4o) or an
offline OCR fallback, stored in the official per-session layout, cached and resumable."""

from ._image import SCREENSHOT_RATIO, ImageFacts, image_facts, open_image
from ._ocr import OCRCaptioner, OCRSetupError, clean_ocr_text
from ._protocol import Captioner, CaptionError, CaptionOutput
from ._run import (
    CAPTION_LOCK,
    FAILURES_FILE,
    CaptionConflictError,
    CaptionFailure,
    CaptionSummary,
    acaption_dataset,
    caption_dataset,
    dataset_images,
    make_captioner,
)
from ._settings import (
    CAPTION_PRESETS,
    DEFAULT_MODEL,
    DEFAULT_PROMPT,
    OCR_MODEL,
    OFFICIAL_TRUNCATION_MARKER,
    OPTION_NAMES,
    CaptionSettings,
    cache_key,
    cut_caption,
    official_prompt,
)
from ._store import CaptionRecord, CaptionStore, DialogueCaptions, ImageId, TokenStats
from ._vlm import VLMCaptioner, caption_request

__all__ = [
    "CAPTION_LOCK",
    "CAPTION_PRESETS",
    "OFFICIAL_TRUNCATION_MARKER",
    "OPTION_NAMES",
    "cut_caption",
    "official_prompt",
    "DEFAULT_MODEL",
    "DEFAULT_PROMPT",
    "FAILURES_FILE",
    "OCR_MODEL",
    "SCREENSHOT_RATIO",
    "CaptionConflictError",
    "CaptionError",
    "CaptionFailure",
    "CaptionOutput",
    "CaptionRecord",
    "CaptionSettings",
    "CaptionStore",
    "CaptionSummary",
    "Captioner",
    "DialogueCaptions",
    "ImageFacts",
    "ImageId",
    "OCRCaptioner",
    "OCRSetupError",
    "TokenStats",
    "VLMCaptioner",
    "acaption_dataset",
    "cache_key",
    "caption_request",
    "caption_dataset",
    "clean_ocr_text",
    "dataset_images",
    "image_facts",
    "make_captioner",
    "open_image",
]
