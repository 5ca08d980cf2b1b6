"""The model gateway's lifecycle: serve a chat model (and an embedder) on a loopback port.

Used in-process by code that drives a third-party system (a memory product's adapter)::

    async with ModelGateway(chat_model, embedder) as gw:       # a free port of 127.0.0.1
        product = make_product(base_url=gw.base_url, http_client=gw.http_client())
        with tag_calls(dialogue=d.id, session=s.id, stage="memory_build"):
            await asyncio.to_thread(product.add, session_text)   # its model calls are ours
        gw.raise_if_stopped()                                     # the spend guard said stop

The server runs as a task of the *running* event loop, so calls through it share the model's
concurrency limit, cache, usage counters and transcript sink with h2hmem's own calls. Code that
calls the gateway synchronously must therefore run in another thread (``asyncio.to_thread``), or
it blocks the loop that serves it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from ..embed import Embedder
from ..llm import CallSink, ChatModel, Stage
from ._app import build_app
from ._core import GatewayCore
from ._tags import add_tag_header, add_tag_header_async

log = logging.getLogger(__name__)
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 10.0


class _Server(uvicorn.Server):
    """uvicorn's server without its signal handling: the host process keeps its own Ctrl-C."""

    def install_signal_handlers(self) -> None:  # uvicorn < 0.29
        return None

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:  # uvicorn >= 0.29
        yield


