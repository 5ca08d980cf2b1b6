"""Image+text encoders for the native retrieval baselines (MuRAG, NGM).

One interface, :class:`ImageTextEncoder`: ``encode([(text, image_path | None), …])`` → one fused,
L2-normalised vector per item. Backends (docs/baselines.md, "MuRAG"):

- ``gme:<path-or-id>`` — ``Alibaba-NLP/gme-Qwen2-VL-7B-Instruct`` (the paper's encoder), through
  ``transformers.AutoModel`` with the model's own remote code (``get_fused_embeddings`` /
  ``get_text_embeddings``), on the GPU when there is one. Weights are never downloaded by tests;
  this backend is untested here (no weights on the build machines).
- ``clip:<path-or-id>`` — a CLIP model (the paper's alternative: ViT-B/32): mean of the
  normalised text and image embeddings, renormalised; a text-only item uses its text embedding.
- ``text`` — offline fallback: the text embedder (all-MiniLM-L6-v2) over the item's text. The
  caller puts the image's caption into the text (``uses_images`` is False). A deviation from the
  paper, recorded in each method's ``describe()``.

``load_image_text_encoder(None, …)`` picks GME when its weights are in the local Hugging Face
cache and the text fallback otherwise.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..llm import ImageFileError
from ._protocol import l2_normalise

GME_MODEL_ID = "Alibaba-NLP/gme-Qwen2-VL-7B-Instruct"
"""The paper's MuRAG/NGM encoder."""
CLIP_MODEL_ID = "openai/clip-vit-base-patch32"
"""The paper's alternative encoder (CLIP ViT-B/32); weights must be supplied by the user."""

Item = tuple[str, "Path | None"]


@runtime_checkable
class ImageTextEncoder(Protocol):
    """Fused text+image embeddings.

    ``encode(items)`` takes ``[(text, image_path_or_None), …]`` and returns a float32 array of
    shape ``(len(items), dim)`` whose rows have unit L2 norm. ``uses_images`` is False for
    encoders that ignore the image (the caller should then put the caption into the text).
    """

    name: str
    dim: int
    uses_images: bool

    async def encode(self, items: list[tuple[str, Path | None]]) -> np.ndarray: ...


def load_rgb(path: Path) -> Any:
    """The image at ``path`` as an RGB ``PIL.Image``.

    Raises:
        ImageFileError: missing, empty or undecodable file (the message names it).
    """
    from PIL import Image

    try:
        with Image.open(path) as im:
            return im.convert("RGB")
    except (OSError, ValueError) as e:
        raise ImageFileError(f"cannot read image {path}: {e}") from e


def _device(device: str | None) -> str:
    if device:
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


