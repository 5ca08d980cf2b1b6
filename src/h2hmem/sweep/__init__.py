"""Sweeps: a grid of runs (methods × models × presets × protocols × splits) from one declarative
file, run locally or on a Ray cluster, resumable as a whole, with one grid report."""

from ._execute import LocalExecutor, RayExecutor, arun_cell, evaluate_cell, make_executor
from ._grid import SweepRun, endpoint_capacities, endpoint_key, expand_grid, spec_problems
from ._report import build_sweep_report
from ._schedule import EndpointBudget, run_jobs
from ._spec import (
    ExecutorEntry,
    JudgeEntry,
    MethodEntry,
    ModelEntry,
    SweepSpec,
    SweepSpecError,
    load_spec,
    sweep_json_schema,
)
from ._status import CellStatus, cell_status, sweep_status
from ._sweep import SweepBusyError, SweepResult, aestimate_sweep, arun_sweep, check_data, estimate_sweep, run_sweep

__all__ = [
    "CellStatus",
    "EndpointBudget",
    "aestimate_sweep",
    "estimate_sweep",
    "ExecutorEntry",
    "JudgeEntry",
    "LocalExecutor",
    "MethodEntry",
    "ModelEntry",
    "RayExecutor",
    "SweepBusyError",
    "SweepResult",
    "SweepRun",
    "SweepSpec",
    "SweepSpecError",
    "arun_cell",
    "arun_sweep",
    "build_sweep_report",
    "cell_status",
    "check_data",
    "endpoint_capacities",
    "endpoint_key",
    "evaluate_cell",
    "expand_grid",
    "load_spec",
    "make_executor",
    "run_jobs",
    "run_sweep",
    "spec_problems",
    "sweep_json_schema",
    "sweep_status",
]
