"""Naive RAG: dense retrieval over single turns, images as captions (docs/baselines.md).

- chunk = 1 turn; embedder: all-MiniLM-L6-v2 (384-d), cosine similarity; top-k 5; hits with
  similarity ≤ 0.1 dropped; context = the retrieved turns ordered by similarity.

Two presets (``docs/protocol.md``; each choice is an option, overridable with ``--param``):

- ``paper`` — as ``baselines/Naive-RAG/Naive_RAG.py`` @ 919db825 + ``evaluate.sh`` @ b6070899: the
  official chunk text (``[Session s - Dialogue chunk i]`` + ``Turn i role: [Image: file] caption
  date:text``; what is embedded is the script's ``_extract_text_from_chunk`` of it), the query
  ``[question image description]: … [user question]: …`` when the question image has a caption,
  the official retrieved-context block, the per-type prompt asking for JSON
  (``reasoning_process`` / ``system_answer``, with a worked example), ``system_answer`` scored,
  the question's first image attached after the text, ``top_p`` 0.9. When nothing passes the
  threshold the script crashed (it called a fallback it never defined); we send the empty
  retrieval block instead.
- ``harmonized`` — h2hmem's turn lines with file name and session, the shared plain-answer prompt,
  the question image as its caption (in the query and the context).
"""

from __future__ import annotations

import time
from typing import Any, ClassVar, Literal

from pydantic import Field

from ... import defaults
from ...data import Session
from .._method import MemoryMethod
from .._options import AttachQuestionImage, DateFormat, MethodOptions, TopK, TopP, preset_option
from .._paper import load_prompt
from .._paper_answer import official_messages, question_caption, question_image_parts
from .._paper_render import naive_rag_chunk, naive_rag_context, naive_rag_embedding_text
from .._prompt import build_answer_messages
from .._protocol import Answer, Evidence, MemoryContext
from .._render import image_text, render_turn
from .._reply import read_json_reply
from .._view import QuestionView

MIN_SIMILARITY = 0.1
"""Official threshold: hits with cosine ≤ 0.1 are dropped."""


class NaiveRAGOptions(MethodOptions):
    """Options of ``naive-rag`` (``docs/protocol.md``)."""

    top_k: TopK = defaults.TOP_K
    min_similarity: float = Field(
        MIN_SIMILARITY,
        ge=-1.0,
        le=1.0,
        description="cosine threshold: hits at or below it are dropped (published: 0.1)",
    )
    layout: Literal["official", "h2hmem"] = preset_option(
        "official",
        "h2hmem",
        "chunk text, embedded text and context block: the script's, or h2hmem's '(session) [date] speaker: "
        "text [Image …: caption]' lines",
    )
    prompt: Literal["official", "shared"] = preset_option(
        "official",
        "shared",
        "answer prompt: the script's per-type instruction and JSON worked example, or the shared prompt",
    )
    answer_format: Literal["json", "plain"] = preset_option(
        "json",
        "plain",
        "reply read as JSON (system_answer scored; an unreadable reply is scored whole) or as the plain answer",
    )
    query_format: Literal["official", "h2hmem"] = preset_option(
        "official",
        "h2hmem",
        "query with a question-image caption: '[question image description]: [image1description]: … "
        "[user question]: …' or question text + caption",
    )
    date_format: DateFormat = preset_option("raw", "iso", "session dates: timeline_date as written, or the ISO date")
    attach_question_image: AttachQuestionImage = preset_option(
        True,
        False,
        "send the question's (first) image as an image part (a text-only model gets its caption) instead "
        "of its caption text in the context",
    )
    top_p: TopP = preset_option(0.9, None, "nucleus sampling of the answer call; None = not sent")