class CLIPImageTextEncoder:
    """CLIP (``CLIPModel`` + ``CLIPProcessor``) from a local folder or hub id.

    Fusion (paper's CLIP alternative): ``normalise(normalise(text) + normalise(image))`` — the
    mean of the two unit vectors, renormalised; items without an image get the text embedding.
    Texts longer than the model's position limit (77 tokens for ViT-B/32) are truncated.

    Raises:
        OSError: the model or processor cannot be loaded from ``source`` (no download is tried
            when ``local_files_only``).
    """

    uses_images = True

    def __init__(
        self, source: str | Path, *, device: str | None = None, batch_size: int = 32, local_files_only: bool = True
    ):
        import torch
        from transformers import CLIPModel, CLIPProcessor

        self.source = str(source)
        self.name = f"clip:{self.source}"
        self.device = _device(device)
        self.batch_size = batch_size
        # transformers wraps `PreTrainedModel.to` in functools.wraps, whose typeshed type (`_Wrapped`) does not bind
        # `self` on attribute access, so mypy takes the device for the model argument
        model = CLIPModel.from_pretrained(self.source, local_files_only=local_files_only)
        self.model = model.to(self.device).eval()  # type: ignore[arg-type]
        self.processor = CLIPProcessor.from_pretrained(self.source, local_files_only=local_files_only)
        self.dim = int(self.model.config.projection_dim)
        self._max_len = int(self.model.config.text_config.max_position_embeddings)
        self._torch = torch
        self._lock = threading.Lock()

    @staticmethod
    def _features(out: Any) -> Any:
        # transformers < 5 returns the projected tensor; 5.x returns an output whose pooler_output it is
        return out if hasattr(out, "shape") else out.pooler_output

    def _encode_sync(self, items: list[tuple[str, Path | None]]) -> np.ndarray:
        torch = self._torch
        out = np.zeros((len(items), self.dim), dtype=np.float32)
        with self._lock, torch.inference_mode():
            for lo in range(0, len(items), self.batch_size):
                batch = items[lo : lo + self.batch_size]
                tok = self.processor.tokenizer(
                    [t for t, _ in batch], padding=True, truncation=True, max_length=self._max_len, return_tensors="pt"
                ).to(self.device)
                text = l2_normalise(self._features(self.model.get_text_features(**tok)).float().cpu().numpy())
                with_image = [i for i, (_, p) in enumerate(batch) if p is not None]
                if with_image:
                    images = [load_rgb(Path(batch[i][1])) for i in with_image]  # type: ignore[arg-type]
                    pix = self.processor.image_processor(images=images, return_tensors="pt")["pixel_values"]
                    img = self._features(self.model.get_image_features(pixel_values=pix.to(self.device)))
                    img = l2_normalise(img.float().cpu().numpy())
                    for k, i in enumerate(with_image):
                        text[i] = (text[i] + img[k]) / 2.0
                out[lo : lo + len(batch)] = l2_normalise(text)
        return out

    async def encode(self, items: list[tuple[str, Path | None]]) -> np.ndarray:
        """Shape ``(len(items), dim)``, unit rows. Raises :class:`ImageFileError` for an unreadable image."""
        if not items:
            return np.zeros((0, self.dim), np.float32)
        return await asyncio.to_thread(self._encode_sync, items)


class GMEImageTextEncoder:
    """GME-Qwen2-VL (``Alibaba-NLP/gme-Qwen2-VL-7B-Instruct``), the paper's encoder.

    Loaded with ``AutoModel.from_pretrained(source, trust_remote_code=True)`` (float16 on the
    GPU, float32 on CPU); items with an image go through the model's ``get_fused_embeddings``,
    text-only items through ``get_text_embeddings``; both return L2-normalised rows (3,584-d for
    the 7B model). Not exercised by the test suite: it needs the model's ~16 GB of weights.

    Raises:
        OSError: weights or remote code not found at ``source``.
    """

    uses_images = True

    def __init__(
        self,
        source: str | Path = GME_MODEL_ID,
        *,
        device: str | None = None,
        batch_size: int = 8,
        local_files_only: bool = True,
    ):
        import torch
        from transformers import AutoModel

        self.source = str(source)
        self.name = f"gme:{self.source}"
        self.device = _device(device)
        self.batch_size = batch_size
        import transformers

        dtype = torch.float16 if self.device.startswith("cuda") else torch.float32
        # transformers >= 4.56 names the argument ``dtype`` (``torch_dtype`` before)
        major, minor = (int(x) for x in transformers.__version__.split(".")[:2])
        # typed as Any: transformers' own stubs type each keyword differently across releases (5.25 lists them)
        dtype_kw: dict[str, Any] = {"dtype": dtype} if (major, minor) >= (4, 56) else {"torch_dtype": dtype}
        self.model = AutoModel.from_pretrained(
            self.source, trust_remote_code=True, device_map=self.device, local_files_only=local_files_only, **dtype_kw
        ).eval()
        self.dim = int(getattr(self.model.config, "hidden_size", 0))
        self._torch = torch
        self._lock = threading.Lock()

    def _encode_sync(self, items: list[tuple[str, Path | None]]) -> np.ndarray:
        rows: list[np.ndarray | None] = [None] * len(items)
        with self._lock, self._torch.inference_mode():
            for lo in range(0, len(items), self.batch_size):
                batch = list(enumerate(items[lo : lo + self.batch_size], start=lo))
                fused = [(i, t, p) for i, (t, p) in batch if p is not None]
                plain = [(i, t) for i, (t, p) in batch if p is None]
                if fused:
                    emb = self.model.get_fused_embeddings(
                        texts=[t for _, t, _ in fused], images=[load_rgb(Path(p)) for _, _, p in fused]
                    )
                    for (i, _, _), row in zip(fused, emb.float().cpu().numpy()):
                        rows[i] = row
                if plain:
                    emb = self.model.get_text_embeddings(texts=[t for _, t in plain])
                    for (i, _), row in zip(plain, emb.float().cpu().numpy()):
                        rows[i] = row
        out = l2_normalise(np.stack(rows))  # type: ignore[arg-type]
        self.dim = out.shape[1]
        return out

    async def encode(self, items: list[tuple[str, Path | None]]) -> np.ndarray:
        """Shape ``(len(items), dim)``, unit rows."""
        if not items:
            return np.zeros((0, self.dim), np.float32)
        return await asyncio.to_thread(self._encode_sync, items)


