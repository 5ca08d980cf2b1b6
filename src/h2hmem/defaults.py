"""The one source of h2hmem's default settings.

Every consumer — the command-line options, :class:`~h2hmem.run.RunConfig`, the model clients, the
methods' shared answer settings, the judge, the captioner and the report — takes its default from
here, so a default is changed in one place. Values that are protocol data of the official scripts
(``memory/prompts/paper/*.json``, e.g. A-Mem's ``max_tokens`` 2,000) stay in those files; the
presets' named choices stay in each stage's preset table (:mod:`h2hmem.presets`).

This module sits in the bottom layer (no h2hmem imports), beside :mod:`h2hmem.presets`.
Sources: ``docs/baselines.md`` (answer settings, caption model), ``docs/metric-definitions.md``
§2–3 (judge, bootstrap).
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

# --- answer generation (docs/baselines.md: the paper's answer call) ---
ANSWER_TEMPERATURE: Final = 0.1
"""Answer sampling temperature (published: 0.1)."""
ANSWER_MAX_TOKENS: Final = 1024
"""New-token limit of the answer call (published: 1,024)."""

# --- memory methods: knobs shared by every method that has them ---
TOP_K: Final = 5
"""Memory units retrieved per question (official ``evaluate.sh``: TOP_K=5)."""

# --- models ---
ANSWER_MODEL: Final = "local:smollm2"
"""Answer model spec of ``h2hmem run`` (offline default; the paper used API models)."""
EMBEDDER: Final = "minilm"
"""Text embedder spec (all-MiniLM-L6-v2, the baselines' retriever)."""

# --- what a run computes ---
METHOD: Final = "naive-rag"
"""Memory method of ``h2hmem run``."""
SPLIT: Final = "all"
"""Dataset split: ``dyadic``, ``multi-party`` or ``all``."""
PROTOCOL: Final = "full"
"""``full``: observe every session, then ask (the official protocol)."""
RUNS_DIR: Final = Path("runs")
"""Folder holding run directories."""

# --- execution (how a run or scoring pass is carried out; not part of any result) ---
CONCURRENCY: Final = 8
"""Model calls in flight (answers, judge calls, captions)."""
DIALOGUE_CONCURRENCY: Final = 4
"""Dialogues whose memory is built at the same time."""
TIMEOUT_S: Final = 120.0
"""Seconds one model call may take before it is retried."""
MAX_RETRIES: Final = 5
"""Retries of a failed model call (429, 5xx, timeouts, broken replies)."""

# --- judge and statistics (docs/metric-definitions.md) ---
JUDGE_MODEL: Final = "openai:gpt-4o-mini"
"""The official judge model."""
JUDGE_TEMPERATURE: Final = 0.0
"""The official judge's temperature (the script's default, nothing else sent)."""
N_BOOT: Final = 1000
"""Bootstrap resamples for the 95% confidence intervals (spec §3: at least 1,000)."""

# --- captions (docs/baselines.md; official caption/gpt_4o_caption.py) ---
CAPTION_MODEL: Final = "openai:gpt-4o"
"""The paper captioned every image with GPT-4o."""
CAPTION_MAX_TOKENS: Final = 256
"""Caption limit in ``cl100k_base`` tokens; longer captions are cut (paper: 256)."""
CAPTION_TEMPERATURE: Final = 0.7
"""Caption sampling temperature (official: 0.7)."""
CAPTION_MAX_NEW_TOKENS: Final = 1200
"""Generation limit sent to the caption model before the cut (official: 1,200)."""

# --- leaderboard service (docs/leaderboard.md) ---
LEADERBOARD_SESSION_IDLE_MINUTES: Final = 30.0
"""An administrator's session ends after this many minutes without a request."""
LEADERBOARD_SESSION_HOURS: Final = 8.0
"""An administrator's session ends this many hours after login, however active."""
