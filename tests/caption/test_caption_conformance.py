"""Caption requests under ``paper`` equal the official captioner's, recorded from its own code.

``fixtures/official_caption_requests.json`` holds, per image, the request body that the official
``caption/gpt_4o_caption.py`` (varib1/H2HMEM @ b6070899) sent to a recording mock endpoint, the
scripted reply, and the caption file it wrote (see the fixture's ``how``). Here h2hmem captions
the same image bytes and must send the same body (roles, text part, image part with ``detail``,
model, ``max_tokens``, ``temperature``: nothing more) and store the same caption text.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from caption_helpers import write_dialogue

from h2hmem.caption import CaptionSettings, CaptionStore, ImageId, caption_dataset, cut_caption, official_prompt
from h2hmem.llm import RetryPolicy, load_chat_model
from h2hmem.testing import MockOpenAIServer

FIXTURE = json.loads(
    (Path(__file__).parent / "fixtures" / "official_caption_requests.json").read_text(encoding="utf-8")
)
CASES = FIXTURE["captions"]
FAST = RetryPolicy(max_retries=0, initial_backoff_s=0.01, max_backoff_s=0.02)


def _url(body: dict) -> str:
    return next(p["image_url"]["url"] for p in body["messages"][0]["content"] if p["type"] == "image_url")


@pytest.fixture()
def official_images(tmp_path: Path) -> Path:
    """A dataset whose dyadic/dialogue5/session1 turns show the fixture's three images."""
    root = tmp_path / "ds"
    write_dialogue(root, "dyadic", "dialogue5", {"session1": [c["image"] for c in CASES]})
    image_dir = root / "dyadic/dialogue5/scenes/session1/image"
    image_dir.mkdir(parents=True)
    for c in CASES:
        (image_dir / c["image"]).write_bytes(base64.b64decode(c["image_base64"]))
    return root


def test_paper_sends_the_official_request_and_stores_the_official_caption(official_images, tmp_path):
    replies = {_url(c["request"]): c["reply"] for c in CASES}
    caps = tmp_path / "caps"
    with MockOpenAIServer(responder=lambda body: replies[_url(body)]) as srv:
        model = load_chat_model("openai:gpt-4o", base_url=srv.base_url, retry=FAST, cache=None)
        s = caption_dataset(official_images, model, out_dir=caps, progress=False)  # default preset: paper
        sent = {_url(b): b for b in srv.requests}
    assert (s.captioned, s.failed, s.preset) == (3, 0, "paper")
    store = CaptionStore(official_images, caps)
    for c in CASES:
        assert sent[_url(c["request"])] == c["request"], c["image"]  # the whole body, key for key
        rec = store.record(ImageId("dyadic", "dialogue5", "session1", c["image"]))
        official = c["official_description"]
        assert rec.description["full_text"] == official["full_text"]
        assert rec.final_text == official["final_text"], c["image"]
        stats = rec.description["token_stats"]
        assert (stats["original_tokens"], stats["was_truncated"], stats["limit"]) == (
            official["token_stats"]["original_tokens"],
            official["token_stats"]["was_truncated"],
            256,
        )
        assert rec.model_info["preset"] == "paper" and rec.model_info["options"] == CaptionSettings().options()


def test_the_fixture_covers_the_cut_marker_and_a_split_character():
    long, emoji, short = (c["official_description"] for c in CASES)
    assert long["final_text"].endswith("... [truncated]") and long["token_stats"]["was_truncated"]
    assert "\ufffd... [truncated]" in emoji["final_text"]  # the cut fell inside an emoji: kept as U+FFFD
    assert not short["token_stats"]["was_truncated"] and short["final_text"] == short["full_text"]
    for c in CASES:
        assert cut_caption(c["reply"], CaptionSettings())[0] == c["official_description"]["final_text"]
    # harmonized: boundary-safe cut, no marker
    text, n, cut = cut_caption(CASES[1]["reply"], CaptionSettings(preset="harmonized"))
    assert cut and "\ufffd" not in text and not text.endswith("[truncated]") and CASES[1]["reply"].startswith(text)


def test_packaged_prompt_is_the_recorded_text_part():
    text_part = CASES[0]["request"]["messages"][0]["content"][0]
    assert text_part == {"type": "text", "text": official_prompt().replace("{max_tokens}", "256")}
    assert CaptionSettings(max_tokens=100).rendered_prompt.startswith(
        "Please describe this image in a concise manner, ensuring the description does not exceed 100 tokens."
    )


