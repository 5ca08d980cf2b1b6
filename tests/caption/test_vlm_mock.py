"""VLM captions through the real model layer against the scripted OpenAI-compatible mock server."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from typer.testing import CliRunner

from h2hmem.caption import DEFAULT_PROMPT, CaptionStore, ImageId, caption_dataset
from h2hmem.cli import app
from h2hmem.llm import RequestCache, RetryPolicy, count_tokens, image_data_url, load_chat_model, price_for
from h2hmem.testing import Fault, MockOpenAIServer, Rule

FAST = RetryPolicy(max_retries=2, initial_backoff_s=0.01, max_backoff_s=0.02)
IMAGE_TOKENS = 85  # the mock's prompt tokens per image part


def image_url(body: dict) -> str:
    return next(p["image_url"]["url"] for p in body["messages"][-1]["content"] if p["type"] == "image_url")


def responder(body: dict) -> str:
    """A deterministic 'caption' that depends on the pixels sent."""
    return f"A test picture, digest {hashlib.sha256(image_url(body).encode()).hexdigest()[:12]}."


def expected_caption(path: Path) -> str:
    return f"A test picture, digest {hashlib.sha256(image_data_url(path).encode()).hexdigest()[:12]}."


def _model(srv: MockOpenAIServer, **kw):
    return load_chat_model("openai:gpt-4o", base_url=srv.base_url, retry=FAST, **kw)


def test_captions_requests_usage_and_second_run_makes_no_calls(text_dataset, tmp_path):
    root, truth = text_dataset
    caps = tmp_path / "caps"
    with MockOpenAIServer(responder=responder, latency_s=0.2) as srv:
        s = caption_dataset(root, _model(srv), out_dir=caps, concurrency=3, progress=False, preset="harmonized")
        assert (s.images, s.captioned, s.failed, s.cached) == (5, 5, 0, 0)
        assert srv.calls == 5 and srv.max_in_flight == 3
        prompt = DEFAULT_PROMPT.replace("{max_tokens}", "256")
        for body in srv.requests:  # official settings: gpt-4o, temperature 0.7, one user message
            assert (body["model"], body["temperature"], body["max_tokens"]) == ("gpt-4o", 0.7, 1200)
            text, img = body["messages"][0]["content"]
            assert text == {"type": "text", "text": prompt}
            assert img["image_url"]["url"].startswith("data:image/jpeg;base64,")
        store = CaptionStore(root, caps)
        for key in truth:
            split, dlg, sess, file = key.split("/")
            assert store.get(ImageId(split, dlg, sess, file)) == expected_caption(
                root / split / dlg / "scenes" / sess / "image" / file
            )
        # usage: the mock counts cl100k tokens of the prompt + 85 per image, and of the answer
        pt = 5 * (count_tokens(prompt) + IMAGE_TOKENS)
        ct = sum(
            count_tokens(
                expected_caption(
                    root / k.split("/")[0] / k.split("/")[1] / "scenes" / k.split("/")[2] / "image" / k.split("/")[3]
                )
            )
            for k in truth
        )
        assert (s.usage.calls, s.usage.prompt_tokens, s.usage.completion_tokens) == (5, pt, ct)
        p_in, p_out = price_for("gpt-4o")
        assert abs(s.usage.cost_usd - (pt * p_in + ct * p_out) / 1e6) < 1e-12
        # second run: every caption file carries the same key → zero model calls
        again = caption_dataset(root, _model(srv), out_dir=caps, progress=False, preset="harmonized")
        assert srv.calls == 5
        assert (again.captioned, again.cached, again.usage.calls) == (0, 5, 0)


def test_server_errors_on_one_image_are_recorded_and_only_it_is_retried(text_dataset, tmp_path):
    root, _ = text_dataset
    caps = tmp_path / "caps"
    bad = root / "dyadic/dialogue1/scenes/session2/image/1.png"
    bad_url = image_data_url(bad)
    # three HTTP 500s for that image: the first attempt and both retries (max_retries=2)
    script = [Rule(Fault.http(500), when=lambda body: image_url(body) == bad_url, times=3)]
    with MockOpenAIServer(responder=responder, script=script) as srv:
        s = caption_dataset(root, _model(srv), out_dir=caps, progress=False, preset="harmonized")
        assert (s.captioned, s.failed, s.missing) == (4, 1, 0)
        assert srv.calls == 4 + 3
        [failure] = s.failures
        assert failure.image == "dyadic/dialogue1/session2/1.png"
        assert "ServerError" in failure.reason and "HTTP 500" in failure.reason
        report = json.loads((caps / "caption_failures.json").read_text())
        assert [f["image"] for f in report["failed"]] == ["dyadic/dialogue1/session2/1.png"]
        # the rerun sends exactly one request: the failed image (the fault script is used up)
        rerun = caption_dataset(root, _model(srv), out_dir=caps, progress=False, preset="harmonized")
        assert srv.calls == 7 + 1
        assert image_url(srv.requests[-1]) == bad_url
        assert (rerun.captioned, rerun.cached, rerun.failed) == (1, 4, 0)
        assert json.loads((caps / "caption_failures.json").read_text())["failed"] == []
        assert CaptionStore(root, caps).get(ImageId("dyadic", "dialogue1", "session2", "1.png")) == expected_caption(
            bad
        )


def test_long_captions_cut_to_256_tokens(text_dataset, tmp_path):
    root, _ = text_dataset
    caps = tmp_path / "caps"
    long_text = " ".join(f"detail{i}" for i in range(400))
    with MockOpenAIServer(responder=lambda body: long_text) as srv:
        s = caption_dataset(root, _model(srv), out_dir=caps, progress=False)
    assert (s.captioned, s.truncated) == (5, 5)
    data = json.loads((caps / "multi-party/dialogue1/scenes/session1/caption/img3.json").read_text())
    final = data["description"]["final_text"]
    head = final.removesuffix("... [truncated]")  # paper: the official marker after the cut
    assert final.endswith("... [truncated]") and data["description"]["full_text"] == long_text
    assert long_text.startswith(head) and count_tokens(head) == 256
    assert data["description"]["token_stats"]["was_truncated"] is True
    assert data["model_info"]["preset"] == "paper" and data["model_info"]["options"]["image_encoding"] == "raw"
    assert s.caption_tokens == 5 * count_tokens(final)


def test_request_cache_makes_repeated_calls_free(text_dataset, tmp_path):
    root, _ = text_dataset
    with MockOpenAIServer(responder=responder) as srv:
        caption_dataset(
            root, _model(srv, cache=RequestCache(tmp_path / "req.sqlite")), out_dir=tmp_path / "a", progress=False
        )
        assert srv.calls == 5
        # other captions folder: nothing to resume from, but every request is in the request cache
        s = caption_dataset(
            root, _model(srv, cache=RequestCache(tmp_path / "req.sqlite")), out_dir=tmp_path / "b", progress=False
        )
        assert srv.calls == 5
        assert (s.captioned, s.usage.calls, s.usage.cached_calls, s.usage.cost_usd) == (5, 0, 5, 0.0)
        assert (
            json.loads((tmp_path / "b/dyadic/dialogue1/scenes/session1/caption/1.json").read_text())["usage"][
                "request_cached"
            ]
            is True
        )


def test_cli_with_model_spec_and_base_url(text_dataset, tmp_path, monkeypatch):
    root, _ = text_dataset
    monkeypatch.setenv("H2HMEM_CACHE_DIR", str(tmp_path / "cache"))
    caps = tmp_path / "caps"
    with MockOpenAIServer(responder=responder) as srv:
        args = [
            "caption",
            str(root),
            "--model",
            "openai:gpt-4o",
            "--base-url",
            srv.base_url,
            "--captions-dir",
            str(caps),
            "--json",
        ]
        r = CliRunner().invoke(app, args)
        assert r.exit_code == 0, r.output
        out = json.loads(r.output)
        assert (out["images"], out["captioned"], out["usage"]["calls"]) == (5, 5, 5)
        r = CliRunner().invoke(app, args)
        assert r.exit_code == 0 and json.loads(r.output)["cached"] == 5 and srv.calls == 5
        # --no-cache recaptions; options reach the request
        r = CliRunner().invoke(
            app,
            [
                "caption",
                str(root),
                "--model",
                "openai:gpt-4o",
                "--base-url",
                srv.base_url,
                "--captions-dir",
                str(caps),
                "--no-cache",
                "--split",
                "dyadic",
                "--temperature",
                "0.2",
                "--max-tokens",
                "5",
            ],
        )
        assert r.exit_code == 0, r.output
        assert srv.calls == 5 + 3  # dyadic only: 3 images; --no-cache recaptions them
        assert srv.requests[-1]["temperature"] == 0.2


def test_text_only_model_is_refused(text_dataset, tmp_path):
    root, _ = text_dataset
    with MockOpenAIServer(responder=responder) as srv:
        try:
            caption_dataset(root, _model(srv, text_only=True), out_dir=tmp_path / "caps", progress=False)
        except ValueError as e:
            assert "cannot see images" in str(e) and "--model ocr" in str(e)
        else:
            raise AssertionError("a text-only model must be refused")
        assert srv.calls == 0


def test_a_full_disk_stops_the_captions_with_exit_4_and_a_rerun_resumes(text_dataset, tmp_path, monkeypatch):
    """A caption file that cannot be written for want of space stops the command at once (no more paid
    calls, exit 4 naming the file), not one failure per image; the captions written before it are kept
    and a rerun captions only the rest (and writes caption_failures.json whole)."""
    import errno

    root, _ = text_dataset
    caps = tmp_path / "caps"
    real_put, written = CaptionStore.put, []

    def put_until_full(self, image, record):
        if len(written) == 2:
            raise OSError(errno.ENOSPC, "No space left on device", str(self.caption_path(image)))
        written.append(image)
        return real_put(self, image, record)

    monkeypatch.setattr(CaptionStore, "put", put_until_full)
    monkeypatch.setenv("H2HMEM_CACHE_DIR", str(tmp_path / "cache"))
    with MockOpenAIServer(responder=responder) as srv:
        args = ["caption", str(root), "--model", "openai:gpt-4o", "--base-url", srv.base_url, "--concurrency", "1"]
        result = CliRunner().invoke(app, [*args, "--captions-dir", str(caps), "--quiet"])
        assert result.exit_code == 4, result.output
        out = " ".join(result.output.split())
        assert "local I/O error:" in out and "[Errno 28] No space left on device; free space and rerun" in out
        assert srv.calls == 3  # concurrency 1: the third caption could not be written, none asked after it
        assert not (caps / "caption_failures.json").exists()
        monkeypatch.setattr(CaptionStore, "put", real_put)  # space freed
        again = CliRunner().invoke(app, [*args, "--captions-dir", str(caps), "--quiet", "--json"])
        assert again.exit_code == 0, again.output
        summary = json.loads(again.output)
        assert (summary["cached"], summary["captioned"]) == (2, 3)  # 2 kept; the 3rd from the request cache
        assert srv.calls == 3 + 2 and json.loads((caps / "caption_failures.json").read_text())["failed"] == []


def test_a_request_cache_that_cannot_be_opened_is_one_line(text_dataset, tmp_path, monkeypatch):
    import h2hmem.llm._cache as cache_module

    def unopenable(self, path, **kw):  # as on a read-only file system: SQLite cannot create the file
        raise OSError(f"request cache {path} cannot be opened: unable to open database file")

    monkeypatch.setattr(cache_module.RequestCache, "__init__", unopenable)
    monkeypatch.setenv("H2HMEM_CACHE_DIR", str(tmp_path / "cache"))
    root, _ = text_dataset
    args = ["caption", str(root), "--model", "openai:gpt-4o", "--base-url", "http://127.0.0.1:9/v1"]
    result = CliRunner().invoke(app, [*args, "--captions-dir", str(tmp_path / "caps"), "--quiet"])
    out = " ".join(result.output.split())
    assert result.exit_code == 2 and "requests.sqlite cannot be opened: unable to open database file" in out, out
    assert "Traceback" not in out


def test_a_second_captioning_of_the_same_folder_is_refused_before_any_call(text_dataset, tmp_path, monkeypatch):
    """Two caption commands on one folder at once paid for every image twice (no lock, unlike run and
    evaluate); the second is now refused at once, naming the first (the lock is a flock: released by
    the operating system however the holder ends)."""
    import pytest

    from h2hmem.caption import CAPTION_LOCK, CaptionConflictError
    from h2hmem.records import exclusive_lock

    root, _ = text_dataset
    caps = tmp_path / "caps"
    monkeypatch.setenv("H2HMEM_CACHE_DIR", str(tmp_path / "cache"))
    with MockOpenAIServer(responder=responder) as srv:
        with exclusive_lock(caps / CAPTION_LOCK, "h2hmem caption (openai:gpt-4o) since noon") as held:
            assert held is None  # this test holds it, as a running caption command would
            with pytest.raises(CaptionConflictError, match="is being captioned by another process \\(pid "):
                caption_dataset(root, _model(srv), out_dir=caps, progress=False)
            args = ["caption", str(root), "--model", "openai:gpt-4o", "--base-url", srv.base_url]
            result = CliRunner().invoke(app, [*args, "--captions-dir", str(caps), "--quiet"])
            out = " ".join(result.output.split())
            assert result.exit_code == 2 and "h2hmem caption (openai:gpt-4o) since noon); wait for it to end" in out
            assert srv.calls == 0
        s = caption_dataset(root, _model(srv), out_dir=caps, progress=False)  # released: it runs
        assert s.captioned == 5 and srv.calls == 5
