"""The model gateway: h2hmem's model layer served as an OpenAI-compatible endpoint on loopback,
so third-party code (memory products) is cached, counted, recorded and budgeted like ours."""

from ._core import GatewayStats
from ._errors import GatewayError
from ._server import ModelGateway
from ._tags import STAGES, TAG_HEADER, TagError, add_tag_header, add_tag_header_async, parse_tag_header, tag_header

__all__ = [
    "TAG_HEADER",
    "GatewayError",
    "GatewayStats",
    "STAGES",
    "ModelGateway",
    "TagError",
    "add_tag_header",
    "add_tag_header_async",
    "parse_tag_header",
    "tag_header",
]
