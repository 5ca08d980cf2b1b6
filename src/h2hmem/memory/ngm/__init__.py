"""The ``ngm`` memory method."""

from ._memory import NGMMemory

__all__ = ["NGMMemory"]
