"""Preset ``paper`` (default) vs ``harmonized`` on the real sample's dyadic/dialogue5 (12k tokens of dialogue):
head truncation at 4,096 cl100k tokens, the question image as an image part, the official JSON reply."""

from __future__ import annotations

import pytest
from mm_fakes import HashEmbedder, recording_chat
from paper_sample import load_dialogue, with_images

from h2hmem.data import load_dataset
from h2hmem.llm import ImagePart, TextPart
from h2hmem.llm._tokens import count_tokens
from h2hmem.memory import MemoryContext, method_options
from h2hmem.memory._registry import resolve_method
from h2hmem.memory._reply import read_json_reply
from h2hmem.memory.full_text._memory import FullTextOptions

NOTE_PREFIX = "[Note: Due to context length limitations, the original conversation memory has been truncated"


def _dialogue5(sample_root):
    ds = load_dataset(sample_root, "dyadic", strict=False)
    return next(d for d in ds.dialogues if d.name == "dialogue5")


async def _ask(method, d, question, preset, chat=None, **params):
    chat = chat or recording_chat()
    embedder = HashEmbedder()
    ctx = MemoryContext(
        dialogue_id=d.id,
        chat=chat,
        captions=lambda ref: f"caption of {ref.file}",
        embedder_factory=lambda: embedder,
        preset=preset,
    )
    memory = resolve_method(method)(ctx, **params)
    for s in d.sessions:
        await memory.observe(s)
    answer = await memory.answer(question)
    messages = chat.requests_for("answer")[-1].messages
    config = chat.requests_for("answer")[-1].config
    return answer, messages, config


def _text(messages) -> str:
    content = messages[-1].content
    return content if isinstance(content, str) else "\n".join(p.text for p in content if isinstance(p, TextPart))


def _last_turn_text(d) -> str:
    last = [s for s in d.sessions if s.turns][-1]
    return last.turns[-1].text


async def test_paper_full_text_keeps_the_head_within_4096_tokens(sample_root):
    d = _dialogue5(sample_root)
    first = d.sessions[0].turns[0]
    answer, messages, config = await _ask("full-text", d, d.questions[0], "paper")
    prompt = _text(messages)
    assert [m.role for m in messages] == ["user"] and config.top_p == 0.9 and config.temperature == 0.1
    context = prompt.split("Complete conversation memory (contains multiple sessions):\n", 1)[1].split(
        f"\n{NOTE_PREFIX}"
    )[0]
    assert count_tokens(context) <= 4096 and answer.details["context_tokens"] == 4096
    assert context.startswith("Total sessions: 8\nTotal dialogue turns: 154\n\n[Session Information]\n")
    assert f"  Turn 1 - {first.speaker}: [Image: caption of 1.png] 2024-03-20:{first.text}" in context
    assert _last_turn_text(d) not in prompt  # the latest sessions were cut (official pitfall 6, kept by paper)
    assert (
        f"{NOTE_PREFIX} from approximately {answer.details['original_context_tokens']} tokens to 4096 tokens.]"
        in prompt
    )
    assert answer.details["original_context_tokens"] > 12000 and answer.details["truncated"]


async def test_harmonized_full_text_keeps_the_last_turn(sample_root):
    d = _dialogue5(sample_root)
    answer, messages, config = await _ask("full-text", d, d.questions[0], "harmonized")
    assert [m.role for m in messages] == ["system", "user"] and config.top_p is None
    assert _last_turn_text(d) in _text(messages) and not answer.details["truncated"]


async def test_one_option_overrides_the_preset(sample_root):
    d = _dialogue5(sample_root)
    answer, messages, _ = await _ask("full-text", d, d.questions[0], "paper", truncation="recent")
    prompt = _text(messages)
    assert prompt.startswith("You are a memory testing system.")  # still the official prompt
    assert _last_turn_text(d) in prompt and "Total sessions: 8" not in prompt  # but the most recent turns


@pytest.mark.parametrize("method", ["full-text", "naive-rag"])
async def test_paper_attaches_the_question_image(method, sample_root, tmp_path):
    d = load_dialogue(with_images(sample_root, tmp_path))
    q = next(q for q in d.questions if q.images)
    _, messages, _ = await _ask(method, d, q, "paper")
    parts = messages[-1].content
    assert isinstance(parts, list) and [type(p) for p in parts] == [TextPart, ImagePart]
    assert parts[1].path == q.images[0].path
    assert q.images[0].file not in parts[1].name and q.images[0].session not in parts[1].name  # no file name leak
    _, h_messages, _ = await _ask(method, d, q, "harmonized")
    assert isinstance(h_messages[-1].content, str) and "caption of" in h_messages[-1].content


@pytest.mark.parametrize("method", ["full-text", "naive-rag"])
async def test_text_only_model_gets_the_question_image_caption(method, sample_root, tmp_path):
    from h2hmem.llm._images import prepare_messages

    d = load_dialogue(with_images(sample_root, tmp_path))
    q = next(q for q in d.questions if q.images)
    _, messages, _ = await _ask(method, d, q, "paper", chat=recording_chat(supports_images=False))
    sent, substituted = prepare_messages(messages, send_images=False)  # what a text-only backend sends
    assert substituted == 1
    assert sent[-1].content[-1].text == f"[Image the question's image: caption of {q.images[0].file}]"


