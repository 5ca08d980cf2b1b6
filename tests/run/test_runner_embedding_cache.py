"""The runner's embedding cache: counts in the manifest, a rerun in a new run dir computes nothing, --no-cache."""

import json

from fakes import fake_chat

from h2hmem.embed import EmbeddingCache
from h2hmem.run import RunConfig, run_benchmark
from h2hmem.testing import MockOpenAIServer


def _texts_to_embed(sample_root) -> tuple[int, int, int]:
    """What naive-rag embeds on the multi-party split: (turn chunks, questions asked of a
    non-empty index, distinct texts of those questions). A dialogue without turns (dialogue2 has
    no session file) embeds no query."""
    from h2hmem.data import load_dataset

    ds = load_dataset(sample_root, "multi-party")
    turns = {d.id: sum(len(s.turns) for s in d.sessions if not s.absent) for d in ds.dialogues}
    asked = [q for d in ds.dialogues if turns[d.id] for q in d.questions]
    return sum(turns.values()), len(asked), len({q.text.strip() for q in asked})


def test_runner_records_cache_hits_and_no_cache_bypasses(sample_root, tmp_path):
    n_turns, n_asked, n_distinct = _texts_to_embed(sample_root)
    assert (n_turns, n_asked) == (456, 114)
    with MockOpenAIServer(embedding_dim=8) as srv:

        def run(run_id, **kw):
            cfg = RunConfig(
                data_root=sample_root,
                split="multi-party",
                method="naive-rag",
                embedder="openai:emb",
                base_url=[srv.base_url],
                out_dir=tmp_path / "runs",
                run_id=run_id,
                cache_path=tmp_path / "cache" / "requests.sqlite",
                **kw,
            )
            s = run_benchmark(cfg, chat_model=fake_chat(), progress=False)
            return json.loads((s.run_dir / "manifest.json").read_text())["embedding"]

        cold = run("cold")
        assert cold["cache"] == str(tmp_path / "cache" / "embeddings.sqlite") and cold["model"] == "openai:emb"
        assert cold["cache_hits"] == 0 and cold["computed"] + cold["memory_hits"] == cold["texts"]
        # every turn chunk is a distinct text; a question text asked twice is served from memory
        assert cold["texts"] == n_turns + n_asked and cold["computed"] == n_turns + n_distinct
        calls = srv.calls
        warm = run("warm")  # a new run directory, the same cache directory
        assert warm["computed"] == 0 and warm["model_calls"] == 0 and srv.calls == calls
        assert warm["cache_hits"] == cold["computed"] and warm["texts"] == cold["texts"]
        bypass = run("no-cache", use_cache=False)
        assert bypass["cache"] is None and bypass["cache_hits"] == 0 and bypass["computed"] == cold["computed"]
        assert srv.calls > calls
    assert EmbeddingCache(tmp_path / "cache" / "embeddings.sqlite").count("openai:emb") == cold["computed"]
