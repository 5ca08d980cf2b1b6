"""Episodes: the short templated exchanges a synthetic session is made of, with their questions.

An episode is two to four consecutive turns about one thing (a purchase with its receipt, a
ticket, a menu, an app screenshot, a pet, a habit, a value that changes later). Each episode
returns its turns and the questions whose gold answers follow from exactly those turns (and the
rendered text of their image), so every gold is true by construction:

- UPR gold: a fact in the text of one turn; CRR gold: a value printed only on the image;
- MCR gold: ``"<file> in sessionK"`` of the image that prompted a remark;
- RET gold: what "it" / "that" / "that app" refers to, or how the topic evolved;
- TTL gold: the action of a stated habit; CD gold: ``"Yes"`` / ``"No"``.

KR, TR and AR questions span sessions and are built in :mod:`._synth_dialogue`.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from . import _synth_vocab as V
from ._synth_images import Card

T = TypeVar("T")
KrItem = tuple[str, str, str, tuple[str, ...]]
"""A Knowledge-Retention item of :data:`._synth_vocab.KR_ITEMS`: (subject, intro template, update template, values)."""


class World(Protocol):
    """What episode builders read of a dialogue's fixed facts (:class:`._synth_dialogue.World` has it)."""

    asked: set[str]
    """Question texts already asked in this dialogue."""

    def pet(self, person: str) -> tuple[str, str, int]: ...

    def habit(self, person: str, rng: random.Random) -> tuple[str, str, str]: ...


@dataclass(eq=False)
class TurnDraft:
    """A turn before it is written: ``session``/``index`` are set when it is placed."""

    speaker: str
    text: str
    card: Card | None = None
    session: str = ""
    index: int = -1


@dataclass(eq=False)
class QDraft:
    """A question with its gold and the evidence it follows from.

    ``evidence``: (turn, source) pairs, source ``"text"`` (the turn's text), ``"image"`` (the
    turn image's rendered text) or ``"date"`` (the session's ``timeline_date``).
    ``gold_parts``: strings that must each occur in some evidence source (the consistency
    check recorded in ``synth_meta.json``); empty for free-form golds.
    """

    task: str
    text: str
    gold: str
    difficulty: str
    evidence: list[tuple[TurnDraft, str]]
    gold_parts: list[str] = field(default_factory=list)
    image: str = ""


@dataclass(eq=False)
class Event:
    """Something that happened at one turn, for Temporal Reasoning questions."""

    phrase: str
    turn: TurnDraft


@dataclass(eq=False)
class Episode:
    turns: list[TurnDraft]
    questions: list[QDraft]
    events: list[Event] = field(default_factory=list)


@dataclass
class Ctx:
    """What an episode builder needs to know about the session it is placed in."""

    rng: random.Random
    session: str
    date: str
    """Leading ``YYYY-MM-DD`` of the session's ``timeline_date``."""
    image_name: Callable[[str], str]
    """Next image file name of this session for an extension (``"png"`` → ``"3.png"``)."""
    used: set[str]
    """Items already used in this session (products, events, …) so questions stay unambiguous."""
    group: bool
    """Multi-party: replies address the speaker with ``@Name``."""

    def pick(self, pool: Sequence[T], key: Callable[[T], str] = str) -> T:
        """A random item of ``pool`` not yet used in this session (any item when all are used)."""
        free = [x for x in pool if key(x) not in self.used]
        item = self.rng.choice(free or list(pool))
        self.used.add(key(item))
        return item

    def at(self, name: str, text: str) -> str:
        return f"@{name} {text}" if self.group else text

    def card(self, kind: str, title: str, lines: list[str], caption: str) -> Card:
        ext = self.rng.choice(("png", "png", "jpg")) if not self.group else self.rng.choice(("jpg", "jpg", "png"))
        c = Card(kind=kind, title=title, lines=lines, ext=ext, caption=caption)
        c.file = self.image_name(ext)
        c.session = self.session
        return c


def _a(noun: str) -> str:
    """``"a rice cooker"``, ``"an office chair"``."""
    return f"{'an' if noun[0].lower() in 'aeiou' else 'a'} {noun}"


def _on(ctx: Ctx) -> str:
    return f"In the conversation on {ctx.date}"


def _yes_no(ctx: Ctx, person: str, true_claim: str, false_claim: str, evidence: list[tuple[TurnDraft, str]]) -> QDraft:
    conflict = ctx.rng.random() < 0.5
    claim = false_claim if conflict else true_claim
    return QDraft(
        "CD",
        f"{person} now says {claim}. Does this conflict with what was said in the conversation on "
        f"{ctx.date}? Answer yes or no.",
        "Yes" if conflict else "No",
        ctx.rng.choice(("easy", "medium")),
        evidence,
    )


