"""Compose one synthetic dialogue: its people, dated sessions of episodes and filler, and questions.

Sizes come from a :class:`DialoguePlan` (turns, image turns and questions per session), so a
whole dataset can match the published counts exactly. Knowledge that changes (KR) is scheduled
across sessions up front: introduced in one session, updated in later ones; its question sits in
the last update's session and asks for the latest value. ``session0`` gets the cross-session
questions (TR between sessions, KR/RET over a chain, two-fact UPR, CRR on another session's
image named ``"sessionK/<file>"``).
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass, field
from typing import Any

from . import _synth_episodes as E
from . import _synth_vocab as V
from ._synth_episodes import Ctx, Episode, Event, QDraft, TurnDraft

QUESTION_CYCLE = ("CRR", "UPR", "MCR", "RET", "AR", "CD", "TTL", "CRR", "UPR", "MCR", "RET", "AR", "CD", "TTL", "TR")
"""Order in which a session's questions are drawn from its candidates (roughly the type mix of the
public files: CRR ≈ UPR > MCR ≈ RET > AR > CD ≈ TTL > TR; KR questions are always kept)."""
POOL_CYCLE = ("TR", "KR", "UPR", "CRR", "RET", "TR", "CD", "AR", "KR", "CRR", "TR", "RET")
"""Order for ``session0`` (cross-session) questions."""
IMAGE_WEIGHTS = {"receipt": 3, "ticket": 2, "menu": 2, "parcel": 2, "poster": 1, "vet": 1, "app": 1}
ONCE_PER_SESSION = ("app", "vet")
MAX_KR_PER_SESSION = 2
"""At most two knowledge updates in one session, so a session of ``2 × images + 8`` turns always
has room for them (see :func:`._synth.plan_dataset`)."""
TITLES = {
    "receipt": "New Purchase",
    "ticket": "Night Out",
    "menu": "Dinner Plans",
    "app": "A New App",
    "parcel": "Waiting for a Parcel",
    "vet": "Vet Visit",
    "poster": "Weekend Invitation",
    "pet": "Pet News",
    "habit": "Daily Habits",
    "kr_intro": "Catching Up",
    "kr_update": "Things Change",
}


@dataclass
class SessionPlan:
    turns: int
    images: int
    questions: int


@dataclass
class DialoguePlan:
    split: str
    number: int
    sessions: list[SessionPlan]
    pool_questions: int
    """Questions in ``session0/questions.json``."""


@dataclass
class SessionDraft:
    name: str
    number: int
    date: dt.date
    raw_date: str
    title: str
    turns: list[TurnDraft]
    questions: list[QDraft] = field(default_factory=list)
    """Candidates until selection, then the questions of ``questions.json``."""
    events: list[Event] = field(default_factory=list)
    unused: list[QDraft] = field(default_factory=list)
    """Candidates not selected for the session file: material for the ``session0`` pool."""


@dataclass
class DialogueDraft:
    split: str
    number: int
    people: list[str]
    theme: tuple[str, str, str]
    group: str
    sessions: list[SessionDraft]
    pool: list[QDraft]


class World:
    """The people of one dialogue and the facts that stay fixed across its sessions."""

    def __init__(self, rng: random.Random, people: list[str]):
        self.rng = rng
        self.people = people
        self._pets: dict[str, tuple[str, str, int]] = {}
        self._habits: dict[str, list[tuple[str, str, str]]] = {}
        self.pet_told: set[str] = set()
        self.asked: set[str] = set()
        """Question texts already asked in this dialogue (Answer Refusal, Test-Time Learning)."""

    def pet(self, person: str) -> tuple[str, str, int]:
        """(kind, name, age) of ``person``'s pet; names are unique within the dialogue."""
        if person not in self._pets:
            taken = {n for _, n, _ in self._pets.values()}
            name = self.rng.choice([n for n in V.PET_NAMES if n not in taken])
            self._pets[person] = (self.rng.choice(V.PET_KINDS), name, self.rng.randint(1, 12))
        return self._pets[person]

    def habit(self, person: str, rng: random.Random) -> tuple[str, str, str]:
        """A habit for ``person``: a new one while the pool lasts, else one they already stated."""
        taken = {h for hs in self._habits.values() for h in hs}
        free = [h for h in V.HABITS if h not in taken]
        h = rng.choice(free) if free else rng.choice(self._habits.get(person) or list(V.HABITS))
        self._habits.setdefault(person, [])
        if h not in self._habits[person]:
            self._habits[person].append(h)
        return h

    def refusal(self, rng: random.Random, date: str | None) -> QDraft:
        """An Answer Refusal question about something no turn of this dialogue states."""
        for _ in range(200):
            p = rng.choice(self.people)
            if rng.random() < 0.75:
                attr = rng.choice(V.NEVER_SAID)
                text = f"What is {p}'s {attr}?"
            else:
                thing = rng.choice(V.NEVER_OWNED)
                text = f"How much did {p} pay for the {thing}?"
            if date and rng.random() < 0.3:
                text = f"In the conversation on {date}, {text[0].lower()}{text[1:]}"
            if text not in self.asked:
                self.asked.add(text)
                return QDraft("AR", text, "Not mentioned", rng.choice(("easy", "medium")), [])
        raise RuntimeError("ran out of distinct Answer Refusal questions for one dialogue")


