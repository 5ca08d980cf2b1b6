"""mem0's extraction prompt fits ``local:qwen2.5-coder-1.5b``'s context with mem0's reply budget left.

mem0 2.2.1's system prompt alone is 7,924 Qwen tokens; with the 8,192-token context the embedded
models had, its first extraction call for six sample turns (8,411 tokens) was refused by llama.cpp
("Requested tokens (8411) exceed context window of 8192") and every mem0 call with Qwen failed.
Here the fullest prompt mem0 builds for this data — 10 earlier messages, 10 existing memories (the
most it shows), a batch of 6 new turns, all real sample turns — is counted with Qwen's own
tokenizer (vocabulary only, no weights) against the context the backend requests.
"""

from __future__ import annotations

import importlib.util

import pytest

from h2hmem.data import load_dataset
from h2hmem.llm import LOCAL_MODELS

if importlib.util.find_spec("mem0") is None or importlib.util.find_spec("llama_cpp") is None:
    pytest.skip("mem0ai or llama-cpp-python is not installed", allow_module_level=True)
MEM0_MAX_TOKENS = 2000
"""mem0's default reply budget (``BaseLlmConfig.max_tokens``)."""


def test_the_fullest_mem0_prompt_fits_qwens_context(sample_root):
    import llama_cpp

    from h2hmem.llm import local_model_path
    from h2hmem.memory._protocol import no_captions
    from h2hmem.memory.products._feed import session_records
    from h2hmem.memory.products.mem0._store import import_mem0

    try:
        path = local_model_path("qwen2.5-coder-1.5b")
    except RuntimeError as e:  # the extra local-qwen is not installed
        pytest.skip(str(e))
    import_mem0()  # telemetry off before mem0's modules load
    from mem0.configs.prompts import ADDITIVE_EXTRACTION_PROMPT, generate_additive_extraction_prompt
    from mem0.memory.utils import parse_messages

    ds = load_dataset(sample_root, "dyadic", strict=False)
    d = next(x for x in ds.dialogues if x.id == "dyadic/dialogue10")
    # the longest turns of the sample's longest dialogue, rendered as the adapter sends them
    lines = sorted((r.line for s in d.present_sessions for r in session_records(s, no_captions)), key=len)[::-1]
    new = [{"role": "user", "content": line} for line in lines[:6]]
    user = generate_additive_extraction_prompt(
        existing_memories=[{"id": str(i), "text": line} for i, line in enumerate(lines[6:16])],
        new_messages=parse_messages(new),
        last_k_messages=[{"role": "user", "content": line} for line in lines[16:26]],
        current_date="2024-03-20",
        timestamp="2024-03-20",
    )
    vocab = llama_cpp.Llama(str(path), vocab_only=True, verbose=False)
    chat = f"<|im_start|>system\n{ADDITIVE_EXTRACTION_PROMPT}<|im_end|>\n<|im_start|>user\n{user}<|im_end|>\n"
    tokens = len(vocab.tokenize(chat.encode("utf-8"), add_bos=False, special=True))
    system = len(vocab.tokenize(ADDITIVE_EXTRACTION_PROMPT.encode("utf-8"), add_bos=False))
    assert system > 7_500  # why 8,192 was not enough
    assert tokens + MEM0_MAX_TOKENS <= LOCAL_MODELS["qwen2.5-coder-1.5b"].context_tokens, tokens
