"""Model layer: one ChatModel interface for every backend, with cache, retries and usage."""

from ._cache import CacheEntry, RequestCache, default_cache_path, open_sqlite_store
from ._calllog import CallSink, current_tag, record_calls, tag_calls
from ._client import ModelClient
from ._errors import (
    BadRequestError,
    BadResponseError,
    ConnectionFailure,
    ContentFilterError,
    ImageFileError,
    ImageNotSupportedError,
    ModelError,
    ModelTimeoutError,
    OutputTruncatedError,
    RateLimitError,
    RequestInfo,
    ServerError,
)
from ._estimate import cached_reply, call_cost, count_request, is_free, model_name
from ._http import SessionPool, classify_http_error, post_json
from ._images import JPEG_QUALITY, MAX_SIDE_PX, file_sha256, image_data_url, image_text
from ._known import CONTEXT_TOKENS, DEFAULT_CONTEXT_TOKENS
from ._load import base_urls, check_model_spec, load_chat_model
from ._local import LOCAL_MODELS, LocalModel, demo_answer_tokens, local_model_path
from ._prices import DEFAULT_PRICES, Prices, cost_usd, price_for, valid_price
from ._retry import RetryPolicy, call_with_retries
from ._tokens import count_tokens, get_encoding, truncate_tokens
from ._types import ChatModel, ChatResult, ContentPart, GenerationConfig, ImagePart, Message, Stage, TextPart, Usage

__all__ = [
    "LOCAL_MODELS",
    "LocalModel",
    "demo_answer_tokens",
    "local_model_path",
    "BadRequestError",
    "BadResponseError",
    "CallSink",
    "CONTEXT_TOKENS",
    "CacheEntry",
    "ChatModel",
    "ChatResult",
    "ConnectionFailure",
    "ContentFilterError",
    "ContentPart",
    "DEFAULT_CONTEXT_TOKENS",
    "DEFAULT_PRICES",
    "GenerationConfig",
    "ImageFileError",
    "ImageNotSupportedError",
    "ImagePart",
    "JPEG_QUALITY",
    "MAX_SIDE_PX",
    "Message",
    "ModelClient",
    "ModelError",
    "ModelTimeoutError",
    "OutputTruncatedError",
    "RateLimitError",
    "RequestCache",
    "RequestInfo",
    "RetryPolicy",
    "ServerError",
    "Stage",
    "TextPart",
    "Usage",
    "cost_usd",
    "count_tokens",
    "current_tag",
    "default_cache_path",
    "image_data_url",
    "image_text",
    "check_model_spec",
    "load_chat_model",
    "price_for",
    "valid_price",
    "record_calls",
    "tag_calls",
    "truncate_tokens",
    # Building blocks for other backends and sibling packages (embedders, dry runs, captions):
    "Prices",
    "SessionPool",
    "base_urls",
    "cached_reply",
    "call_cost",
    "call_with_retries",
    "classify_http_error",
    "count_request",
    "file_sha256",
    "get_encoding",
    "is_free",
    "model_name",
    "open_sqlite_store",
    "post_json",
]
