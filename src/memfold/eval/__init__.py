"""Extraction-quality evaluation on labelled corpora (``memfold eval extraction``).

``load_corpus`` reads the JSON-lines format (see :mod:`memfold.eval.corpus`),
``evaluate`` runs an extractor over it through ``Memory`` and scores what was stored,
``format_evaluation`` prints the table. Scoring itself (:func:`score`) is pure.
"""

from memfold.eval.corpus import Conversation, Labelled, load_corpus, parse_corpus
from memfold.eval.report import evaluation_to_dict, format_evaluation
from memfold.eval.run import Evaluation, evaluate
from memfold.eval.score import Figures, Report, StoredFact, score

__all__ = [
    "Conversation",
    "Evaluation",
    "Figures",
    "Labelled",
    "Report",
    "StoredFact",
    "evaluate",
    "evaluation_to_dict",
    "format_evaluation",
    "load_corpus",
    "parse_corpus",
    "score",
]
