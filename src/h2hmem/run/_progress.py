"""Per-dialogue memory-build progress bars (so a user sees A-Mem writing notes and indexes being
built, instead of an answer counter standing at 0 for half a minute).

Each dialogue being built gets a bar counting its turns: it moves after every ``observe(session)``
(by that session's turns) and, for methods that call a model while building (A-Mem's note
writing), after every ``memory_build`` call — seen through a thin wrapper around the dialogue's
chat models, so methods need no progress code. The bar is removed when the dialogue's memory is
built (its questions then advance the run's answer bar).
"""

from __future__ import annotations

from typing import Any

from ..llm import ChatResult, GenerationConfig, Message, Stage
from ._wrap import ChatWrapper


class DialogueBars:
    """Bars of the dialogues being built, on the run's rich ``Progress`` (None: no display)."""

    def __init__(self) -> None:
        self.progress: Any = None
        self._tasks: dict[str, Any] = {}
        self._turns: dict[str, int] = {}
        self._calls: dict[str, int] = {}
        self._totals: dict[str, int] = {}

    def attach(self, progress: Any) -> None:
        self.progress = progress

    def expect(self, dialogue_id: str, total_turns: int) -> None:
        """Announce a dialogue (before its first session)."""
        self._totals[dialogue_id] = max(1, total_turns)

    def _update(self, dialogue_id: str) -> None:
        if self.progress is None or dialogue_id not in self._totals:
            return
        done = min(self._totals[dialogue_id], max(self._turns.get(dialogue_id, 0), self._calls.get(dialogue_id, 0)))
        task = self._tasks.get(dialogue_id)
        if task is None:
            task = self._tasks[dialogue_id] = self.progress.add_task(
                f"  {dialogue_id} · memory", total=self._totals[dialogue_id], info="turns"
            )
        self.progress.update(task, completed=done)

    def build_call(self, dialogue_id: str) -> None:
        """One ``memory_build`` model call (e.g. one A-Mem note) finished."""
        self._calls[dialogue_id] = self._calls.get(dialogue_id, 0) + 1
        self._update(dialogue_id)

    def session_done(self, dialogue_id: str, turns: int) -> None:
        """``observe`` of a session with ``turns`` turns returned."""
        self._turns[dialogue_id] = self._turns.get(dialogue_id, 0) + turns
        self._update(dialogue_id)

    def built(self, dialogue_id: str) -> None:
        """The dialogue's memory is complete: its bar goes."""
        task = self._tasks.pop(dialogue_id, None)
        if task is not None and self.progress is not None:
            self.progress.remove_task(task)

    def wrap(self, model: Any, dialogue_id: str) -> Any:
        """``model`` reporting its ``memory_build`` calls to the bar of ``dialogue_id`` (None stays None)."""
        return None if model is None else _BuildCallCounter(model, self, dialogue_id)


class _BuildCallCounter(ChatWrapper):
    """Forwards everything to the inner chat model; counts its finished ``memory_build`` calls."""

    def __init__(self, inner: Any, bars: DialogueBars, dialogue_id: str):
        super().__init__(inner)
        self.bars, self.dialogue_id = bars, dialogue_id

    async def chat(
        self, messages: list[Message], config: GenerationConfig | None = None, *, stage: Stage = "answer"
    ) -> ChatResult:
        result = await self.inner.chat(messages, config, stage=stage)
        if stage == "memory_build":
            self.bars.build_call(self.dialogue_id)
        return result
