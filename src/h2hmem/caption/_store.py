"""Caption files on disk, in the official layout, read from the dataset root and an optional
separate captions folder.

Layout (``docs/dataset-format.md``; the official captioner and baselines use it)::

    <dir>/<split>/<dialogue>/scenes/<session>/caption/<stem>.json   (text in description.final_text)
    <dir>/<split>/<dialogue>/scenes/<session>/caption/<stem>.txt    (the same text, plain)

``<dir>`` is the dataset root (which may be read-only, like the real sample) or a captions
folder given with ``--captions-dir`` that mirrors the same relative layout. Official caption
files are read as they are: only ``description.final_text`` is required; they carry no
``cache_key`` (:attr:`CaptionRecord.external`), and a write over one keeps it as
``<name>.official.json``.

File names are keyed by stem (official), so ``1.png`` and ``1.jpg`` of one session would share
``1.json``. Each caption records its image's file name (``image_info.filename``, as the official
captioner's files do too); when the stem file already holds another image's caption, the second one
is written as ``<file>.json`` (``1.jpg.json``, which the official baselines do not read), and lookups
check ``<file>.json`` first and accept ``<stem>.json`` only when it names no file or this file.
"""

from __future__ import annotations

import json
import logging
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from .._atomic import atomic_write_text
from ..data import ImageRef, IssueLog, find_root

log = logging.getLogger(__name__)


@dataclass(frozen=True, order=True)
class ImageId:
    """Identity of one image in a dataset: ``(split, dialogue, session, file)``.

    File names repeat in every session and dialogue (docs/official-pitfalls.md #4), so all four are needed.
    """

    split: str
    """``"dyadic"`` or ``"multi-party"``."""
    dialogue: str
    """``"dialogueN"``."""
    session: str
    """``"sessionK"``: the session whose ``image/`` folder holds the file."""
    file: str
    """File name, e.g. ``"1.png"``."""

    @property
    def rel_dir(self) -> Path:
        """``<split>/<dialogue>/scenes/<session>`` relative to a dataset root."""
        return Path(self.split, self.dialogue, "scenes", self.session)

    @property
    def rel_image(self) -> Path:
        """Image path relative to the dataset root."""
        return self.rel_dir / "image" / self.file

    def __str__(self) -> str:
        return f"{self.split}/{self.dialogue}/{self.session}/{self.file}"


class TokenStats(BaseModel):
    """Caption length in ``cl100k_base`` tokens (official field names)."""

    original_tokens: int
    final_tokens: int
    was_truncated: bool
    limit: int


class CaptionRecord(BaseModel):
    """Everything we store for one caption; ``description.final_text`` is the caption.

    Field names follow the official captioner's JSON so its readers keep working.
    """

    model_config = ConfigDict(extra="allow")

    success: bool = True
    timestamp: str | None = None
    """ISO-8601 UTC time the caption was made."""
    image_info: dict[str, Any] = {}
    """``path`` (relative to the dataset root), ``filename``, ``size`` (bytes), ``sha256``, and for OCR
    the Pillow facts."""
    model_info: dict[str, Any] = {}
    """``model`` (spec), ``caption_max_tokens``, ``temperature``, ``max_new_tokens``, ``prompt_sha256``."""
    description: dict[str, Any]
    """``full_text`` (as generated), ``final_text`` (cut to the limit), ``token_stats`` (:class:`TokenStats`)."""
    usage: dict[str, Any] = {}
    """Prompt/completion tokens, cost in USD, whether the request cache answered."""
    cache_key: str | None = None
    """SHA-256 over image content, model, prompt, limits: equal keys mean the caption can be reused.
    None for official caption files."""

    @property
    def final_text(self) -> str:
        return str(self.description.get("final_text", ""))

    @property
    def was_truncated(self) -> bool:
        return bool(self.description.get("token_stats", {}).get("was_truncated", False))

    @property
    def external(self) -> bool:
        """Not written by h2hmem (no ``cache_key``): the official captioner's file, or another tool's."""
        return self.cache_key is None

    @property
    def source(self) -> str:
        """Who wrote the caption. h2hmem's files: ``model_info.model`` (the captioning model's spec,
        e.g. ``openai:gpt-4o`` or ``ocr``). A file h2hmem did not write (:attr:`external`):
        ``official:<model_info.model>`` (the official captioner writes ``gpt-4o``), or ``official``
        when it names no model."""
        model = self.model_info.get("model")
        named = model if isinstance(model, str) and model else None
        if self.external:
            return f"official:{named}" if named else "official"
        return named or "unknown"