def _mcr(ctx: Ctx, card: Card, responder: str, remark: str, reply: TurnDraft, about: str) -> QDraft:
    return QDraft(
        "MCR",
        f'{_on(ctx)}, which image prompted {responder} to reply "{remark}" ({about})? Give the '
        "image file name and the session.",
        f"{card.file} in {card.session}",
        "medium",
        [(reply, "text")],
    )


def _mcr_why(ctx: Ctx, card: Card, sharer: str, reason: str, turn: TurnDraft, part: str) -> QDraft:
    return QDraft(
        "MCR",
        f"Why did {sharer} share this image in the conversation on {ctx.date}?",
        reason,
        "medium",
        [(turn, "text")],
        [part],
        image=card.file,
    )


def receipt(ctx: Ctx, a: str, b: str, world: World) -> Episode:
    product, lo, hi = ctx.pick(V.PRODUCTS, key=lambda p: p[0])
    store = ctx.pick(V.STORES)
    price = f"{ctx.rng.randint(lo * 100, hi * 100) / 100:.2f}"
    text = ctx.rng.choice(
        (
            f"I finally bought the {product} at {store}, here's the receipt.",
            f"Look what I got at {store} today: {_a('new ' + product)}. I kept the receipt.",
        )
    )
    card = ctx.card(
        "receipt",
        f"RECEIPT - {store}",
        [f"Item: {product}", "Qty: 1", f"Date: {ctx.date}", f"Total: {price} yuan"],
        f"A receipt from {store} for {_a(product)}.",
    )
    t1 = TurnDraft(a, text, card)
    remark = "Nice! Does it come with a warranty?"
    t2 = TurnDraft(b, ctx.at(a, remark))
    other = ctx.rng.choice([s for s in V.STORES if s != store])
    qs = [
        QDraft(
            "CRR",
            f"{_on(ctx)}, how much did {a} pay in total for the {product}?",
            f"{price} yuan",
            "medium",
            [(t1, "image")],
            [f"{price} yuan"],
        ),
        QDraft("UPR", f"{_on(ctx)}, at which store did {a} buy the {product}?", store, "easy", [(t1, "text")], [store]),
        _mcr(ctx, card, b, remark, t2, f"about {a}'s purchase at {store}"),
        QDraft(
            "RET",
            f'{_on(ctx)}, {b} asked "Does it come with a warranty?" right after {a} mentioned {store}. '
            'What does "it" refer to?',
            f"The {product} {a} bought at {store}",
            "hard",
            [(t1, "text"), (t2, "text")],
            [product],
        ),
        _yes_no(ctx, a, f"the {product} was bought at {store}", f"the {product} was bought at {other}", [(t1, "text")]),
        _mcr_why(
            ctx, card, a, f"To show {b} the receipt of the {product} {a} had just bought at {store}.", t1, product
        ),
    ]
    return Episode([t1, t2], qs, [Event(f"{a} bought the {product} at {store}", t1)])


def ticket(ctx: Ctx, a: str, b: str, world: World) -> Episode:
    event, venue = ctx.pick(V.EVENTS, key=lambda e: e[0])
    price = ctx.rng.randrange(40, 600, 5)
    seat = f"{ctx.rng.choice('ABCDEFGH')}{ctx.rng.randint(1, 30)}"
    text = ctx.rng.choice(
        (
            f"We went to the {event} at {venue} tonight, here's my ticket.",
            f"Just got back from the {event} at {venue}. Kept the ticket as a souvenir.",
        )
    )
    card = ctx.card(
        "ticket",
        "TICKET",
        [event.capitalize(), f"Venue: {venue}", f"Seat: {seat}", f"Ticket price: {price} yuan"],
        f"A ticket for the {event} at {venue}.",
    )
    t1 = TurnDraft(a, text, card)
    remark = "That looks fun! Was the seat any good?"
    t2 = TurnDraft(b, ctx.at(a, remark))
    other = ctx.rng.choice([v for _, v in V.EVENTS if v != venue])
    qs = [
        QDraft(
            "CRR",
            f"{_on(ctx)}, what was the ticket price of the {event} {a} attended?",
            f"{price} yuan",
            "medium",
            [(t1, "image")],
            [f"{price} yuan"],
        ),
        QDraft("CRR", f"{_on(ctx)}, which seat did {a} have at the {event}?", seat, "medium", [(t1, "image")], [seat]),
        QDraft("UPR", f"{_on(ctx)}, where did {a} go to see the {event}?", venue, "easy", [(t1, "text")], [venue]),
        _mcr(ctx, card, b, remark, t2, f"about the {event}"),
        _yes_no(ctx, a, f"the {event} took place at {venue}", f"the {event} took place at {other}", [(t1, "text")]),
    ]
    return Episode([t1, t2], qs, [Event(f"{a} went to the {event} at {venue}", t1)])


