"""Example h2hmem plugin: answer from the most recent turns (see ``docs/custom-memory.md``)."""

from ._memory import RecencyMemory

__all__ = ["RecencyMemory"]
