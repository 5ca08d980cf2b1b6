"""Paired comparison of two runs over the same questions, and pooling of repeated runs.

For two runs A and B scored on the same questions, the per-question differences d = B − A are
what carries the evidence (the question-to-question spread cancels):

- **difference** = mean(d) (= mean(B) − mean(A) on the common questions);
- **95% CI**: percentile bootstrap of mean(d), resampling questions (pairs stay together);
- **p-value**: two-sided paired permutation (sign-flip) test of mean(d) = 0: under the null
  each d_i is equally likely ±d_i. Exact (all 2^k sign patterns of the k non-zero differences)
  for k ≤ :data:`EXACT_MAX`, else ``n_perm`` random patterns with p = (1 + #{|mean*| ≥ |mean|})
  / (1 + n_perm) (Phipson & Smyth 2010: never 0). Identical runs give d = 0 and p = 1.

:func:`pool_runs` summarises repeated runs of one configuration (seeds, samples): mean ± sd of
the run means across runs, and the bootstrap CI of the mean over all their questions pooled.
"""

from __future__ import annotations

import itertools
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np

from .. import defaults
from ._aggregate import CI_LEVEL, _boot_weights

EXACT_MAX = 12
"""Largest number of non-zero differences tested exactly (2^12 = 4,096 sign patterns)."""
DEFAULT_N_PERM = 10_000
_BLOCK = 500


@dataclass(frozen=True)
class PairedDifference:
    """B − A on ``n`` common questions."""

    n: int
    mean_a: float | None
    mean_b: float | None
    diff: float | None
    ci: tuple[float, float] | None
    p_value: float | None
    test: str
    """``"exact sign-flip"`` or ``"sign-flip, N resamples"``."""


def paired_difference(
    a: Sequence[float],
    b: Sequence[float],
    *,
    n_boot: int = defaults.N_BOOT,
    n_perm: int = DEFAULT_N_PERM,
    seed: int = 0,
    key: str = "",
) -> PairedDifference:
    """Paired difference of ``b`` − ``a`` (same length, same question order) with CI and p-value.

    Example: a = [0, 0, 1], b = [1, 0, 1] → diff 1/3; one non-zero difference → exact test over
    its two signs → p = 1.0 (|±1/3| ≥ 1/3 both times).

    Raises:
        ValueError: lengths differ.
    """
    av, bv = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if av.shape != bv.shape:
        raise ValueError(f"paired samples differ in length ({len(av)} vs {len(bv)})")
    n = len(av)
    if n == 0:
        return PairedDifference(0, None, None, None, None, None, "none")
    d = bv - av
    obs = float(d.mean())
    rng = np.random.default_rng(np.random.SeedSequence([seed, zlib.crc32(key.encode("utf-8"))]))
    ci = None
    if n_boot > 0:
        boot = np.concatenate([w @ d / n for w in _boot_weights(rng, n, n_boot)])
        lo, hi = 100 * (1 - CI_LEVEL) / 2, 100 * (1 + CI_LEVEL) / 2
        ci = (float(np.percentile(boot, lo)), float(np.percentile(boot, hi)))
    p, test = _sign_flip_p(d, rng, n_perm)
    return PairedDifference(n, float(av.mean()), float(bv.mean()), obs, ci, p, test)


def _sign_flip_p(d: np.ndarray, rng: np.random.Generator, n_perm: int) -> tuple[float, str]:
    nz = d[d != 0]
    k = len(nz)
    if k == 0:
        return 1.0, "exact sign-flip"
    obs = abs(nz.sum())
    tol = 1e-12 * max(1.0, obs)  # sums of the same numbers in another order must count as equal
    if k <= EXACT_MAX:
        signs = np.array(list(itertools.product((-1.0, 1.0), repeat=k)))
        return float(np.mean(np.abs(signs @ nz) >= obs - tol)), "exact sign-flip"
    hits = 0
    for start in range(0, n_perm, _BLOCK):
        rows = min(_BLOCK, n_perm - start)
        signs = rng.integers(0, 2, size=(rows, k)) * 2.0 - 1.0
        hits += int(np.sum(np.abs(signs @ nz) >= obs - tol))
    return (1 + hits) / (1 + n_perm), f"sign-flip, {n_perm:,} resamples"


def paired_by_group(
    a: Mapping[str, float | None],
    b: Mapping[str, float | None],
    groups: Mapping[str, str],
    *,
    n_boot: int = defaults.N_BOOT,
    n_perm: int = DEFAULT_N_PERM,
    seed: int = 0,
) -> dict[str, PairedDifference]:
    """:func:`paired_difference` overall and per group, over the questions both runs scored.

    Args:
        a, b: question id → score (None = not scored: that question is left out of the pair).
        groups: question id → group (e.g. main category); ids absent from it count only overall.

    Returns:
        ``{"overall": …, group: …}`` (groups in first-seen order of the common ids).
    """
    common = [q for q in a if q in b and a[q] is not None and b[q] is not None]
    out = {
        "overall": paired_difference(
            [cast(float, a[q]) for q in common],  # common: both scores not None
            [cast(float, b[q]) for q in common],
            n_boot=n_boot,
            n_perm=n_perm,
            seed=seed,
            key="overall",
        )
    }
    by: dict[str, list[str]] = {}
    for q in common:
        if q in groups:
            by.setdefault(groups[q], []).append(q)
    for g, ids in by.items():
        out[g] = paired_difference(
            [cast(float, a[q]) for q in ids],
            [cast(float, b[q]) for q in ids],
            n_boot=n_boot,
            n_perm=n_perm,
            seed=seed,
            key=g,
        )
    return out


@dataclass(frozen=True)
class Pooled:
    """Repeated runs of one configuration."""

    runs: int
    run_means: tuple[float, ...]
    mean: float | None
    """Mean of the run means."""
    sd: float | None
    """Sample standard deviation (ddof 1) of the run means; None for a single run."""
    pooled_n: int
    pooled_mean: float | None
    pooled_ci: tuple[float, float] | None
    """Bootstrap CI of the mean over every question of every run (resampling questions)."""


def pool_runs(
    runs: Sequence[Sequence[float]], *, n_boot: int = defaults.N_BOOT, seed: int = 0, key: str = ""
) -> Pooled:
    """Pool the per-question scores of repeated runs (empty runs are ignored).

    Example: runs [[1, 0], [1, 1]] → run means 0.5 and 1.0 → mean 0.75, sd 0.354; pooled mean 0.75.
    """
    kept = [np.asarray(r, dtype=np.float64) for r in runs if len(r)]
    means = tuple(float(r.mean()) for r in kept)
    if not kept:
        return Pooled(0, (), None, None, 0, None, None)
    allv = np.concatenate(kept)
    ci = None
    if n_boot > 0:
        rng = np.random.default_rng(np.random.SeedSequence([seed, zlib.crc32(key.encode("utf-8"))]))
        boot = np.concatenate([w @ allv / len(allv) for w in _boot_weights(rng, len(allv), n_boot)])
        ci = (
            float(np.percentile(boot, 100 * (1 - CI_LEVEL) / 2)),
            float(np.percentile(boot, 100 * (1 + CI_LEVEL) / 2)),
        )
    sd = float(np.std(means, ddof=1)) if len(means) > 1 else None
    return Pooled(len(kept), means, float(np.mean(means)), sd, len(allv), float(allv.mean()), ci)