class NaiveRAGMemory(MemoryMethod[NaiveRAGOptions]):
    """Caption-based dense retrieval baseline.

    Args:
        ctx: run context (answer model, captions, shared text embedder, preset).
        options: :class:`NaiveRAGOptions` (``None`` = from ``params`` under ``ctx.preset``).
    """

    name: ClassVar[str] = "naive-rag"
    Options = NaiveRAGOptions
    modality: ClassVar[str] = "caption"

    def __init__(self, ctx: MemoryContext, options: NaiveRAGOptions | None = None, **params: Any):
        super().__init__(ctx, options, **params)
        if ctx.embedder_factory is None:
            raise ValueError("naive-rag needs a text embedder (MemoryContext.embedder_factory)")
        from ...embed import VectorIndex

        self.top_k = self.options.top_k
        self.min_similarity = self.options.min_similarity
        self.embedder = ctx.embedder_factory()
        self.index = VectorIndex()
        # chunk id → (session, turn index, chunk text, has image)
        self._chunks: dict[str, tuple[str, int, str, bool]] = {}

    def describe(self) -> dict[str, Any]:
        return {
            "method": self.name,
            "modality": self.modality,
            "embedder": getattr(self.embedder, "name", "?"),
            "chunk": "1 turn",
            "images": "memory images as captions; question image per attach_question_image",
        }

    async def observe(self, session: Session) -> None:
        if session.absent or not session.turns:
            return
        official = self.options.layout == "official"
        ids, texts = [], []
        for turn in session.turns:
            caption = self.ctx.captions(turn.image) if turn.image is not None else None
            if official:
                text = naive_rag_chunk(session, turn, caption, self.options.date_format)
                embedded = naive_rag_embedding_text(text)
            else:
                text = embedded = f"({session.name}) " + render_turn(session, turn, self.ctx.captions)
            cid = f"{session.name}/t{turn.index}"
            self._chunks[cid] = (session.name, turn.index, text, turn.image is not None)
            ids.append(cid)
            texts.append(embedded)
        self.index.add(ids, await self.embedder.embed(texts))

    def _query(self, question: QuestionView) -> str:
        if self.options.query_format == "official":
            caps = [
                c
                for c in (question_caption(ref, self.ctx.captions) for ref in question.images if ref.path is not None)
                if c
            ][:1]
            if not caps:
                return question.text
            items = " ".join(
                load_prompt("naive_rag")["query_caption_item"].format(n=i, caption=c) for i, c in enumerate(caps, 1)
            )
            template: str = load_prompt("naive_rag")["query_with_image_caption"]
            return template.format(captions=items, question=question.text)
        query = question.text.strip()
        q_caps = [image_text(ref, self.ctx.captions) for ref in question.images]
        return query + " " + " ".join(q_caps) if q_caps else query

    async def _hits(self, question: QuestionView) -> list[tuple[str, float]]:
        """Retrieved chunk ids with their cosine, best first."""
        if not len(self.index):
            return []
        qvec = (await self.embedder.embed([self._query(question)]))[0]
        return [(cid, s) for cid, s in self.index.search(qvec, self.top_k)[0] if s > self.min_similarity]

    def _evidence(self, hits: list[tuple[str, float]]) -> list[Evidence]:
        return [Evidence(session=self._chunks[cid][0], turn=self._chunks[cid][1], score=round(s, 6)) for cid, s in hits]

    async def retrieve_evidence(self, question: QuestionView) -> list[Evidence]:
        """The turns ``answer`` would show, best first (no model call)."""
        return self._evidence(await self._hits(question))

    async def answer(self, question: QuestionView) -> Answer:
        opts = self.options
        t0 = time.perf_counter()
        hits = await self._hits(question)
        retrieval_s = time.perf_counter() - t0
        if opts.layout == "official":
            memory = naive_rag_context(
                [(*self._chunks[cid][:3], s, self._chunks[cid][3]) for cid, s in hits], self.top_k
            )
        else:
            memory = "\n".join(self._chunks[cid][2] for cid, _ in hits) or "(nothing relevant was retrieved)"
        q_images = question_image_parts(question.images, self.ctx.captions) if opts.attach_question_image else []
        if not opts.attach_question_image and question.images:
            memory += "\n\nImage attached to the question: " + " ".join(
                image_text(r, self.ctx.captions) for r in question.images
            )
        if opts.prompt == "official":
            messages = official_messages("naive_rag", question, memory, q_images)
        else:
            messages = build_answer_messages(question, memory, q_images or None)
        config = self.ctx.answer_config.model_copy(update={"top_p": opts.top_p})
        result = await self.ctx.chat.chat(messages, config, stage="answer")
        details: dict[str, Any] = {
            "retrieved": len(hits),
            "retrieval_s": round(retrieval_s, 6),
            "question_images_attached": len(q_images),
        }
        text = result.text.strip()
        if opts.answer_format == "json":
            reply = read_json_reply(text)
            text = reply.answer
            details.update(reply_read=reply.how, reasoning_process=reply.reasoning)
            if reply.how in ("unparsed", "json-without-answer"):
                details["raw_reply"] = result.text
        return Answer(
            text=text,
            evidence=self._evidence(hits),
            details=details,
        )