class ModelGateway(GatewayCore):
    """An OpenAI-compatible endpoint (``/v1/chat/completions``, ``/v1/embeddings``,
    ``/v1/models``) backed by h2hmem's model layer.

    Every chat request becomes one ``model.chat(messages, config, stage=…)`` call, so the model's
    request cache, retries, concurrency limit, usage, cost and spend guard apply as to h2hmem's
    own calls; every embeddings request one ``embedder.embed(texts)`` call (its embedding cache).
    The request's tag (header :data:`~h2hmem.gateway.TAG_HEADER`) sets the stage and the
    transcript tag of the call (:func:`h2hmem.llm.tag_calls`, plus ``via="gateway"`` and the
    ``requested_model``); requests without one are tagged ``default_stage``. The ``model``
    field of a request is recorded, not obeyed: one gateway serves one chat model and one embedder.

    Args:
        model: the chat model served (e.g. a :class:`~h2hmem.llm.ModelClient`, or a run's
            budget-guarded model).
        embedder: the embedder served; None answers ``/v1/embeddings`` with a 400.
        host, port: where to listen (default: a free port of 127.0.0.1).
        sink: transcript sink for the gateway's calls; None keeps the sink of the context the
            gateway was started in (:func:`h2hmem.llm.record_calls`).
        default_stage: the stage of untagged requests.
        image_dir: where images sent as data URLs are stored (content-addressed; transcripts
            refer to these files; created at the first image); None uses a folder of the system's
            temporary directory, created only when an image comes and removed on :meth:`stop`
            (a process killed before :meth:`stop` leaves it behind only if it received an image).

    Raises (from :meth:`start`): ``OSError`` when the port cannot be bound, ``RuntimeError``
    when the server does not start within 30 s.
    """

    def __init__(
        self,
        model: ChatModel,
        embedder: Embedder | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        sink: CallSink | None = None,
        default_stage: Stage = "other",
        image_dir: Path | None = None,
    ):
        self._own_image_dir = image_dir is None
        super().__init__(
            model,
            embedder,
            sink=sink,
            default_stage=default_stage,
            image_dir=image_dir or Path(tempfile.gettempdir()) / f"h2hmem-gateway-images-{secrets.token_hex(8)}",
        )
        self.host = host
        self._listen_port = port
        self.port: int | None = None
        self._server: _Server | None = None
        self._task: asyncio.Task[None] | None = None
        self.app = build_app(self)

    # ----- lifecycle -----------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        """``http://<host>:<port>/v1``, the base URL to give an OpenAI client."""
        if self.port is None:
            raise RuntimeError("the model gateway is not running; use `async with ModelGateway(...)` or start()")
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/v1"

    def tagged_base_url(
        self,
        *,
        dialogue: str | None = None,
        session: str | None = None,
        stage: Stage | None = None,
        question_ids: list[str] | None = None,
        **extra: Any,
    ) -> str:
        """A base URL whose every call carries this tag (``http://…/t/<token>/v1``), for code that
        can be given a URL but not a header and runs its calls where contexts do not follow (its
        own thread pool). A header on a request updates the URL's tag field by field.

        Raises:
            TagError: ``stage`` is not an accounting stage, or a field has the wrong type.
        """
        given = {"dialogue": dialogue, "session": session, "stage": stage, "question_ids": question_ids, **extra}
        token = self.register_tag({k: v for k, v in given.items() if v is not None})
        return self.base_url.removesuffix("/v1") + f"/t/{token}/v1"

    async def start(self) -> ModelGateway:
        """Bind the port and serve in the running event loop until :meth:`stop`."""
        if self._task is not None:
            raise RuntimeError("the model gateway is already running")
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((self.host, self._listen_port))
        except OSError as e:
            sock.close()
            raise OSError(
                e.errno, f"model gateway cannot listen on {self.host}:{self._listen_port}: {e.strerror}"
            ) from e
        config = uvicorn.Config(
            self.app,
            log_config=None,
            log_level="warning",
            access_log=False,
            lifespan="off",
            timeout_graceful_shutdown=int(STOP_TIMEOUT_S),
        )
        server = self._server = _Server(config)
        self._task = asyncio.create_task(self._serve(server, sock), name="h2hmem-model-gateway")
        deadline = asyncio.get_running_loop().time() + START_TIMEOUT_S
        while not server.started:
            if self._task.done():
                self._task.result()  # raises the startup error
                raise RuntimeError("the model gateway stopped while starting")
            if asyncio.get_running_loop().time() > deadline:
                await self.stop()
                raise RuntimeError(f"the model gateway did not start within {START_TIMEOUT_S:g} s")
            await asyncio.sleep(0.01)
        self.port = sock.getsockname()[1]
        return self

    async def _serve(self, server: _Server, sock: socket.socket) -> None:
        try:
            await server.serve(sockets=[sock])
        except asyncio.CancelledError:
            raise
        except BaseException:
            log.exception("the model gateway on %s:%s failed", self.host, self._listen_port)
            raise
        finally:
            sock.close()

    async def stop(self) -> None:
        """Stop serving (requests in flight get up to 10 s to finish) and remove the temporary
        image folder. Re-raises an error the server task died of."""
        task, self._task = self._task, None
        server = self._server
        self.port = None
        try:
            if task is not None and server is not None:
                server.should_exit = True
                done, _ = await asyncio.wait({task}, timeout=STOP_TIMEOUT_S)
                if not done:
                    server.force_exit = True
                    done, _ = await asyncio.wait({task}, timeout=STOP_TIMEOUT_S)
                    if not done:
                        task.cancel()
                        with contextlib.suppress(asyncio.CancelledError):
                            await task
                if done and not task.cancelled() and task.exception() is not None:
                    raise RuntimeError("the model gateway's server failed") from task.exception()
        finally:
            if self._own_image_dir:
                shutil.rmtree(self.image_dir, ignore_errors=True)

    async def __aenter__(self) -> ModelGateway:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # ----- clients -------------------------------------------------------------------------------
    def http_client(self, **kwargs: Any) -> httpx.Client:
        """An ``httpx.Client`` that sends the running context's tag with every request
        (``OpenAI(base_url=gw.base_url, api_key="h2hmem", http_client=gw.http_client())``)."""
        kwargs.setdefault("timeout", httpx.Timeout(None, connect=10.0))
        return httpx.Client(event_hooks={"request": [add_tag_header]}, **kwargs)

    def async_http_client(self, **kwargs: Any) -> httpx.AsyncClient:
        """:meth:`http_client` for ``AsyncOpenAI``."""
        kwargs.setdefault("timeout", httpx.Timeout(None, connect=10.0))
        return httpx.AsyncClient(event_hooks={"request": [add_tag_header_async]}, **kwargs)
