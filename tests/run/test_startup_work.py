"""What a run does once before its first model call, counted (not timed): the provenance of a
built-in method never scans every installed distribution, and the dataset loader works out the
real path of each folder once, not once per image."""

from __future__ import annotations

import os
from importlib import metadata
from pathlib import Path

import pytest

from h2hmem.data import IssueLog, load_dataset, synthesize_dataset
from h2hmem.records import _provenance, distribution_of
from h2hmem.run import RunConfig, run_benchmark
from h2hmem.testing import MockOpenAIServer


@pytest.fixture()
def small_dataset(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("synth")
    synthesize_dataset(root, "small", seed=0)
    return root


def test_run_provenance_does_not_scan_every_distribution(small_dataset, tmp_path, monkeypatch):
    scans: list[int] = []
    real = metadata.packages_distributions

    def counting():
        scans.append(1)
        return real()

    _provenance._providers.cache_clear()
    _provenance._packages_distributions.cache_clear()
    monkeypatch.setattr(metadata, "packages_distributions", counting)
    with MockOpenAIServer() as srv:
        cfg = RunConfig(
            data_root=small_dataset,
            method="full-text",
            model="openai:mock",
            base_url=[srv.base_url],
            out_dir=tmp_path / "runs",
            run_id="r",
            limit=3,
        )
        run_benchmark(cfg, progress=False)
    manifest = (cfg.run_dir / "manifest.json").read_text(encoding="utf-8")
    assert '"distribution": "h2hmem"' in manifest  # the memory component still names its distribution
    assert scans == []  # ~0.3 s each: found from h2hmem's own metadata instead
    # a module whose distribution has another name is still found, by one scan, then remembered
    assert distribution_of("mem0")[0] in (None, "mem0ai")
    distribution_of("pydantic_core")
    assert len(scans) <= 1


def test_loader_resolves_each_folder_once_not_each_image(small_dataset, monkeypatch):
    calls: list[str] = []
    real = os.path.realpath

    def counting(path, *args, **kwargs):
        calls.append(str(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os.path, "realpath", counting)
    ds = load_dataset(small_dataset)
    images = [t.image for d in ds.dialogues for s in d.sessions for t in s.turns if t.image and t.image.path]
    json_files = list(small_dataset.rglob("*.json"))
    assert len(images) > 20
    # Path.resolve() is os.path.realpath: the JSON files are each checked once (a FIFO or a link
    # outside the root is refused before it is opened), plus a few folders; images add nothing
    assert len(calls) <= len(json_files) + 8
    assert not any(c.endswith((".png", ".jpg", ".jpeg")) for c in calls)
    # and the resolved paths are the real ones
    assert all(img.path == img.path.resolve() for img in images[:5])


def test_loader_checks_each_image_with_one_lstat_and_one_pillow_open(small_dataset, monkeypatch):
    from PIL import Image

    def image_refs(ds):
        turns = [t.image for d in ds.dialogues for s in d.sessions for t in s.turns if t.image]
        return turns + [r for d in ds.dialogues for q in d.questions for r in q.images]

    refs = image_refs(load_dataset(small_dataset))
    paths = sorted({r.path for r in refs if r.path is not None})
    pngs = [p for p in paths if p.suffix == ".png"]
    assert len(paths) > 20 and len(pngs) >= 2
    liar, broken = pngs[0], pngs[1]
    Image.new("RGB", (4, 3)).save(liar, format="JPEG")  # a JPEG named .png: its suffix lies
    broken.write_bytes(b"not an image at all")
    opens: list[tuple[str, object]] = []
    real_open = Image.open

    def counting_open(fp, mode="r", formats=None):
        opens.append((Path(fp).name, formats))
        return real_open(fp, mode, formats)

    lstats: list[str] = []
    real_lstat = os.lstat

    def counting_lstat(path, *args, **kwargs):
        lstats.append(os.fspath(path))
        return real_lstat(path, *args, **kwargs)

    monkeypatch.setattr(Image, "open", counting_open)
    monkeypatch.setattr(os, "lstat", counting_lstat)
    log = IssueLog()
    ds = load_dataset(small_dataset, log=log)
    monkeypatch.undo()
    # one lstat per image reference (no stat + islink + realpath), one open with the suffix's format
    # per reference; only the two odd files are opened again with every format Pillow knows
    assert len([p for p in lstats if os.sep + "image" + os.sep in p]) == len(refs)
    assert len([o for o in opens if o[1] is not None]) == len(refs)
    assert all(formats in (["PNG"], ["JPEG"], None) for _, formats in opens)
    assert sorted(name for name, formats in opens if formats is None) == sorted([liar.name, broken.name])
    after = {r.path for r in image_refs(ds)}
    assert liar in after  # a readable image whatever its suffix says
    assert broken not in after
    assert [i.code for i in log.warnings if i.code == "corrupt-image"] == ["corrupt-image"]
