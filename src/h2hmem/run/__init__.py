"""Running a memory method over a dataset: configuration, selection, dry run, runner.

The files of a run directory (predictions, manifest, transcripts, scores) are read and written
through :mod:`h2hmem.records`."""

from ._config import AnswerGeneration, Execution, RunConfig, RunModels
from ._dryrun import CostEstimate, StageCost, aestimate_run, collect, counting_model, estimate_run
from ._export import export_official
from ._fingerprint import dataset_fingerprint
from ._runner import (
    UNREACHABLE_AFTER,
    MethodSetupError,
    ModelUnreachableError,
    RunConflictError,
    RunSummary,
    arun_benchmark,
    run_benchmark,
    select_questions,
)
from ._selection import Selection, SelectionError, SelectionWarning, expand_id_args, stratified_sample
from ._spend import BudgetExhausted, UnpricedModelError, guard_models

__all__ = [
    "AnswerGeneration",
    "Execution",
    "RunModels",
    "BudgetExhausted",
    "CostEstimate",
    "MethodSetupError",
    "ModelUnreachableError",
    "UNREACHABLE_AFTER",
    "RunConfig",
    "RunConflictError",
    "RunSummary",
    "Selection",
    "SelectionError",
    "SelectionWarning",
    "StageCost",
    "UnpricedModelError",
    "aestimate_run",
    "arun_benchmark",
    "dataset_fingerprint",
    "estimate_run",
    "run_benchmark",
    "select_questions",
    "stratified_sample",
    "collect",
    "counting_model",
    "expand_id_args",
    "export_official",
    "guard_models",
]
