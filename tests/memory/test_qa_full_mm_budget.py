"""Full (MM) with fewer images in the dialogue than the image budget attaches every one of them
(``len(images) - slots`` was used as a slice start: between -len and 0 it kept only the last few,
e.g. 9 images under a budget of 10 attached 1)."""

from __future__ import annotations

from mm_fakes import image_names, make_question, recording_chat, user_parts
from test_full_mm import ctx_for, run, sessions  # noqa: F401  (fixture)

from h2hmem.memory.full_mm._memory import FullMMMemory


async def test_budget_larger_than_the_images_attaches_all(sessions):  # noqa: F811
    s1, s2, _ = sessions
    chat = recording_chat()
    # 3 turn images (a, b, c), no question image, budget 4 → all three attached, none dropped
    ans = await run(FullMMMemory(ctx_for(chat), max_images=4, image_tokens=5), s1, s2, make_question("what?"))
    assert image_names(user_parts(chat.requests[0].messages)) == [
        "a.png in session1",
        "b.png in session1",
        "c.png in session2",
    ]
    assert ans.details["images_attached"] == 3 and ans.details["dropped_images"] == 0


async def test_budget_above_the_images_plus_question_image(sessions):  # noqa: F811
    s1, s2, q = sessions
    chat = recording_chat()
    # question image + 3 turn images = 4 < budget 5 → all four
    ans = await run(FullMMMemory(ctx_for(chat), max_images=5, image_tokens=5), s1, s2, q)
    assert image_names(user_parts(chat.requests[0].messages)) == [
        "q.png in session2",
        "a.png in session1",
        "b.png in session1",
        "c.png in session2",
    ]
    assert ans.details["images_attached"] == 4 and ans.details["dropped_images"] == 0
