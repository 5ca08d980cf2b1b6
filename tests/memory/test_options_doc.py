"""The methods' option tables: generated from the Options models, and the committed docs match them."""

from __future__ import annotations

from pathlib import Path

from h2hmem.memory import available_methods, resolve_method
from h2hmem.memory.options_doc import main, method_table, options_markdown

DOC = Path(__file__).resolve().parents[2] / "docs" / "method-options.md"


def test_committed_option_tables_match_the_models():
    assert DOC.read_text(encoding="utf-8") == options_markdown(), (
        "docs/method-options.md is stale: run python -m h2hmem.memory.options_doc --write"
    )
    assert main([str(DOC), "--check"]) == 0


def test_check_reports_a_stale_file(tmp_path):
    stale = tmp_path / "method-options.md"
    stale.write_text("# old\n")
    assert main([str(stale), "--check"]) == 1
    assert main([str(stale), "--write"]) == 0 and stale.read_text() == options_markdown()


def test_every_builtin_option_is_documented_with_both_preset_defaults():
    for name in available_methods():
        cls = resolve_method(name)
        rows = cls.Options.option_rows()
        assert all(r["doc"] for r in rows), name  # a one-line doc per option
        table = method_table(name, cls)
        assert all(f"| `{r['name']}` |" in table for r in rows)
    full_text = method_table("full-text", resolve_method("full-text"))
    # a preset option: both defaults; the range and the allowed values as the user types them
    assert "| `max_context_tokens` | int \\| None >= 1 | 4096 | null |" in full_text
    assert "| `truncation` | 'head' \\| 'recent' | \"head\" | \"recent\" |" in full_text


def test_shared_knobs_mean_the_same_in_every_method():
    from h2hmem import defaults

    with_top_k = [n for n in available_methods() if "top_k" in resolve_method(n).Options.model_fields]
    assert set(with_top_k) == {"naive-rag", "a-mem", "murag", "h2h", "mem0", "langmem", "graphiti", "cognee"}
    rows = [next(r for r in resolve_method(n).Options.option_rows() if r["name"] == "top_k") for n in with_top_k]
    assert {(r["type"], r["paper"], r["harmonized"], r["doc"]) for r in rows} == {
        ("int >= 1", defaults.TOP_K, defaults.TOP_K, "memory units retrieved per question (published: 5)")
    }