def menu(ctx: Ctx, a: str, b: str, world: World) -> Episode:
    restaurant = ctx.pick(V.RESTAURANTS)
    dishes = ctx.rng.sample(V.DISHES, 3)
    prices = ctx.rng.sample(range(18, 98), 3)
    chosen = ctx.rng.randrange(3)
    dish = dishes[chosen]
    text = ctx.rng.choice(
        (
            f"Look at the menu of {restaurant}. I'm going to order the {dish}.",
            f"We're at {restaurant} now, this is the menu. I'll get the {dish}.",
        )
    )
    card = ctx.card(
        "menu",
        f"MENU - {restaurant}",
        [f"{d.capitalize()}: {p} yuan" for d, p in zip(dishes, prices)],
        f"The menu of {restaurant}.",
    )
    t1 = TurnDraft(a, text, card)
    remark = "Good choice, I had that there once and loved it."
    t2 = TurnDraft(b, ctx.at(a, remark))
    other = dishes[(chosen + 1) % 3]
    qs = [
        QDraft(
            "CRR",
            f"{_on(ctx)}, how much does the dish {a} chose at {restaurant} cost?",
            f"{prices[chosen]} yuan",
            "medium",
            [(t1, "image")],
            [f"{prices[chosen]} yuan"],
        ),
        QDraft(
            "UPR",
            f"{_on(ctx)}, which dish did {a} decide to order at {restaurant}?",
            dish,
            "easy",
            [(t1, "text")],
            [dish],
        ),
        _mcr(ctx, card, b, remark, t2, f"about {restaurant}"),
        QDraft(
            "RET",
            f'{_on(ctx)}, what does "that" refer to when {b} said "I had that there once" about {restaurant}?',
            f"The {dish} at {restaurant}",
            "hard",
            [(t1, "text"), (t2, "text")],
            [dish],
        ),
        _yes_no(
            ctx, a, f"they chose the {dish} at {restaurant}", f"they chose the {other} at {restaurant}", [(t1, "text")]
        ),
    ]
    return Episode([t1, t2], qs, [Event(f"{a} shared the menu of {restaurant}", t1)])


def app(ctx: Ctx, a: str, b: str, world: World) -> Episode:
    name, tracks, label, fmt, ask, reminder, (lo, hi) = ctx.pick(V.APPS, key=lambda x: x[0])
    value = fmt.format(v=ctx.rng.randint(lo, hi))
    card = ctx.card(
        "screenshot",
        name,
        [f"{label}: {value}", f"Date: {ctx.date}", "Goal: keep it up"],
        f"A screenshot of the {name} app.",
    )
    t1 = TurnDraft(a, f"I started using an app called {name} to track {tracks}. Here's today's screen.", card)
    t2 = TurnDraft(b, ctx.at(a, "Is it actually useful?"))
    t3 = TurnDraft(a, ctx.at(b, f"Yes, that app already reminded me to {reminder} twice."))
    t4 = TurnDraft(b, ctx.at(a, "Maybe I'll install it too."))
    qs = [
        QDraft(
            "CRR",
            f"{_on(ctx)}, according to the {name} screenshot {a} shared, {ask}?",
            value,
            "medium",
            [(t1, "image")],
            [value],
        ),
        QDraft(
            "RET",
            f'{_on(ctx)}, which app did {a} mean by "that app"?',
            name,
            "hard",
            [(t1, "text"), (t3, "text")],
            [name],
        ),
        QDraft(
            "RET",
            f"{_on(ctx)}, how did {a}'s use of {name} evolve during the conversation?",
            f"{a} started using {name} to track {tracks.replace('my ', 'their ')}, shared a screenshot, and then "
            f"said it had already reminded them to {reminder} twice.",
            "hard",
            [(t1, "text"), (t3, "text")],
            [name],
        ),
        _mcr(ctx, card, b, "Is it actually useful?", t2, f"about {a}'s new app"),
        QDraft(
            "UPR",
            f"{_on(ctx)}, what did {a} say {name} had reminded them to do?",
            reminder,
            "easy",
            [(t3, "text")],
            [reminder],
        ),
    ]
    return Episode([t1, t2, t3, t4], qs, [Event(f"{a} started using {name}", t1)])


