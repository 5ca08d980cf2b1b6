"""A tiny, randomly initialised CLIP saved like a real one (no download), and synthetic images.

Used by the multimodal encoder tests and the MuRAG/NGM image-path tests: it exercises the real
``clip:<path>`` loading and encoding code; its embeddings carry no meaning.
"""

from __future__ import annotations

import json
import string
from pathlib import Path

PROJECTION_DIM = 16


def build_tiny_clip(folder: Path, seed: int = 0) -> Path:
    """Save model, tokenizer (tiny BPE vocab/merges) and image processor (32 px) to ``folder``."""
    import torch
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel, CLIPProcessor, CLIPTokenizer

    folder.mkdir(parents=True, exist_ok=True)
    chars = list(string.ascii_lowercase + string.digits + ".,:!?'[]-/()<>@_")
    vocab: dict[str, int] = {}
    for c in chars:
        vocab[c] = len(vocab)
    for c in chars:
        vocab[c + "</w>"] = len(vocab)
    merges = ["t h", "th e</w>", "c a", "ca t</w>", "r e", "re d</w>"]
    for m in merges:
        a, b = m.split()
        vocab[a + b] = len(vocab)
    vocab["<|startoftext|>"] = len(vocab)
    vocab["<|endoftext|>"] = len(vocab)
    tok_dir = folder / "_tok"
    tok_dir.mkdir(exist_ok=True)
    (tok_dir / "vocab.json").write_text(json.dumps(vocab))
    (tok_dir / "merges.txt").write_text("#version: 0.2\n" + "\n".join(merges) + "\n")
    tokenizer = CLIPTokenizer.from_pretrained(tok_dir)
    image_processor = CLIPImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32})
    CLIPProcessor(image_processor=image_processor, tokenizer=tokenizer).save_pretrained(folder)
    eos = vocab["<|endoftext|>"]
    config = CLIPConfig(
        text_config=dict(
            vocab_size=len(vocab),
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=2,
            max_position_embeddings=32,
            bos_token_id=vocab["<|startoftext|>"],
            eos_token_id=eos,
            pad_token_id=eos,
        ),
        vision_config=dict(
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=2,
            image_size=32,
            patch_size=8,
        ),
        projection_dim=PROJECTION_DIM,
    )
    torch.manual_seed(seed)
    CLIPModel(config).save_pretrained(folder)
    return folder


def write_image(path: Path, colour: tuple[int, int, int], size: tuple[int, int] = (40, 30)) -> Path:
    """A solid-colour PNG with a white square in one corner (so crops differ by colour only)."""
    from PIL import Image, ImageDraw

    path.parent.mkdir(parents=True, exist_ok=True)
    im = Image.new("RGB", size, colour)
    ImageDraw.Draw(im).rectangle([0, 0, 9, 9], fill=(255, 255, 255))
    im.save(path)
    return path
