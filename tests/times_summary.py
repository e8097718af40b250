"""Where a test run's time went, per module, from the AGENTK_TEST_TIMES log (conftest.py):
`python tests/test_times.py LOG` prints the modules by their summed seconds, the largest first."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

SHOWN = 30


def module_seconds(log: Path) -> Counter[str]:
    seconds: Counter[str] = Counter()
    for line in log.read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        seconds[entry["test"].split("::", 1)[0]] += entry["s"]
    return seconds


if __name__ == "__main__":
    log = Path(sys.argv[1])
    if log.is_file():
        seconds = module_seconds(log)
        print(f"test time per module ({sum(seconds.values()):.0f} s over {len(seconds)} modules, workers summed):")
        for module, total in seconds.most_common(SHOWN):
            print(f"{total:8.1f} s  {module}")
