"""Running a memory method over a dataset: configuration, prediction records, run store, runner."""

from ._config import AnswerGeneration, Execution, RunConfig, RunModels
from ._dryrun import CostEstimate, StageCost, aestimate_run, collect, counting_model, estimate_run
from ._export import export_official
from ._records import DuplicatePredictionsWarning, Prediction, QuestionKey, prediction_hash, read_predictions
from ._runner import MethodSetupError, RunConflictError, RunSummary, arun_benchmark, run_benchmark, select_questions
from ._selection import Selection, SelectionError, expand_id_args, stratified_sample
from ._spend import BudgetExhausted, UnpricedModelError, guard_models
from ._store import MANIFEST, PREDICTIONS, RunStore, dataset_fingerprint, now_iso
from ._transcripts import (
    JUDGE_TRANSCRIPTS,
    TRANSCRIPTS,
    TranscriptWriter,
    decode_member,
    iter_members,
    read_transcripts,
)

__all__ = [
    "AnswerGeneration",
    "Execution",
    "RunModels",
    "BudgetExhausted",
    "CostEstimate",
    "DuplicatePredictionsWarning",
    "MethodSetupError",
    "Prediction",
    "RunConfig",
    "RunConflictError",
    "RunStore",
    "RunSummary",
    "Selection",
    "SelectionError",
    "StageCost",
    "UnpricedModelError",
    "aestimate_run",
    "arun_benchmark",
    "dataset_fingerprint",
    "estimate_run",
    "prediction_hash",
    "read_predictions",
    "run_benchmark",
    "select_questions",
    "stratified_sample",
    "JUDGE_TRANSCRIPTS",
    "MANIFEST",
    "PREDICTIONS",
    "QuestionKey",
    "TRANSCRIPTS",
    "TranscriptWriter",
    "collect",
    "counting_model",
    "decode_member",
    "expand_id_args",
    "export_official",
    "guard_models",
    "iter_members",
    "now_iso",
    "read_transcripts",
]
