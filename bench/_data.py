"""Synthetic datasets for the benchmarks, generated once into ``bench/.data/`` (git-ignored)."""

from __future__ import annotations

from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent / ".data"
SEED = 0


def dataset_root(scale: str, seed: int = SEED) -> Path:
    return DATA_DIR / f"synth-{scale}-s{seed}"


def ensure_dataset(scale: str, seed: int = SEED) -> tuple[Path, float | None]:
    """The root of ``synthesize_dataset(scale, seed)`` under :data:`DATA_DIR`, generated when missing
    or incomplete. Returns ``(root, seconds spent generating or None if it was there)``."""
    from h2hmem.data import synthesize_dataset

    root = dataset_root(scale, seed)
    # the generator writes synth_meta.json last and then removes its marker: both mean "complete"
    if (root / "synth_meta.json").is_file() and not (root / ".synth-incomplete.json").exists():
        return root, None
    info = synthesize_dataset(root, scale=scale, seed=seed, progress=True)
    return root, float(info["seconds"])