async def test_paper_naive_rag_scores_system_answer(sample_root):
    d = _dialogue5(sample_root)
    reply = '{\n    "reasoning_process": "Session 2 says so.",\n    "system_answer": "Almond"\n}'
    answer, messages, config = await _ask("naive-rag", d, d.questions[0], "paper", chat=recording_chat(reply))
    prompt = _text(messages)
    assert answer.text == "Almond" and answer.details["reply_read"] == "json"
    assert answer.details["reasoning_process"] == "Session 2 says so."
    assert prompt.startswith("You are a memory testing system using Naive RAG")
    assert (
        "[Naive RAG Retrieval Results (BERT Embedding)]\nSimilarity calculation method: bert_embedding_cosine\n"
        in prompt
    )
    assert '"system_answer": "Your final answer"' in prompt and config.top_p == 0.9


def test_json_reply_reading():
    assert read_json_reply('```json\n{"reasoning_process": "r", "system_answer": "Yes"}\n```').answer == "Yes"
    # a '}' inside the reasoning defeats the official shortest-span regex: recovered, not dropped
    r = read_json_reply('{"reasoning_process": "a {b} c", "system_answer": "No"}')
    assert (r.answer, r.how) == ("No", "json-recovered")
    assert read_json_reply("Almond").how == "unparsed" and read_json_reply("Almond").answer == "Almond"
    r = read_json_reply('{"reasoning_process": "r"}')  # official: the whole reply is the answer
    assert (r.answer, r.how) == ('{"reasoning_process": "r"}', "json-without-answer")
    assert read_json_reply('{"system_answer": 4}').answer == "4"


def test_options_resolve_from_the_preset():
    paper = method_options("full-text", FullTextOptions, {}, "paper")
    harmonized = method_options("full-text", FullTextOptions, {"top_p": 0.5}, "harmonized")
    assert paper.truncation == "head" and paper.max_context_tokens == 4096 and paper.date_format == "raw"
    assert harmonized.truncation == "recent" and harmonized.top_p == 0.5 and harmonized.max_context_tokens is None
    assert FullTextOptions.preset_table()["harmonized"]["layout"] == "h2hmem"
    with pytest.raises(ValueError, match="option truncation: expected 'head' \\| 'recent', got 'middle'"):
        method_options("full-text", FullTextOptions, {"truncation": "middle"}, "paper")
    with pytest.raises(ValueError, match="unknown preset"):
        method_options("full-text", FullTextOptions, {}, "papers")


async def test_paper_amem_attaches_the_question_image(sample_root, tmp_path):
    d = load_dialogue(with_images(sample_root, tmp_path))
    q = next(q for q in d.questions if q.images)
    answer, messages, config = await _ask("a-mem", d, q, "paper", chat=recording_chat('{"answer": "a lock"}'))
    assert [m.role for m in messages] == ["system", "user"] and messages[0].content == "You are a helpful AI assistant."
    parts = messages[1].content
    assert [type(p) for p in parts] == [ImagePart, TextPart] and parts[0].path == q.images[0].path  # image first
    assert config.max_tokens == 2000 and answer.text == "a lock"
    context = parts[1].text.split("Retrieved relevant conversation chunks:\n", 1)[1].split("\n\nQuestion: ")[0]
    first = context.splitlines()[0]
    assert first.startswith("[1] [Time:") and "] [Session:session" in first and answer.details["retrieved"] == 5
    # a text-only answer model gets the script's caption prompt instead of the image
    _, text_only, _ = await _ask("a-mem", d, q, "paper", chat=recording_chat(supports_images=False))
    assert isinstance(text_only[1].content, str) and text_only[0].content == "You are a helpful assistant."
    assert f"Image Description (for retrieval reference): caption of {q.images[0].file}" in text_only[1].content


def test_okapi_bm25_matches_the_rank_bm25_formula():
    """Hand-computed: N = 3, avgdl = 10/3. idf(cat) = ln(2.5/1.5) = 0.510826; 'a' is in 2 documents, its idf
    ln(1.5/2.5) < 0 becomes 0.25 × mean idf = 0.25 × (7 × 0.510826) / 9 = 0.099327; doc 1 (length 3):
    0.510826 × 2.5 / (1 + 1.5 × (0.25 + 0.75 × 3 / (10/3))) = 0.534896."""
    import numpy as np

    from h2hmem.memory._retrieval import OkapiBM25, official_minmax, word_tokens

    bm25 = OkapiBM25(["a cat sat", "a dog ran", "the bird flew high"])
    assert bm25.idf["a"] == pytest.approx(0.099327, abs=1e-6)
    assert np.allclose(bm25.scores("Cat!"), [0.534896, 0.0, 0.0], atol=1e-6)
    assert word_tokens("Kiki's cat, Miso.") == ("kiki", "'s", "cat", ",", "miso", ".")  # punctuation kept
    assert np.allclose(official_minmax(np.array([2.0, 1.0, 0.0])), [2 / (2 + 1e-6), 1 / (2 + 1e-6), 0.0])
    assert np.allclose(official_minmax(np.array([0.3, 0.3])), [0.3, 0.3])  # all equal: raw scores, as officially


