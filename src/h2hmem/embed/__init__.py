"""Embedders (texts → unit vectors), their persistent cache, and an exact top-k cosine index."""

from ._cache import EmbeddingCache, default_embedding_cache_path, text_digest
from ._cached import CachingEmbedder, EmbeddingStats, embedding_record
from ._index import VectorIndex
from ._load import load_embedder, parse_embedder_spec
from ._minilm import MINILM_DIM, MiniLMEmbedder
from ._multimodal import (
    CLIPImageTextEncoder,
    GMEImageTextEncoder,
    ImageTextEncoder,
    TextFallbackEncoder,
    load_image_text_encoder,
)
from ._openai import OpenAIEmbedder
from ._protocol import Embedder, l2_normalise

__all__ = [
    "CLIPImageTextEncoder",
    "GMEImageTextEncoder",
    "ImageTextEncoder",
    "TextFallbackEncoder",
    "load_image_text_encoder",
    "Embedder",
    "MINILM_DIM",
    "MiniLMEmbedder",
    "OpenAIEmbedder",
    "VectorIndex",
    "l2_normalise",
    "load_embedder",
    "parse_embedder_spec",
    "CachingEmbedder",
    "EmbeddingCache",
    "EmbeddingStats",
    "default_embedding_cache_path",
    "embedding_record",
    "text_digest",
]
