"""``h2hmem testing mock-server`` as a subprocess: an OpenAI-client request, a scripted fault, Ctrl-C."""

from __future__ import annotations

import signal
import subprocess
import sys

import openai
import pytest
from typer.testing import CliRunner

from h2hmem.cli import app
from h2hmem.testing import free_port


def test_serves_an_openai_client_and_its_scripted_fault_until_ctrl_c():
    port = free_port()
    cmd = [sys.executable, "-c", "from h2hmem.cli import main; main()", "testing", "mock-server"]
    proc = subprocess.Popen(
        [*cmd, "--port", str(port), "--fault", "http:503@2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        line = proc.stdout.readline()
        assert line.startswith(f"mock OpenAI server at http://127.0.0.1:{port}/v1, 1 fault rule"), line
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="none", max_retries=0)
        reply = client.chat.completions.create(model="mock", messages=[{"role": "user", "content": "hello world"}])
        # the default reply: "mock-" + sha256("hello world")[:16]; cl100k: "hello world" is 2 tokens
        assert reply.choices[0].message.content == "mock-b94d27b9934d3e08" and reply.usage.prompt_tokens == 2
        with pytest.raises(openai.InternalServerError) as err:
            client.chat.completions.create(model="mock", messages=[{"role": "user", "content": "again"}])
        assert err.value.status_code == 503 and "mock fault: HTTP 503" in str(err.value)
        third = client.chat.completions.create(model="mock", messages=[{"role": "user", "content": "hello world"}])
        assert third.choices[0].message.content == "mock-b94d27b9934d3e08"  # @2: the second request only
    finally:
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=20)
    assert proc.returncode == 0 and "served 3 API requests" in out


@pytest.mark.parametrize(
    "spec,message",
    [
        ("http:99", "STATUS must be an HTTP error status 400-599, got 99"),
        ("oops@1", "unknown kind 'oops'; kinds: http, timeout, finish, reset"),
        ("http:503@0", "requests are numbered from 1"),
        ("reset~2", "RATE must be in (0, 1]"),
    ],
)
def test_a_bad_fault_spec_is_refused_before_serving(spec, message):
    result = CliRunner().invoke(app, ["testing", "mock-server", "--port", "0", "--fault", spec])
    assert result.exit_code == 2 and f"--fault: fault spec {spec!r}: {message}" in " ".join(result.output.split())


def _inherit_ignored_and_blocked_interrupts() -> None:
    """What some parents hand down: SIGINT ignored (a shell's background job) and SIGINT/SIGTERM blocked."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})


def test_ctrl_c_stops_the_server_even_when_the_parent_ignored_or_blocked_it():
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-c", "from h2hmem.cli import main; main()", "testing", "mock-server", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=_inherit_ignored_and_blocked_interrupts,
    )
    try:
        assert proc.stdout.readline().startswith(f"mock OpenAI server at http://127.0.0.1:{port}/v1")
    finally:
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=20)
    assert proc.returncode == 0 and "served 0 API requests" in out
