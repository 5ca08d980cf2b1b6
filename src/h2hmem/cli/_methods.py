"""``h2hmem methods list`` and ``h2hmem methods show NAME``: the memory methods and their typed options."""

from __future__ import annotations

import typer
from rich.markup import escape
from rich.table import Table

from ._app import app, console, fail

methods_app = typer.Typer(help="Memory methods: list them, show one's options.", no_args_is_help=True)
app.add_typer(methods_app, name="methods")


@methods_app.command("list")
def methods_list() -> None:
    """Every method (built in, and plugins of the entry-point group ``h2hmem.memory``) and its options."""
    from ..memory import available_methods, resolve_method

    t = Table(title="Memory methods", title_justify="left")
    for col in ("method", "target", "retrieval-only", "options"):
        t.add_column(col, overflow="fold")
    for name, target in available_methods().items():
        try:
            cls = resolve_method(name)
        except Exception as e:  # a broken plugin is listed with its error, not a crash of the listing
            t.add_row(name, target, "?", f"[red]cannot load: {escape(str(e))}[/]")
            continue
        names = ", ".join(r["name"] for r in cls.Options.option_rows()) or "–"
        t.add_row(name, target, "yes" if cls.supports_retrieval else "no", names)
    console.print(t)


@methods_app.command("show")
def methods_show(
    name: str = typer.Argument(..., help="Method name, or a plugin as 'package.module:Class'."),
    markdown: bool = typer.Option(False, "--markdown", help="Print the markdown table of docs/method-options.md."),
) -> None:
    """One method's options: type (range, allowed values), default under each preset, what it decides."""
    from ..memory import UnknownMethodError, resolve_method
    from ..memory.options_doc import method_table, value_text

    try:
        cls = resolve_method(name)
    except UnknownMethodError as e:
        raise fail(str(e))
    if markdown:
        console.print(method_table(name, cls), markup=False, highlight=False, soft_wrap=True)
        return
    rows = cls.Options.option_rows()
    console.print(f"[bold]{escape(name)}[/] — {cls.__module__}:{cls.__qualname__}", highlight=False)
    console.print(f"retrieval-only: {'yes' if cls.supports_retrieval else 'no'}", highlight=False)
    if cls.question_fields:
        console.print(f"question fields: {', '.join(cls.question_fields)}", highlight=False)
    if not rows:
        console.print("no options")
        return
    t = Table(title_justify="left")
    for col in ("option", "type", "paper", "harmonized", "what it decides"):
        t.add_column(col, overflow="fold")
    for r in rows:
        t.add_row(r["name"], escape(r["type"]), value_text(r["paper"]), value_text(r["harmonized"]), escape(r["doc"]))
    console.print(t)
