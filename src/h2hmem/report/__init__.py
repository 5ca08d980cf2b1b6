"""Reports over run directories: Markdown, self-contained HTML, PNG figures and a machine-readable
``summary.json`` of every table (``h2hmem report``)."""

from ._build import ReportPaths, build_report, default_out_dir
from ._published import (
    PublishedEfficiency,
    PublishedQuality,
    paper_method_name,
    published_efficiency,
    published_quality,
    published_source,
)
from ._render import rich_table
from ._runs import RunResult, load_run
from ._scores import cell_metric, comparable_with_published, primary_metric, run_aggregate
from ._table import Column, ReportTable

__all__ = [
    "Column",
    "PublishedEfficiency",
    "PublishedQuality",
    "ReportPaths",
    "ReportTable",
    "RunResult",
    "build_report",
    "cell_metric",
    "comparable_with_published",
    "default_out_dir",
    "load_run",
    "paper_method_name",
    "primary_metric",
    "published_efficiency",
    "published_quality",
    "published_source",
    "rich_table",
    "run_aggregate",
]
