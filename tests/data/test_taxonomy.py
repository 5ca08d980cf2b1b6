import pytest

from h2hmem.data import MainCategory, TaskType, UnknownLabelError, parse_difficulty, parse_main_category

# Every spelling listed in shared/spec/taxonomy.md, with its canonical type.
ALIASES = {
    "Multimodal Causal Inference": TaskType.MCR,
    "Multimodal Casual Reasoning": TaskType.MCR,
    "MCR": TaskType.MCR,
    "Cross-turn Reference Tracking": TaskType.RET,
    "Reference and Evolution Tracking": TaskType.RET,
    "Reference & Evolution Tracking": TaskType.RET,
    "RET": TaskType.RET,
    "Test-Time Learning (TTL)": TaskType.TTL,
    "Test Time Learning": TaskType.TTL,
    "TTL": TaskType.TTL,
    "Conflict Detection (CD)": TaskType.CD,
    "CD": TaskType.CD,
    "Answer Refusal (AR)": TaskType.AR,
    "AR": TaskType.AR,
    "UPR": TaskType.UPR,
    "CRR": TaskType.CRR,
    "KR": TaskType.KR,
    "TR": TaskType.TR,
    "Cross modal Related Retrieval": TaskType.CRR,
    "  unimodal precise recall  ": TaskType.UPR,
    "KNOWLEDGE RESOLUTION (KR)": TaskType.KR,
    "Temporal Reasoning": TaskType.TR,
}


@pytest.mark.parametrize("label,expected", ALIASES.items())
def test_every_alias_maps_to_canonical(label, expected):
    assert TaskType.parse(label) is expected


def test_main_categories_and_abbreviations():
    assert [t.abbr for t in TaskType] == ["UPR", "CRR", "KR", "TR", "MCR", "RET", "TTL", "CD", "AR"]
    assert TaskType.KR.main_category is MainCategory.RECALL
    assert TaskType.RET.main_category is MainCategory.REASONING
    assert TaskType.AR.main_category is MainCategory.APPLICATION
    assert parse_main_category("reasoning") is MainCategory.REASONING
    assert parse_main_category("Memory Application") is MainCategory.APPLICATION


@pytest.mark.parametrize("bad", ["Causal Reasoning", "", "UPRX", "Memory Recall"])
def test_unknown_task_type_raises(bad):
    with pytest.raises(UnknownLabelError, match="unknown task type"):
        TaskType.parse(bad)


def test_difficulty():
    assert parse_difficulty(None) == "unknown"
    assert parse_difficulty("Hard") == "hard"
    with pytest.raises(UnknownLabelError):
        parse_difficulty("extreme")
