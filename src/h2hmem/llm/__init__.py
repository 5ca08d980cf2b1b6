"""Model layer: one ChatModel interface for every backend, with cache, retries and usage."""

from ._types import ChatModel, ChatResult, ContentPart, GenerationConfig, ImagePart, Message, Stage, TextPart, Usage

__all__ = ["ChatModel", "ChatResult", "ContentPart", "GenerationConfig", "ImagePart", "Message", "Stage", "TextPart", "Usage"]
