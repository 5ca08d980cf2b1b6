"""Memory systems: the protocol, the registry, the shared answer prompt and the six baselines."""

from ._protocol import Answer, CaptionLookup, Evidence, MemoryContext, MemorySystem

__all__ = ["Answer", "CaptionLookup", "Evidence", "MemoryContext", "MemorySystem"]
