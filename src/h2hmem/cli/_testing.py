"""``h2hmem testing mock-server``: the OpenAI-compatible mock as a command, for testing plugins offline."""

from __future__ import annotations

import random
import signal
import threading

import typer

from ._app import app, console, fail

testing_app = typer.Typer(help="Offline testing aids: an OpenAI-compatible mock server.", no_args_is_help=True)
app.add_typer(testing_app, name="testing")


@testing_app.command("mock-server")
def mock_server_cmd(
    port: int = typer.Option(8000, "--port", min=0, max=65535, help="Port to listen on (0: a free one)."),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to bind (default: this machine only)."),
    latency: float = typer.Option(0.0, "--latency", min=0.0, help="Seconds every request waits before its reply."),
    tokens_per_s: float | None = typer.Option(
        None, "--tokens-per-s", min=0.001, help="Also wait completion tokens / this many seconds per chat reply."
    ),
    fault: list[str] = typer.Option(
        [],
        "--fault",
        help="A scripted fault, KIND[:ARGS][@WHICH][~RATE], repeatable (first match wins): e.g. 'http:503@3' "
        "(the third chat request gets HTTP 503), 'http:429:2@1-2' (Retry-After: 2), 'reset~0.1', "
        "'timeout:5@%10', 'finish:length@2-'. Kinds: http, reset, timeout, malformed_json, truncated_body, "
        "empty_choices, missing_choices, finish. See docs/testing.md.",
    ),
    seed: int = typer.Option(0, "--seed", help="Seed of the ~RATE draws (same seed and order: same failures)."),
    embedding_dim: int = typer.Option(64, "--embedding-dim", min=1, help="Dimension of /v1/embeddings vectors."),
) -> None:
    """Serve an OpenAI-compatible API (chat completions, embeddings, models) until Ctrl-C.

    Replies are deterministic and follow the request's protocol: judge prompts of both presets get
    valid judgments, a JSON-schema request a schema-valid instance, a forced tool call a call with
    schema-valid arguments, JSON mode ``{"answer": …}``, anything else ``mock-`` + the first 16 hex
    digits of the SHA-256 of the last user message; embeddings hash the words of each text. Point a
    run at it with ``h2hmem run --model openai:mock --base-url <printed URL>`` (any API key works),
    or ``h2hmem evaluate --judge-model openai:mock --judge-base-url <printed URL>``.
    """
    from ..testing import FaultSpecError, MockOpenAIServer, parse_fault_spec

    rng = random.Random(seed)
    try:
        script = [parse_fault_spec(spec, rng) for spec in fault]
    except FaultSpecError as e:
        raise fail(f"--fault: {e}")
    server = MockOpenAIServer(
        latency_s=latency,
        tokens_per_s=tokens_per_s,
        script=script,
        embedding_dim=embedding_dim,
        keep_requests=False,
        host=host,
        port=port,
    )
    try:
        server.start()
    except RuntimeError as e:
        raise fail(f"{e} (is the port in use? try --port 0 for a free one)")
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    faults = f", {len(script)} fault rule{'s' if len(script) != 1 else ''}" if script else ""
    try:  # from the first line on: a Ctrl-C right after it (a script that waits for it) stops cleanly
        console.print(
            f"mock OpenAI server at {server.base_url}{faults}; Ctrl-C stops it", highlight=False, soft_wrap=True
        )
        while not stop.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
        console.print(f"served {server.calls} API request{'s' if server.calls != 1 else ''}", highlight=False)