def parcel(ctx: Ctx, a: str, b: str, world: World) -> Episode:
    product, _, _ = ctx.pick(V.PRODUCTS, key=lambda p: p[0])
    carrier = ctx.rng.choice(V.CARRIERS)
    day = ctx.rng.choice(V.WEEKDAYS)
    card = ctx.card(
        "parcel",
        "ORDER STATUS",
        [f"Item: {product}", f"Carrier: {carrier}", f"Arrives: {day}"],
        f"A delivery tracking page for {_a(product)}.",
    )
    t1 = TurnDraft(a, f"I ordered {_a(product)} online, this is the tracking page.", card)
    remark = "Hope it arrives soon, waiting is the worst part."
    t2 = TurnDraft(b, ctx.at(a, remark))
    qs = [
        QDraft(
            "CRR",
            f"{_on(ctx)}, on which day was {a}'s {product} expected to arrive?",
            day,
            "medium",
            [(t1, "image")],
            [day],
        ),
        QDraft(
            "CRR",
            f"{_on(ctx)}, which carrier was delivering the {product} {a} ordered?",
            carrier,
            "medium",
            [(t1, "image")],
            [carrier],
        ),
        QDraft(
            "UPR",
            f"{_on(ctx)}, what did {a} order online?",
            _a(product).capitalize(),
            "easy",
            [(t1, "text")],
            [product],
        ),
        _mcr(ctx, card, b, remark, t2, f"about the {product}"),
    ]
    return Episode([t1, t2], qs, [Event(f"{a} ordered {_a(product)} online", t1)])


def vet(ctx: Ctx, a: str, b: str, world: World) -> Episode:
    kind, pet, _age = world.pet(a)
    weight = f"{ctx.rng.randint(8, 95) / 10:.1f} kg"
    days = ctx.rng.choice((7, 14, 21, 30, 60))
    card = ctx.card(
        "vet",
        "VET RECORD",
        [f"Pet: {pet} ({kind})", f"Weight: {weight}", f"Next visit: in {days} days"],
        f"A vet record for {a}'s {kind} {pet}.",
    )
    t1 = TurnDraft(a, f"Took {pet} to the vet today, everything is fine. Here's the record.", card)
    remark = f"Glad to hear {pet} is healthy!"
    t2 = TurnDraft(b, ctx.at(a, remark))
    qs = [
        QDraft(
            "CRR",
            f"{_on(ctx)}, how much did {a}'s {kind} weigh at the vet?",
            weight,
            "medium",
            [(t1, "image")],
            [weight],
        ),
        QDraft(
            "CRR",
            f"{_on(ctx)}, when was {pet}'s next vet visit due?",
            f"In {days} days",
            "medium",
            [(t1, "image")],
            [f"{days} days"],
        ),
        _mcr(ctx, card, b, remark, t2, f"about {pet}"),
    ]
    return Episode([t1, t2], qs, [Event(f"{a} took {pet} to the vet", t1)])


def poster(ctx: Ctx, a: str, b: str, world: World) -> Episode:
    event, venue = ctx.pick(V.EVENTS, key=lambda e: e[0])
    day = ctx.rng.choice(V.WEEKDAYS)
    start = f"{ctx.rng.randint(9, 20)}:{ctx.rng.choice(('00', '15', '30', '45'))}"
    card = ctx.card(
        "poster",
        event.upper(),
        [f"Place: {venue}", f"Day: {day}", f"Starts at {start}"],
        f"A poster for the {event} at {venue}.",
    )
    t1 = TurnDraft(a, f"Want to come to the {event} with me? Here's the poster.", card)
    remark = "Sure, I'd love to come along!"
    t2 = TurnDraft(b, ctx.at(a, remark))
    qs = [
        QDraft(
            "CRR",
            f"{_on(ctx)}, at what time did the {event} {a} suggested start?",
            start,
            "medium",
            [(t1, "image")],
            [start],
        ),
        QDraft(
            "CRR", f"{_on(ctx)}, on which day was the {event} {a} suggested?", day, "medium", [(t1, "image")], [day]
        ),
        _mcr(ctx, card, b, remark, t2, f"about the {event}"),
        _yes_no(
            ctx,
            b,
            f"they agreed to go to the {event} with {a}",
            f"they refused to go to the {event} with {a}",
            [(t2, "text")],
        ),
    ]
    return Episode([t1, t2], qs, [Event(f"{a} invited {b} to the {event}", t1)])


