"""Running a memory method over a dataset: configuration, prediction records, run store, runner."""

from ._config import RunConfig
from ._records import DuplicatePredictionsWarning, Prediction, prediction_hash, read_predictions
from ._runner import MethodSetupError, RunConflictError, RunSummary, arun_benchmark, run_benchmark, select_questions
from ._store import RunStore, dataset_fingerprint

__all__ = ["DuplicatePredictionsWarning", "MethodSetupError", "Prediction", "RunConfig", "RunConflictError", "RunStore", "RunSummary", "arun_benchmark",
           "dataset_fingerprint", "prediction_hash", "read_predictions", "run_benchmark", "select_questions"]
