"""The base of every record model: attribute docstrings become field descriptions in the JSON Schemas."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Record(BaseModel):
    """A pydantic model whose field docstrings are its JSON Schema descriptions."""

    model_config = ConfigDict(use_attribute_docstrings=True)