IMAGE_EPISODES = {
    "receipt": receipt,
    "ticket": ticket,
    "menu": menu,
    "app": app,
    "parcel": parcel,
    "vet": vet,
    "poster": poster,
}
EPISODE_TURNS = {
    "receipt": 2,
    "ticket": 2,
    "menu": 2,
    "app": 4,
    "parcel": 2,
    "vet": 2,
    "poster": 2,
    "pet": 2,
    "habit": 2,
    "kr_intro": 2,
    "kr_update": 2,
}
"""Turns per episode kind (the session planner fits episodes into the turn budget with these)."""


def pet(ctx: Ctx, owner: str, other: str, world: World, owner_first: bool) -> Episode:
    kind, name, age = world.pet(owner)
    stated = TurnDraft(
        owner,
        ctx.at(other, f"My {kind} {name} turned {age} years old this week!")
        if not owner_first
        else f"My {kind} {name} turned {age} years old this week!",
    )
    if owner_first:
        turns = [stated, TurnDraft(other, ctx.at(owner, f"Happy birthday to {name}! Time flies."))]
    else:
        turns = [TurnDraft(other, "How are your pets doing?"), stated]
    qs = [
        QDraft("UPR", f"What is the name of {owner}'s {kind}?", name, "easy", [(stated, "text")], [name]),
        QDraft(
            "UPR",
            f"{_on(ctx)}, how old did {owner}'s {kind} {name} turn?",
            f"{age} years old",
            "easy",
            [(stated, "text")],
            [f"{age} years old"],
        ),
        _yes_no(ctx, owner, f"their {kind} is called {name}", "they have never had a pet", [(stated, "text")]),
    ]
    return Episode(turns, qs)


def habit(ctx: Ctx, owner: str, other: str, world: World, owner_first: bool) -> Episode:
    said, situation, action = world.habit(owner, ctx.rng)
    sentence = f"{said[0].upper()}{said[1:]}."
    stated = TurnDraft(owner, sentence if owner_first else ctx.at(other, f"What works for me: {said}."))
    turns = (
        [stated, TurnDraft(other, ctx.at(owner, "That's a good habit, I might try it."))]
        if owner_first
        else [TurnDraft(other, "Any tips? I've been struggling lately."), stated]
    )
    text = f"{other} {situation}. Based on what {owner} said they do, what should {other} do?"
    qs = (
        []
        if text in world.asked
        else [QDraft("TTL", text, action[0].upper() + action[1:], "medium", [(stated, "text")], [action])]
    )
    world.asked.add(text)  # a habit restated later must not yield the same question twice
    return Episode(turns, qs)


def kr_intro(ctx: Ctx, owner: str, other: str, item: KrItem, value: str, owner_first: bool) -> Episode:
    subject, intro, _update, _values = item
    line = intro.format(v=value)
    stated = TurnDraft(owner, f"By the way, {line}." if owner_first else ctx.at(other, f"Well, {line}."))
    turns = (
        [stated, TurnDraft(other, ctx.at(owner, "Good to know."))]
        if owner_first
        else [TurnDraft(other, f"How is your {subject} these days?"), stated]
    )
    qs = [
        QDraft(
            "UPR",
            f"{_on(ctx)}, what did {owner} say about their {subject}?",
            value,
            "easy",
            [(stated, "text")],
            [value],
        )
    ]
    return Episode(turns, qs, [Event(f"{owner} mentioned their {subject} ({value})", stated)])


def kr_update(ctx: Ctx, owner: str, other: str, item: KrItem, old: str, new: str, owner_first: bool) -> Episode:
    subject, _intro, update, _values = item
    line = f"Quick update: {update.format(v=new)} (it used to be {old})."
    stated = TurnDraft(owner, line if owner_first else ctx.at(other, line))
    turns = (
        [stated, TurnDraft(other, ctx.at(owner, "Thanks for letting me know."))]
        if owner_first
        else [TurnDraft(other, f"Anything new about your {subject}?"), stated]
    )
    qs = [_yes_no(ctx, owner, f"their {subject} is now {new}", f"their {subject} is still {old}", [(stated, "text")])]
    return Episode(turns, qs, [Event(f"{owner} updated their {subject} to {new}", stated)])