def _dates(rng: random.Random, n: int, group: bool) -> list[tuple[dt.date, str]]:
    d = dt.date(2024, 1, 1) + dt.timedelta(days=rng.randint(0, 60))
    out = []
    for _ in range(n):
        raw = d.isoformat()
        if rng.random() < 0.12:
            raw += rng.choice(V.DATE_SUFFIXES)
        out.append((d, raw))
        d += dt.timedelta(days=rng.randint(4, 20) if group else rng.randint(3, 35))
    return out


def _kr_schedule(rng: random.Random, people: list[str], n_sessions: int) -> dict[int, list[tuple[Any, ...]]]:
    """Session number → [("kr_intro"|"kr_update", chain, step)] for the dialogue's KR chains."""
    out: dict[int, list[tuple[Any, ...]]] = {}
    if n_sessions < 2:
        return out
    n_chains = min(len(V.KR_ITEMS), max(1, n_sessions // 4 + (len(people) > 2)))
    for item in rng.sample(V.KR_ITEMS, n_chains):
        free = [k for k in range(1, n_sessions + 1) if len(out.get(k, ())) < MAX_KR_PER_SESSION]
        steps = min(len(free), rng.choice((2, 2, 3)))
        if steps < 2:
            break
        sessions = sorted(rng.sample(free, steps))
        chain = {
            "owner": rng.choice(people),
            "item": item,
            "values": rng.sample(item[3], steps),
            "sessions": sessions,
            "turns": [],
        }
        for i, k in enumerate(sessions):
            out.setdefault(k, []).append(("kr_intro" if i == 0 else "kr_update", chain, i))
    return out


def _episode_kinds(
    rng: random.Random, plan: SessionPlan, forced: list[tuple[Any, ...]], world: World
) -> list[tuple[Any, ...]]:
    kinds: list[tuple[Any, ...]] = []
    counts: dict[str, int] = {}
    names, weights = zip(*IMAGE_WEIGHTS.items())
    for _ in range(plan.images):
        while True:
            k = rng.choices(names, weights)[0]
            if k not in ONCE_PER_SESSION or not counts.get(k):
                break
        counts[k] = counts.get(k, 0) + 1
        kinds.append((k,))
    budget = plan.turns - sum(E.EPISODE_TURNS[k[0]] for k in kinds)
    if budget < 0 and ("app",) in kinds:
        kinds[kinds.index(("app",))] = ("receipt",)
        budget += 2
    if budget < 0:
        raise ValueError(f"a session of {plan.turns} turns cannot hold {plan.images} image turns")
    optional = [("habit",)]
    if any(p not in world.pet_told for p in world.people):
        optional.append(("pet",))
    for k in [*forced, *optional]:
        if E.EPISODE_TURNS[k[0]] <= budget:
            kinds.append(k)
            budget -= E.EPISODE_TURNS[k[0]]
        elif k[0].startswith("kr"):
            raise ValueError(f"a session of {plan.turns} turns has no room for a scheduled knowledge update")
    rng.shuffle(kinds)
    return kinds


def compose_dialogue(rng: random.Random, plan: DialoguePlan) -> DialogueDraft:
    """Build every session and question of one dialogue with exactly the sizes of ``plan``."""
    group = plan.split == "multi-party"
    people = rng.sample(V.GROUP_NAMES, rng.randint(4, 6)) if group else rng.sample(V.DYADIC_NAMES, 2)
    world = World(rng, people)
    theme = rng.choice(V.THEMES)
    schedule = _kr_schedule(rng, people, len(plan.sessions))
    chains = {id(c): c for items in schedule.values() for _, c, _ in items}
    sessions = []
    for (k, sp), (date, raw) in zip(enumerate(plan.sessions, start=1), _dates(rng, len(plan.sessions), group)):
        sessions.append(_compose_session(rng, world, group, k, sp, date, raw, schedule.get(k, [])))
    for chain in chains.values():
        _kr_questions(rng, chain, sessions)
    for s, sp in zip(sessions, plan.sessions):
        cands = s.questions
        s.questions = _select(rng, cands, sp.questions, QUESTION_CYCLE, world, s.date.isoformat())
        s.unused = [q for q in cands if all(q is not x for x in s.questions)]
    pool = _select(
        rng, _pool_candidates(rng, sessions, list(chains.values())), plan.pool_questions, POOL_CYCLE, world, None
    )
    return DialogueDraft(
        plan.split, plan.number, people, theme, f"G{plan.number:02d}_{rng.choice(V.GROUPS)}", sessions, pool
    )


def _compose_session(
    rng: random.Random,
    world: World,
    group: bool,
    k: int,
    plan: SessionPlan,
    date: dt.date,
    raw: str,
    forced: list[tuple[Any, ...]],
) -> SessionDraft:
    name = f"session{k}"
    counter = [0]

    def image_name(ext: str) -> str:
        counter[0] += 1
        return f"img{counter[0]}.{ext}" if group else f"{counter[0]}.{ext}"

    ctx = Ctx(rng, name, date.isoformat(), image_name, set(), group)
    kinds = _episode_kinds(rng, plan, forced, world)
    n_filler = plan.turns - sum(E.EPISODE_TURNS[k[0]] for k in kinds)
    gaps = [0] * (len(kinds) + 1)
    for _ in range(n_filler):
        gaps[rng.randrange(len(gaps))] += 1
    fillers = list(V.GROUP_FILLERS if group else V.DYADIC_FILLERS)
    rng.shuffle(fillers)
    people = world.people
    turns: list[TurnDraft] = []
    questions: list[QDraft] = []
    events: list[Event] = []
    start = rng.randrange(2)

    def speaker_now() -> tuple[str, str]:
        if group:
            a, b = rng.sample(people, 2)
            return a, b
        a = people[(start + len(turns)) % 2]
        return a, people[(start + len(turns) + 1) % 2]

    for i, kind in enumerate([None, *kinds]):
        if kind is not None:
            a, b = speaker_now()
            ep = _instantiate(ctx, world, kind, a, b)
            turns.extend(ep.turns)
            questions.extend(ep.questions)
            events.extend(ep.events)
        for _ in range(gaps[i]):
            a, _b = speaker_now()
            turns.append(TurnDraft(a, fillers[len(turns) % len(fillers)]))
    for i, t in enumerate(turns):
        t.session, t.index = name, i
        if t.card is not None:
            questions.append(
                QDraft(
                    "CRR",
                    f"Based on the conversation on {ctx.date}, find the image showing "
                    f"{t.card.caption[0].lower()}{t.card.caption[1:].rstrip('.')}. Provide the session number and "
                    "image file name.",
                    f"{t.card.file} in {name}",
                    "medium",
                    [(t, "text")],
                )
            )
    if len(events) >= 2:
        e1, e2 = rng.sample(events, 2)
        first = e1 if e1.turn.index < e2.turn.index else e2
        questions.append(
            QDraft(
                "TR",
                f'In the conversation on {ctx.date}, which came first: "{e1.phrase}" or "{e2.phrase}"?',
                first.phrase,
                "medium",
                [(e1.turn, "text"), (e2.turn, "text")],
            )
        )
    title = TITLES[kinds[0][0]] if kinds else "Small Talk"
    return SessionDraft(name, k, date, raw, title, turns, questions, events)


def _instantiate(ctx: Ctx, world: World, kind: tuple[Any, ...], a: str, b: str) -> Episode:
    k = kind[0]
    if k in E.IMAGE_EPISODES:
        return E.IMAGE_EPISODES[k](ctx, a, b, world)
    if k == "pet":
        owner = a if a not in world.pet_told else next((p for p in world.people if p not in world.pet_told), a)
        world.pet_told.add(owner)
        return E.pet(ctx, owner, b if owner == a else a, world, owner_first=owner == a)
    if k == "habit":
        return E.habit(ctx, a, b, world, owner_first=True)
    chain, step = kind[1], kind[2]
    owner = chain["owner"]
    first = owner == a
    other = b if first else a
    if ctx.group:  # in a group chat the owner simply speaks first
        first, other = True, (b if b != owner else a)
    if k == "kr_intro":
        ep = E.kr_intro(ctx, owner, other, chain["item"], chain["values"][0], first)
    else:
        ep = E.kr_update(ctx, owner, other, chain["item"], chain["values"][step - 1], chain["values"][step], first)
    chain["turns"].append(ep.events[0].turn)
    return ep


def _kr_questions(rng: random.Random, chain: dict[str, Any], sessions: list[SessionDraft]) -> None:
    if len(chain["turns"]) < 2:
        return
    owner, subject, latest = chain["owner"], chain["item"][0], chain["values"][-1]
    last = sessions[chain["sessions"][-1] - 1]
    ev = [(t, "text") for t in chain["turns"]]
    last.questions.append(
        QDraft(
            "KR",
            f"What is {owner}'s {subject} now, after the latest update?",
            latest,
            rng.choice(("medium", "hard")),
            ev,
            [latest],
        )
    )
    chain["pool"] = [
        QDraft(
            "KR",
            f"Considering all the conversations, what is {owner}'s current {subject}?",
            latest,
            "medium",
            ev,
            [latest],
        ),
        QDraft(
            "RET",
            f"How did {owner}'s {subject} change across the conversations?",
            "; then ".join(
                f"{v} (on {sessions[k - 1].date.isoformat()})" for v, k in zip(chain["values"], chain["sessions"])
            ),
            "hard",
            ev,
            list(chain["values"]),
        ),
    ]


def _pool_candidates(rng: random.Random, sessions: list[SessionDraft], chains: list[dict[str, Any]]) -> list[QDraft]:
    out: list[QDraft] = [q for c in chains for q in c.get("pool", [])]
    events = [e for s in sessions for e in s.events]
    for _ in range(min(40, len(events))):
        e1, e2 = rng.sample(events, 2) if len(events) >= 2 else (events[0], events[0])
        if e1.turn.session == e2.turn.session:
            continue
        d1, d2 = (sessions[int(e.turn.session[7:]) - 1].date for e in (e1, e2))
        early, ed = (e1, d1) if d1 < d2 else (e2, d2)
        form = rng.randrange(3)
        if form == 0:
            out.append(
                QDraft(
                    "TR",
                    f'Which happened earlier: "{e1.phrase}" or "{e2.phrase}"?',
                    f"{early.phrase} (on {ed.isoformat()})",
                    "medium",
                    [(e1.turn, "date"), (e2.turn, "date")],
                    [ed.isoformat()],
                )
            )
        elif form == 1:
            out.append(
                QDraft(
                    "TR",
                    f'On what date did this happen: "{e1.phrase}"?',
                    d1.isoformat(),
                    "medium",
                    [(e1.turn, "date")],
                    [d1.isoformat()],
                )
            )
        else:
            out.append(
                QDraft(
                    "TR",
                    f'How many days passed between "{e1.phrase}" and "{e2.phrase}"?',
                    f"{abs((d2 - d1).days)} days",
                    "hard",
                    [(e1.turn, "date"), (e2.turn, "date")],
                )
            )
    by_type: dict[str, list[QDraft]] = {}
    for s in sessions:  # questions not already asked in a session file, so the pool repeats none
        for q in s.unused:
            by_type.setdefault(q.task, []).append(q)
    upr = [q for q in by_type.get("UPR", []) if q.gold_parts]
    for _ in range(min(10, len(upr) // 2)):
        q1, q2 = rng.sample(upr, 2)
        if q1.evidence[0][0].session == q2.evidence[0][0].session:
            continue
        out.append(
            QDraft(
                "UPR",
                f"{q1.text} And: {q2.text[0].lower()}{q2.text[1:]} (Please answer two facts from different sessions.)",
                f"{q1.gold}; {q2.gold}",
                "medium",
                q1.evidence + q2.evidence,
                q1.gold_parts + q2.gold_parts,
            )
        )
    for q in rng.sample(by_type.get("CRR", []), min(12, len(by_type.get("CRR", [])))):
        turn, source = q.evidence[0]
        if source != "image" or turn.card is None:  # image evidence always has a card
            continue
        out.append(
            QDraft(
                "CRR",
                f"This image was shared in an earlier conversation. {q.text}",
                q.gold,
                "medium",
                q.evidence,
                q.gold_parts,
                image=f"{turn.session}/{turn.card.file}",
            )
        )
    for q in rng.sample(by_type.get("CD", []), min(6, len(by_type.get("CD", [])))):
        out.append(QDraft("CD", q.text, q.gold, q.difficulty, q.evidence, q.gold_parts))
    return out


def _select(
    rng: random.Random, cands: list[QDraft], n: int, cycle: tuple[str, ...], world: World, date: str | None
) -> list[QDraft]:
    """``n`` questions: every KR candidate first, then one per type along ``cycle``; AR pads the rest."""
    by_type: dict[str, list[QDraft]] = {}
    for q in cands:
        by_type.setdefault(q.task, []).append(q)
    for qs in by_type.values():
        rng.shuffle(qs)
    out = by_type.pop("KR", [])[:n] if cycle is QUESTION_CYCLE else []
    pos = rng.randrange(len(cycle))
    misses = 0
    while len(out) < n:
        t = cycle[pos % len(cycle)]
        pos += 1
        if t == "AR":
            out.append(world.refusal(rng, date))
            misses = 0
        elif by_type.get(t):
            out.append(by_type[t].pop())
            misses = 0
        else:
            misses += 1
            if misses > len(cycle):
                out.append(world.refusal(rng, date))
    return out
