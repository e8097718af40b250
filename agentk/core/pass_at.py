"""Pass@k: the chance that at least one of k tries passes, estimated from n tries of which c passed."""

from __future__ import annotations

import math


def pass_at_k(n: int, c: int, k: int) -> float | None:
    """The unbiased estimator of Chen et al. (2021), as Agent K's Table 4 uses it. None when k > n
    (k tries cannot be drawn from fewer)."""
    if k > n:
        return None
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)
