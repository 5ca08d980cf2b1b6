"""Test helpers: an OpenAI-compatible mock server with scripted faults; serving an app for browser tests."""

from ._faults import Fault, Rule
from ._mock_server import MockOpenAIServer, default_responder, hashed_embedding
from ._serve import CHROMIUM, CHROMIUM_ARGS, free_port, serve_app

__all__ = [
    "CHROMIUM",
    "CHROMIUM_ARGS",
    "Fault",
    "MockOpenAIServer",
    "Rule",
    "default_responder",
    "free_port",
    "hashed_embedding",
    "serve_app",
]
