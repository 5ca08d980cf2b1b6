"""The caption stage of a dry run: one VLM call per image of the selected dialogues that has no
caption yet (what ``h2hmem caption --model MODEL`` would send before the run), counted with the
real caption request (:func:`h2hmem.caption._vlm.caption_request`, default settings), none sent."""

from __future__ import annotations

from ._config import RunConfig
from ._dryrun import CostEstimate, collect, counting_model


async def add_caption_estimate(
    estimate: CostEstimate, config: RunConfig, caption_model: str, dialogues: set[str] | None
) -> None:
    """Count the caption calls of ``caption_model`` into ``estimate.stages["caption"]``.

    Args:
        dialogues: ``"split/dialogueN"`` ids to cover (None: every dialogue of the split).
    """
    from ..caption import CaptionSettings, CaptionStore, caption_request, dataset_images

    _, images = dataset_images(config.data_root, config.split)
    store = CaptionStore(config.data_root, captions_dir=config.captions_dir)
    settings = CaptionSettings()
    model = counting_model(
        caption_model,
        base_url=config.models.base_url,
        cache_path=config.execution.cache_path,
        use_cache=config.execution.use_cache,
        refresh=config.execution.refresh_cache,
        prices=config.execution.prices or None,
    )
    todo = [
        (iid, ref)
        for iid, ref in images.items()
        if ref.path is not None
        and store.get(iid) is None
        and (dialogues is None or f"{iid.split}/{iid.dialogue}" in dialogues)
    ]
    for iid, ref in todo:
        messages, gen = caption_request(ref.path, settings, str(iid))  # type: ignore[arg-type]
        await model.chat(messages, gen, stage="caption")
    collect(estimate, model)
    if todo:
        estimate.notes.append(
            f"caption: {len(todo)} images without a caption, captioned by {caption_model} with the "
            "default settings (`h2hmem caption`); images count as "
            "765 tokens each (1024-px, high detail); the answer prompts above were counted without these captions"
        )
