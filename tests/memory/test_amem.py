"""A-Mem: hybrid fusion pinned by hand, note construction and evolution with a scripted note
writer, robustness to bad JSON, the saved note store (no rebuild on a repeated or resumed run)."""

from __future__ import annotations

import datetime as dt
import json
import math

import numpy as np
import pytest
from mm_fakes import HashEmbedder, TableEmbedder, make_question, make_session, recording_chat

from h2hmem.memory import MemoryContext, resolve_method
from h2hmem.memory._retrieval import BM25Scorer, hybrid_scores, minmax, top_k
from h2hmem.memory.amem._memory import AMemMemory
from h2hmem.memory.amem._notes import Note, parse_analysis, parse_evolution, parse_json_object

D = dt.date(2024, 3, 1)
CAPS = {"session1/a.png": "a red bicycle"}

# ---------------------------------------------------------------- fusion, by hand


def test_hybrid_example_from_the_docstring():
    np.testing.assert_allclose(hybrid_scores([2.0, 1.0, 0.0], [0.1, 0.8, 0.3]), [0.55, 0.65, 0.15])
    np.testing.assert_allclose(minmax([3.0, 3.0]), [0.0, 0.0])  # nothing to tell apart
    assert top_k(np.array([0.2, 0.9, 0.9, 0.1]), 3) == [(1, 0.9), (2, 0.9), (0, 0.2)]


def test_bm25_lucene_scores_by_hand():
    # N = 3; idf = ln(1 + (N − df + 0.5)/(df + 0.5)); tf = 1 and dl = avgdl = 2, so each matching
    # word scores idf · 1/(1 + 1.5) = 0.4 · idf. apple (df 1): 0.4 ln(8/3) = 0.392332;
    # banana (df 2): 0.4 ln(1.6) = 0.188001; "zebra" is not in the vocabulary.
    s = BM25Scorer(["apple banana", "banana cherry", "cherry date"]).scores("apple banana zebra")
    np.testing.assert_allclose(s, [0.580333, 0.188001, 0.0], atol=1e-6)
    assert BM25Scorer(["apple"]).scores("zebra").tolist() == [0.0]
    assert BM25Scorer([]).scores("apple").shape == (0,)


async def test_retrieve_fuses_bm25_and_cosine(tmp_path):
    # cosines with the query 0.1, 0.5, 0.9; BM25 normalised [1, 0.32395, 0] (above) →
    # hybrid 0.5·bm25 + 0.5·cos = [0.55, 0.411976, 0.45]: order 0, 2, 1 (BM25 alone: 0,1,2; cosine alone: 2,1,0)
    def v(c):
        return np.array([c, math.sqrt(1 - c * c), 0.0], np.float32)

    docs = ["apple banana", "banana cherry", "cherry date"]
    emb = TableEmbedder(
        {docs[0]: v(0.1), docs[1]: v(0.5), docs[2]: v(0.9), "apple banana zebra": np.array([1.0, 0, 0])}
    )
    ctx = MemoryContext(preset="harmonized", dialogue_id="d", chat=recording_chat(), embedder_factory=lambda: emb)
    mem = AMemMemory(ctx, top_k=3)
    mem.store.notes = [
        Note(id=f"session1/t{i}", session="session1", turn=i, date="2024-03-01", content=d) for i, d in enumerate(docs)
    ]
    hits = await mem.retrieve("apple banana zebra")
    assert [n.turn for n, _ in hits] == [0, 2, 1]
    assert [s for _, s in hits] == pytest.approx([0.55, 0.45, 0.5 * 0.188001 / 0.580333 + 0.25], abs=1e-5)


# ---------------------------------------------------------------- parsing


def test_parsing_is_tolerant():
    assert parse_json_object('```json\n{"a": True}\n```') == {"a": True}
    assert parse_json_object('Sure! {"x": 1} hope this helps') == {"x": 1}
    assert parse_json_object("no json here") is None and parse_json_object("[1, 2]") is None
    assert parse_analysis('{"keywords": "bike, red", "context": "A bike.", "tags": ["sport", 3]}') == (
        ["bike", "red"],
        ["sport", "3"],
        "A bike.",
    )
    assert parse_analysis('{"answer": "mock"}') is None
    e = parse_evolution(
        '{"should_evolve": "true", "actions": ["strengthen"], "suggested_connections": [1, 7, "0", "x"],'
        ' "tags_to_update": ["t"], "new_context_neighborhood": ["c0", "c1", "c2"]}',
        2,
    )
    assert e.should_evolve and e.strengthen and not e.update_neighbor
    assert e.connections == [1, 0] and e.neighbour_contexts == ["c0", "c1"]
    assert parse_evolution('{"actions": []}', 2) is None


# ---------------------------------------------------------------- construction