class TextFallbackEncoder:
    """Offline fallback: the text embedder over each item's text; images are ignored.

    ``uses_images`` is False, so callers put the image's caption (or file name) into the text.
    Used when no image encoder is available — a deviation from the paper, recorded by callers.
    """

    uses_images = False

    def __init__(self, embedder: Any):
        self.embedder = embedder
        self.name = f"text:{getattr(embedder, 'name', type(embedder).__name__)}"
        self.dim = int(getattr(embedder, "dim", 0) or 0)

    async def encode(self, items: list[tuple[str, Path | None]]) -> np.ndarray:
        """Shape ``(len(items), dim)``, unit rows (the embedder's vectors, renormalised)."""
        if not items:
            return np.zeros((0, self.dim), np.float32)
        out = l2_normalise(await self.embedder.embed([t for t, _ in items]))
        self.dim = out.shape[1]
        return out


_cache: dict[tuple[str, str, str | None], ImageTextEncoder] = {}
_cache_lock = threading.Lock()


def gme_in_local_cache(model_id: str = GME_MODEL_ID) -> bool:
    """Whether the GME weights are already in the local Hugging Face cache (no network)."""
    try:
        from huggingface_hub import snapshot_download

        snapshot_download(repo_id=model_id, local_files_only=True)
        return True
    except Exception:  # any failure means "not available offline"
        return False


def load_image_text_encoder(
    spec: str | None, *, text_embedder_factory: Callable[[], Any] | None = None, device: str | None = None
) -> ImageTextEncoder:
    """Build (once per process for ``gme``/``clip``) the encoder named by ``spec``.

    Args:
        spec: ``"gme:<path-or-id>"``, ``"clip:<path-or-id>"``, ``"text"`` (fallback), or ``None``:
            GME (``gme:`` + :data:`GME_MODEL_ID`) when its weights are in the local Hugging Face
            cache, else the text fallback.
        text_embedder_factory: builds the text embedder for the fallback (the run's shared
            MiniLM); when ``None``, ``load_embedder("minilm")`` is used.
        device: ``"cuda"``, ``"cpu"``…; default: the GPU when torch sees one.

    Raises:
        ValueError: a spec of another form.
        OSError: the named model cannot be loaded (we never fall back silently from an explicit spec).
    """
    if spec is None:
        spec = f"gme:{GME_MODEL_ID}" if gme_in_local_cache() else "text"
    kind, _, source = spec.partition(":")
    if kind == "text" and not source:
        if text_embedder_factory is None:
            from . import load_embedder  # the package's text embedders

            return TextFallbackEncoder(load_embedder("minilm"))
        return TextFallbackEncoder(text_embedder_factory())
    if kind not in ("gme", "clip") or not source:
        raise ValueError(f"unknown image-text encoder {spec!r}: use 'gme:<path-or-id>', 'clip:<path-or-id>' or 'text'")
    key = (kind, source, device)
    with _cache_lock:
        if key not in _cache:
            cls = GMEImageTextEncoder if kind == "gme" else CLIPImageTextEncoder
            _cache[key] = cls(source, device=device)
        return _cache[key]
