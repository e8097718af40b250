"""Which columns the submission predicts, and as what task: the target half of the expert's
inspection.

A mixin of the inspection, like `images.ImageLayouts`: it reads the inspection's state (the train,
test and sample frames, the images, the class root, the page) and records notes and assumptions
like the rest of it.
"""

from __future__ import annotations

import re
from collections import Counter

import pandas as pd

from agentk.core import metrics
from agentk.core.artifacts import TEXT_TASK
from agentk.core.metrics import normalise_labels
from setup_pipeline.expert.facts import ExpertDeclined, TargetFact
from setup_pipeline.expert.images import ImageLayout, present
from setup_pipeline.expert.text_to_text import describe, rewritten_input
from setup_pipeline.perception.tables import match_column

_BOOL_WORDS = {"true", "false", "yes", "no", "t", "f", "y", "n"}
NA_WORDS = {"na", "nan", "n/a", "null", "none", "?"}
_MAX_CLASSES = 20
_NUMBER_PROBE_ROWS = 200_000


def as_numbers(values: pd.Series) -> pd.Series | None:
    """The values as numbers if (nearly) all of them are numbers, else None.

    Spelled-out missing markers ("NA", "nan") are skipped here only: as labels they may be real.
    """
    values = values[~values.str.lower().isin(NA_WORDS)]
    # Words are told from numbers on a first slice: a text column of ten million cells fails
    # there, in a fraction of the time parsing all of it takes.
    head = _NUMBER_PROBE_ROWS
    if len(values) > 2 * head and (len(values) - pd.to_numeric(values.iloc[:head], errors="coerce").isna().sum()) / len(values) < 0.99:
        return None
    parsed = pd.to_numeric(values, errors="coerce")
    return parsed if len(values) and parsed.notna().mean() >= 0.99 else None


def is_bool_like(values: pd.Series) -> bool:
    return len(values) > 0 and set(values.str.lower().unique()) <= _BOOL_WORDS


def sorted_labels(labels: list[str]) -> list[str]:
    numeric = pd.to_numeric(pd.Series(labels, dtype=object), errors="coerce")
    if labels and numeric.notna().all():
        return [label for _, label in sorted(zip(numeric.tolist(), labels))]
    return sorted(labels)


def _spellings(labels: object) -> set[str]:
    """Labels as one spelling each: a class column named "5" is train's label "5.0" (a column of
    whole numbers with gaps is written as floats), "TRUE" is "true"."""
    return set(normalise_labels(list(labels)))  # type: ignore[call-overload]


def default_positive(classes: list[str]) -> str:
    """The class a binary probability speaks of when the page does not say: the one that reads as
    1/true/yes, else the last in sorted order."""
    normalised = [str(v).lower() for v in normalise_labels(list(classes))]
    for marker in ("1", "true", "yes"):
        if marker in normalised:
            return str(classes[normalised.index(marker)])
    return str(classes[-1])


def _spelled(label: str) -> str:
    """A regex for `label` as a page writes it: any case, `_`/`-`/space alike, maybe plural."""
    words = [re.escape(w) for w in re.split(r"[_\s-]+", label) if w]
    return r"(?<![\w-])" + r"[_\s-]+".join(words) + r"(?:e?s)?(?![\w-])"