def writer_reply(req):
    """Scripted note writer: keywords = the turn's words; evolution links to neighbour 0 and
    rewrites neighbour 0's context; the turn saying 'garbage' gets a reply that is not JSON."""
    prompt = req.user_text
    if prompt.startswith("Analyse one conversation turn"):
        turn = prompt.split("Turn:\n", 1)[1]
        if "garbage" in turn:
            return "I cannot do that."
        words = [w for w in turn.split(": ", 2)[-1].split() if w.isalpha()]
        return json.dumps({"keywords": words[:3], "context": f"About {words[0]}.", "tags": ["chat"]})
    new_text = prompt.split("content: ", 1)[1].split("\n", 1)[0]
    return json.dumps(
        {
            "should_evolve": True,
            "actions": ["strengthen", "update_neighbor"],
            "suggested_connections": [0],
            "tags_to_update": ["chat", "linked"],
            "new_context_neighborhood": [f"Updated by: {new_text}"],
            "new_tags_neighborhood": [["chat", "updated"]],
        }
    )


def sessions():
    s1 = make_session(
        "session1",
        D,
        [
            ("Ann", "look at my bike", "a.png"),
            ("Bob", "garbage reply please", None),
            ("Ann", "it is red and fast", None),
        ],
    )
    s2 = make_session(
        "session2", D + dt.timedelta(days=3), [("Bob", "the bike broke down", None), ("Ann", "bad luck indeed", None)]
    )
    return s1, s2


def make(tmp_path, chat, **kw) -> AMemMemory:
    ctx = MemoryContext(
        preset="harmonized",
        dialogue_id="dyadic/dialogue1",
        chat=chat,
        captions=lambda ref: CAPS.get(ref.key),
        state_dir=tmp_path / "state",
        embedder_factory=HashEmbedder,
    )
    return AMemMemory(ctx, **kw)


def test_registered():
    assert resolve_method("a-mem") is AMemMemory


async def test_construction_evolution_and_bad_json(tmp_path):
    chat = recording_chat(writer_reply)
    mem = make(tmp_path, chat)
    s1, s2 = sessions()
    await mem.observe(s1)
    await mem.observe(s2)
    build = [(r.messages, r.config) for r in chat.requests_for("memory_build")]
    assert len(build) == 5 + 4  # one analysis per turn, one evolution per turn after the first
    assert all(c.temperature == 0.3 and c.json_mode for _, c in build)
    notes = mem.store.notes
    assert (
        notes[0].content == "[Ann]: 2024-03-01: look at my bike [image: a.png in session1] "
        "[image_description: a red bicycle]"
    )
    # the garbage reply gave a fallback note (no keywords); evolution later set its tags
    assert notes[1].fallback and notes[1].keywords == [] and notes[1].tags in (["chat", "linked"], ["chat", "updated"])
    assert mem.store.stats.analysis_failures == 1
    assert notes[4].keywords == ["bad", "luck", "indeed"]
    # every later note was linked to its nearest neighbour, which got its context rewritten
    assert all(len(n.links) == 1 for n in notes[1:]) and notes[0].links == []
    assert mem.store.stats.evolutions == 4 and mem.store.stats.neighbour_updates == 4
    assert sum(n.context.startswith("Updated by: ") for n in notes) >= 1
    assert (tmp_path / "state" / "amem_notes.json").is_file()
    # the note vectors follow the (rewritten) notes
    fresh = np.asarray(await HashEmbedder().embed([n.document() for n in notes]))
    np.testing.assert_allclose(mem._vectors, fresh, atol=1e-6)


async def test_answer_evidence_and_links(tmp_path):
    chat = recording_chat(writer_reply)
    mem = make(tmp_path, chat, top_k=2)
    s1, s2 = sessions()
    await mem.observe(s1)
    await mem.observe(s2)
    ans = await mem.answer(make_question("what happened to the bike?"))
    assert ans.details["retrieval_s"] >= 0  # timed retrieval, for the efficiency table
    msgs, cfg, stage = chat.last.messages, chat.last.config, chat.last.stage
    assert stage == "answer" and cfg.temperature == 0.1
    assert len(ans.evidence) == 2 and ans.evidence[0].score >= ans.evidence[1].score
    assert "memory content: " in msgs[-1].content and "talk start time: 2024-03" in msgs[-1].content
    linked = make(tmp_path, chat, top_k=2, follow_links=True)
    ans2 = await linked.answer(make_question("what happened to the bike?"))
    assert ans2.evidence[:2] == ans.evidence
    hit_ids = {f"{e.session}/t{e.turn}" for e in ans.evidence}
    expected = [
        l
        for e in ans.evidence
        for l in mem.store.notes[[n.id for n in mem.store.notes].index(f"{e.session}/t{e.turn}")].links
        if l not in hit_ids
    ]
    assert [f"{e.session}/t{e.turn}" for e in ans2.evidence[2:]] == list(dict.fromkeys(expected))
    assert all(e.score is None for e in ans2.evidence[2:])


