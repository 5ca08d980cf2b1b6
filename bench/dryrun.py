"""Dry run vs real run on the full-scale synthetic data (issue 16): ``python -m bench.dryrun``.

For naive-rag (hashed embedder, as in the harness benchmarks) and full-text: ``estimate_run``
with a fresh mock server (which must receive zero requests), then the real run against the
same mock; the dry run's answer prompt tokens are compared with the prompt tokens the mock
counted for the requests it received (both cl100k: the model is ``openai:mock``). Writes
``bench/results/dryrun.json``.
"""

from __future__ import annotations

import json
import platform
import tempfile
import time
from pathlib import Path

from h2hmem.run import RunConfig, estimate_run, run_benchmark
from h2hmem.testing import MockOpenAIServer

from ._data import ensure_dataset
from ._embedders import make_embedder

RESULTS = Path(__file__).resolve().parent / "results" / "dryrun.json"


def measure(method: str, root: Path, work: Path) -> dict:
    with MockOpenAIServer(keep_requests=False) as server:
        cfg = RunConfig(
            data_root=root,
            method=method,
            models={"model": "openai:mock", "base_url": [server.base_url]},
            out_dir=work / "runs",
            execution={"prices": {"mock": (0.10, 0.40)}, "cache_path": work / f"{method}.sqlite", "concurrency": 32},
        )
        t0 = time.perf_counter()
        est = estimate_run(cfg, embedder=make_embedder("hashed"))
        dry_s = time.perf_counter() - t0
        calls_during_dry_run = server.calls
        t0 = time.perf_counter()
        run_benchmark(cfg, embedder=make_embedder("hashed"), progress=False)
        run_s = time.perf_counter() - t0
        sent = json.loads((cfg.run_dir / "manifest.json").read_text())["usage"]["answer"]
    a = est.stages["answer"]
    return {
        "method": method,
        "questions": est.questions,
        "dry_run_model_calls": calls_during_dry_run,
        "dry_run_calls": a.calls,
        "real_calls": server.calls,
        "dry_run_prompt_tokens": a.prompt_tokens,
        "sent_prompt_tokens": sent["prompt_tokens"],
        "relative_difference": abs(a.prompt_tokens - sent["prompt_tokens"]) / max(1, sent["prompt_tokens"]),
        "dry_run_completion_estimate": a.completion_tokens,
        "sent_completion_tokens": sent["completion_tokens"],
        "dry_run_cost_usd": a.cost_usd,
        "dry_run_s": round(dry_s, 2),
        "real_run_s": round(run_s, 2),
    }


def main() -> None:
    root, _ = ensure_dataset("full")
    rows = []
    with tempfile.TemporaryDirectory(prefix="h2hmem-bench-dryrun-") as tmp:
        for method in ("naive-rag", "full-text"):
            rows.append(measure(method, root, Path(tmp)))
            print(json.dumps(rows[-1]), flush=True)
    out = {
        "workload": "dryrun",
        "machine": platform.platform(),
        "python": platform.python_version(),
        "data": "synthesize_dataset(scale='full', seed=0)",
        "rows": rows,
        "targets": {
            "dry_run_model_calls == 0": all(r["dry_run_model_calls"] == 0 for r in rows),
            "prompt tokens within 1%": all(r["relative_difference"] <= 0.01 for r in rows),
        },
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(out, indent=1))
    print(json.dumps(out["targets"]))


if __name__ == "__main__":
    main()