def page_positive(page: str, classes: list[str]) -> tuple[str, str] | None:
    """The class the page says a binary probability is of, with the words that say it: "1 = dog"
    (or "dog = 1"), else the label first named after "probability" in a sentence. Only labels
    holding a letter are looked for: a page's numbers are rarely the labels "2" and "4"."""
    spelled = {c: _spelled(c) for c in classes if re.search(r"[^\W\d_]", c)}
    coded = set()
    for label, rx in spelled.items():
        one = r"(?<![\w.])1(?![\w.])"
        shown = rf"{one}\s*(?:=|:|->|→|means|for|is)\s*(?:an?\s+|the\s+)?[\"'`]?{rx}|{rx}[\"'`]?\s*(?:=|:|->|→)\s*{one}"
        found = re.search(shown, page, re.I)
        if found:
            coded.add((label, found.group(0)))
    if len({label for label, _ in coded}) == 1:
        label, said = coded.pop()
        return label, said
    for sentence in re.split(r"(?<=[.!?])\s+|\n", page):
        keyword = re.search(r"probabilit|likelihood", sentence, re.I)
        if not keyword:
            continue
        named = sorted((m.start(), label) for label, rx in spelled.items()
                       for m in re.finditer(rx, sentence, re.I))
        after = [label for at, label in named if at > keyword.start()]
        if after or len({label for _, label in named}) == 1:
            return (after or [named[0][1]])[0], sentence.strip()
    return None


