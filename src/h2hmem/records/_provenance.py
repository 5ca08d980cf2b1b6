"""Provenance records: which code made a result.

- :class:`ComponentSpec` names one component of a run or an evaluation (memory method, answer
  model, build model, embedder, captioner, judge, a scorer): its registered name, the target that
  implements it (``module:Class``), the distribution that installed that code and its version, and
  the resolved options it ran with. Each component is recorded once.
- :class:`Environment` names the code around it: the h2hmem version, the git revision of the
  checkout h2hmem runs from (with a dirty flag), Python and the platform, and the versions of the
  distributions the run used.

:func:`capture_environment` fills an :class:`Environment` from the running process;
:func:`distribution_of` finds the distribution that installed a module.
"""

from __future__ import annotations

import functools
import platform
import subprocess
import sys
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

from pydantic import ConfigDict

from .._version import __version__
from ._base import Record

TRACKED_DISTRIBUTIONS: tuple[str, ...] = (
    "numpy",
    "pydantic",
    "torch",
    "sentence-transformers",
    "tiktoken",
    "openai",
    "httpx",
    "aiohttp",
    "llama-cpp-python",
    "bm25s",
    "nltk",
    "transformers",
)
"""Distributions whose versions every :class:`Environment` records (those installed)."""


class ComponentSpec(Record):
    """One component, recorded once: what it is called, which code implements it, with which options.

    Example (a memory method)::

        {"kind": "memory", "name": "naive-rag", "target": "h2hmem.memory.naive_rag:NaiveRAGMemory",
         "distribution": "h2hmem", "version": "0.1.0", "options": {"top_k": 5, ...}}
    """

    model_config = ConfigDict(extra="allow")
    kind: str
    """``memory``, ``answer_model``, ``build_model``, ``embedder``, ``captioner``, ``judge`` or ``scorer``."""
    name: str
    """The registered name (``naive-rag``) or model spec (``openai:gpt-4o-mini``)."""
    target: str | None = None
    """``module:Class`` of the implementing code (None where a model spec is all there is)."""
    distribution: str | None = None
    """The installed distribution that provides ``target`` (``h2hmem``, a plugin's package)."""
    version: str | None = None
    """That distribution's version."""
    options: dict[str, Any] = {}
    """Resolved options (every option with the value it ran with)."""


class GitRevision(Record):
    """The git revision of the checkout the code ran from."""

    commit: str
    dirty: bool
    """True when tracked files differ from the commit."""


class Environment(Record):
    """The software a run or an evaluation ran on."""

    model_config = ConfigDict(extra="allow")
    h2hmem: str
    """h2hmem's version."""
    git: GitRevision | None = None
    """None when h2hmem does not run from a git checkout (an installed wheel)."""
    python: str
    """``platform.python_version()``."""
    implementation: str = ""
    """``platform.python_implementation()`` (CPython)."""
    platform: str
    """``platform.platform()``."""
    distributions: dict[str, str] = {}
    """Distribution name → version, for :data:`TRACKED_DISTRIBUTIONS` that are installed and for every
    plugin distribution the run used."""


def distribution_of(module: str) -> tuple[str | None, str | None]:
    """``(distribution, version)`` that installed the top-level package of ``module``; ``(None, None)``
    for a module no installed distribution provides (a script on ``sys.path``).

    A distribution named like the package whose ``top_level.txt`` lists it (h2hmem itself, most
    plugins) is found directly; any other package through ``importlib.metadata.packages_distributions()``,
    which reads every installed distribution's file list (~0.3 s) and is therefore computed once per
    ``sys.path``.
    """
    top = module.split(".", 1)[0]
    for name in _providers(top, tuple(sys.path)):
        try:
            return name, metadata.version(name)
        except metadata.PackageNotFoundError:  # pragma: no cover - a stale packages_distributions entry
            continue
    return None, None


@functools.lru_cache(maxsize=64)
def _providers(top: str, path: tuple[str, ...]) -> tuple[str, ...]:
    """Names of the distributions that install the top-level package ``top`` (``path``: the cache key)."""
    try:
        dist = metadata.distribution(top)
    except (metadata.PackageNotFoundError, ValueError):
        dist = None
    if dist is not None and top in (dist.read_text("top_level.txt") or "").split():
        return (dist.metadata["Name"],)
    return tuple(_packages_distributions(path).get(top) or ())


@functools.lru_cache(maxsize=4)
def _packages_distributions(path: tuple[str, ...]) -> Mapping[str, list[str]]:
    return metadata.packages_distributions()


def component_spec(kind: str, name: str, target: Any = None, options: dict[str, Any] | None = None) -> ComponentSpec:
    """The :class:`ComponentSpec` of ``target`` (a class, or a ``"module:Class"`` string, or None).

    The distribution and version are looked up from the target's module (:func:`distribution_of`).
    """
    target_str: str | None
    if target is None:
        target_str = None
    elif isinstance(target, str):
        target_str = target
    else:
        target_str = f"{target.__module__}:{target.__qualname__}"
    dist, version = distribution_of(target_str.partition(":")[0]) if target_str else (None, None)
    return ComponentSpec(
        kind=kind, name=name, target=target_str, distribution=dist, version=version, options=dict(options or {})
    )


@functools.lru_cache(maxsize=1)
def _git_revision() -> GitRevision | None:
    """The revision of the git checkout that holds this package's source, or None."""
    here = Path(__file__).resolve().parent
    try:
        top = subprocess.run(
            ["git", "-C", str(here), "rev-parse", "--show-toplevel"], capture_output=True, text=True, timeout=5
        )
        if top.returncode != 0:
            return None
        # the checkout must hold this file: an installed copy inside some other repository is not ours
        root = Path(top.stdout.strip())
        if not (root / "src" / "h2hmem").is_dir() and not (root / "h2hmem").is_dir():
            return None
        commit = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5
        ).stdout.strip()
        status = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if not commit:
        return None
    return GitRevision(commit=commit, dirty=bool(status.stdout.strip()))


def capture_environment(extra_distributions: tuple[str, ...] = ()) -> Environment:
    """The :class:`Environment` of this process.

    Args:
        extra_distributions: further distributions to record (a plugin's), beside
            :data:`TRACKED_DISTRIBUTIONS`; names that are not installed are left out.
    """
    dists: dict[str, str] = {}
    for name in (*TRACKED_DISTRIBUTIONS, *extra_distributions):
        try:
            dists[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return Environment(
        h2hmem=__version__,
        git=_git_revision(),
        python=platform.python_version(),
        implementation=platform.python_implementation(),
        platform=platform.platform(),
        distributions=dict(sorted(dists.items())),
    )


__all__ = [
    "TRACKED_DISTRIBUTIONS",
    "ComponentSpec",
    "Environment",
    "GitRevision",
    "capture_environment",
    "component_spec",
    "distribution_of",
]
