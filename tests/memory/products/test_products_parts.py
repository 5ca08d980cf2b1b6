"""The product-independent parts: the build marker decides reuse, turns go in rendered with their
own date and speaker, a memory's metadata or episode name maps back to its turns."""

from __future__ import annotations

import datetime as dt

import pytest

from h2hmem.data import ImageRef, Session, Turn
from h2hmem.memory import Evidence
from h2hmem.memory.products import BuildMarker, session_records
from h2hmem.memory.products._feed import (
    batch_name,
    batches,
    evidence_of,
    metadata_turns,
    parse_batch_name,
    turn_metadata,
)

FP = {"product": "mem0ai", "version": "2.2.1", "options": {"infer": True}}


def test_marker_reuses_only_a_sealed_store_with_the_same_fingerprint(tmp_path):
    m = BuildMarker(tmp_path, FP).open()
    assert not m.reused and m.store_dir.is_dir()
    (m.store_dir / "data").write_text("half")
    m.begin("session1")
    # killed here: the next open finds a dirty marker, deletes the store
    again = BuildMarker(tmp_path, FP).open()
    assert not again.reused and not (again.store_dir / "data").exists()
    (again.store_dir / "data").write_text("whole")
    again.begin("session1")
    again.begin("session2")
    again.seal()
    reused = BuildMarker(tmp_path, FP).open()
    assert reused.reused and reused.has("session2") and not reused.has("session3")
    assert (reused.store_dir / "data").read_text() == "whole"
    other = BuildMarker(tmp_path, {**FP, "version": "2.3.0"}).open()  # another version never reuses
    assert not other.reused and not (other.store_dir / "data").exists()


def test_a_torn_marker_is_not_trusted(tmp_path):
    m = BuildMarker(tmp_path, FP).open()
    m.begin("session1")
    m.seal()
    m.path.write_text('{"clean": tr')
    assert not BuildMarker(tmp_path, FP).open().reused


def test_session_records_carry_the_sessions_date_speaker_and_caption():
    s = Session(
        name="session3",
        number=3,
        date=dt.date(2024, 3, 20),
        raw_date="March 20, 2024",
        turns=(
            Turn(index=0, speaker="Xu Huaian", text="Look at this.", image=ImageRef(session="session3", file="1.png")),
            Turn(index=1, speaker="Lin Shuying", text=" Lovely! "),
        ),
    )
    captions = {"1.png": "a green rice cake"}
    records = session_records(s, lambda ref: captions.get(getattr(ref, "file", "")))
    assert [r.line for r in records] == [
        "[2024-03-20] Xu Huaian: Look at this. [Image 1.png in session3: a green rice cake]",
        "[2024-03-20] Lin Shuying: Lovely!",
    ]
    assert records[1].text == "Lin Shuying: Lovely!" and records[0].speaker == "Xu Huaian"
    undated = s.model_copy(update={"date": None})
    assert session_records(undated, lambda ref: None)[1].line == "[March 20, 2024] Lin Shuying: Lovely!"
    assert session_records(s.model_copy(update={"absent": True}), lambda ref: None) == []


def test_turns_travel_in_metadata_and_names():
    s = Session(
        name="session3",
        number=3,
        date=dt.date(2024, 3, 20),
        turns=tuple(Turn(index=i, speaker="A", text=str(i)) for i in range(5)),
    )
    groups = list(batches(session_records(s, lambda ref: None), 2))
    assert [[r.turn for r in g] for g in groups] == [[0, 1], [2, 3], [4]]
    meta = turn_metadata(groups[1])
    assert meta == {"h2hmem_session": "session3", "h2hmem_turns": "2,3", "h2hmem_date": "2024-03-20"}
    assert metadata_turns(meta) == ("session3", [2, 3]) and metadata_turns({"other": 1}) is None
    assert batch_name(groups[1]) == "session3/t2-3" and batch_name(groups[2]) == "session3/t4"
    assert parse_batch_name("session3/t2-3") == ("session3", [2, 3])
    assert parse_batch_name("session3/t4") == ("session3", [4])
    assert parse_batch_name("an episode") is None
    with pytest.raises(ValueError):
        list(batches([], 0))


def test_evidence_lists_each_turn_once_at_its_best_rank():
    ranked = [(("session3", [2, 3]), 0.9), (None, 0.8), (("session3", [3, 4]), 0.7), (("session1", []), None)]
    assert evidence_of(ranked) == [
        Evidence(session="session3", turn=2, score=0.9),
        Evidence(session="session3", turn=3, score=0.9),
        Evidence(session="session3", turn=4, score=0.7),
        Evidence(session="session1"),
    ]


async def test_images_a_product_sends_are_kept_in_the_dialogues_state_folder(tmp_path):
    """The gateway a run starts for a product stores data-URL images under the run's state folder,
    where the transcripts that refer to them stay, not in a temporary folder removed at the end."""
    import base64
    from contextlib import AsyncExitStack

    import httpx

    from h2hmem.memory import MemoryContext
    from h2hmem.memory.products._endpoint import product_endpoint
    from h2hmem.testing import ScriptedChatModel

    scripted = ScriptedChatModel(default="a cat", supports_images=True)
    ctx = MemoryContext(
        dialogue_id="dyadic/dialogue5", chat=scripted, state_dir=tmp_path / "state", embedder_factory=lambda: None
    )
    png = b"\x89PNG\r\n\x1a\n fake pixels"
    url = f"data:image/png;base64,{base64.b64encode(png).decode()}"
    async with AsyncExitStack() as stack:
        endpoint = await product_endpoint(ctx, stack)
        async with httpx.AsyncClient(base_url=endpoint.base_url) as http:
            reply = await http.post(
                "/chat/completions",
                json={
                    "model": "m",
                    "messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}}]}],
                },
            )
        assert reply.status_code == 200, reply.text
    (image,) = scripted.last.images
    assert image.path.parent == tmp_path / "state" / "gateway-images" and image.path.read_bytes() == png  # kept
