"""Protocol data of the official scripts (preset ``paper``): prompt files and the instruction lookup.

The prompt texts, per-type instructions and one-shot examples live in ``prompts/paper/*.json``,
each file naming the official source file and commit it reproduces. This module loads them and
reproduces how the official scripts chose an instruction: by the question's ``sub_type`` string
*as the dataset writes it*. The dataset writes "Multimodal Causal Inference" where the scripts'
tables say "Multimodal Causal Reasoning", so MCR questions got the fallback (UPR) instruction and
the default response format in the published runs — a quirk the ``paper`` preset keeps.
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from typing import Any

from ..data import TaskType

DATASET_SUB_TYPE: dict[TaskType, str] = {t: t.value for t in TaskType}
"""``question_type.sub_type`` as the H2HMem dataset files spell it (docs/taxonomy.md: every
type by its canonical name except MCR)."""
DATASET_SUB_TYPE[TaskType.MCR] = "Multimodal Causal Inference"


@functools.cache
def load_prompt(name: str) -> dict[str, Any]:
    """The prompt file ``prompts/paper/<name>.json`` (e.g. ``"full_text"``), parsed.

    Raises:
        FileNotFoundError: no such file in the package.
    """
    path = resources.files("h2hmem.memory").joinpath("prompts").joinpath("paper").joinpath(f"{name}.json")
    if not path.is_file():
        raise FileNotFoundError(f"package data prompts/paper/{name}.json is missing (reinstall h2hmem)")
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def official_instruction(prompt: dict[str, Any], task: TaskType) -> tuple[str, str]:
    """``(instruction, format_requirement)`` the official script picks for a question of type ``task``.

    The script looks the question up by ``question_type[<lookup_field>]``: for ``sub_type`` that is the
    dataset's spelling (:data:`DATASET_SUB_TYPE`); Full (MM) reads ``subsub_type``, which no question
    has. A key missing from the tables gets ``fallback_instruction`` and the ``default`` format
    requirement, as the script's ``dict.get(key, default)`` did.
    """
    key = DATASET_SUB_TYPE[task] if prompt.get("lookup_field", "sub_type") == "sub_type" else ""
    instruction = prompt["instructions"].get(key, prompt["fallback_instruction"])
    formats = prompt["format_requirements"]
    return instruction, formats.get(key, formats["default"])


def prompt_file_hash(name: str) -> str:
    """SHA-256 (first 16 hex) of a prompt file's canonical JSON: proves two runs used the same official text."""
    import hashlib

    blob = json.dumps(load_prompt(name), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


def paper_prompt_hashes() -> dict[str, str]:
    """``{"paper/<name>": hash}`` of every official prompt file shipped in the package."""
    folder = resources.files("h2hmem.memory").joinpath("prompts").joinpath("paper")
    names = sorted(p.name.removesuffix(".json") for p in folder.iterdir() if p.name.endswith(".json"))
    return {f"paper/{n}": prompt_file_hash(n) for n in names}