async def test_repeated_run_makes_no_construction_calls(tmp_path):
    s1, s2 = sessions()
    first = make(tmp_path, recording_chat(writer_reply))
    await first.observe(s1)
    await first.observe(s2)
    chat = recording_chat(writer_reply)
    again = make(tmp_path, chat)
    await again.observe(s1)
    await again.observe(s2)
    assert chat.requests_for("memory_build") == []
    assert [n.model_dump() for n in again.store.notes] == [n.model_dump() for n in first.store.notes]
    a1 = await first.answer(make_question("bike"))
    a2 = await again.answer(make_question("bike"))
    assert a1.evidence == a2.evidence


async def test_interrupted_run_resumes_mid_session(tmp_path):
    s1, s2 = sessions()

    def failing(req):
        if "it is red and fast" in req.user_text:
            raise RuntimeError("server went away")
        return writer_reply(req)

    mem = make(tmp_path, recording_chat(failing))
    with pytest.raises(RuntimeError):
        await mem.observe(s1)
    saved = json.loads((tmp_path / "state" / "amem_notes.json").read_text())
    assert saved["turns_done"] == {"session1": 2} and len(saved["notes"]) == 2
    chat = recording_chat(writer_reply)
    resumed = make(tmp_path, chat)
    await resumed.observe(s1)
    # only turn 2 is built: its analysis and its evolution
    assert len(chat.requests_for("memory_build")) == 2
    assert [n.turn for n in resumed.store.notes] == [0, 1, 2]


async def test_store_from_other_settings_is_refused(tmp_path):
    s1, _ = sessions()
    await make(tmp_path, recording_chat(writer_reply)).observe(s1)
    with pytest.raises(ValueError, match=r"amem_notes.json: field 'fingerprint' differs in neighbours"):
        make(tmp_path, recording_chat(writer_reply), neighbours=3)
    (tmp_path / "state" / "amem_notes.json").write_text("{not json")
    with pytest.raises(ValueError, match="not a readable A-Mem note store"):
        make(tmp_path, recording_chat(writer_reply))


def test_describe_records_deviations(tmp_path):
    mem = make(tmp_path, recording_chat())
    d = mem.describe()
    o = mem.options
    assert d["answer_temperature"] == 0.1 and o.build_temperature == 0.3 and o.top_k == 5 and not o.follow_links
    # the official answer temperature is 0.1 (A_MEM.py @ b6070899: --temperature_c5 default 0.1, not set by
    # evaluate.sh), so it is no deviation
    assert not any("temperature" in x for x in d["deviations"]) and "options" not in d
    assert "image_description" in d["images"]


async def test_over_http_bad_json_and_request_cache(tmp_path):
    """Through the real model client and an OpenAI-compatible mock whose JSON replies hold no note
    fields: every note is a fallback, nothing crashes; a rebuild from scratch with the same request
    cache sends nothing to the server."""
    from h2hmem.llm import load_chat_model
    from h2hmem.testing import MockOpenAIServer

    s1, _ = sessions()
    with MockOpenAIServer() as srv:
        model = load_chat_model("openai:mock", base_url=srv.base_url, cache=tmp_path / "cache.sqlite")

        def build(state):
            ctx = MemoryContext(
                preset="harmonized",
                dialogue_id="d",
                chat=model,
                state_dir=tmp_path / state,
                embedder_factory=HashEmbedder,
            )
            return AMemMemory(ctx)

        mem = build("run1")
        await mem.observe(s1)
        assert srv.calls == 3 + 2
        body = srv.requests[0]
        assert body["response_format"] == {"type": "json_object"} and body["temperature"] == 0.3
        assert mem.store.stats.analysis_failures == 3 and mem.store.stats.evolution_failures == 2
        assert all(n.fallback and n.keywords == [] for n in mem.store.notes)

        again = build("run2")  # no saved notes: rebuilt, but every call is a cache hit
        await again.observe(s1)
        assert srv.calls == 5
        assert model.usage_by_stage()["memory_build"].cached_calls == 5
        assert [n.content for n in again.store.notes] == [n.content for n in mem.store.notes]
        await model.aclose()


async def test_online_protocol_sees_new_notes(tmp_path):
    chat = recording_chat(writer_reply)
    mem = make(tmp_path, chat, top_k=10)
    s1, s2 = sessions()
    await mem.observe(s1)
    first = await mem.answer(make_question("bike"))
    assert {e.session for e in first.evidence} == {"session1"} and len(first.evidence) == 3
    await mem.observe(s2)  # the BM25 index and vectors follow the new notes
    second = await mem.answer(make_question("bike"))
    assert len(second.evidence) == 5 and {e.session for e in second.evidence} == {"session1", "session2"}


