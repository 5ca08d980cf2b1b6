"""Image+text encoders: a tiny random CLIP through the real ``clip:<path>`` loader, the text
fallback, and the loader's choice rules. GME needs real weights and is not exercised here."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tiny_clip import PROJECTION_DIM, build_tiny_clip, write_image

from h2hmem.embed import (
    CLIPImageTextEncoder,
    ImageTextEncoder,
    TextFallbackEncoder,
    l2_normalise,
    load_image_text_encoder,
)
from h2hmem.embed import _multimodal as mm
from h2hmem.llm._errors import ImageFileError


@pytest.fixture(scope="module")
def clip_dir(tmp_path_factory) -> Path:
    return build_tiny_clip(tmp_path_factory.mktemp("tiny-clip"))


@pytest.fixture(scope="module")
def images(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("img")
    return {"red": write_image(d / "red.png", (220, 20, 20)), "blue": write_image(d / "blue.jpg", (20, 20, 220))}


async def test_clip_fusion_matches_its_definition(clip_dir, images):
    import torch

    enc = load_image_text_encoder(f"clip:{clip_dir}", device="cpu")
    assert isinstance(enc, ImageTextEncoder) and enc.uses_images and enc.dim == PROJECTION_DIM
    assert load_image_text_encoder(f"clip:{clip_dir}", device="cpu") is enc  # loaded once per process
    items = [("the cat", None), ("the cat", images["red"]), ("the cat", images["blue"])]
    got = await enc.encode(items)
    assert got.shape == (3, PROJECTION_DIM) and got.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)

    # reference computed straight from the model: text-only = normalised text embedding;
    # image items = normalise(normalise(text) + normalise(image))
    with torch.inference_mode():
        tok = enc.processor.tokenizer(["the cat"], return_tensors="pt")
        t = enc._features(enc.model.get_text_features(**tok)).numpy()
        from PIL import Image

        pix = enc.processor.image_processor(images=[Image.open(images["red"]).convert("RGB")], return_tensors="pt")[
            "pixel_values"
        ]
        i = enc._features(enc.model.get_image_features(pixel_values=pix)).numpy()
    t, i = l2_normalise(t)[0], l2_normalise(i)[0]
    np.testing.assert_allclose(got[0], t, atol=1e-5)
    np.testing.assert_allclose(got[1], (t + i) / np.linalg.norm(t + i), atol=1e-5)
    assert not np.allclose(got[1], got[2], atol=1e-4)  # the image changes the vector
    # long texts are truncated to the model's 32 positions instead of failing
    assert (await enc.encode([("cat " * 200, None)])).shape == (1, PROJECTION_DIM)
    assert (await enc.encode([])).shape == (0, PROJECTION_DIM)


async def test_clip_unreadable_image_names_the_file(clip_dir, tmp_path):
    enc = load_image_text_encoder(f"clip:{clip_dir}", device="cpu")
    bad = tmp_path / "broken.png"
    bad.write_bytes(b"not a png")
    with pytest.raises(ImageFileError, match="broken.png"):
        await enc.encode([("x", bad)])


def test_clip_missing_model_is_an_error(tmp_path):
    with pytest.raises(OSError):
        CLIPImageTextEncoder(tmp_path / "nothing-here", device="cpu")


class _FixedEmbedder:
    name = "fixed"
    dim = 2

    def __init__(self):
        self.seen: list[str] = []

    async def embed(self, texts):
        self.seen.extend(texts)
        return np.array([[3.0, 4.0] if "a" in t else [0.0, 2.0] for t in texts], np.float32)


async def test_text_fallback_embeds_text_only():
    emb = _FixedEmbedder()
    enc = TextFallbackEncoder(emb)
    assert not enc.uses_images and enc.name == "text:fixed"
    got = await enc.encode([("a [Image 1.png in session1: a red car]", Path("/nope.png")), ("zzz", None)])
    np.testing.assert_allclose(got, [[0.6, 0.8], [0.0, 1.0]], atol=1e-6)
    assert emb.seen == ["a [Image 1.png in session1: a red car]", "zzz"]  # the path is never read


def test_loader_rules(monkeypatch):
    emb = _FixedEmbedder()
    monkeypatch.setattr(mm, "gme_in_local_cache", lambda model_id=mm.GME_MODEL_ID: False)
    enc = load_image_text_encoder(None, text_embedder_factory=lambda: emb)
    assert isinstance(enc, TextFallbackEncoder) and enc.embedder is emb
    assert isinstance(load_image_text_encoder("text", text_embedder_factory=lambda: emb), TextFallbackEncoder)
    for bad in ("siglip:x", "clip:", "gme"):
        with pytest.raises(ValueError, match="unknown image-text encoder"):
            load_image_text_encoder(bad)
    # when GME weights are cached locally, None means GME (construction stubbed: no weights here)
    built = []
    monkeypatch.setattr(mm, "gme_in_local_cache", lambda model_id=mm.GME_MODEL_ID: True)
    monkeypatch.setattr(mm, "GMEImageTextEncoder", lambda source, device=None: built.append(source) or "gme-object")
    monkeypatch.setattr(mm, "_cache", {})
    assert load_image_text_encoder(None) == "gme-object" and built == [mm.GME_MODEL_ID]


def test_gme_not_in_an_empty_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    import huggingface_hub.constants as c

    monkeypatch.setattr(c, "HF_HUB_CACHE", str(tmp_path))
    assert mm.gme_in_local_cache() is False


def test_gme_missing_weights_is_an_error(tmp_path):
    # the real loading code runs up to the missing files; no weights exist on build machines
    with pytest.raises(OSError):
        mm.GMEImageTextEncoder(tmp_path / "no-gme-here", device="cpu")
