"""The :class:`MemoryMethod` base every memory method (built-in or plugin) subclasses.

One instance per dialogue. The runner builds it as ``cls(ctx, options)`` — ``options`` an instance
of the class's :attr:`MemoryMethod.Options` model, validated from ``--param``/``method_params``
under the run's preset — and then calls ``observe(session)`` for every session in time order and
``answer(question)`` (protocol ``full``), or interleaves them (protocol ``online``). Methods never
read files: everything they see comes through these hooks and :class:`~._protocol.MemoryContext`.
``answer`` gets a :class:`~._view.QuestionView` (text, task type, images by content, an opaque key),
never the dataset's ``Question`` with its gold answer, gold sessions and home session.

The runner owns usage and cache accounting: it tallies every model call a hook makes through
``ctx.chat``/``ctx.build_chat``, so an :class:`~._protocol.Answer` carries only the text, the
ranked evidence and the method's details.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar, Generic, TypeVar

from ..data import Session
from ..records import Evidence
from ._options import MethodOptions, method_options
from ._protocol import Answer, MemoryContext
from ._view import QuestionView

OptionsT = TypeVar("OptionsT", bound=MethodOptions)


class MemoryMethod(ABC, Generic[OptionsT]):
    """A memory for one dialogue.

    Class attributes a subclass sets:
        name: the method's registered name (``"naive-rag"``).
        Options: its :class:`~._options.MethodOptions` model (default: no options).
        question_fields: extra question facts it is granted (``("main_category",)``; names from
            :data:`~._view.GRANTABLE`), shown in :attr:`QuestionView.fields`.

    Set by the base class:
        supports_retrieval: True when the class overrides :meth:`retrieve_evidence` (the runner
            refuses ``--retrieval-only`` up front otherwise).

    Example::

        class RecencyOptions(MethodOptions):
            window: int = Field(50, ge=1, description="most recent turns shown")

        class RecencyMemory(MemoryMethod[RecencyOptions]):
            name = "recency"
            Options = RecencyOptions
            async def observe(self, session: Session) -> None: ...
            async def answer(self, question: QuestionView) -> Answer: ...

    Args:
        ctx: what the runner gives the method (models, captions, state folder, preset).
        options: the validated options; ``None`` = built from ``params`` under ``ctx.preset``.
        **params: option values by name, when ``options`` is not given (tests, notebooks).

    Raises:
        MethodOptionsError: ``params`` holds an unknown option or a bad value.
    """

    name: ClassVar[str]
    Options: ClassVar[type[MethodOptions]] = MethodOptions
    question_fields: ClassVar[tuple[str, ...]] = ()
    supports_retrieval: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.supports_retrieval = cls.retrieve_evidence is not MemoryMethod.retrieve_evidence

    def __init__(self, ctx: MemoryContext, options: OptionsT | None = None, **params: Any) -> None:
        if options is not None and params:
            raise TypeError(f"{type(self).__name__}: give options or params, not both")
        self.ctx = ctx
        self.options: OptionsT = (
            options if options is not None else method_options(self.name, type(self).Options, params, ctx.preset)
        )

    @abstractmethod
    async def observe(self, session: Session) -> None:
        """Take in one session (turns in order, with its date). Sessions arrive in time order."""

    @abstractmethod
    async def answer(self, question: QuestionView) -> Answer:
        """Answer ``question`` from memory. Raise on failure: the runner records the error.

        ``question`` is a :class:`QuestionView`: ``text``, ``task_type``, ``images`` (by content),
        ``dialogue_id`` and an opaque ``key``; gold answer, gold sessions and home session are withheld."""

    async def retrieve_evidence(self, question: QuestionView) -> list[Evidence]:
        """The memory units ``answer`` would use, in rank order, without calling the answer model
        (``run --retrieval-only``). Override it to support retrieval-only runs.

        Raises:
            NotImplementedError: the method does not support it (:attr:`supports_retrieval` is False).
        """
        raise NotImplementedError(f"method {self.name!r} has no retrieve_evidence(question)")

    def describe(self) -> dict[str, Any]:
        """Facts about this memory for the run manifest (``method_description``): how it handled
        images, its modality, and under ``"stats"`` numeric counters the runner sums over dialogues
        (A-Mem's ``analysis_failures``). Its resolved options are recorded by the runner from
        :attr:`options`; do not repeat them here."""
        return {}

    async def aclose(self) -> None:
        """Release what the memory holds (files, connections) once its dialogue is done."""

    @classmethod
    def third_party(cls) -> tuple[str, ...]:
        """Distributions (PyPI names) the method runs on beside h2hmem and its plugin's own package:
        the run records their versions in ``manifest.environment.distributions``. Default: none; a
        memory product: its package (``mem0ai``, ``graphiti-core``…)."""
        return ()

    @classmethod
    def run_identity(cls) -> dict[str, Any]:
        """What the method adds to the run's identity beside its name and options (a memory product:
        its distribution and installed version, so a run never resumes under another version).
        Default: nothing."""
        return {}
