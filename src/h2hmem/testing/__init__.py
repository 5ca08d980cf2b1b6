"""Test helpers: an in-process scripted chat model, an OpenAI-compatible mock server with scripted
faults (also the command ``h2hmem testing mock-server``), serving an app for browser tests."""

from ._fault_spec import FaultSpecError, parse_fault_spec
from ._faults import Fault, Rule
from ._mock_server import MockOpenAIServer, default_responder, hashed_embedding
from ._protocols import forced_tool, judge_reply, mock_judge_score, structured_reply
from ._requests import ScriptedRequest
from ._schema_instance import SchemaNotSupported, schema_instance
from ._scripted import Reply, ReplyLike, RuleLike, ScriptedChatModel, ScriptExhausted, When
from ._serve import CHROMIUM, CHROMIUM_ARGS, free_port, serve_app

__all__ = [
    "CHROMIUM",
    "CHROMIUM_ARGS",
    "Fault",
    "FaultSpecError",
    "MockOpenAIServer",
    "Reply",
    "ReplyLike",
    "RuleLike",
    "ScriptExhausted",
    "SchemaNotSupported",
    "ScriptedChatModel",
    "ScriptedRequest",
    "When",
    "Rule",
    "default_responder",
    "forced_tool",
    "free_port",
    "judge_reply",
    "mock_judge_score",
    "schema_instance",
    "structured_reply",
    "hashed_embedding",
    "parse_fault_spec",
    "serve_app",
]
