"""SQuAD v1.1 exact match and F1, as the official `evaluate-v1.1.py` computes them.

The official script (allenai/bi-att-flow `squad/evaluate-v1.1.py`, copied unchanged into the
MLPerf Inference reference as `language/bert/evaluate_v1.1.py`, which `accuracy-squad.py` runs on
the predictions) normalises an answer by lower-casing it, removing ASCII punctuation
(`string.punctuation`), removing the articles a/an/the as whole words and collapsing whitespace;
F1 is the bag-of-tokens F1 of the normalised prediction against each ground truth, EM their
equality; each question takes its best ground truth; both are averaged over every question
(an unanswered question scores 0) and reported x100. The rules are restated here rather than
imported because no installable package ships the official script.
"""

from __future__ import annotations

import collections
import re
import string
from collections.abc import Iterable, Mapping, Sequence

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_answer(text: str) -> str:
    """Lower text and remove punctuation, articles and extra whitespace (official order)."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def f1_score(prediction: str, ground_truth: str) -> float:
    """Token F1 of two answers after normalisation (0 when they share no token)."""
    pred = normalize_answer(prediction).split()
    truth = normalize_answer(ground_truth).split()
    same = sum((collections.Counter(pred) & collections.Counter(truth)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred), same / len(truth)
    return 2 * precision * recall / (precision + recall)


def exact_match_score(prediction: str, ground_truth: str) -> bool:
    """Whether the two answers are equal after normalisation."""
    return normalize_answer(prediction) == normalize_answer(ground_truth)


def best_over_ground_truths(metric, prediction: str, ground_truths: Sequence[str]) -> float:
    """The best score of `prediction` against any of the ground truths."""
    return max(float(metric(prediction, truth)) for truth in ground_truths)


def evaluate(answers: Iterable[tuple[str, Sequence[str]]],
             predictions: Mapping[str, str]) -> dict[str, float]:
    """{"exact_match", "f1"} x100 over every (question id, ground-truth texts) in `answers`;
    a question missing from `predictions` scores 0 (as the official script)."""
    total = em = f1 = 0.0
    for qas_id, truths in answers:
        total += 1
        if qas_id not in predictions:
            continue
        em += best_over_ground_truths(exact_match_score, predictions[qas_id], truths)
        f1 += best_over_ground_truths(f1_score, predictions[qas_id], truths)
    if not total:
        return {"exact_match": 0.0, "f1": 0.0}
    return {"exact_match": 100.0 * em / total, "f1": 100.0 * f1 / total}
