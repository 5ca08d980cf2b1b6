"""``h2hmem gateway`` as a subprocess in front of the mock server: an OpenAI client, the cache,
transcripts, --max-cost, Ctrl-C."""

from __future__ import annotations

import base64
import os
import signal
import subprocess
import sys

import openai
import pytest
from typer.testing import CliRunner

from h2hmem.cli import app
from h2hmem.records import read_transcripts
from h2hmem.testing import MockOpenAIServer, free_port

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n fake pixels").decode()


def _start(args: list[str], tmp_path) -> subprocess.Popen:
    env = {**os.environ, "H2HMEM_CACHE_DIR": str(tmp_path / "cache"), "PYTHONUNBUFFERED": "1"}
    cmd = [sys.executable, "-c", "from h2hmem.cli import main; main()", "gateway", *args]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)


def test_serves_caches_records_and_stops_on_ctrl_c(tmp_path):
    port = free_port()
    transcripts = tmp_path / "gateway.jsonl.gz"
    with MockOpenAIServer() as upstream:
        proc = _start(
            [
                "--model",
                "openai:mock",
                "--base-url",
                upstream.base_url,
                "--port",
                str(port),
                "--transcripts",
                str(transcripts),
            ],
            tmp_path,
        )
        try:
            line = proc.stdout.readline()
            assert line.startswith(f"model gateway at http://127.0.0.1:{port}/v1 serving openai:mock;"), line
            client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="any", max_retries=0)
            for _ in range(2):
                reply = client.chat.completions.create(
                    model="gpt-4o-mini",
                    messages=[{"role": "user", "content": "hello world"}],
                    extra_headers={"X-H2HMem-Tag": '{"dialogue": "dyadic/dialogue1", "stage": "answer"}'},
                )
                assert reply.choices[0].message.content == "mock-b94d27b9934d3e08"
            assert upstream.calls == 1  # the second call came from the request cache
            image = {"type": "image_url", "image_url": {"url": "data:image/png;base64," + PNG}}
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": [image]}])
        finally:
            proc.send_signal(signal.SIGINT)
            out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, out
    assert "served 3 chat requests (1 from the cache, 0 failed), 0 embedding requests" in out
    records = read_transcripts(transcripts)
    assert [(r["cached"], r["dialogue"], r["stage"]) for r in records] == [
        (False, "dyadic/dialogue1", "answer"),
        (True, "dyadic/dialogue1", "answer"),
        (False, None, "other"),
    ]
    # the image is kept beside the transcripts (--image-dir's default with --transcripts)
    (kept,) = (tmp_path / "gateway-images").iterdir()
    assert kept.suffix == ".png" and kept.read_bytes() == base64.b64decode(PNG)


def test_max_cost_refuses_calls_with_429(tmp_path):
    port = free_port()
    with MockOpenAIServer() as upstream:
        proc = _start(
            [
                "--model",
                "openai:mock",
                "--base-url",
                upstream.base_url,
                "--port",
                str(port),
                "--no-cache",
                "--max-cost",
                "0.0001",
                "--price",
                "mock=1000/1000",
            ],
            tmp_path,
        )
        try:
            assert "model gateway at" in proc.stdout.readline()
            client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="any", max_retries=0)
            with pytest.raises(openai.RateLimitError) as err:  # worst case 100 tokens at $1000/M > $0.0001
                client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}], max_tokens=100)
            assert err.value.code == "insufficient_quota" and "budget of $0.0001 cannot cover the next" in str(
                err.value
            )
            with pytest.raises(openai.RateLimitError):  # and every later call
                client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}], max_tokens=1)
            assert upstream.calls == 0
        finally:
            proc.send_signal(signal.SIGINT)
            out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, out


@pytest.mark.parametrize(
    "args,message",
    [
        (["--model", "nope"], "invalid model spec 'nope'"),
        (
            ["--model", "openai:mock", "--base-url", "http://127.0.0.1:9/v1", "--max-cost", "1"],
            "--max-cost needs the price",
        ),
        (["--model", "openai:mock", "--default-stage", "lunch"], "--default-stage 'lunch': expected one of"),
        (["--model", "openai:mock", "--price", "x"], "--price 'x': expected MODEL=IN/OUT"),
    ],
)
def test_bad_options_fail_with_one_line(args, message, tmp_path, monkeypatch):
    monkeypatch.setenv("H2HMEM_CACHE_DIR", str(tmp_path))
    result = CliRunner().invoke(app, ["gateway", "--port", "0", *args])
    assert result.exit_code == 2 and message in " ".join(result.output.split()), result.output