# ---------------------------------------------------------------- paper: deferred re-indexing (row 1)


def official_writer(req):
    """The official prompts: a readable analysis for every turn; every evolution rewrites the context of
    all its neighbours with a word unique to the new turn ("zebra<k>")."""
    prompt = req.user_text
    if prompt.startswith("Generate a structured analysis"):
        word = prompt.rsplit(":", 1)[-1].split()[0]
        return json.dumps({"keywords": [word], "context": f"about {word}", "tags": ["chat"]})
    new = prompt.split("content: ", 1)[1].split("\n", 1)[0]
    k = new.split("turn", 1)[1].split()[0]
    n = int(prompt.split("The number of neighbors is ", 1)[1].split(".", 1)[0])
    return json.dumps(
        {
            "should_evolve": True,
            "actions": ["update_neighbor"],
            "suggested_connections": [],
            "tags_to_update": [],
            "new_context_neighborhood": [f"rewritten zebra{k}"] * n,
            "new_tags_neighborhood": [["chat", f"zebra{k}"]] * n,
        }
    )


def paper_memory(tmp_path, chat, embedder, **kw) -> AMemMemory:
    ctx = MemoryContext(
        preset="paper",
        dialogue_id="dyadic/dialogue1",
        chat=chat,
        captions=lambda ref: None,
        state_dir=tmp_path / "state",
        embedder_factory=lambda: embedder,
    )
    return AMemMemory(ctx, **kw)


def test_reindex_every_per_preset(tmp_path):
    assert make(tmp_path, recording_chat()).options.reindex_every == 0  # harmonized: at once
    assert paper_memory(tmp_path / "p", recording_chat(), HashEmbedder()).options.reindex_every == 100


async def test_paper_reindexes_rewritten_neighbours_only_every_nth_evolution(tmp_path):
    """Official ``add_note``/``consolidate_memories``: a neighbour whose context and tags an evolution
    rewrote keeps its old text in the index (BM25 and vectors) until every ``reindex_every``-th evolution
    rebuilds the whole index; answers use the index as last rebuilt, also after a reload."""
    embedder = HashEmbedder()
    mem = paper_memory(tmp_path, recording_chat(official_writer), embedder, reindex_every=3)
    session = make_session("session1", D, [("Ann", f"turn{k} word{k} here", None) for k in range(8)])
    rebuilt_at, seen = [], 0
    for k in range(8):  # one turn at a time, to see when the index changes
        await mem.observe(session.model_copy(update={"turns": session.turns[: k + 1]}))
        new_texts, seen = embedder.texts[seen:], len(embedder.texts)
        if any("rewritten" in t for t in new_texts):  # a rewritten context reached the index
            rebuilt_at.append(k)
            notes = mem.store.notes  # the whole index, rebuilt from every note's current text
            assert new_texts[-len(notes) :] == [n.searchable() for n in notes]
    # turn 0 has no neighbour; turns 1..7 each evolve: the 3rd and the 6th evolution rebuild the index
    assert mem.store.stats.evolutions == 7 and rebuilt_at == [3, 6] and mem.store.stats.reindexes == 2
    stale = [n for n in mem.store.notes if n.indexed is not None]
    assert stale and all("zebra7" in n.searchable() and "zebra7" not in n.indexed for n in stale)
    assert all(n.indexed is None for n in mem.store.notes if "zebra7" not in n.context)
    # answers retrieve from the index as last rebuilt: the rewrite of evolution 7 is not searchable yet
    await mem.retrieve("zebra7")
    assert not mem._bm25.scores("zebra7").any()
    # the saved store keeps what the index holds
    again = paper_memory(tmp_path, recording_chat(official_writer), HashEmbedder(), reindex_every=3)
    assert [n.indexed for n in again.store.notes] == [n.indexed for n in mem.store.notes]
    await again.retrieve("zebra7")
    assert not again._bm25.scores("zebra7").any()
    np.testing.assert_allclose(
        again._vectors,
        np.asarray(await HashEmbedder().embed([mem._indexed_doc(n) for n in mem.store.notes])),
        atol=1e-6,
    )


async def test_harmonized_reindexes_at_once(tmp_path):
    embedder = HashEmbedder()
    mem = paper_memory(tmp_path, recording_chat(official_writer), embedder, reindex_every=0)
    session = make_session("session1", D, [("Ann", f"turn{k} word{k} here", None) for k in range(4)])
    await mem.observe(session)
    assert mem.store.stats.reindexes == 0 and all(n.indexed is None for n in mem.store.notes)
    await mem.retrieve("zebra3")
    assert mem._bm25.scores("zebra3").any()  # the latest rewrite is searchable at once
