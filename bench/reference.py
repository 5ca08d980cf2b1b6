"""Workload 2's reference: the same questions answered the way the official scripts did it —
one question at a time in a plain loop, a synchronous OpenAI client, no cache, no concurrency,
no resume, all answers written to one JSON file at the end.

To make it "the same work", it builds the same memory (the same method class, so the same
retrieval and the same prompts) and calls the same HTTP endpoint; only the calling strategy
differs. Its ``chat`` blocks the thread for the whole HTTP call, so nothing overlaps.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

from h2hmem.llm import ChatResult, GenerationConfig, Message, Usage


class SequentialChat:
    """A :class:`~h2hmem.llm.ChatModel` that sends each request with the ``openai`` sync client
    and waits for it. Token counting and the context window are borrowed from the harness's
    model object, so full-text cuts its context exactly as in the harness."""

    supports_images = False

    def __init__(self, base_url: str, facts: Any, model: str = "mock"):
        from openai import OpenAI

        self.spec = f"openai:{model} (sequential reference)"
        self.model = model
        self.client = OpenAI(base_url=base_url, api_key="sk-bench-mock", timeout=120.0)
        self.context_tokens = facts.context_tokens
        self.count_tokens = facts.count_tokens
        self.usage = Usage()

    async def chat(
        self, messages: list[Message], config: GenerationConfig | None = None, *, stage: str = "answer"
    ) -> ChatResult:
        from h2hmem.llm._images import flatten_text, prepare_messages

        config = config or GenerationConfig()
        # a text-only client: image parts (the question image under the preset paper) become their caption text
        messages, _ = prepare_messages(messages, send_images=False)
        wire = [{"role": m.role, "content": flatten_text(m.content)} for m in messages]
        t0 = time.perf_counter()
        extra = {"top_p": config.top_p} if config.top_p is not None else {}
        resp = self.client.chat.completions.create(
            model=self.model,
            messages=wire,  # type: ignore[arg-type]
            temperature=config.temperature,
            max_tokens=config.max_tokens,
            **extra,
        )
        latency = time.perf_counter() - t0
        u = resp.usage
        usage = Usage(
            prompt_tokens=u.prompt_tokens if u else 0,
            completion_tokens=u.completion_tokens if u else 0,
            calls=1,
            latency_s=latency,
        )
        self.usage = self.usage + usage
        return ChatResult(
            text=resp.choices[0].message.content or "",
            model=self.spec,
            usage=usage,
            latency_s=latency,
            finish_reason=resp.choices[0].finish_reason,
        )


def reference_step(spec: dict[str, Any]) -> dict[str, Any]:
    """``spec``: data_root, method, limit, base_url, embedder, out_path. Returns wall and CPU
    seconds of the loop (dataset load included, as in the harness), calls and tokens."""
    from h2hmem.caption import CaptionStore
    from h2hmem.data import load_dataset
    from h2hmem.llm import load_chat_model
    from h2hmem.memory import MemoryContext, question_view, resolve_method
    from h2hmem.run import select_questions

    from ._embedders import make_embedder

    embedder = make_embedder(spec["embedder"])
    asyncio.run(embedder.embed(["warm-up"]))
    facts = load_chat_model("openai:mock", base_url=spec["base_url"], cache=None)
    chat = SequentialChat(spec["base_url"], facts)
    method_cls = resolve_method(spec["method"])
    loop = asyncio.new_event_loop()

    cpu0, t0 = time.process_time(), time.perf_counter()
    ds = load_dataset(Path(spec["data_root"]), "all")
    questions = select_questions(ds, spec.get("limit"))
    captions = CaptionStore(Path(spec["data_root"])).for_dialogue
    results: list[dict[str, Any]] = []
    for d in ds.dialogues:
        qs = [q for q in questions if q.split == d.split and q.dialogue == d.name]
        if not qs:
            continue
        ctx = MemoryContext(
            dialogue_id=d.id, chat=chat, captions=captions(d.split, d.name), embedder_factory=lambda: embedder
        )
        memory = method_cls(ctx)
        for s in d.sessions:
            loop.run_until_complete(memory.observe(s))
        for q in qs:
            ans = loop.run_until_complete(memory.answer(question_view(q, ctx.captions)))  # what the runner passes
            results.append({"question_id": q.id, "question": q.text, "answer": ans.text, "gold": q.gold})
    Path(spec["out_path"]).write_text(json.dumps(results, ensure_ascii=False, indent=1), encoding="utf-8")
    wall = time.perf_counter() - t0
    cpu = time.process_time() - cpu0
    loop.close()
    return {
        "wall_s": round(wall, 3),
        "cpu_s": round(cpu, 3),
        "questions": len(results),
        "client_calls": chat.usage.calls,
        "prompt_tokens": chat.usage.prompt_tokens,
        "completion_tokens": chat.usage.completion_tokens,
    }
