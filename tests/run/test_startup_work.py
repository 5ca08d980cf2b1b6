"""What a run does once before its first model call, counted (not timed): the provenance of a
built-in method never scans every installed distribution, and the dataset loader works out the
real path of each folder once, not once per image."""

from __future__ import annotations

import os
from importlib import metadata
from pathlib import Path

import pytest

from h2hmem.data import load_dataset, synthesize_dataset
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
