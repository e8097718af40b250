"""MiniLM fine-tuned end to end on the task: the bundled all-MiniLM-L6-v2 transformer, mean
pooling and a linear head, trained with AdamW under the solver's deadline.

Frozen sentence embeddings plus a linear model leave accuracy on the table (disaster tweets:
F1 0.76 frozen vs 0.80 after one fine-tuned epoch), but fine-tuning costs minutes on CPU; what
keeps it affordable is in `text_tokens` (a max length from the texts' own token lengths, padding
per batch, batches of rows of similar length). `estimate_finetune_seconds` times real batches so
the solver can tell beforehand whether a run fits its budget.
"""

from __future__ import annotations

import copy
import math
import time
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from solve_pipeline.networks import device
from solve_pipeline.base.dataset import FeatureSet
from solve_pipeline.texts.text_tokens import (
    MAX_LENGTH_CAP, Encoded, TextInputs, collate, encode, fitting_length, length_batches, pretrained_minilm,
    sorted_batches, text_finetune_matrices,
)
from solve_pipeline.networks.torch_loop import Loop, Pace, TorchModel, TrainSettings
from solve_pipeline.networks.torch_training import start_head, torch_threads

# Rows per batch shrink for long texts so a batch holds at most this many tokens: with 32 rows of
# 256 pieces a commonlit run peaked above 4 GB here (attention activations, and freed blocks
# malloc keeps), with 16 rows 3.3 GB, with 8 rows about 2 GB; the time per token stays the same.
MAX_BATCH_TOKENS = 2048
PREDICT_BATCH_TOKENS = 8192
PROBE_SAMPLE = 512  # texts read to measure the token lengths a run would see
# Of the full step's per-token time, what a forward pass alone costs (validation, prediction);
# measured ~0.25-0.3 here, rounded up so the reserve errs on the safe side.
FORWARD_SHARE = 0.4


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
class _Settings(TrainSettings):
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


class MiniLMFineTuneModel(TorchModel):
    """all-MiniLM-L6-v2 fine-tuned on TextInputs, following the solver's model protocol; every
    epoch runs (the best one's weights are kept), with a learning rate that decays to the end."""

    Settings = _Settings
    PART = "text fine-tuning"

    def _train(self, X: TextInputs, y: np.ndarray, X_val: TextInputs | None,
               y_val: np.ndarray | None) -> None:
        s, deadline, on = self.settings, self.options.deadline, self.device_
        tokenizer, body = pretrained_minilm()
        self.pad_id_ = int(tokenizer.pad_token_id or 0)
        self.max_length_ = fitting_length(tokenizer, X, s.max_length_cap)
        encoded = encode(tokenizer, X, self.max_length_)
        lengths = encoded.lengths
        out_dim, targets = self._targets(y)
        self.net_ = _Net(copy.deepcopy(body), out_dim, s.dropout)
        start_head(self.net_.head, self.spec, y)
        self.net_.to(on)
        optimizer = _optimizer(self.net_, s)
        rng = np.random.RandomState(self.options.seed)
        batch = s.batch_rows(self.max_length_, device.batch_scale(on) * self.batch_factor_)
        planned = s.max_epochs * math.ceil(len(y) / batch)
        schedule = _Schedule(s.warmup_share, planned)
        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, schedule)
        validate = X_val is not None and y_val is not None and len(y_val) > 0
        val = encode(tokenizer, X_val, self.max_length_) if validate else None
        val_tokens = int(val.lengths.sum()) if val is not None else 0
        pace = Pace(skip=1)  # per padded token

        def stop_before(rows: np.ndarray, steps: int) -> bool:
            if deadline is None:
                return False
            per_token = pace.seconds / pace.units if steps > 1 else None
            left = _seconds_left(deadline, per_token, batch * int(lengths[rows].max()), val_tokens)
            if left is not None and per_token is not None:  # re-aim the decay at the last step that fits
                schedule.total = min(planned, steps + int(left * (steps - 1) / pace.seconds) + 1)
            return left is None

        def after_step(rows: np.ndarray, seconds: float) -> None:
            scheduler.step()
            pace.add(len(rows) * int(lengths[rows].max()), seconds)  # the batch's padded tokens

        self._run(Loop(optimizer, targets, lambda epoch: length_batches(lengths, batch, rng),
                       forward=lambda rows: self.net_(*collate(encoded, rows, self.pad_id_, on)),
                       stop_before=stop_before,
                       validation=None if val is None else lambda: self._on_device(lambda: self._raw(val)),
                       y_val=np.asarray(y_val) if validate else None, clip=1.0, after_step=after_step), X, y)

    def _raw(self, encoded: Encoded) -> np.ndarray:
        self.net_.eval()
        on = self.device_
        width = self.spec.n_classes if self.spec.is_classification else 1
        out = np.zeros((len(encoded.ids), width))
        with torch.inference_mode(), device.autocast(on):
            rows_per_batch = max(1, PREDICT_BATCH_TOKENS * device.batch_scale(on) // self.max_length_)
            for rows in sorted_batches(encoded.lengths, rows_per_batch):
                out[rows] = self.net_(*collate(encoded, rows, self.pad_id_, on)).double().cpu().numpy()
        return out

    def _outputs(self, X: TextInputs) -> np.ndarray:
        tokenizer, _ = pretrained_minilm()
        with torch_threads(self.options.threads):
            encoded = encode(tokenizer, X, self.max_length_)
            return self._on_device(lambda: self._raw(encoded))


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


def _probe_pace(encoded: Encoded, threads: int, seed: int = 0) -> _Pace:
    """Times two real training steps and two forward passes (after one warm-up step) on batches
    of the sample: shortest, middle (warm-up) and longest thirds, so lengths are represented."""
    tokenizer, body = pretrained_minilm()
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
            ids, mask, types = collate(encoded, rows, pad_id, on)
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
                    net(*collate(encoded, rows, pad_id, on))
            device.synchronize()
            started, tokens = time.monotonic(), 0
            for rows in timed:
                ids, mask, types = collate(encoded, rows, pad_id, on)
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
    tokenizer, _ = pretrained_minilm()
    max_length = fitting_length(tokenizer, sample, MAX_LENGTH_CAP)
    encoded = encode(tokenizer, sample, max_length)
    key = (max(1, threads), max_length, device.current().type)
    if key not in _PACES:
        _PACES[key] = _probe_pace(encoded, threads)
    pace = _PACES[key]
    # Length-sorted batches pad little: a row costs about its own length.
    tokens_per_row = float(encoded.lengths.mean())
    predicted_rows = math.ceil(epochs) * n_rows / 4 + features.n_test
    return tokens_per_row * (epochs * n_rows * pace.train + predicted_rows * pace.forward)
