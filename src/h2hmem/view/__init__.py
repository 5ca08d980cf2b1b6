"""Browsing runs: ``h2hmem view`` (a local web viewer of questions, evidence turns and model calls)
and ``h2hmem runs list`` (a table of the runs in a folder)."""

from ._app import create_viewer_app
from ._calls import CallIndex
from ._runs import QuestionRow, RunInfo, ViewRun, find_runs, headline, load_view_run, run_info
from ._table import SORTS, Filters, filter_rows, sort_rows

__all__ = [
    "CallIndex",
    "Filters",
    "QuestionRow",
    "RunInfo",
    "SORTS",
    "ViewRun",
    "create_viewer_app",
    "filter_rows",
    "find_runs",
    "headline",
    "load_view_run",
    "run_info",
    "sort_rows",
]
