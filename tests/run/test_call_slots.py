"""Call slots (run/_slots.py): at most `concurrency` answer calls in flight, as many questions prepared
ahead, a freed slot sent at once, and the wait for a slot left out of a question's latency."""

from __future__ import annotations

import asyncio
import time

from fakes import PrepareLogMemory, fake_chat

from h2hmem.records import read_predictions
from h2hmem.run import RunConfig, run_benchmark


class LoggingChat:
    """``fake_chat()`` whose calls log ``("start" | "end", question text)`` into ``log`` and take
    ``hold`` loop turns, or advance ``clock`` by 1.0 at their end when given."""

    def __init__(self, log: list[tuple[str, str]], *, clock: list[float] | None = None):
        self.inner, self.log, self.clock = fake_chat(), log, clock
        self.in_flight = self.max_in_flight = 0

    def __getattr__(self, name):
        return getattr(self.inner, name)

    async def chat(self, messages, config=None, *, stage="answer"):
        text = messages[-1].content
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        self.log.append(("start", text))
        await asyncio.sleep(0.002)
        if self.clock is not None:
            self.clock[0] += 1.0
        self.log.append(("end", text))
        self.in_flight -= 1
        return await self.inner.chat(messages, config, stage=stage)


def _config(sample_root, tmp_path, concurrency, limit, method="fakes:PrepareLogMemory"):
    return RunConfig(
        data_root=sample_root,
        split="dyadic",
        method=method,
        out_dir=tmp_path / "runs",
        use_cache=False,
        concurrency=concurrency,
        dialogue_concurrency=1,
        limit=limit,
    )


def test_calls_are_bounded_and_prepared_questions_wait_for_a_slot(sample_root, tmp_path):
    PrepareLogMemory.log.clear()
    chat = LoggingChat(PrepareLogMemory.log)
    summary = run_benchmark(_config(sample_root, tmp_path, concurrency=3, limit=24), chat_model=chat, progress=False)
    assert summary.answered_now == 24 and summary.failed == 0
    log = PrepareLogMemory.log
    starts = [i for i, (kind, _) in enumerate(log) if kind == "start"]
    assert len(starts) == 24 and chat.max_in_flight == 3  # never more calls than `concurrency`
    # prepared ahead: the k-th call (k ≥ 4) takes the slot freed by the (k−3)-th reply, and its question
    # was prepared before that reply came (while the calls were in flight), not after it
    prepared = {text: i for i, (kind, text) in enumerate(log) if kind == "prepare"}
    ends = [i for i, (kind, _) in enumerate(log) if kind == "end"]
    for k, i in enumerate(starts[3:]):
        assert prepared[log[i][1]] < ends[k] < i
    # at most `concurrency` questions prepared and waiting: prepared − started ≤ 3 at every point,
    # and it reaches 3 (the look-ahead is used)
    waiting, most = 0, 0
    for kind, _ in log:
        waiting += {"prepare": 1, "start": -1}.get(kind, 0)
        most = max(most, waiting)
    assert most == 3


def test_waiting_for_a_slot_is_not_latency(sample_root, tmp_path, monkeypatch):
    # one slot; the clock moves only when a call ends, by 1.0: every question's own time is one call.
    # Question k (k ≥ 2) is prepared while question k-1 is in flight and waits 1.0 for the slot:
    # its wall time is 2.0, its latency 1.0
    clock = [0.0]
    monkeypatch.setattr(time, "perf_counter", lambda: clock[0])
    PrepareLogMemory.log.clear()
    chat = LoggingChat(PrepareLogMemory.log, clock=clock)
    summary = run_benchmark(_config(sample_root, tmp_path, concurrency=1, limit=6), chat_model=chat, progress=False)
    preds = read_predictions(summary.run_dir)
    assert [p.latency_s for p in preds] == [1.0] * 6
    assert clock[0] == 6.0


def test_calls_side_by_side_in_one_answer_count_only_the_time_the_question_just_waited(
    sample_root, tmp_path, monkeypatch
):
    # one slot, two calls per question side by side, the clock moving 1.0 when a call ends. Question 1:
    # its first call runs 0→1 while its second waits (not idle: a call of it runs), then 1→2: latency 2.0.
    # Question 2, prepared at 0, waits with both calls until 2 (2.0 only waiting, counted once, not
    # twice), then runs 2→4: wall 4.0, latency 2.0. Every question's latency is its two calls' time.
    clock = [0.0]
    monkeypatch.setattr(time, "perf_counter", lambda: clock[0])
    PrepareLogMemory.log.clear()
    chat = LoggingChat(PrepareLogMemory.log, clock=clock)
    cfg = _config(sample_root, tmp_path, concurrency=1, limit=5, method="fakes:TwinCallMemory")
    summary = run_benchmark(cfg, chat_model=chat, progress=False)
    preds = read_predictions(summary.run_dir)
    assert [p.latency_s for p in preds] == [2.0] * 5
    assert clock[0] == 10.0 and chat.max_in_flight == 1
