"""Adapters that run third-party memory products (mem0, LangMem, Graphiti, cognee) as memory methods.

Each product lives in its own subpackage: ``_store.py`` holds what is specific to the product
(its configuration, how a session goes in, how memories come out), ``_memory.py`` the seam glue
(the :class:`~h2hmem.memory.MemorySystem` class the registry names). The parts every adapter
shares are here: the OpenAI-compatible endpoint a product is pointed at (:func:`product_endpoint`),
how a session becomes the product's input (:mod:`._feed`), the build marker that makes a finished
store reusable (:mod:`._marker`), and the check that the product's extra is installed.
"""

from ._endpoint import Endpoint, product_endpoint
from ._extra import ProductMissingError, product_version, require_product
from ._feed import TurnRecord, session_records
from ._marker import BuildMarker

__all__ = [
    "BuildMarker",
    "Endpoint",
    "ProductMissingError",
    "TurnRecord",
    "product_endpoint",
    "product_version",
    "require_product",
    "session_records",
]
