"""Running a memory method over a dataset: configuration, prediction records, run store, runner."""

from ._config import AnswerGeneration, Execution, RunConfig, RunModels
from ._dryrun import CostEstimate, StageCost, aestimate_run, estimate_run
from ._records import DuplicatePredictionsWarning, Prediction, prediction_hash, read_predictions
from ._runner import MethodSetupError, RunConflictError, RunSummary, arun_benchmark, run_benchmark, select_questions
from ._selection import Selection, SelectionError, stratified_sample
from ._spend import BudgetExhausted, UnpricedModelError
from ._store import RunStore, dataset_fingerprint

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
]