class CaptionStore:
    """Reads and writes caption files for one dataset.

    Args:
        root: dataset root (or its parent holding ``dataset/``); captions beside the images.
        captions_dir: optional separate folder with the same relative layout; required when the
            dataset root is read-only. New captions go here when given, else into the dataset root.

    Lookups search the dataset root first, then ``captions_dir``. Unreadable or malformed caption
    files are skipped and reported in :attr:`issues` (code ``bad-caption-file``, naming file and
    field), never raised: a broken cache entry must not stop a run.

    Raises:
        FileNotFoundError: ``root`` holds no ``dyadic/`` or ``multi-party/`` folder.
    """

    def __init__(self, root: str | Path, captions_dir: str | Path | None = None):
        self.root = find_root(root)
        self.captions_dir = Path(captions_dir) if captions_dir is not None else None
        self.issues = IssueLog()
        self._put_lock = threading.Lock()
        """Serialises :meth:`put` (called from worker threads): choosing the file (``caption_path``)
        and writing it must not interleave for two images of one stem (``1.png``/``1.jpg``)."""

    @property
    def dirs(self) -> list[Path]:
        """Folders searched, in order: dataset root, then the captions folder."""
        return [self.root] + ([self.captions_dir] if self.captions_dir is not None else [])

    @property
    def write_dir(self) -> Path:
        """Where :meth:`put` writes: the captions folder when given, else the dataset root."""
        return self.captions_dir if self.captions_dir is not None else self.root

    def image_path(self, image: ImageId) -> Path:
        """Where the image file lives (it may not exist)."""
        return self.root / image.rel_image

    # -- reading -----------------------------------------------------------------------------

    def record(self, image: ImageId) -> CaptionRecord | None:
        """The first caption found for ``image`` (official files have ``cache_key`` None), or None."""
        for base in self.dirs:
            found = self._read_in(base, image)
            if found is not None:
                return found
        return None

    def records(self, image: ImageId) -> list[CaptionRecord]:
        """Every caption found for ``image`` (dataset root first)."""
        return [r for base in self.dirs if (r := self._read_in(base, image)) is not None]

    def get(self, image: ImageId) -> str | None:
        """Caption text (``description.final_text``) of ``image``, or None when there is none."""
        rec = self.record(image)
        return None if rec is None else rec.final_text

    def for_dialogue(self, split: str, dialogue: str) -> DialogueCaptions:
        """A ``CaptionLookup`` (``ImageRef -> str | None``) for one dialogue, as the runner passes
        to ``MemoryContext.captions``."""
        return DialogueCaptions(self, split, dialogue)

    def _read_in(self, base: Path, image: ImageId) -> CaptionRecord | None:
        cdir = base / image.rel_dir / "caption"
        exact = cdir / f"{image.file}.json"
        if exact.is_file():
            return self._load(exact, base, image)
        stem = cdir / f"{Path(image.file).stem}.json"
        if stem.is_file():
            return self._load(stem, base, image)
        return None

    def _bad_file(self, name: str, message: str, field: str | None = None) -> None:
        """Record a caption file that cannot be used (``self.issues``, once a file), and say it (a logged
        warning naming the file: its image then counts as uncaptioned, which would otherwise be silent)."""
        if any(i.file == name for i in self.issues.issues):
            return  # looked up again (every question showing the image): already said
        log.warning("caption file %s: %s; its image is used without a caption", name, message)
        self.issues.warning("bad-caption-file", name, message, field=field)

    def _load(self, path: Path, base: Path, image: ImageId) -> CaptionRecord | None:
        name = _rel(path, base)
        try:
            data = json.loads(path.read_text(encoding="utf-8-sig"))
        except OSError as e:
            self._bad_file(name, f"cannot read caption file: {e.strerror or e}")
            return None
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            self._bad_file(name, f"not valid UTF-8 JSON: {e}")
            return None
        if (
            not isinstance(data, dict)
            or not isinstance(data.get("description"), dict)
            or not isinstance(data["description"].get("final_text"), str)
        ):
            self._bad_file(name, "no string description.final_text", field="description.final_text")
            return None
        info = data.get("image_info")
        recorded = info.get("filename") if isinstance(info, dict) else None
        if recorded is not None and recorded != image.file:
            return None  # the stem file belongs to a same-stem image (1.png vs 1.jpg)
        try:
            return CaptionRecord.model_validate(data)
        except ValueError:
            # Odd extra fields (official files vary): keep the caption, drop the rest.
            return CaptionRecord(description=data["description"])

    # -- writing -----------------------------------------------------------------------------

    def caption_path(self, image: ImageId) -> Path:
        """The JSON file :meth:`put` writes for ``image`` (``<stem>.json``, or ``<file>.json`` when
        the stem file holds another image's caption)."""
        cdir = self.write_dir / image.rel_dir / "caption"
        exact = cdir / f"{image.file}.json"
        if exact.is_file():
            return exact
        stem = cdir / f"{Path(image.file).stem}.json"
        if stem.is_file():
            try:
                info = json.loads(stem.read_text(encoding="utf-8-sig")).get("image_info") or {}
                if info.get("filename") not in (None, image.file):
                    return exact
            except (OSError, ValueError, AttributeError):
                pass  # unreadable: overwrite it
        return stem

    def put(self, image: ImageId, record: CaptionRecord) -> Path:
        """Write ``record`` as ``.json`` plus the caption text as ``.txt``; returns the JSON path.

        Writes are atomic (temporary file + rename), so an interrupted run leaves no half file. A
        caption file h2hmem did not write (no ``cache_key``: the official captioner's) at that path
        is kept beside it as ``<name>.official.json`` (and ``.official.txt``) before it is replaced;
        an existing backup is never overwritten.

        Raises:
            OSError: the folder cannot be written (e.g. a read-only dataset root: pass ``captions_dir``).
        """
        with self._put_lock:
            return self._put(image, record)

    def _put(self, image: ImageId, record: CaptionRecord) -> Path:
        path = self.caption_path(image)
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_file():
            self._keep_external(path)
        atomic_write_text(path, record.model_dump_json(indent=2))
        atomic_write_text(path.with_suffix(".txt"), record.final_text)
        return path

    @staticmethod
    def _keep_external(path: Path) -> None:
        """Move a caption file h2hmem did not write (and its ``.txt``) aside as ``*.official.*``."""
        try:
            data = json.loads(path.read_text(encoding="utf-8-sig"))
        except (OSError, ValueError):
            return  # unreadable: nothing of value to keep (it is reported when read)
        if not isinstance(data, dict) or data.get("cache_key") is not None:
            return
        for src in (path, path.with_suffix(".txt")):
            backup = src.with_name(f"{src.stem}.official{src.suffix}")
            if src.is_file() and not backup.exists():
                src.rename(backup)


class DialogueCaptions:
    """Caption lookup for one dialogue: ``captions(ref) -> str | None`` (a ``CaptionLookup``).

    Results are memoised, so a memory system may call it for every turn cheaply.
    """

    def __init__(self, store: CaptionStore, split: str, dialogue: str):
        self.store, self.split, self.dialogue = store, split, dialogue
        self._memo: dict[tuple[str, str], CaptionRecord | None] = {}

    def record(self, ref: ImageRef) -> CaptionRecord | None:
        """The caption record of ``ref`` (:meth:`CaptionStore.record`), or None; memoised."""
        key = (ref.session, ref.file)
        if key not in self._memo:
            self._memo[key] = self.store.record(ImageId(self.split, self.dialogue, ref.session, ref.file))
        return self._memo[key]

    def __call__(self, ref: ImageRef) -> str | None:
        rec = self.record(ref)
        return None if rec is None else rec.final_text

    def __repr__(self) -> str:
        return f"DialogueCaptions({self.split}/{self.dialogue}, dirs={[str(d) for d in self.store.dirs]})"


def _rel(path: Path, base: Path) -> str:
    try:
        return path.relative_to(base).as_posix()
    except ValueError:
        return str(path)
