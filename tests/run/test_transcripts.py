"""Transcripts: the file format (gzip members, torn tails), what the model client records (paid,
cache hit, failed; images by reference; tags from the context), and what a run and the judge write."""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import json
import sys
from pathlib import Path

import pytest
from PIL import Image

from h2hmem.llm import (
    BadRequestError,
    GenerationConfig,
    ImagePart,
    Message,
    RetryPolicy,
    TextPart,
    load_chat_model,
    record_calls,
    tag_calls,
)
from h2hmem.records import JUDGE_TRANSCRIPTS, TRANSCRIPTS, TranscriptWriter, encode_record, read_transcripts
from h2hmem.run import RunConfig, run_benchmark
from h2hmem.testing import Fault, MockOpenAIServer

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1] / "reliability"))
from relkit import make_dataset

FAST = RetryPolicy(max_retries=1, initial_backoff_s=0.01, max_backoff_s=0.02)


# ----- the file ------------------------------------------------------------------------------------


def test_members_round_trip_and_stdlib_gzip_reads_the_file(tmp_path):
    path = tmp_path / "t.jsonl.gz"
    recs = [{"i": i, "text": "é" * i, "lone": "x"} for i in range(5)] + [{"bad": "caf\udce9"}]
    with TranscriptWriter(path) as w:
        for r in recs:
            w.write(r)
    assert w.written == 6
    assert read_transcripts(path) == recs
    with gzip.open(path, "rt", encoding="utf-8") as f:  # concatenated members = one gzip file
        lines = [json.loads(line) for line in f]
    assert lines == recs


