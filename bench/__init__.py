"""Performance benchmarks of the h2hmem harness (``python -m bench all [--quick]``).

Workloads (one module each; results in ``bench/results/<name>.json``):

- ``run``: the runner at concurrency 1, 8, 32, 64 against a mock model of latency L = 200 ms,
  compared with the bound N·L/C, and the sequential reference loop (``bench/reference.py``);
- ``warm``: rerun through the request cache and resume — model calls and wall time;
- ``index``: MiniLM index build over every turn and retrieval latency per query;
- ``score``: lexical scoring of every answer and bootstrap aggregation of judge scores;
- ``scale``: base vs 10× data (time and peak RSS).

Every measured step runs in its own child process; its peak RSS is reported with it.
See ``bench/README.md`` for what each number means.
"""

from ._core import Bench, Target, WorkloadResult
from ._profile import PROFILES, Profile
from ._workloads import WORKLOADS, run_workloads

__all__ = ["PROFILES", "WORKLOADS", "Bench", "Profile", "Target", "WorkloadResult", "run_workloads"]
