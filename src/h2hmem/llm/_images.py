"""Image parts: text substitution for text-only backends, content hashes for cache keys, and
JPEG data URLs for OpenAI-compatible servers."""

from __future__ import annotations

import base64
import functools
import hashlib
import io
import os
from pathlib import Path
from typing import Any

from PIL import Image, UnidentifiedImageError

from ._errors import ImageFileError
from ._types import ContentPart, ImagePart, Message, TextPart

MAX_SIDE_PX = 1024
"""Longest image side sent to a VLM (official H2HMem code resized to 1024 px)."""
JPEG_QUALITY = 85
"""JPEG quality of sent images (official H2HMem code)."""


def image_text(part: ImagePart) -> str:
    """``[Image <name>: <caption>]``, or ``[Image <name>]`` without a caption."""
    return f"[Image {part.name}: {part.caption}]" if part.caption else f"[Image {part.name}]"


def image_available(part: ImagePart) -> bool:
    return part.path is not None and Path(part.path).is_file()


def prepare_messages(messages: list[Message], *, send_images: bool) -> tuple[list[Message], int]:
    """Messages as a backend gets them, and how many image parts were replaced by text.

    An image part becomes :func:`image_text` when ``send_images`` is false (text-only model) or
    its file is missing; other parts are unchanged.
    """
    out: list[Message] = []
    substituted = 0
    for msg in messages:
        if isinstance(msg.content, str):
            out.append(msg)
            continue
        parts: list[ContentPart] = []
        for part in msg.content:
            if isinstance(part, ImagePart) and not (send_images and image_available(part)):
                parts.append(TextPart(text=image_text(part)))
                substituted += 1
            else:
                parts.append(part)
        out.append(msg if parts == list(msg.content) else msg.model_copy(update={"content": parts}))
    return out, substituted


def flatten_text(content: str | list[ContentPart]) -> str | None:
    """The content as one string (text parts joined by newlines) if it holds no image part, else None."""
    if isinstance(content, str):
        return content
    if any(isinstance(p, ImagePart) for p in content):
        return None
    return "\n".join(p.text for p in content if isinstance(p, TextPart))  # all are: no image part


def _stat_key(path: Path) -> tuple[str, int, int]:
    """``(absolute path, mtime ns, size)``: one ``stat`` per call (``resolve()`` would ``lstat`` every
    component of the path, and this runs several times per image on every model call)."""
    st = os.stat(path)
    return (os.path.abspath(path), st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=4096)
def _sha256(key: tuple[str, int, int]) -> str:
    return hashlib.sha256(Path(key[0]).read_bytes()).hexdigest()


def file_sha256(path: Path) -> str:
    """SHA-256 (hex) of a file's bytes, memoised on (path, mtime, size)."""
    return _sha256(_stat_key(Path(path)))


@functools.lru_cache(maxsize=256)
def _data_url(key: tuple[str, int, int], max_side: int, quality: int) -> str:
    path = key[0]
    try:
        with Image.open(path) as src:
            src.load()
            img: Image.Image = src
            if img.mode in ("RGBA", "LA", "P"):
                img = img.convert("RGBA")
                background = Image.new("RGB", img.size, (255, 255, 255))
                background.paste(img, mask=img.getchannel("A"))
                img = background
            elif img.mode != "RGB":
                img = img.convert("RGB")
            if max(img.size) > max_side:
                img.thumbnail((max_side, max_side), Image.Resampling.LANCZOS)
            buf = io.BytesIO()
            img.save(buf, format="JPEG", quality=quality)
    except (UnidentifiedImageError, OSError) as exc:
        raise ImageFileError(f"cannot read image file {path}: {exc}") from exc
    return "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def image_data_url(path: Path, *, max_side: int = MAX_SIDE_PX, quality: int = JPEG_QUALITY) -> str:
    """``data:image/jpeg;base64,…`` of the image, long side scaled down to ``max_side`` pixels
    (aspect kept; smaller images unchanged), transparency flattened on white, JPEG ``quality``.

    Raises :class:`ImageFileError` naming the file if it cannot be decoded.
    """
    return _data_url(_stat_key(Path(path)), max_side, quality)


RAW_MIME_BY_EXTENSION = {"jpg": "jpeg", "jpeg": "jpeg", "png": "png", "gif": "gif", "webp": "webp", "bmp": "bmp"}
"""MIME subtypes of the official captioner's raw data URLs (varib1/H2HMEM ``caption/gpt_4o_caption.py``
@ b6070899); any other extension is sent as ``jpeg``, as there."""


def raw_data_url(path: Path) -> str:
    """``data:image/<subtype>;base64,<the file's bytes>``, the subtype from the extension
    (:data:`RAW_MIME_BY_EXTENSION`, default ``jpeg``); the bytes are not decoded or changed.

    Raises :class:`ImageFileError` naming the file if it cannot be read.
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ImageFileError(f"cannot read image file {path}: {exc.strerror or exc}") from exc
    subtype = RAW_MIME_BY_EXTENSION.get(path.suffix.lower().lstrip("."), "jpeg")
    return f"data:image/{subtype};base64," + base64.b64encode(data).decode("ascii")


def part_data_url(part: ImagePart) -> str:
    """The data URL of an image part, in its ``encoding`` (``raw`` or ``jpeg1024``)."""
    if part.encoding == "raw":
        return raw_data_url(part.path)  # type: ignore[arg-type]
    return image_data_url(part.path)  # type: ignore[arg-type]


def messages_fingerprint(messages: list[Message]) -> list[dict[str, Any]]:
    """JSON-able form of prepared messages for cache keys: images by content hash, not path."""
    out: list[dict[str, Any]] = []
    for msg in messages:
        # only where it changes the wire (text-only content), so earlier keys stay valid
        wire_form = {"as_parts": True} if msg.as_parts and flatten_text(msg.content) is not None else {}
        if isinstance(msg.content, str):
            out.append({"role": msg.role, "content": msg.content, **wire_form})
            continue
        parts: list[dict[str, str]] = []
        for p in msg.content:
            if isinstance(p, ImagePart):
                fp: dict[str, str] = {"type": "image", "sha256": file_sha256(p.path)}  # type: ignore[arg-type]
                # non-default wire forms only, so keys of earlier requests stay valid
                fp.update(
                    {
                        k: v
                        for k, v in (("encoding", p.encoding), ("detail", p.detail))
                        if v != ImagePart.model_fields[k].default and v is not None
                    }
                )
                parts.append(fp)
            else:
                parts.append({"type": "text", "text": p.text})
        out.append({"role": msg.role, "content": parts, **wire_form})
    return out
