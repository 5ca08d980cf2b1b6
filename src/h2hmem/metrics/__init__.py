"""Metrics: the scorer component (:class:`Scorer`, its registry and the entry-point group
``h2hmem.scorers``), lexical scores, LLM judge, evidence recall@k, turn-level evidence metrics,
aggregation (docs/metric-definitions.md)."""

from ._aggregate import DEFAULT_GROUPS, SPLIT_KEYS, aggregate
from ._coverage import coverage_line
from ._evaluate import (
    LEXICAL_FIELDS,
    METRICS,
    EvaluationConflictError,
    aevaluate_run,
    evaluate_run,
    question_order,
    read_score_file,
)
from ._evidence import EVIDENCE_KS, evidence_metric_names, evidence_scores, score_evidence
from ._judge import (
    DEFAULT_JUDGE_SPEC,
    JUDGE_LEVELS,
    NOT_COMPARABLE,
    JudgeRecord,
    comparability_label,
    judge_messages,
    judge_predictions,
    parse_judgments,
)
from ._judge_cost import aestimate_judge, estimate_judge
from ._judge_official import (
    official_judge_messages,
    official_judge_prompt,
    official_rubric,
    parse_official_reply,
    snap_score,
)
from ._judge_options import JUDGE_OPTION_NAMES, JUDGE_PRESETS, JudgeFormat, JudgeMode, JudgeOptions, ScoreLevels
from ._labeler import OFFLINE, alabel_evidence, label_evidence
from ._labels import (
    LABEL_STATUSES,
    EvidenceLabel,
    EvidenceLabels,
    LabelTurn,
    find_evidence_labels,
    load_evidence_labels,
)
from ._lexical import ZERO, LexicalScores, bleu1, lexical_scores, set_prf
from ._paired import paired_by_group, pool_runs
from ._scorer import Scorer, ScorerError, ScoringContext, score_key
from ._scorer_evidence import EvidenceScorer, TurnEvidenceScorer
from ._scorer_judge import JudgeScorer
from ._scorer_lexical import LexicalScorer
from ._scorer_registry import (
    BUILTIN_SCORERS,
    ENTRY_POINT_GROUP,
    ScorerLoadError,
    ScorerPluginWarning,
    UnknownScorerError,
    available_scorers,
    register_scorer,
    resolve_scorers,
    unregister_scorer,
)
from ._tables import (
    EVIDENCE_DEFAULT,
    LEXICAL_TITLES,
    judge_caption,
    judge_title,
    metric_table,
    other_sections,
    section_title,
    summary_tables,
)
from ._tokenize import TokenizerUnavailableError, content_tokens, english_stopwords, normalize_answer, tokenize
from ._turn_evidence import TURN_KS, ranked_turns, score_turn_evidence, turn_metric_names, turn_scores

__all__ = [
    "BUILTIN_SCORERS",
    "ENTRY_POINT_GROUP",
    "EvidenceScorer",
    "JudgeScorer",
    "LexicalScorer",
    "Scorer",
    "ScorerError",
    "ScorerLoadError",
    "ScorerPluginWarning",
    "ScoringContext",
    "TurnEvidenceScorer",
    "UnknownScorerError",
    "available_scorers",
    "register_scorer",
    "resolve_scorers",
    "score_key",
    "unregister_scorer",
    "metric_table",
    "other_sections",
    "section_title",
    "summary_tables",
    "LEXICAL_FIELDS",
    "METRICS",
    "evaluate_run",
    "EvaluationConflictError",
    "aevaluate_run",
    "aestimate_judge",
    "alabel_evidence",
    "DEFAULT_JUDGE_SPEC",
    "JUDGE_LEVELS",
    "NOT_COMPARABLE",
    "JudgeMode",
    "JudgeRecord",
    "comparability_label",
    "judge_messages",
    "judge_predictions",
    "parse_judgments",
    "JUDGE_OPTION_NAMES",
    "JUDGE_PRESETS",
    "JudgeFormat",
    "JudgeOptions",
    "ScoreLevels",
    "official_judge_messages",
    "official_judge_prompt",
    "official_rubric",
    "parse_official_reply",
    "snap_score",
    "DEFAULT_GROUPS",
    "EVIDENCE_KS",
    "SPLIT_KEYS",
    "aggregate",
    "evidence_metric_names",
    "evidence_scores",
    "score_evidence",
    "LABEL_STATUSES",
    "EvidenceLabel",
    "EvidenceLabels",
    "LabelTurn",
    "find_evidence_labels",
    "load_evidence_labels",
    "TURN_KS",
    "ranked_turns",
    "score_turn_evidence",
    "turn_metric_names",
    "turn_scores",
    "LexicalScores",
    "TokenizerUnavailableError",
    "bleu1",
    "content_tokens",
    "english_stopwords",
    "lexical_scores",
    "normalize_answer",
    "set_prf",
    "tokenize",
    "EVIDENCE_DEFAULT",
    "LEXICAL_TITLES",
    "OFFLINE",
    "ZERO",
    "coverage_line",
    "estimate_judge",
    "judge_caption",
    "judge_title",
    "label_evidence",
    "paired_by_group",
    "pool_runs",
    "question_order",
    "read_score_file",
]
