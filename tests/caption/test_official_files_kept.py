"""`h2hmem caption` keeps the official caption files it finds, unless asked to replace them.

The official captioner writes `<session>/caption/<stem>.json` with `model_info.model = "gpt-4o"` and
no cache key; the official baselines read exactly that file. Before: `h2hmem caption` did not
recognise such a file as a caption of the image (no cache key), paid to caption the image again and
wrote its own file over the official one in the dataset root.
"""

from __future__ import annotations

import json

import pytest
from test_vlm_mock import _model, responder

from h2hmem.caption import CaptionStore, ImageId, caption_dataset
from h2hmem.testing import MockOpenAIServer

IMAGE = ImageId("dyadic", "dialogue1", "session1", "1.png")
OFFICIAL = {  # the fields the official captioner writes (caption/gpt_4o_caption.py)
    "id": "dyadic/dialogue1/session1/1.png",
    "image_info": {"path": "x/1.png", "filename": "1.png", "size": 1},
    "model_info": {"model": "gpt-4o", "detail_level": "auto"},
    "description": {"full_text": "An official caption.", "final_text": "An official caption."},
    "raw_response": {"choices": []},
}


def test_official_caption_files_are_kept_and_replaced_only_on_request(text_dataset, tmp_path):
    root, truth = text_dataset
    cdir = root / "dyadic/dialogue1/scenes/session1/caption"
    cdir.mkdir(parents=True)
    official = json.dumps(OFFICIAL, indent=2)
    (cdir / "1.json").write_text(official)
    (cdir / "1.txt").write_text("An official caption.")
    store = CaptionStore(root)
    assert store.record(IMAGE).source == "official:gpt-4o" and store.record(IMAGE).external

    with MockOpenAIServer(responder=responder) as srv:
        s = caption_dataset(root, _model(srv), progress=False)
        assert (s.images, s.captioned, s.cached, s.kept_official) == (len(truth), len(truth) - 1, 0, 1)
        assert srv.calls == len(truth) - 1  # the official file's image is not paid for again
        assert (cdir / "1.json").read_text() == official  # untouched
        assert store.get(IMAGE) == "An official caption."
        others = [k for k in truth if k != str(IMAGE)]
        assert all(CaptionStore(root).record(ImageId(*k.split("/"))).source == "openai:gpt-4o" for k in others)

        with pytest.raises(ValueError, match="replaces the official caption files where they are"):
            caption_dataset(root, _model(srv), out_dir=tmp_path / "caps", progress=False, replace_official=True)
        assert srv.calls == len(truth) - 1

        r = caption_dataset(root, _model(srv), progress=False, replace_official=True)
        assert (r.captioned, r.cached, r.kept_official) == (1, len(truth) - 1, 0)
        assert srv.calls == len(truth)
        assert (cdir / "1.official.json").read_text() == official  # kept beside the new caption
        assert (cdir / "1.official.txt").read_text() == "An official caption."
        new = CaptionStore(root).record(IMAGE)
        assert new is not None and not new.external and new.source == "openai:gpt-4o"

        again = caption_dataset(root, _model(srv), progress=False, replace_official=True)
        assert (again.captioned, again.cached) == (0, len(truth)) and srv.calls == len(truth)
        assert (cdir / "1.official.json").read_text() == official


def test_same_stem_images_captioned_at_once_each_keep_their_caption(tmp_path, monkeypatch):
    """`N.png` and `N.jpg` of one session share the official file name `N.json`; captioned
    concurrently, each must end with its own caption (the second as `N.jpg.json`). Before, choosing
    and writing the file interleaved across worker threads, and a paid caption could be overwritten
    by its twin's, with no failure reported."""
    from caption_helpers import WORDS, render_text_image, write_dialogue

    root = tmp_path / "ds"
    files = [f"{n}.{ext}" for n in range(1, 6) for ext in ("png", "jpg")]
    for i, f in enumerate(files):
        render_text_image(root / "dyadic/dialogue1/scenes/session1/image" / f, WORDS[i % len(WORDS)] + [f])
    write_dialogue(root, "dyadic", "dialogue1", {"session1": files})
    cdir = root / "dyadic/dialogue1/scenes/session1/caption"
    cdir.mkdir(parents=True)
    for n in range(1, 6):  # official N.json naming N.png: replaced (and moved aside) while N.jpg is written
        (cdir / f"{n}.json").write_text(json.dumps({**OFFICIAL, "image_info": {"filename": f"{n}.png"}}))
    # the replies arrive together (latency), so the writes meet in the worker threads; moving an
    # official file aside is slowed down, which widens the moment its name is free
    import time

    keep = CaptionStore._keep_external

    def slow_keep(path):
        keep(path)
        time.sleep(0.2)

    monkeypatch.setattr(CaptionStore, "_keep_external", staticmethod(slow_keep))
    with MockOpenAIServer(responder=responder, latency_s=0.3) as srv:
        s = caption_dataset(root, _model(srv), progress=False, concurrency=len(files), replace_official=True)
        assert (s.captioned, s.failed) == (len(files), 0)
    store = CaptionStore(root)
    texts = {f: store.get(ImageId("dyadic", "dialogue1", "session1", f)) for f in files}
    assert all(texts.values()) and len(set(texts.values())) == len(
        files
    )  # each its own (the mock's reply hashes the pixels)


def test_each_caption_file_is_read_once_per_image_and_folder(text_dataset, tmp_path, monkeypatch):
    """The keep check (an official file?) and the cache check (a caption of the same request?) share
    one read of the image's caption files: with the dataset root and a captions folder, a cached rerun
    reads 2 files per image (before: 4 — the keep check read the root's and then the folder's, the cache
    check both again)."""
    root, truth = text_dataset
    caps = tmp_path / "caps"
    with MockOpenAIServer(responder=responder) as srv:
        caption_dataset(root, _model(srv), out_dir=caps, progress=False)
        reads: list[str] = []
        original = CaptionStore._read_in

        def counting(self, base, image):
            reads.append(f"{base}:{image}")
            return original(self, base, image)

        monkeypatch.setattr(CaptionStore, "_read_in", counting)
        again = caption_dataset(root, _model(srv), out_dir=caps, progress=False)
    assert (again.captioned, again.cached) == (0, len(truth))
    assert len(reads) == 2 * len(truth) and len(set(reads)) == len(reads)
