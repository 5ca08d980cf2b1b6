"""Neighbour expansion for reasoning questions (part of ``h2h``): the other link of a chain.

A causal question (MCR: "why did X …?") or a reference question (RET: "what did 'it' refer to?")
is answered by a short chain of turns — the cause and its effect, the remark and the turn it refers
back to — and in a conversation those are usually next to each other: on the labelled sample,
68% of the MCR and 53% of the RET supporting turns have another supporting turn at most two turns
away, against 22% for UPR. The question's words match one link best; the other link shares little
vocabulary with it ("because the vet said …" vs "why was the cat on a diet?"). So the best-scoring
adjacent turn of each of the first hits joins the top-k right after it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ...data import TaskType

CHAIN_TYPES: frozenset[TaskType] = frozenset({TaskType.MCR, TaskType.RET})
"""Task types whose questions get the expansion (reasoning over a chain of turns)."""


def best_neighbour(i: int, scores: np.ndarray, sessions: Sequence[str]) -> int | None:
    """The previous or next turn of turn ``i`` in its session with the higher score (the previous
    one on a tie), or None when ``i`` is alone in its session.

    Example: scores [0.2, 0.9, 0.4, 0.7], sessions [a, a, a, b]: i = 1 → 2; i = 3 → None.
    """
    near = [j for j in (i - 1, i + 1) if 0 <= j < len(sessions) and sessions[j] == sessions[i]]
    if not near:
        return None
    return max(near, key=lambda j: (float(scores[j]), -j))


def expand_chain(order: Sequence[int], scores: np.ndarray, sessions: Sequence[str], first: int, k: int) -> list[int]:
    """The top ``k`` of ``order`` with the best neighbour (:func:`best_neighbour`) of each of its
    first ``first`` turns placed right after that turn (unless already placed). ``scores`` and
    ``sessions`` are indexed by turn position (shape ``(n_turns,)``).

    The expansion keeps every session of the plain top ``k``: a neighbour shares its hit's session,
    so where it would push the last turn of a session out, the lowest-ranked turn of a session that
    is still represented makes room instead (the sessions retrieved, and session hit@k, never change).

    Example: sessions [a, a, a, b, b, c], scores favouring turn 4 next to 3, first 1, k 3: order
    [3, 0, 1, 5] → [3, 4, 0] (turn 1 leaves, session a keeps turn 0); order [3, 0, 5, 1] →
    [3, 0, 5] (turn 4 would push out session a or c: no room).
    """
    out: list[int] = []
    seen: set[int] = set()
    for rank, i in enumerate(order):
        if len(out) >= k:
            break
        if i not in seen:
            out.append(i)
            seen.add(i)
        j = best_neighbour(i, scores, sessions) if rank < first else None
        if j is not None and j not in seen and len(out) < k:
            out.append(j)
            seen.add(j)
    plain = list(order[:k])
    kept = {sessions[i] for i in out}
    for i in plain:  # best turn of each session the expansion pushed out, in rank order
        if sessions[i] in kept:
            continue
        counts = {s: sum(sessions[x] == s for x in out) for s in kept}
        drop = next(x for x in reversed(out) if counts[sessions[x]] > 1 and x not in plain[:1])
        out.remove(drop)
        out.append(i)
        kept.add(sessions[i])
    return out