async def test_paper_amem_construction_uses_the_official_prompts():
    """Note writer and evolution under paper: the script's prompts and JSON schemas; links named by memory index."""
    import datetime as dt
    import json as _json

    from mm_fakes import make_session

    def reply(req):
        text = req.user_text
        if req.stage != "memory_build":
            return "ok"
        if text.startswith("Generate a structured analysis"):
            return '{"keywords": ["cat"], "context": "Pets", "tags": ["animals"]}'
        return _json.dumps(
            {
                "should_evolve": True,
                "actions": ["strengthen", "update_neighbor"],
                "suggested_connections": ["0"],
                "tags_to_update": ["pets"],
                "new_context_neighborhood": ["About Miso"],
                "new_tags_neighborhood": [["cats"]],
            }
        )

    chat = recording_chat(reply)
    ctx = MemoryContext(dialogue_id="dyadic/dialogue1", chat=chat, embedder_factory=HashEmbedder, preset="paper")
    memory = resolve_method("a-mem")(ctx)
    await memory.observe(
        make_session(
            "session1",
            dt.date(2024, 3, 20),
            [("Kiki", "I adopted a cat named Miso.", None), ("Tom", "Miso is a lovely name.", None)],
        )
    )
    builds = [(r.messages, r.config) for r in chat.requests_for("memory_build")]
    (a_msgs, a_cfg), (_, _), (e_msgs, e_cfg) = builds  # analysis, analysis, evolution of the second note
    assert [m.role for m in a_msgs] == ["system", "user"] and a_msgs[0].content == "You are a helpful assistant."
    assert a_msgs[1].content.endswith("Content for analysis:\n[Kiki]: 2024-03-20:I adopted a cat named Miso.")
    assert a_cfg.temperature == 0.3 and a_cfg.max_tokens == 2000 and _json.loads(a_cfg.json_schema)["strict"] is True
    assert (
        "memory index:0\ttalk start time:2024-03-20_001\tmemory content: [Kiki]: 2024-03-20:I adopted a cat "
        "named Miso.\tmemory context: Pets\tmemory keywords: ['cat']\tmemory tags: ['animals']\n"
    ) in e_msgs[1].content
    assert "The number of neighbors is 1." in e_msgs[1].content and "should_evolve" in e_cfg.json_schema
    first, second = memory.store.notes
    assert second.links == [first.id] and second.tags == ["pets"]  # "0" = memory index 0
    assert first.tags == ["cats"] and first.context == "About Miso"


def test_native_paper_requests_send_a_list_of_parts_without_any_image():
    """Full (MM), MuRAG and NGM: the official scripts always sent ``content`` as a list of parts
    (``[text, *images]``), also when there is no image at all."""
    import datetime as dt

    from mm_fakes import make_question, make_session

    from h2hmem.memory._paper_native import full_mm_request, murag_request, ngm_request
    from h2hmem.memory._view import question_view

    s = make_session("session1", dt.date(2024, 3, 1), [("Ann", "hello there", None), ("Bob", "hi", None)])
    q = question_view(make_question("What did Ann say?"), lambda ref: None)
    hits = [(s, t) for t in s.turns]
    for messages in (
        full_mm_request([s], q, lambda ref: None, max_context_tokens=4096, max_images=10)[0],
        murag_request(hits, q, lambda ref: None, max_context_tokens=4096, max_images=5)[0],
        ngm_request(hits, q, lambda ref: None)[0],
    ):
        (user,) = messages
        assert user.as_parts and isinstance(user.content, list) and len(user.content) == 1
        assert isinstance(user.content[0], TextPart)


@pytest.mark.parametrize("name", ["full-mm", "murag", "ngm"])
def test_describe_follows_the_request_the_preset_chooses(name):
    # the manifest's method_description said "keep most recent turns", "'[speaker] date: text'" and
    # h2hmem's image order for paper runs, which send the official request
    cls = resolve_method(name)
    described = {}
    for preset in ("paper", "harmonized"):
        ctx = MemoryContext(dialogue_id="d", chat=recording_chat(), embedder_factory=HashEmbedder, preset=preset)
        described[preset] = cls(ctx, method_options(name, cls.Options, {}, preset)).describe()
    paper, harmonized = described["paper"], described["harmonized"]
    assert paper["images"] != harmonized["images"]
    if name == "full-mm":
        assert paper["truncation"].startswith("the dialogue's first 4096 cl100k tokens (head)")
        assert harmonized["truncation"] == "keep most recent turns; keep most recent images"
        assert "the question images, then the dialogue's images" in paper["images"]
    else:
        assert paper["images"].startswith("native (official request): after the text, the retrieved turns' images")
        assert paper["unit"] != harmonized["unit"]
    if name == "ngm":
        assert paper["unit"].startswith("1 turn: 'date:text'") and "no speaker" in paper["unit"]