class TargetDecisions:
    """The target half of the inspection (see the module docstring)."""

    def _labels(self, column: str) -> pd.Series:
        """The train labels, one per example: a column's cells, or without a train table the class
        folder or file-name label of each image."""
        if self.train_df is None and self.name_labels is not None:
            return pd.Series(list(Counter(self.name_labels.counts).elements()), dtype=object)
        if self.train_df is None:
            return pd.Series([p.parent.name for p in self.images if p.parent.parent == self.class_root])
        return present(self.train_df[column])

    def _targets(self, header: list[str] | None, id_column: str, train_id: str | None,
                 test_id: str | None) -> tuple[str, list[TargetFact], list[str]]:
        train_cols = list(self.train_df.columns) if self.train_df is not None else []
        test_cols = list(self.test_df.columns) if self.test_df is not None else []
        in_test = set(test_cols)
        only_train = [c for c in train_cols if c not in in_test and c not in (train_id, test_id)]
        if not header:
            if not only_train:
                raise ExpertDeclined("no sample submission or submission example, and train has no column "
                                     "missing from test to predict")
            target = self._likely_target(only_train)
            self.notes.append(f"no submission header found: predicting {target!r}, a column missing from test")
            return "per_target", [self._sample_fact(target, target)], [id_column, target]
        named = [c for c in header[1:] if c != "..."]
        elided = "..." in header
        in_train = [match_column(train_cols, c) for c in named]
        if named and not elided and all(in_train):
            # Submission and train may differ in case only ("Target" vs "target").
            return "per_target", [self._sample_fact(c, t) for c, t in zip(named, in_train) if t], header
        if self.train_df is None and len(named) == 1 and not elided:
            if named[0] not in set(self._labels("")):
                return "per_target", [self._sample_fact(named[0], named[0])], header
        if self.train_df is not None and len(named) == 1 and only_train and not elided \
                and not any(_spellings(named[:1]) <= _spellings(self._labels(c)) for c in only_train):
            # One prediction column under another name (e.g. "prediction" for train's "target").
            target = self._likely_target(only_train)
            self.notes.append(f"submission column {named[0]!r} holds train's {target!r}, a column missing from test")
            return "per_target", [self._sample_fact(named[0], target)], header
        label = self._label_column(named, only_train)
        labels = sorted(set(self._labels(label)))
        classes = sorted_labels(labels) if elided else named
        if elided and classes[: len(named)] != named:
            self.notes.append("the submission example's class columns are not the first sorted labels; "
                              "all classes are listed in sorted order")
        missing = sorted(label for label in labels if normalise_labels([label])[0] not in _spellings(classes))
        if missing:
            self.notes.append(f"train labels without a submission column: {', '.join(missing[:10])}")
        fact = TargetFact(column=label, task="multiclass" if len(classes) > 2 else "binary", classes=classes)
        return "per_class_proba", [fact], [header[0], *classes]

    def _likely_target(self, candidates: list[str]) -> str:
        """The train-only column a page asks to predict: named in a sentence about predicting, or
        named like a target; an assumption when several could be (commonlit's standard_error)."""
        if len(candidates) == 1:
            return candidates[0]
        sentences = [x.lower() for x in re.split(r"(?<=[.!?])\s+|\n", self.page) if re.search(r"predict|target|forecast", x, re.I)]

        def score(column: str) -> tuple:
            named = sum(bool(re.search(rf"(?<![\w]){re.escape(column.lower())}(?![\w])", x)) for x in sentences)
            hint = bool(re.search(r"target|label|class|outcome|^y$", column, re.I))
            return (named, hint, candidates.index(column))
        target = max(candidates, key=score)
        self.assume(f"target: {target!r} of the train-only columns {', '.join(candidates)} — "
                    "the one the page speaks of predicting")
        return target

    def _label_column(self, named: list[str], only_train: list[str]) -> str:
        if self.train_df is None:
            if set(named) <= set(self._labels("")):
                return "label"
            raise ExpertDeclined(f"submission columns {', '.join(named[:5])} are not labels of the train images")
        fits = [c for c in only_train if _spellings(named) <= _spellings(self._labels(c))]
        if len(fits) != 1:
            raise ExpertDeclined(f"submission columns {', '.join(named[:5])} are neither train columns nor "
                                 f"the values of exactly one train-only column ({len(fits)} fit)")
        return fits[0]

    def _default_metric(self, fmt: str, targets: list[TargetFact],
                        reason: str = "the description names no metric I can compute") -> str:
        """What a Kaggle expert assumes when the page names no metric: the submission's shape and
        the target's values decide (probabilities → log loss, labels → accuracy, numbers → RMSE)."""
        if fmt == "per_class_proba":
            name, why = "logloss", "the submission holds one probability per class"
        else:
            values = self._labels(targets[0].column)
            numbers = as_numbers(values)
            distinct = values.nunique()
            continuous = numbers is not None and not is_bool_like(values) and (
                not bool((numbers == numbers.round()).all()) or distinct > _MAX_CLASSES)
            shown = [v for t in targets for v in t.sample_values]
            fractions = as_numbers(pd.Series(shown, dtype=str)) if shown else None
            probabilities = fractions is not None and len(fractions) and bool(((fractions > 0) & (fractions < 1)).any())
            if continuous:
                name, why = "rmse", f"target {targets[0].column!r} is continuous"
            elif probabilities and distinct == 2:
                name, why = "logloss", "the sample shows probabilities for a two-class target"
            else:
                name, why = "accuracy", f"target {targets[0].column!r} holds {distinct} classes"
        self.assume(f"metric: {name} — {reason}; {why}")
        return name

    def _positive_class(self, fact: TargetFact, metric: str, fmt: str) -> TargetFact:
        """Which class a single probability column is of: the class reading as 1/true/yes, else the
        one the page names, else the last label in sorted order (an assumption)."""
        if fmt != "per_target" or fact.task != "binary" or not fact.classes or metrics.get_metric(metric).kind != "proba":
            return fact
        positive = default_positive(fact.classes)
        said = None if normalise_labels([positive])[0] in ("1", "true", "yes") else page_positive(self.page, fact.classes)
        if said:
            positive = said[0]
            self.notes.append(f"{fact.column!r} is the probability of {positive!r}: the page says {said[1][:160]!r}")
            self.evidence[f"positive class of {fact.column}"] = said[1][:300]
        elif normalise_labels([positive])[0] not in ("1", "true", "yes"):
            self.assume(f"target: {fact.column!r} is the probability of {positive!r}, the last of the labels "
                        f"{', '.join(map(repr, fact.classes))} — the page names none")
        return fact.model_copy(update={"positive_class": positive})

    def _sample_fact(self, submitted: str, column: str) -> TargetFact:
        """The task is decided later, once the metric's kind is known; the sample shows how the
        submission writes values (e.g. False where train says FALSE)."""
        shown = self.sample_df is not None and submitted in self.sample_df.columns
        values = list(present(self.sample_df[submitted]).unique()[:5]) if shown and self.sample_df is not None else []
        return TargetFact(column=column, task="regression", sample_values=values)

    def _fit_task(self, fact: TargetFact, metric: str, fmt: str) -> TargetFact:
        """The target's task under the page's metric; when the values contradict the metric (a
        score of numbers for word labels, say) the metric was misread: the data decides."""
        try:
            return self._task(fact, metrics.get_metric(metric).kind, metric, fmt)
        except ExpertDeclined as exc:
            if "single value" in exc.reason:
                raise
            assumed = self._default_metric(fmt, [fact], reason=f"the page's {metric} does not fit: {exc.reason}")
            self.metric_override = assumed
            return self._task(fact, metrics.get_metric(assumed).kind, assumed, fmt)

    def _task(self, fact: TargetFact, kind: str, metric: str, fmt: str) -> TargetFact:
        if fmt == "per_class_proba":
            return fact
        if kind in metrics.SPATIAL_KINDS:
            raise ExpertDeclined(f"metric {metric} scores {kind} strings per image (run-length masks or boxes), "
                                 "which the expert's solvers cannot predict")
        values = self._labels(fact.column)
        numbers = as_numbers(values)
        if kind in ("value", "regression"):
            if numbers is None:
                raise ExpertDeclined(f"metric {metric} scores numbers but target {fact.column!r} is not numeric")
            return fact.model_copy(update={"task": "regression", "classes": None})
        if kind == "label" and numbers is None and self.train_df is not None:
            skip = {self.roles.train_key, self.roles.test_key, *(t for t in self.roles.prediction_columns)}
            rewritten = rewritten_input(self.train_df, self.test_df, fact.column, {c for c in skip if c})
            if rewritten is not None:
                self.notes.append(describe(fact.column, *rewritten))
                return fact.model_copy(update={"task": TEXT_TASK, "classes": None, "source_column": rewritten[0]})
        labels = sorted(set(values.unique().tolist()))  # distinct first: Arrow cells one by one are slow
        # Under a label metric whole numbers are classes, as long as each class recurs.
        few = len(labels) <= _MAX_CLASSES * 50 and len(labels) * 3 <= max(len(values), 10)
        integral = numbers is not None and bool((numbers == numbers.round()).all())
        if not (numbers is None or is_bool_like(values) or (integral and few)):
            raise ExpertDeclined(f"metric {metric} scores labels but target {fact.column!r} looks continuous "
                                 f"({len(labels)} distinct numbers)")
        if len(labels) < 2:
            raise ExpertDeclined(f"target {fact.column!r} has a single value in train")
        task = "binary" if len(labels) == 2 else "multiclass"
        return fact.model_copy(update={"task": task, "classes": sorted_labels(labels)})

    def _coordinates(self, targets: list[TargetFact], image: ImageLayout | None) -> list[TargetFact]:
        """Regression targets that are coordinates on pictures of one fixed size (every value seen
        lies on the picture): predictions are clipped to the range seen in train, as no keypoint
        lies off the picture and a model extrapolating past the seen range only adds error."""
        size = image.picture_size if image is not None else None
        if size is None or self.train_df is None:
            return targets
        out, clipped = [], []
        for fact in targets:
            numbers = as_numbers(self._labels(fact.column)) if fact.task == "regression" else None
            if numbers is not None and len(numbers) and numbers.min() >= 0 and numbers.max() <= max(size) \
                    and numbers.max() > numbers.min():
                fact = fact.model_copy(update={"bounds": (float(numbers.min()), float(numbers.max()))})
                clipped.append(fact.column)
            out.append(fact)
        if clipped:
            self.notes.append(f"{len(clipped)} target(s) are coordinates on {size[0]}x{size[1]} pictures "
                              f"({', '.join(clipped[:4])}{', ...' if len(clipped) > 4 else ''}): predictions "
                              "clipped to the range seen in train")
        return out
