"""``h2hmem gateway``: serve h2hmem's model layer as an OpenAI-compatible endpoint until Ctrl-C."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path
from typing import Any

import typer

from .. import defaults
from ._app import app, console, fail


@app.command("gateway", short_help="Serve the model layer as an OpenAI-compatible endpoint (docs/gateway.md).")
def gateway_cmd(
    model: str = typer.Option(
        ..., "--model", help="Chat model served: openai:<model>, local:smollm2, local:qwen2.5-coder-1.5b."
    ),
    embedder: str | None = typer.Option(
        None, "--embedder", help="Embedder served at /v1/embeddings: minilm or openai:<model>."
    ),
    port: int = typer.Option(0, "--port", min=0, max=65535, help="Port to listen on (0: a free one, printed)."),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to bind (default: this machine only)."),
    base_url: list[str] | None = typer.Option(
        None,
        "--base-url",
        help="Upstream OpenAI-compatible server of an openai: model (repeat for round-robin); default $OPENAI_BASE_URL.",
    ),
    max_cost: float | None = typer.Option(
        None,
        "--max-cost",
        min=0,
        help="Refuse calls (HTTP 429 insufficient_quota) once they could cost more than USD in total.",
    ),
    price: list[str] | None = typer.Option(
        None,
        "--price",
        help="MODEL=IN/OUT: USD per million input/output tokens of a model not in the built-in table; repeatable.",
    ),
    concurrency: int = typer.Option(defaults.CONCURRENCY, min=1, help="Model calls in flight at once."),
    timeout: float = typer.Option(defaults.TIMEOUT_S, "--timeout", min=1, help="Seconds per upstream attempt."),
    cache_path: Path | None = typer.Option(
        None, help="Request cache file (default ~/.cache/h2hmem/requests.sqlite or $H2HMEM_CACHE_DIR)."
    ),
    no_cache: bool = typer.Option(False, "--no-cache", help="Do not read or write the request cache."),
    refresh_cache: bool = typer.Option(False, "--refresh-cache", help="Ignore cached replies (still store new ones)."),
    transcripts: Path | None = typer.Option(
        None,
        "--transcripts",
        help="Append a record of every chat call to this .jsonl.gz file (h2hmem's transcript format).",
    ),
    default_stage: str = typer.Option(
        "other", "--default-stage", help="Stage of calls without an X-H2HMem-Tag header."
    ),
    image_dir: Path | None = typer.Option(
        None,
        "--image-dir",
        help="Folder for images sent as data URLs, named by SHA-256 (transcripts refer to them). Default: "
        "gateway-images/ beside --transcripts; without it, a temporary folder removed when the gateway stops.",
    ),
) -> None:
    """Serve an OpenAI-compatible endpoint (/v1/chat/completions, /v1/embeddings, /v1/models)
    backed by h2hmem's model layer: request cache, retries, concurrency limit, usage and cost,
    --max-cost, transcripts. Point any OpenAI client at the printed URL (any API key works).
    See docs/gateway.md."""
    from ..gateway import STAGES, ModelGateway
    from ._run import parse_prices

    if default_stage not in STAGES:
        raise fail(f"--default-stage {default_stage!r}: expected one of {', '.join(STAGES)}")
    try:
        prices = parse_prices(price or [])
    except ValueError as e:
        raise fail(str(e))
    try:
        asyncio.run(
            _serve(
                ModelGateway,
                model=model,
                embedder=embedder,
                host=host,
                port=port,
                base_url=base_url or None,
                max_cost=max_cost,
                prices=prices or None,
                concurrency=concurrency,
                timeout=timeout,
                cache_path=None if no_cache else cache_path,
                use_cache=not no_cache,
                refresh=refresh_cache,
                transcripts=transcripts,
                default_stage=default_stage,
                image_dir=image_dir or (transcripts.parent / "gateway-images" if transcripts else None),
            )
        )
    except (ValueError, RuntimeError, OSError) as e:
        raise fail(str(e))


async def _serve(gateway_cls: Any, **o: Any) -> None:
    from ..embed import default_embedding_cache_path, load_embedder
    from ..llm import default_cache_path, load_chat_model
    from ..records import TranscriptWriter
    from ..run import guard_models

    base_url = o["base_url"]
    chat = load_chat_model(
        o["model"],
        base_url=base_url if o["model"].startswith("openai:") else None,
        cache=(o["cache_path"] or default_cache_path()) if o["use_cache"] else None,
        concurrency=o["concurrency"],
        timeout_s=o["timeout"],
        prices=o["prices"],
        refresh=o["refresh"],
    )
    writer = TranscriptWriter(o["transcripts"]).open() if o["transcripts"] else None
    try:
        _, (served,) = guard_models(o["max_cost"], o["prices"], chat)
        embedder = None
        if o["embedder"]:
            embedder = load_embedder(
                o["embedder"],
                base_url=base_url[0] if base_url else None,
                cache=default_embedding_cache_path(o["cache_path"]) if o["use_cache"] else None,
                refresh=o["refresh"],
            )
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        gateway = gateway_cls(
            served,
            embedder,
            host=o["host"],
            port=o["port"],
            sink=writer.write if writer else None,
            default_stage=o["default_stage"],
            image_dir=o["image_dir"],
        )
        async with gateway as gw:
            serving = o["model"] + (f" and {embedder.name}" if embedder is not None else "")
            console.print(
                f"model gateway at {gw.base_url} serving {serving}; Ctrl-C stops it", highlight=False, soft_wrap=True
            )
            await stop.wait()
        s = gw.stats
        u = s.total_usage()
        console.print(
            f"served {s.chat_requests} chat request{'s' if s.chat_requests != 1 else ''} "
            f"({s.chat_cached} from the cache, {s.chat_failed} failed), {s.embedding_requests} embedding "
            f"request{'s' if s.embedding_requests != 1 else ''}; {u.prompt_tokens:,} prompt + "
            f"{u.completion_tokens:,} completion tokens, ${u.cost_usd:.4f}",
            highlight=False,
            soft_wrap=True,
        )
    finally:
        await chat.aclose()
        if writer is not None:
            writer.close()
