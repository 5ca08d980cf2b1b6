"""Running a memory method over a dataset: prediction records, run store, runner."""

from ._records import Prediction, read_predictions

__all__ = ["Prediction", "read_predictions"]