def test_harmonized_keeps_the_prose_prompt_and_jpeg_and_keys_differ(official_images, tmp_path):
    caps = tmp_path / "caps"
    with MockOpenAIServer(responder=lambda body: "A small picture.") as srv:
        model = load_chat_model("openai:gpt-4o", base_url=srv.base_url, retry=FAST, cache=None)
        caption_dataset(official_images, model, out_dir=caps, progress=False, preset="harmonized")
        body = srv.requests[0]
        text, image = body["messages"][0]["content"]
        assert text["text"].startswith("Describe this image in one concise paragraph")
        assert image["image_url"]["url"].startswith("data:image/jpeg;base64,") and "detail" not in image["image_url"]
        # a harmonized caption is not a paper caption: the paper run recaptions every image
        again = caption_dataset(official_images, model, out_dir=caps, progress=False)
        assert (again.cached, again.captioned) == (0, 3) and srv.calls == 6
        # one option overridden on its own: raw bytes with the harmonized prompt
        caption_dataset(
            official_images,
            model,
            out_dir=tmp_path / "c2",
            progress=False,
            preset="harmonized",
            options={"image_encoding": "raw"},
            split="dyadic",
        )
        text, image = srv.requests[-1]["messages"][0]["content"]
        assert image["image_url"]["url"].startswith("data:image/png;base64,")
        assert text["text"].startswith("Describe this image in one concise paragraph")
    with pytest.raises(ValueError, match="unknown caption option"):
        caption_dataset(official_images, "ocr", out_dir=tmp_path / "c3", options={"detail": "auto"})


def test_raw_bytes_never_crash_on_huge_or_odd_files(official_images, tmp_path, monkeypatch):
    from h2hmem.llm._images import raw_data_url

    image_dir = official_images / "dyadic/dialogue5/scenes/session1/image"
    (image_dir / "2.png").write_bytes(b"\x89PNG not really")  # corrupt: refused before any call
    monkeypatch.setattr("h2hmem.caption._vlm.RAW_IMAGE_MAX_BYTES", (image_dir / "1.png").stat().st_size - 1)
    with MockOpenAIServer(responder=lambda body: "A picture.") as srv:
        model = load_chat_model("openai:gpt-4o", base_url=srv.base_url, retry=FAST, cache=None)
        s = caption_dataset(official_images, model, out_dir=tmp_path / "caps", progress=False)
        assert srv.calls == 0
    reasons = {f.image.rsplit("/", 1)[-1]: f.reason for f in s.failures}
    assert (
        s.failed == 3 and "not a recognised image" in reasons["2.png"] and "image_encoding=jpeg1024" in reasons["1.png"]
    )
    # MIME subtype from the extension, as the official map has it (unknown extensions: jpeg)
    for name, subtype in (("a.JPG", "jpeg"), ("a.webp", "webp"), ("a.tiff", "jpeg"), ("a.bmp", "bmp")):
        (tmp_path / name).write_bytes(b"xyz")
        assert raw_data_url(tmp_path / name) == f"data:image/{subtype};base64,eHl6"


def test_cli_preset_and_option_flags(official_images, tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from h2hmem.cli import app

    monkeypatch.setenv("H2HMEM_CACHE_DIR", str(tmp_path / "cache"))
    with MockOpenAIServer(responder=lambda body: "word " * 300) as srv:
        args = [
            "caption",
            str(official_images),
            "--model",
            "openai:gpt-4o",
            "--base-url",
            srv.base_url,
            "--captions-dir",
            str(tmp_path / "caps"),
            "--json",
            "--preset",
            "harmonized",
            "--image-encoding",
            "raw",
            "--truncation-marker",
            " [cut]",
        ]
        r = CliRunner().invoke(app, args)
        assert r.exit_code == 0, r.output
        out = json.loads(r.output)
        assert out["preset"] == "harmonized" and out["options"]["image_encoding"] == "raw"
        assert out["options"]["caption_prompt"] == "prose" and out["truncated"] == 3
        assert srv.requests[0]["messages"][0]["content"][1]["image_url"]["url"].startswith("data:image/png;base64,")
        final = (tmp_path / "caps/dyadic/dialogue5/scenes/session1/caption/1.txt").read_text()
        assert final.endswith("word [cut]")
        r = CliRunner().invoke(app, args[:-2] + ["--image-detail", "ultra"])
        assert r.exit_code == 2 and "image_detail" in r.output