def test_both_engines_write_one_standard_gzip_member_each_and_isal_is_the_default_where_installed():
    import importlib.util

    from h2hmem.records import ENGINE

    rec = {"stage": "answer", "messages": [{"role": "user", "content": "Mira: the cat is asleep. " * 200}], "x": 1.5}
    line = json.dumps(rec, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
    engines = ["zlib"] + (["isal"] if ENGINE == "isal" else [])
    for engine in engines:
        member = encode_record(rec, 1, engine)
        assert member[:2] == b"\x1f\x8b" and gzip.decompress(member) == line  # one member, the JSON line
        assert encode_record(rec, 1, engine) == member  # deterministic: no timestamp in the header
    assert ENGINE == ("isal" if importlib.util.find_spec("isal") else "zlib")
    with pytest.raises(ValueError, match="levels 0-3"):
        encode_record(rec, 6, "isal") if ENGINE == "isal" else encode_record(rec, 1, "isal")
    with pytest.raises(ValueError, match="not available"):
        encode_record(rec, 1, "brotli")


def test_a_torn_last_member_is_ignored_by_the_reader_and_cut_when_reopened(tmp_path):
    path = tmp_path / "t.jsonl.gz"
    with TranscriptWriter(path) as w:
        w.write({"n": 1})
        w.write({"n": 2})
    good = path.stat().st_size
    torn = encode_record({"n": 3, "pad": "z" * 5000})[:-7]  # cut inside the member (its trailer lost)
    with open(path, "ab") as f:
        f.write(torn)
    assert [r["n"] for r in read_transcripts(path)] == [1, 2]
    w = TranscriptWriter(path).open()
    w.write({"n": 4})
    w.close()
    assert w.torn_bytes_removed == len(torn)
    assert [r["n"] for r in read_transcripts(path)] == [1, 2, 4]
    assert path.stat().st_size > good


def test_damage_before_the_end_names_file_and_offset(tmp_path):
    path = tmp_path / "t.jsonl.gz"
    first = encode_record({"n": 1})
    path.write_bytes(first + b"\x1f\x8b\x08\x00garbage-not-deflate" + encode_record({"n": 2}))
    with pytest.raises(ValueError, match=rf"t.jsonl.gz: damaged gzip member at byte {len(first)}"):
        read_transcripts(path)


# ----- the model client ----------------------------------------------------------------------------


async def test_client_records_paid_then_cache_hit_with_the_tag_of_the_context(tmp_path):
    got: list[dict] = []
    with MockOpenAIServer() as srv:
        model = load_chat_model("openai:m", base_url=srv.base_url, cache=tmp_path / "c.sqlite", retry=FAST)
        msgs = [Message(role="system", content="be brief"), Message(role="user", content="What colour?")]
        cfg = GenerationConfig(temperature=0.0, max_tokens=50)
        with record_calls(got.append):
            with tag_calls(
                question_ids=["dyadic/dialogue1/session1/q0"], dialogue="dyadic/dialogue1", session="session1"
            ):
                first = await model.chat(msgs, cfg, stage="answer")
                second = await model.chat(msgs, cfg, stage="answer")
        await model.chat(msgs, cfg)  # outside record_calls: not recorded
        await model.aclose()
    assert len(got) == 2
    paid, hit = got
    assert paid["cached"] is False and paid["usage"]["calls"] == 1 and paid["error"] is None
    assert hit["cached"] is True and hit["usage"] == {**hit["usage"], "calls": 0, "cached_calls": 1}
    assert paid["cache_key"] == hit["cache_key"] and len(paid["cache_key"]) == 64
    for r in got:
        assert r["question_ids"] == ["dyadic/dialogue1/session1/q0"] and r["session"] == "session1"
        assert r["stage"] == "answer" and r["model"] == "openai:m"
        assert r["messages"] == [{"role": "system", "content": "be brief"}, {"role": "user", "content": "What colour?"}]
        assert r["params"] == {
            "temperature": 0.0,
            "max_tokens": 50,
            "json_mode": False,
            "seed": None,
            "top_p": None,
            "json_schema": None,
        }
    assert paid["reply"] == first.text == second.text == hit["reply"]
    assert paid["usage"]["prompt_tokens"] == first.usage.prompt_tokens > 0
    assert paid["latency_s"] >= 0 and paid["finish_reason"] == "stop"


async def test_images_are_recorded_by_file_and_hash_never_inlined(tmp_path):
    img = tmp_path / "cat.png"
    Image.new("RGB", (40, 30), (200, 10, 10)).save(img)
    got: list[dict] = []
    with MockOpenAIServer() as srv:
        model = load_chat_model("openai:m", base_url=srv.base_url, retry=FAST)
        msgs = [
            Message(
                role="user",
                content=[
                    TextPart(text="what is this?"),
                    ImagePart(name="session1/cat.png", path=img, caption="a red square"),
                    ImagePart(name="session2/gone.png", path=tmp_path / "gone.png"),
                ],
            )
        ]
        with record_calls(got.append):
            await model.chat(msgs)
        await model.aclose()
        sent = json.dumps(srv.requests[0])
    assert "base64" in sent  # the server got pixels …
    rec = got[0]
    assert "base64" not in json.dumps(rec)  # … the transcript only a reference
    assert rec["messages"][0]["content"] == [
        {"type": "text", "text": "what is this?"},
        {
            "type": "image",
            "name": "session1/cat.png",
            "path": str(img),
            "sha256": hashlib.sha256(img.read_bytes()).hexdigest(),
        },
        {"type": "text", "text": "[Image session2/gone.png]"},  # missing file: sent as text
    ]
    assert rec["images_substituted"] == 1


async def test_a_failed_call_is_recorded_with_its_error_and_no_reply():
    got: list[dict] = []
    with MockOpenAIServer(script=[Fault.http(400)]) as srv:
        model = load_chat_model("openai:m", base_url=srv.base_url, retry=FAST)
        with record_calls(got.append), pytest.raises(BadRequestError):
            await model.chat([Message(role="user", content="x")])
        await model.aclose()
    assert len(got) == 1 and got[0]["error"].startswith("BadRequestError") and got[0]["reply"] is None
    assert got[0]["usage"]["calls"] == 0 and got[0]["cached"] is False


async def test_concurrent_tasks_keep_their_own_tags():
    got: list[dict] = []
    with MockOpenAIServer(latency_s=0.02) as srv:
        model = load_chat_model("openai:m", base_url=srv.base_url, retry=FAST)

        async def one(i: int) -> None:
            with tag_calls(question_ids=[f"q{i}"]):
                await asyncio.sleep(0.001 * (5 - i))
                await model.chat([Message(role="user", content=f"question {i}")])

        with record_calls(got.append):
            await asyncio.gather(*(one(i) for i in range(5)))
        await model.aclose()
    assert sorted((r["question_ids"][0], r["messages"][0]["content"]) for r in got) == [
        (f"q{i}", f"question {i}") for i in range(5)
    ]


# ----- a run and the judge -------------------------------------------------------------------------


def _run(tmp_path: Path, srv: MockOpenAIServer, **kw) -> Path:
    synth = make_dataset(tmp_path / "data", dialogues=1, sessions=2, questions_per_session=2, multi_party=False)
    cfg = RunConfig(
        data_root=synth.root,
        method="transcript_memory:SummaryMemory",
        model="openai:mock",
        base_url=[srv.base_url],
        out_dir=tmp_path / "runs",
        run_id="r",
        cache_path=tmp_path / "c.sqlite",
        concurrency=2,
        **kw,
    )
    run_benchmark(cfg, progress=False)
    return cfg.run_dir


def test_a_run_records_build_calls_by_session_and_answer_calls_by_question(tmp_path):
    with MockOpenAIServer() as srv:
        run_dir = _run(tmp_path, srv)
        chat_calls = srv.endpoints.count("chat")
    recs = read_transcripts(run_dir)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["transcripts"] == TRANSCRIPTS
    build = [r for r in recs if r["stage"] == "memory_build"]
    answers = [r for r in recs if r["stage"] == "answer"]
    assert sorted((r["dialogue"], r["session"], r["question_ids"]) for r in build) == [
        ("dyadic/dialogue1", "session1", []),
        ("dyadic/dialogue1", "session2", []),
    ]
    preds = [json.loads(line) for line in (run_dir / "predictions.jsonl").read_text().splitlines()]
    assert sorted(r["question_ids"][0] for r in answers) == sorted(p["question_id"] for p in preds)
    assert len(preds) == 6 and len(recs) == chat_calls == 8
    assert all(r["invocation"] == 0 and not r["cached"] for r in recs)
    by_q = {r["question_ids"][0]: r for r in answers}
    for p in preds:  # the recorded reply is the recorded answer; the prompt holds the question
        assert by_q[p["question_id"]]["reply"].strip() == p["answer"]
        assert p["question"] in by_q[p["question_id"]]["messages"][-1]["content"]
    assert manifest["usage"]["answer"]["calls"] == len(answers) and manifest["usage"]["memory_build"]["calls"] == 2


def test_no_transcripts_writes_no_file(tmp_path):
    with MockOpenAIServer() as srv:
        run_dir = _run(tmp_path, srv, transcripts=False)
    assert not (run_dir / TRANSCRIPTS).exists()
    assert json.loads((run_dir / "manifest.json").read_text())["transcripts"] is None


def _judge_responder(body: dict) -> str:
    import re

    text = body["messages"][-1]["content"]
    ids = re.findall(r"^\[(q\d+)\]$", text, flags=re.M)
    return json.dumps({"judgments": [{"question_id": i, "score": 0.5, "reasoning": f"half for {i}"} for i in ids]})


def test_judge_calls_go_to_their_own_file_tagged_with_the_batch(tmp_path):
    from h2hmem.metrics import evaluate_run

    with MockOpenAIServer() as srv:
        run_dir = _run(tmp_path, srv)
        srv.responder = _judge_responder
        judge = load_chat_model("openai:judge", base_url=srv.base_url, retry=FAST)
        # the scripted judge answers in our rubric's format (preset harmonized)
        evaluate_run(run_dir, ["lexical", "judge"], judge_model=judge, n_boot=0, preset="harmonized")
    recs = read_transcripts(run_dir / JUDGE_TRANSCRIPTS)
    assert {r["stage"] for r in recs} == {"judge"}
    # one call per (dialogue, session): session0, session1, session2 with 2 questions each
    assert sorted(r["question_ids"] for r in recs) == [
        [f"dyadic/dialogue1/session{k}/q0", f"dyadic/dialogue1/session{k}/q1"] for k in range(3)
    ]
    assert all("half for q1" in r["reply"] for r in recs)


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_transcript_writer_on_a_full_disk_names_its_file_on_write_and_on_close():
    """Both the failed write and the close after it raise LocalIOError naming the file (before the
    close re-flushed the buffer outside the guard: a bare OSError, which the gateway printed)."""
    from h2hmem import LocalIOError

    w = TranscriptWriter(Path("/dev/full")).open()
    with pytest.raises(LocalIOError, match=r"^local I/O error: /dev/full: \[Errno 28\]"):
        w.write({"a": 1})
    with pytest.raises(LocalIOError, match=r"^local I/O error: /dev/full: "):
        w.close()
    w.close()  # closed: nothing left to do
