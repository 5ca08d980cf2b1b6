"""The package version, in a module of its own so that every layer can read it without importing
the root package (whose ``__init__`` may re-export the upper layers)."""

__version__ = "0.1.0"
