"""Gold-free method inputs: a method gets a QuestionView (no gold, no gold or home session, images
by content only), and nothing it receives names a session or a dataset image file; the six
baselines run on it; the answers are joined back to the right questions."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest
from fakes import SnoopMemory, fake_chat

from h2hmem.data import load_dataset, synthesize_dataset
from h2hmem.memory import GRANTABLE, WITHHELD, question_view
from h2hmem.records import read_predictions
from h2hmem.run import RunConfig, run_benchmark
from h2hmem.run._facts import CountedCaptions, run_components, summed_stats
from h2hmem.testing import hashed_embedding

SIX = ("full-text", "naive-rag", "a-mem", "full-mm", "murag", "ngm")
_PARAMS = {"murag": {"encoder": "text"}, "ngm": {"encoder": "text"}}  # never load GME weights in a test


class HashEmbedder:
    name = "hash-64"

    def __init__(self):
        self.texts: list[str] = []

    async def embed(self, texts):
        self.texts.extend(texts)
        return np.array([hashed_embedding(t, 64) for t in texts], dtype=np.float32).reshape(len(texts), 64)


@pytest.fixture(scope="module")
def synth(tmp_path_factory):
    root = tmp_path_factory.mktemp("synth") / "ds"
    synthesize_dataset(root)
    return root


def _names(root):
    """Every session folder name and image file name of the dataset."""
    ds = load_dataset(root)
    files = {t.image.file for d in ds.dialogues for s in d.sessions for t in s.turns if t.image}
    files |= {i.file for q in ds.questions for i in q.images}
    return ds, files


def test_plugin_gets_no_gold_home_or_file_names(synth, tmp_path):
    for box in (SnoopMemory.refused, SnoopMemory.leaked):
        box.clear()
    SnoopMemory.received.clear()
    SnoopMemory.image_bytes.clear()
    cfg = RunConfig(data_root=synth, method="fakes:SnoopMemory", out_dir=tmp_path / "runs", use_cache=False)
    summary = run_benchmark(cfg, chat_model=fake_chat(), progress=False)
    assert summary.failed == 0 and summary.questions == 60
    assert SnoopMemory.leaked == {}
    for name in WITHHELD:
        msg = SnoopMemory.refused[f"QuestionView.{name}"]
        assert "do not get" in msg and WITHHELD[name] in msg
    assert "not granted" in SnoopMemory.refused["QuestionView.home_session"]
    assert "content only" in SnoopMemory.refused["QuestionImage.session"]
    assert "content only" in SnoopMemory.refused["QuestionImage.file"]
    ds, files = _names(synth)
    assert sum(len(q.images) for q in ds.questions) == 4 == len(SnoopMemory.image_bytes)
    blob = "\n".join(SnoopMemory.received)
    assert "question's image" in blob
    assert not re.search(r"session\s*\d", blob, re.IGNORECASE), re.search(r".{40}session\s*\d.{20}", blob, re.I)
    assert not [f for f in files if f in blob]
    # the pixels still arrive: the copies hold the dataset files' bytes
    originals = {i.path.read_bytes() for q in ds.questions for i in q.images}
    assert set(SnoopMemory.image_bytes) == originals
    # the runner joined every answer back to its own question
    preds = read_predictions(summary.run_dir)
    assert {p.question_id for p in preds} == {q.id for q in ds.questions}
    assert all(p.answer == "ok" for p in preds)
    assert summary.method_stats == {}


@pytest.mark.parametrize("method", SIX)
def test_six_baselines_run_on_the_view(synth, tmp_path, method):
    chat = fake_chat(supports_images=method in ("full-mm", "murag", "ngm"))
    emb = HashEmbedder()
    cfg = RunConfig(
        data_root=synth,
        method=method,
        method_params=_PARAMS.get(method, {}),
        out_dir=tmp_path / "runs",
        use_cache=False,
    )
    summary = run_benchmark(cfg, chat_model=chat, embedder=emb, progress=False)
    assert summary.failed == 0 and summary.questions == 60
    ds, files = _names(synth)
    with_image = [q for q in ds.questions if q.images]
    # retrieval queries (embedded texts holding a question's text) never carry its image's file name
    queries = [(q, t) for q in with_image for t in emb.texts if q.text.strip() in t]
    assert len(queries) >= (len(with_image) if method not in ("full-text", "full-mm") else 0)
    for q, text in queries:
        assert q.images[0].file not in text and not re.search(r"in session\d", text.split(q.text.strip())[1])
    # the answer prompt names the question image "the question's image", never by file
    for q in with_image:
        req = next(r for r in chat.requests_for("answer") if q.text.strip() in r.text)
        q_parts = [p for p in req.images if p.name == "the question's image"]
        text = req.text
        attached = [line for line in text.splitlines() if "attached to the question" in line]
        # A-Mem under the preset paper, text-only model: the script's text prompt (with the caption when there is one)
        official_amem = "Please answer based on the above memory content(text and image):" in text
        assert q_parts or any("the question's image" in line for line in attached) or official_amem, (method, attached)
        assert not any(q.images[0].file in line for line in attached)


def test_view_fields_and_granted_field(synth, tmp_path):
    ds = load_dataset(synth)
    q = next(q for q in ds.questions if q.images)
    v = question_view(q, image_dir=tmp_path / "img")
    assert v.text == q.text and v.task_type == q.task_type and v.main_category == q.main_category
    assert v.dialogue_id == f"{q.split}/{q.dialogue}" and len(v.key) == 16
    assert v.images[0].path.parent == tmp_path / "img" and v.images[0].path.name == v.images[0].sha256
    with pytest.raises(AttributeError, match="gold answer is what the answer is scored against"):
        _ = v.gold
    with pytest.raises(AttributeError, match="a method gets key, text"):
        _ = v.whatever
    with pytest.raises(dataclasses.FrozenInstanceError):
        v.text = "changed"  # frozen
    granted = question_view(q, image_dir=tmp_path / "img", fields=("home_session",))
    assert granted.home_session == q.session
    with pytest.raises(ValueError, match="not grantable"):
        question_view(q, fields=("gold",))
    assert set(GRANTABLE) == {"home_session"}


def test_counted_captions_find_question_image_by_content(synth, tmp_path):
    ds = load_dataset(synth)
    q = next(q for q in ds.questions if q.images)
    ref = q.images[0]
    counted = CountedCaptions(lambda r: "a red card" if r == ref else None)
    view = counted.view(q, tmp_path / "img")
    img = view.images[0]
    assert img.caption == "a red card"
    assert counted(img) == "a red card"  # by content hash, through the context lookup
    other = next(t.image for d in ds.dialogues for s in d.sessions for t in s.turns if t.image and t.image != ref)
    assert counted(other) is None
    assert counted.asked == {ref.key, other.key} and counted.missing == {other.key}


def test_run_components_and_summed_stats():
    from h2hmem.memory.naive_rag._memory import NaiveRAGMemory
    from h2hmem.run import RunConfig

    config = RunConfig(data_root=".", method="naive-rag", method_params={"top_k": 8}, preset="harmonized")
    options = NaiveRAGMemory.Options.model_validate({**config.method_params, "preset": config.preset})
    specs = run_components(config, NaiveRAGMemory, options, chat=None, builder=None)
    memory = specs["memory"].options
    assert {k: memory.pop(k) for k in ("top_k", "min_similarity")} == {"top_k": 8, "min_similarity": 0.1}
    assert memory["layout"] == "h2hmem" and memory["top_p"] is None  # the preset's values, resolved
    assert "preset" not in memory  # recorded once, in config.preset
    assert specs["answer_model"].name == config.models.model and "build_model" not in specs
    assert summed_stats({"d1": {"analysis_failures": 2, "ok": True}, "d2": {"analysis_failures": 1}}) == {
        "analysis_failures": 3
    }


def test_view_copies_and_pickles(synth, tmp_path):
    import copy
    import pickle

    q = next(q for q in load_dataset(synth).questions if q.images)
    v = question_view(q, image_dir=tmp_path / "img", fields=("home_session",))
    assert copy.deepcopy(v) == v == pickle.loads(pickle.dumps(v))
    assert pickle.loads(pickle.dumps(v)).home_session == q.session
