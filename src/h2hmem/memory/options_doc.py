"""The option tables of the memory methods, generated from their ``Options`` models.

``python -m h2hmem.memory.options_doc --write [FILE]`` writes ``docs/method-options.md`` (every
registered method, built-ins and installed plugins); ``--check`` exits 1 when the file is stale.
``h2hmem methods show NAME`` prints the same rows. The tables are never edited by hand: an option's
type, range, allowed values, per-preset defaults and doc line live in its method's ``Options`` model.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ._method import MemoryMethod
from ._registry import BUILTIN, resolve_method

DOC = Path("docs/method-options.md")

_HEADER = """# Memory method options

Generated from each method's `Options` model by `python -m h2hmem.memory.options_doc --write`
(do not edit by hand; `h2hmem methods show NAME` prints the same). Set an option with
`--param NAME=VALUE` (`RunConfig.method_params`, a sweep's `params`); an option left out takes its
value under the run's preset (`--preset paper|harmonized`). A wrong name, type or value is refused
before any work starts. `top_k` means the same in every method that has it (default 5, the
published top-k; `--top-k N` is `--param top_k=N`).
"""


def value_text(value: Any) -> str:
    """An option value as JSON (``true``, ``null``, ``"head"``): what ``--param`` takes."""
    return json.dumps(value, ensure_ascii=False)


def method_table(name: str, cls: type[MemoryMethod[Any]]) -> str:
    """The markdown section of one method: heading, its class, one row per option."""
    rows = cls.Options.option_rows()
    lines = [f"## `{name}`", "", f"`{cls.__module__}:{cls.__qualname__}`", ""]
    if not rows:
        return "\n".join([*lines, "No options.", ""])
    lines += ["| option | type | `paper` | `harmonized` | what it decides |", "|---|---|---|---|---|"]
    for r in rows:
        cells = [f"`{r['name']}`", r["type"], value_text(r["paper"]), value_text(r["harmonized"]), r["doc"]]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join([*lines, ""])


def options_markdown(names: list[str] | None = None) -> str:
    """The whole reference page for ``names`` (default: the built-in methods, in registry order)."""
    sections = [method_table(n, resolve_method(n)) for n in (names or list(BUILTIN))]
    return _HEADER + "\n" + "\n".join(sections)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m h2hmem.memory.options_doc", description=__doc__)
    ap.add_argument("file", nargs="?", default=str(DOC))
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="write the file")
    mode.add_argument("--check", action="store_true", help="exit 1 when the file differs from the models")
    args = ap.parse_args(argv)
    text = options_markdown()
    path = Path(args.file)
    if args.write:
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path}")
        return 0
    current = path.read_text(encoding="utf-8") if path.is_file() else ""
    if current != text:
        print(f"{path} is stale: run python -m h2hmem.memory.options_doc --write")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
