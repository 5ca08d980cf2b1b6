"""Test helpers: an OpenAI-compatible mock server with scripted faults."""

from ._faults import Fault, Rule
from ._mock_server import MockOpenAIServer, default_responder, hashed_embedding

__all__ = ["Fault", "MockOpenAIServer", "Rule", "default_responder", "hashed_embedding"]
