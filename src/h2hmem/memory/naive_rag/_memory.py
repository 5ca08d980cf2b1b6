"""Naive RAG: dense retrieval over single turns, images as captions (spec/baselines.md).

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
from typing import Any, ClassVar

from ...data import Session
from .._options import PresetOption, resolve_options
from .._paper import load_prompt
from .._paper_answer import official_messages, question_caption, question_image_parts
from .._paper_render import naive_rag_chunk, naive_rag_context, naive_rag_embedding_text
from .._prompt import build_answer_messages
from .._protocol import Answer, Evidence, MemoryContext
from .._render import image_text, render_turn
from .._reply import read_json_reply
from .._view import QuestionView

TOP_K = 5
"""Published top-k (official ``evaluate.sh``: TOP_K=5)."""
MIN_SIMILARITY = 0.1
"""Official threshold: hits with cosine ≤ 0.1 are dropped."""

OPTIONS: tuple[PresetOption, ...] = (
    PresetOption(
        "layout",
        "official",
        "h2hmem",
        "chunk text, embedded text and context block: the script's, or h2hmem's '(session) [date] speaker: "
        "text [Image …: caption]' lines",
        ("official", "h2hmem"),
    ),
    PresetOption(
        "prompt",
        "official",
        "shared",
        "answer prompt: the script's per-type instruction and JSON worked example, or the shared prompt",
        ("official", "shared"),
    ),
    PresetOption(
        "answer_format",
        "json",
        "plain",
        "reply read as JSON (system_answer scored; an unreadable reply is scored whole) or as the plain answer",
        ("json", "plain"),
    ),
    PresetOption(
        "query_format",
        "official",
        "h2hmem",
        "query with a question-image caption: '[question image description]: [image1description]: … "
        "[user question]: …' or question text + caption",
        ("official", "h2hmem"),
    ),
    PresetOption(
        "date_format", "raw", "iso", "session dates: timeline_date as written, or the ISO date", ("raw", "iso")
    ),
    PresetOption(
        "attach_question_image",
        True,
        False,
        "send the question's (first) image as an image part (a text-only model gets its caption) instead "
        "of its caption text in the context",
        (True, False),
    ),
    PresetOption("top_p", 0.9, None, "nucleus sampling of the answer call; None = not sent"),
)


class NaiveRAGMemory:
    """Caption-based dense retrieval baseline.

    Args:
        ctx: run context (answer model, captions, shared text embedder, preset).
        top_k: turns retrieved per question (published: 5).
        min_similarity: cosine threshold; hits at or below it are dropped (published: 0.1).
        layout, prompt, answer_format, query_format, date_format, attach_question_image, top_p: the
            preset options (:data:`OPTIONS`); ``None`` = the preset's value.
    """

    name: ClassVar[str] = "naive-rag"
    modality: ClassVar[str] = "caption"

    def __init__(
        self,
        ctx: MemoryContext,
        top_k: int = TOP_K,
        min_similarity: float = MIN_SIMILARITY,
        *,
        layout: str | None = None,
        prompt: str | None = None,
        answer_format: str | None = None,
        query_format: str | None = None,
        date_format: str | None = None,
        attach_question_image: bool | None = None,
        top_p: float | None = None,
    ):
        if ctx.embedder_factory is None:
            raise ValueError("naive-rag needs a text embedder (MemoryContext.embedder_factory)")
        if top_k < 1:
            raise ValueError("top_k must be at least 1")
        from ...embed import VectorIndex

        self.ctx = ctx
        self.top_k = top_k
        self.min_similarity = min_similarity
        self.options = resolve_options(
            self.name,
            OPTIONS,
            ctx.preset,
            {
                "layout": layout,
                "prompt": prompt,
                "answer_format": answer_format,
                "query_format": query_format,
                "date_format": date_format,
                "attach_question_image": attach_question_image,
                "top_p": top_p,
            },
        )
        self.embedder = ctx.embedder_factory()
        self.index = VectorIndex()
        # chunk id → (session, turn index, chunk text, has image)
        self._chunks: dict[str, tuple[str, int, str, bool]] = {}

    def describe(self) -> dict[str, Any]:
        return {
            "method": self.name,
            "modality": self.modality,
            "preset": self.ctx.preset,
            "options": self.options,
            "top_k": self.top_k,
            "min_similarity": self.min_similarity,
            "embedder": getattr(self.embedder, "name", "?"),
            "chunk": "1 turn",
            "images": "memory images as captions; question image per attach_question_image",
        }

    async def observe(self, session: Session) -> None:
        if session.absent or not session.turns:
            return
        official = self.options["layout"] == "official"
        ids, texts = [], []
        for turn in session.turns:
            caption = self.ctx.captions(turn.image) if turn.image is not None else None
            if official:
                text = naive_rag_chunk(session, turn, caption, self.options["date_format"])
                embedded = naive_rag_embedding_text(text)
            else:
                text = embedded = f"({session.name}) " + render_turn(session, turn, self.ctx.captions)
            cid = f"{session.name}/t{turn.index}"
            self._chunks[cid] = (session.name, turn.index, text, turn.image is not None)
            ids.append(cid)
            texts.append(embedded)
        self.index.add(ids, await self.embedder.embed(texts))

    def _query(self, question: QuestionView) -> str:
        if self.options["query_format"] == "official":
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
        if opts["layout"] == "official":
            memory = naive_rag_context(
                [(*self._chunks[cid][:3], s, self._chunks[cid][3]) for cid, s in hits], self.top_k
            )
        else:
            memory = "\n".join(self._chunks[cid][2] for cid, _ in hits) or "(nothing relevant was retrieved)"
        q_images = question_image_parts(question.images, self.ctx.captions) if opts["attach_question_image"] else []
        if not opts["attach_question_image"] and question.images:
            memory += "\n\nImage attached to the question: " + " ".join(
                image_text(r, self.ctx.captions) for r in question.images
            )
        if opts["prompt"] == "official":
            messages = official_messages("naive_rag", question, memory, q_images)
        else:
            messages = build_answer_messages(question, memory, q_images or None)
        config = self.ctx.answer_config.model_copy(update={"top_p": opts["top_p"]})
        result = await self.ctx.chat.chat(messages, config, stage="answer")
        details: dict[str, Any] = {
            "retrieved": len(hits),
            "retrieval_s": round(retrieval_s, 6),
            "question_images_attached": len(q_images),
        }
        text = result.text.strip()
        if opts["answer_format"] == "json":
            reply = read_json_reply(text)
            text = reply.answer
            details.update(reply_read=reply.how, reasoning_process=reply.reasoning)
            if reply.how in ("unparsed", "json-without-answer"):
                details["raw_reply"] = result.text
        return Answer(
            text=text,
            evidence=self._evidence(hits),
            usage=result.usage,
            cached=result.cached,
            details=details,
        )
