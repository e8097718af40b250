"""Extra views of the raw texts for the text families: each a vectorizer a Kaggle text
competitor stacks (word n-gram counts for naive Bayes, their presence for NB-SVM, word TF-IDF over
the full vocabulary, lower-cased and as written, character n-grams as TF-IDF for the logistic
model and naive Bayes, and as counts). Different views make different errors, which is what a
stacking level feeds on (spooky-author-identification, out of fold: the shared word+char block
alone 0.406; four views stacked 0.308, eight 0.292; with punctuation as words and the cased view,
0.293 on another partition where the eight gave 0.304).

Vectorizers are fitted on train+test texts (no labels: the usual Kaggle choice) and cached per
feature set, since bagging repeats and tuning trials read the same view many times.
"""

from __future__ import annotations

from typing import Literal, get_args

import numpy as np
from scipy import sparse

from solve_pipeline.base.dataset import FeatureSet

View = Literal["word_counts", "word_binary", "word_tfidf", "word_tfidf_cased", "char_tfidf", "char_counts"]
VIEWS: tuple[View, ...] = get_args(View)
MAX_VIEW_FEATURES = 300_000
WORD_TOKENS = r"\w+|[^\w\s]"  # words, and every other non-space character on its own
_CACHE: dict[tuple[int, View], tuple[sparse.csr_matrix, sparse.csr_matrix] | None] = {}


def _vectorizer(view: View, n_texts: int):
    from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer

    min_df = 2 if n_texts >= 50 else 1
    # Punctuation marks are tokens: a writer's commas and semicolons, and the words they follow,
    # are style (spooky, naive Bayes over word TF-IDF out of fold: 0.366 without them, 0.348 with).
    words = {"analyzer": "word", "ngram_range": (1, 2), "token_pattern": WORD_TOKENS,
             "max_features": MAX_VIEW_FEATURES, "dtype": np.float32}
    if view == "word_counts":
        return CountVectorizer(**words)
    if view == "word_tfidf":
        return TfidfVectorizer(sublinear_tf=True, **words)
    if view == "word_tfidf_cased":  # capitals kept: names, sentence starts, a writer's habits
        return TfidfVectorizer(sublinear_tf=True, lowercase=False, **words)
    chars = {"analyzer": "char", "ngram_range": (1, 5), "min_df": min_df, "max_features": MAX_VIEW_FEATURES,
             "dtype": np.float32}
    if view == "char_counts":
        return CountVectorizer(**chars)
    return TfidfVectorizer(sublinear_tf=True, **chars)


def text_view(features: FeatureSet, view: View) -> tuple[sparse.csr_matrix, sparse.csr_matrix] | None:
    """(train, test) matrices of one view of the joined texts; None without texts."""
    key = (id(features), view)
    if key in _CACHE:
        return _CACHE[key]
    result = None
    if view == "word_binary":  # presence, not counts (NB-SVM's input), from the counts already built
        counts = text_view(features, "word_counts")
        result = None if counts is None else (_present(counts[0]), _present(counts[1]))
    elif features.raw_text_train is not None and features.raw_text_test is not None:
        corpus = list(features.raw_text_train) + list(features.raw_text_test)
        try:
            matrix = _vectorizer(view, len(corpus)).fit_transform(corpus).tocsr()
        except ValueError:  # an empty vocabulary: every text empty
            matrix = None
        if matrix is not None and matrix.shape[1] > 0:
            result = matrix[: features.n_train], matrix[features.n_train:]
    if len(_CACHE) > 2 * len(VIEWS):  # a stale feature set's views must not pile up
        _CACHE.clear()
    _CACHE[key] = result
    return result


def _present(matrix: sparse.csr_matrix) -> sparse.csr_matrix:
    binary = matrix.copy()
    binary.data = np.ones_like(binary.data)
    return binary
