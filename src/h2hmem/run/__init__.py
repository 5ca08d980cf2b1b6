"""Running a memory method over a dataset: configuration, prediction records, run store, runner."""

from ._config import RunConfig
from ._records import Prediction, read_predictions
from ._runner import MethodSetupError, RunConflictError, RunSummary, arun_benchmark, run_benchmark, select_questions
from ._store import RunStore, dataset_fingerprint

__all__ = ["MethodSetupError", "Prediction", "RunConfig", "RunConflictError", "RunStore", "RunSummary", "arun_benchmark",
           "dataset_fingerprint", "read_predictions", "run_benchmark", "select_questions"]
