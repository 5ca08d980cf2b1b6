"""The prediction record (``predictions.jsonl``): defined in :mod:`h2hmem.records`, re-exported here."""

from ..records import DuplicatePredictionsWarning, Prediction, QuestionKey, prediction_hash, read_predictions

__all__ = ["DuplicatePredictionsWarning", "Prediction", "QuestionKey", "prediction_hash", "read_predictions"]
