"""bench/hostcheck.py: the host comparison (calibration, naive-rag cold and cached with bm25s imported two ways)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from bench import hostcheck  # noqa: E402


def test_calibration_work_is_the_fixed_amount_its_docstring_says():
    # each record's text "turn {i} of session {j}" has 5 words; only full batches of 64 are summed
    assert hostcheck.calibration_work(64) == 64 * 5
    assert hostcheck.calibration_work(100) == 64 * 5
    assert hostcheck.calibration_work(128) == 2 * 64 * 5


def test_hostcheck_rows_alternate_imports_and_count_calls(tmp_path):
    result = hostcheck.measure(1, tmp_path, scale="small", latency_s=0.02)
    rows = result["rows"]
    assert [(r["imports"], r["step"]) for r in rows] == [
        ("-", "calibration"),
        ("h2hmem", "cold"),
        ("h2hmem", "cached rerun"),
        ("plain", "cold"),
        ("plain", "cached rerun"),
    ]
    assert rows[0]["best_ms"] > 0 and rows[0]["median_ms"] >= rows[0]["best_ms"]
    for r in rows[1:]:
        n = r["questions"]
        assert n > 0 and r["failed"] == 0
        if r["step"] == "cold":  # every question paid once, nothing from the cache
            assert (r["client_calls"], r["cached_calls"]) == (n, 0)
        else:  # a new run dir on the cold run's cache: nothing paid
            assert (r["client_calls"], r["cached_calls"]) == (0, n)
        assert r["cpu_ms_per_q_excl"] == round(1000 * (r["cpu_s"] - (r["retrieval_s"] or 0.0)) / n, 3)
        assert r["os_threads"] >= 1 and isinstance(r["jax"], bool) and isinstance(r["numba"], bool)
    h2hmem_rows = [r for r in rows if r["imports"] == "h2hmem"]
    assert not any(r["jax"] or r["numba"] for r in h2hmem_rows)  # h2hmem's import keeps both out
    assert result["settings"]["dataset"] == "small" and json.dumps(result)  # plain JSON
