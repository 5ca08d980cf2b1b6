"""Run :class:`h2hmem.testing.MockOpenAIServer` in a process of its own (``python -m bench._mockserve``).

Why a separate process: the mock server counts prompt tokens with tiktoken for every request
(8k-token prompts for full-text); in the harness's own process that CPU work would compete with
the harness for the GIL and be billed as harness overhead.

Protocol on stdin/stdout (one line each): on start it prints ``{"port": P}``; then ``stats``
prints ``{"calls": …, "chat_calls": …, "max_in_flight": …, "cpu_s": …}`` (``cpu_s``: CPU seconds
the server process used), ``reset`` zeroes them and answers ``{}``; end of input stops the server.
Answers come from :func:`excerpt_responder`.
"""

from __future__ import annotations

import argparse
import functools
import json
import re
import sys
import time
import zlib
from typing import Any

ANSWER_WORDS = 24
"""Length of a mock answer in words: about a short sentence, like the baselines' answers."""


def excerpt_responder(body: dict[str, Any]) -> str:
    """A deterministic answer that reads like one: up to :data:`ANSWER_WORDS` words of one line of
    the prompt's memory, the line chosen by a CRC-32 of the question. Real-length answers make
    the lexical-scoring workload and the completion-token counts realistic (the default mock
    answer is a 21-character hash)."""
    text = ""
    for msg in body.get("messages") or []:
        if isinstance(msg, dict) and msg.get("role") == "user" and isinstance(msg.get("content"), str):
            text = msg["content"]
    memory, _, question = text.rpartition("Question:")
    lines = [ln for ln in memory.splitlines()[1:] if ln.strip()] or [question]
    line = lines[zlib.crc32(question.encode("utf-8")) % len(lines)]
    return " ".join(line.split(":", 1)[-1].split()[:ANSWER_WORDS]) or "Not mentioned."


_SPLIT = re.compile(r"\n(?=Question:)")


@functools.lru_cache(maxsize=4096)
def _count_cached(text: str) -> int:
    from h2hmem.llm import count_tokens

    return count_tokens(text)


def prefix_cached_count(text: str, encoding: str = "cl100k_base") -> int:
    """Exactly ``count_tokens(text)``, with the memory part of an answer prompt counted once.

    An answer prompt is ``<memory>\nQuestion: …``; full-text sends the same 6–8k-token memory
    with every question of a dialogue, and the mock server counting it afresh each time costs
    ~4 ms of its single event loop per request (≈ 8 s per full run, serialised across requests).
    cl100k/o200k pre-tokenisation never joins a newline with a following letter, so splitting
    right after that newline gives the same total (``tests/bench`` checks it on real prompts).
    """
    from h2hmem.llm import count_tokens

    if encoding != "cl100k_base":
        return count_tokens(text, encoding)
    m = None
    for m in _SPLIT.finditer(text):  # noqa: B007 — the last match is wanted
        pass
    if m is None:
        return count_tokens(text)
    return _count_cached(text[: m.end()]) + count_tokens(text[m.end() :])


class _Discard(list):
    def append(self, item: object) -> None:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench._mockserve")
    parser.add_argument("--latency", type=float, required=True, help="seconds per API request")
    parser.add_argument("--tokens-per-s", type=float, default=None)
    args = parser.parse_args()

    from h2hmem.llm import count_tokens
    from h2hmem.testing import MockOpenAIServer, _mock_server

    # bench-only work-around (see prefix_cached_count): same counts, memory counted once
    _mock_server.count_tokens = prefix_cached_count

    srv = MockOpenAIServer(latency_s=args.latency, tokens_per_s=args.tokens_per_s, responder=excerpt_responder)
    # The server keeps every request body in ``srv.requests``; 22k full-text prompts of ~32 KB
    # would hold ~700 MB. Nothing here reads them, so they are not kept.
    srv.requests = _Discard()
    count_tokens("warm up")  # loads tiktoken's BPE ranks now, not during the first request
    srv.start()
    cpu0 = time.process_time()
    print(json.dumps({"port": srv.port}), flush=True)
    for line in sys.stdin:
        cmd = line.strip()
        if cmd == "stats":
            print(
                json.dumps(
                    {
                        "calls": srv.calls,
                        "chat_calls": srv.endpoints.count("chat"),
                        "max_in_flight": srv.max_in_flight,
                        "cpu_s": round(time.process_time() - cpu0, 3),
                    }
                ),
                flush=True,
            )
        elif cmd == "reset":
            srv.reset_stats()
            cpu0 = time.process_time()
            print("{}", flush=True)
        elif cmd:
            print(json.dumps({"error": f"unknown command {cmd!r}"}), flush=True)
    srv.stop()


if __name__ == "__main__":
    main()
