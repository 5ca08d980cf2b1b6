"""Aggregation of per-question scores: splits × groups, micro and macro averages, bootstrap CIs.

Definitions (``docs/metric-definitions.md`` §3):

- **micro average** (the paper's "weighted average") = mean over the questions of a group;
- **macro average** = mean of the sub-type means (the nine sub-types, or those present);
- 95% CIs: percentile bootstrap over questions (seeded ``numpy`` Generator, ``n_boot`` resamples);
- a failed answer (``failed`` true) counts as 0 and is counted in ``failed``; never dropped.

A metric value of ``None`` means "not scored" (e.g. an item the judge could not judge): it is left
out of ``n`` and lowers ``coverage`` = n / n_total.

Output schema (JSON-ready; this is the ``"aggregate"`` object of ``scores/summary.json``)::

    {
      "metrics": ["f1", "bleu1", ...],
      "n_boot": 1000, "seed": 0, "ci_level": 0.95,
      "ci_method": "percentile bootstrap over questions",
      "splits": {
        "dyadic" | "multi-party" | "all": {
          "overall": CELL + per metric {"macro", "macro_ci", "macro_types"},
          "task_type":     {"UPR": CELL, ...},          # paper order UPR … AR, present ones only
          "main_category": {"Memory Recall": CELL, ...},
          "difficulty":    {"easy": CELL, ...},
          "dialogue":      {"dyadic/dialogue5": CELL, ...}
        }
      }
    }
    CELL = {"n_total": int, "failed": int,
            "metrics": {metric: {"n": int, "coverage": float, "mean": float | None,
                                 "ci": [low, high] | None}}}

``mean``/``ci`` are None when no question of the cell has a value (e.g. an empty split).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator, Sequence
from functools import partial
from typing import Any

import numpy as np

from .. import defaults
from ..data import SPLITS, MainCategory, TaskType, parse_main_category

ALL = "all"
SPLIT_KEYS: tuple[str, ...] = (*SPLITS, ALL)
DEFAULT_GROUPS: tuple[str, ...] = ("task_type", "main_category", "difficulty", "dialogue")
DEFAULT_N_BOOT = defaults.N_BOOT
"""Bootstrap resamples (spec §3 asks for at least 1,000)."""
CI_LEVEL = 0.95

_DIFF_ORDER = {"easy": 0, "medium": 1, "hard": 2, "unknown": 3}


def _normalise(records: Sequence[dict[str, Any]], groups: Sequence[str]) -> list[dict[str, Any]]:
    out = []
    for i, r in enumerate(records):
        try:
            split = r["split"]
            if split not in SPLITS:
                raise ValueError(f"split {split!r} is not one of {SPLITS}")
            tt = TaskType.parse(r["task_type"])
            main = parse_main_category(r["main_category"]) if r.get("main_category") else tt.main_category
            keys = {
                "split": split,
                "task_type": tt.abbr,
                "main_category": main.value,
                "difficulty": str(r.get("difficulty") or "unknown"),
                "dialogue": f"{split}/{r['dialogue']}",
            }
        except KeyError as e:
            raise ValueError(f"record {i} ({r.get('question_id', '?')}): missing field {e.args[0]!r}") from None
        except ValueError as e:
            raise ValueError(f"record {i} ({r.get('question_id', '?')}): {e}") from None
        for g in groups:
            if g not in keys:
                if g not in r:
                    raise ValueError(f"record {i} ({r.get('question_id', '?')}): missing group field {g!r}")
                keys[g] = str(r[g])
        keys["failed"] = bool(r.get("failed"))
        keys["record"] = r
        out.append(keys)
    return out


def _values(rows: list[dict[str, Any]], metrics: Sequence[str]) -> np.ndarray:
    vals = np.full((len(rows), len(metrics)), np.nan)
    for i, row in enumerate(rows):
        rec = row["record"]
        for j, m in enumerate(metrics):
            v = rec.get(m)
            if v is None and row["failed"]:
                v = 0.0  # a failed answer scores 0 (spec §3)
            if v is not None:
                vals[i, j] = float(v)
    return vals


def _boot_weights(rng: np.random.Generator, n: int, n_boot: int) -> Iterator[np.ndarray]:
    """Resample counts in blocks of rows: row b says how often each question appears in resample b.

    Blocks keep memory bounded (about 16 MB a block, whatever ``n``); drawing the block rows one
    after another from one generator gives exactly the numbers of a single (n_boot, n) draw.
    """
    rows = max(1, min(n_boot, _BLOCK_CELLS // max(n, 1)))
    for start in range(0, n_boot, rows):
        b = min(rows, n_boot - start)
        idx = rng.integers(0, n, size=(b, n))
        flat = (np.arange(b)[:, None] * n + idx).ravel()
        yield np.bincount(flat, minlength=b * n).reshape(b, n).astype(np.float64)


_BLOCK_CELLS = 2_000_000


def _bootstrap(
    rng: np.random.Generator, vals: np.ndarray, n_boot: int, codes: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray | None]:
    """Bootstrap means (n_boot, metrics) and, with sub-type ``codes``, the macro means (n_boot, metrics)."""
    boot, macro = [], []
    for w in _boot_weights(rng, len(vals), n_boot):
        boot.append(_means(w, vals))
        if codes is not None:
            per_type = [_means(w[:, codes == t], vals[codes == t]) for t in np.unique(codes)]
            stack = np.stack(per_type)  # (types, block, metrics); NaN where a type has no value
            present = ~np.isnan(stack)
            with np.errstate(invalid="ignore"):
                macro.append(
                    np.where(present.any(axis=0), np.nansum(stack, axis=0) / np.maximum(present.sum(axis=0), 1), np.nan)
                )
    return np.vstack(boot), (np.vstack(macro) if codes is not None else None)


def _means(weights: np.ndarray, vals: np.ndarray) -> np.ndarray:
    """Weighted means per row of ``weights`` and column of ``vals`` (NaN = missing)."""
    mask = ~np.isnan(vals)
    sums = weights @ np.where(mask, vals, 0.0)
    counts = weights @ mask.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, sums / np.where(counts > 0, counts, 1.0), np.nan)


def _ci(boot: np.ndarray) -> list[list[float] | None]:
    """Percentile interval per column of ``boot`` (None when a column is all NaN)."""
    lo_q, hi_q = 100 * (1 - CI_LEVEL) / 2, 100 * (1 + CI_LEVEL) / 2
    out: list[list[float] | None] = []
    for col in boot.T:
        col = col[~np.isnan(col)]
        out.append(None if col.size == 0 else [float(np.percentile(col, lo_q)), float(np.percentile(col, hi_q))])
    return out


def _rng(seed: int, key: str) -> np.random.Generator:
    # One stream per group key, so a cell's CI does not depend on which other cells were computed.
    return np.random.default_rng(np.random.SeedSequence([seed, zlib.crc32(key.encode("utf-8"))]))


def _cell(
    rows: list[dict[str, Any]], metrics: Sequence[str], n_boot: int, seed: int, key: str, *, macro: bool = False
) -> dict[str, Any]:
    n_total = len(rows)
    vals = _values(rows, metrics)
    mask = ~np.isnan(vals)
    ns = mask.sum(axis=0)
    with np.errstate(invalid="ignore"):
        means = np.where(ns > 0, np.nansum(vals, axis=0) / np.maximum(ns, 1), np.nan)
    cis: list[list[float] | None] = [None] * len(metrics)
    codes = _type_codes(rows) if macro else None
    boot_macro = None
    if n_total and n_boot > 0:
        boot, boot_macro = _bootstrap(_rng(seed, key), vals, n_boot, codes)
        cis = _ci(boot)
    cell_metrics: dict[str, Any] = {}
    for j, m in enumerate(metrics):
        cell_metrics[m] = {
            "n": int(ns[j]),
            "coverage": float(ns[j] / n_total) if n_total else 0.0,
            "mean": None if ns[j] == 0 else float(means[j]),
            "ci": cis[j] if ns[j] else None,
        }
    if codes is not None:  # = macro
        _add_macro(cell_metrics, codes, vals, metrics, boot_macro)
    return {"n_total": n_total, "failed": sum(r["failed"] for r in rows), "metrics": cell_metrics}


def _type_codes(rows: list[dict[str, Any]]) -> np.ndarray:
    return np.array([list(TaskType).index(TaskType[r["task_type"]]) for r in rows], dtype=int)


def _add_macro(
    cell_metrics: dict[str, Any],
    codes: np.ndarray,
    vals: np.ndarray,
    metrics: Sequence[str],
    boot_macro: np.ndarray | None,
) -> None:
    type_means = []
    for t in range(len(TaskType)):
        sel = codes == t
        if not sel.any():
            continue
        sub = vals[sel]
        mask = ~np.isnan(sub)
        with np.errstate(invalid="ignore"):
            type_means.append(
                np.where(mask.any(axis=0), np.nansum(sub, axis=0) / np.maximum(mask.sum(axis=0), 1), np.nan)
            )
    if not type_means:
        for m in metrics:
            cell_metrics[m].update(macro=None, macro_ci=None, macro_types=0)
        return
    tm = np.vstack(type_means)  # (types, metrics)
    n_types = (~np.isnan(tm)).sum(axis=0)
    with np.errstate(invalid="ignore"):
        macro = np.where(n_types > 0, np.nansum(tm, axis=0) / np.maximum(n_types, 1), np.nan)
    macro_cis: list[list[float] | None] = [None] * len(metrics)
    if boot_macro is not None:
        macro_cis = _ci(boot_macro)
    for j, m in enumerate(metrics):
        ok = n_types[j] > 0
        cell_metrics[m].update(
            macro=float(macro[j]) if ok else None, macro_ci=macro_cis[j] if ok else None, macro_types=int(n_types[j])
        )


def _group_order(group: str, key: str) -> tuple:
    if group == "task_type":
        return (list(TaskType).index(TaskType[key]),)
    if group == "main_category":
        return (list(MainCategory).index(MainCategory(key)),)
    if group == "difficulty":
        return (_DIFF_ORDER.get(key, 9), key)
    if group == "dialogue":
        split, _, name = key.partition("/")
        digits = "".join(c for c in name if c.isdigit())
        return (split, int(digits) if digits else 0, name)
    return (key,)


def aggregate(
    records: Sequence[dict[str, Any]],
    metrics: Sequence[str],
    *,
    groups: Sequence[str] = DEFAULT_GROUPS,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = 0,
) -> dict[str, Any]:
    """Aggregate per-question ``records`` into the schema in this module's docstring.

    Args:
        records: dicts with ``split`` ("dyadic"/"multi-party"), ``task_type`` (any spelling or
            abbreviation), ``main_category`` (optional; derived from the task type), ``difficulty``,
            ``dialogue`` ("dialogueN"), optional ``failed`` and one value (float, bool or None)
            per metric name.
        metrics: the record fields to aggregate.
        groups: group fields besides the split (default: sub-type, main category, difficulty,
            dialogue; dialogue keys become ``"<split>/dialogueN"``).
        n_boot: bootstrap resamples (default 1,000, spec §3); 0 disables CIs.
        seed: seed of the bootstrap streams (results are reproducible per seed).

    Raises:
        ValueError: a record lacks a field or has an unknown split/label (names the record).
    """
    if n_boot < 0:
        raise ValueError(f"n_boot must be >= 0, got {n_boot}")
    rows = _normalise(records, groups)
    splits: dict[str, Any] = {}
    for split in SPLIT_KEYS:
        sel = rows if split == ALL else [r for r in rows if r["split"] == split]
        # Streams are keyed by group, not split: a split that holds the same questions as "all"
        # (a dyadic-only run) gets the same intervals.
        out: dict[str, Any] = {"overall": _cell(sel, metrics, n_boot, seed, "overall", macro=True)}
        for g in groups:
            by: dict[str, list[dict[str, Any]]] = {}
            for r in sel:
                by.setdefault(r[g], []).append(r)
            out[g] = {
                k: _cell(by[k], metrics, n_boot, seed, f"{g}|{k}") for k in sorted(by, key=partial(_group_order, g))
            }
        splits[split] = out
    return {
        "metrics": list(metrics),
        "n_boot": n_boot,
        "seed": seed,
        "ci_level": CI_LEVEL,
        "ci_method": "percentile bootstrap over questions",
        "splits": splits,
    }
