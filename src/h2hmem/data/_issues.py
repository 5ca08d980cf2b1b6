"""Problems found while reading a dataset: each names its file and field."""

from __future__ import annotations

from collections import Counter
from typing import Literal

from pydantic import BaseModel

Severity = Literal["error", "warning"]


class Issue(BaseModel):
    """One problem. ``file`` is relative to the dataset root; ``field`` is a JSON path."""

    severity: Severity
    code: str
    """Stable machine-readable kind, e.g. ``"missing-image"``, ``"unknown-task-type"``."""
    file: str
    field: str | None = None
    """Where in the file, e.g. ``"questions[3].question_type.sub_type"`` or ``"line 12, column 5"``."""
    message: str

    def __str__(self) -> str:
        where = f"{self.file}" + (f" [{self.field}]" if self.field else "")
        return f"{self.severity}: {where}: {self.message}"


class IssueLog(BaseModel):
    """An ordered list of issues with counts by severity and code."""

    issues: list[Issue] = []

    def add(self, severity: Severity, code: str, file: str, message: str, field: str | None = None) -> None:
        self.issues.append(Issue(severity=severity, code=code, file=file, field=field, message=message))

    def error(self, code: str, file: str, message: str, field: str | None = None) -> None:
        self.add("error", code, file, message, field)

    def warning(self, code: str, file: str, message: str, field: str | None = None) -> None:
        self.add("warning", code, file, message, field)

    @property
    def errors(self) -> list[Issue]:
        return [i for i in self.issues if i.severity == "error"]

    @property
    def warnings(self) -> list[Issue]:
        return [i for i in self.issues if i.severity == "warning"]

    def counts(self) -> dict[str, dict[str, int]]:
        """``{"error": {code: n}, "warning": {code: n}}``."""
        out: dict[str, Counter[str]] = {"error": Counter(), "warning": Counter()}
        for i in self.issues:
            out[i.severity][i.code] += 1
        return {k: dict(sorted(v.items())) for k, v in out.items()}


class DatasetError(ValueError):
    """The dataset has errors; ``issues`` lists every one, each naming file and field."""

    def __init__(self, issues: list[Issue]):
        self.issues = issues
        head = "\n".join(f"  {i}" for i in issues[:20])
        more = f"\n  … and {len(issues) - 20} more" if len(issues) > 20 else ""
        super().__init__(f"{len(issues)} error(s) in the dataset:\n{head}{more}")
