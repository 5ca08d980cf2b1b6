"""Two real runs of the shared sample's dyadic split (the mock model), scored with lexical,
evidence and a scripted judge (the ``sample_runs`` fixture of conftest.py builds them once).

The sample is copied first and changed in two ways: one turn of the chosen question's gold session
carries HTML (escaping must show it as text), and turn 0 of that session gets a real PNG (the
sample is text only) so an image thumbnail can be served.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from PIL import Image

from h2hmem.llm import load_chat_model
from h2hmem.metrics import evaluate_run
from h2hmem.run import RunConfig, run_benchmark
from h2hmem.testing import MockOpenAIServer

QID = "dyadic/dialogue5/session1/q0"
"""UPR question whose gold session (session1) is present in the sample."""
HTML = '<b id="injected">bold</b><script>document.title="pwned"</script><img src=x onerror="document.title=\'pwned\'">'
INJECTED_TURN = 3
LEVELS = (0.0, 0.25, 0.5, 0.75, 1.0)


def judge_score(item_text: str) -> float:
    """The scripted judge's score of one item: a level chosen by a hash of the item's text."""
    return LEVELS[hashlib.sha256(item_text.encode()).digest()[0] % 5]


def judge_responder(body: dict) -> str:
    text = body["messages"][-1]["content"]
    items = re.split(r"^\[(q\d+)\]$", text, flags=re.M)[1:]
    out = [
        {"question_id": items[i], "score": judge_score(items[i + 1]), "reasoning": f"scripted <i>{items[i]}</i>"}
        for i in range(0, len(items), 2)
    ]
    return json.dumps({"judgments": out})


@dataclass
class SampleRuns:
    data: Path
    runs: list[Path]
    """naive-rag, then full-text."""
    question_text: str


def _prepare(sample_root: Path, dest: Path) -> str:
    shutil.copytree(sample_root / "dyadic", dest / "dyadic")
    sdir = dest / "dyadic" / "dialogue5" / "scenes" / "session1"
    questions = json.loads((sdir / "questions.json").read_text(encoding="utf-8"))["questions"]
    qtext = questions[0]["question"]["text"]
    session = json.loads((sdir / "session.json").read_text(encoding="utf-8"))
    # the question's own words first, so the hashed-embedding retriever ranks this turn high
    session["dialogue"][INJECTED_TURN]["content"]["text"] = f"{qtext} {HTML}"
    (sdir / "session.json").write_text(json.dumps(session, ensure_ascii=False), encoding="utf-8")
    image = session["dialogue"][0]["content"]["image"]
    assert image, "turn 0 of dialogue5/session1 names an image in the sample"
    buf = io.BytesIO()
    Image.new("RGB", (64, 48), (30, 120, 200)).save(buf, format="PNG")
    (sdir / "image").mkdir(exist_ok=True)
    (sdir / "image" / image).write_bytes(buf.getvalue())
    return qtext


def build_sample_runs(sample_root: Path, base: Path) -> SampleRuns:
    """Copy and change the sample under ``base``, run naive-rag and full-text on it, score both."""
    qtext = _prepare(sample_root, base / "data")
    runs = []
    with MockOpenAIServer() as srv:
        for method, extra in (("naive-rag", {"embedder": "openai:mock-embed"}), ("full-text", {})):
            # gpt-4o-mini: a known 128k context, so full-text keeps every session in its prompt
            cfg = RunConfig(
                data_root=base / "data",
                split="dyadic",
                method=method,
                model="openai:gpt-4o-mini",
                base_url=[srv.base_url],
                out_dir=base / "runs",
                cache_path=base / "cache.sqlite",
                **extra,
            )
            run_benchmark(cfg, progress=False)
            runs.append(cfg.run_dir)
        srv.responder = judge_responder
        for d in runs:
            judge = load_chat_model("openai:judge", base_url=srv.base_url, cache=base / "cache.sqlite")
            # the scripted judge answers in our rubric's format (preset harmonized)
            evaluate_run(d, ["lexical", "evidence", "judge"], judge_model=judge, n_boot=0, preset="harmonized")
    return SampleRuns(data=base / "data", runs=runs, question_text=qtext)
