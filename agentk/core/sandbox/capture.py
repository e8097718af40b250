"""Output capture for sandboxed children: their stdout and stderr read from pipes by threads, kept
head and tail within a bound, each stdout line handed to a callback."""

from __future__ import annotations

import codecs
import logging
import threading
from collections import deque
from collections.abc import Callable
from typing import IO

from agentk.core.secrets import redact

logger = logging.getLogger(__name__)


class Capture:
    """Keeps the first and last halves of a stream, with a marker where the middle was."""

    def __init__(self, max_chars: int) -> None:
        self._head_max = max_chars // 2
        self._tail_max = max_chars - self._head_max
        self._head: list[str] = []
        self._head_len = 0
        self._tail: deque[str] = deque()
        self._tail_len = 0
        self._dropped = 0
        self._lock = threading.Lock()

    def add(self, text: str) -> None:
        with self._lock:
            room = self._head_max - self._head_len
            if room > 0:
                self._head.append(text[:room])
                self._head_len += min(room, len(text))
                text = text[room:]
            if not text:
                return
            self._tail.append(text)
            self._tail_len += len(text)
            while self._tail_len > self._tail_max:
                excess = self._tail_len - self._tail_max
                first = self._tail[0]
                if len(first) <= excess:
                    self._tail.popleft()
                    cut = len(first)
                else:
                    self._tail[0] = first[excess:]
                    cut = excess
                self._tail_len -= cut
                self._dropped += cut

    def text(self) -> str:
        with self._lock:
            head, tail = "".join(self._head), "".join(self._tail)
            if not self._dropped:
                return head + tail
            return f"{head}\n... [{self._dropped} characters truncated] ...\n{tail}"


def pump_lines(pipe: IO[bytes], capture: Capture, on_line: Callable[[str], None] | None) -> None:
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    failures = 0
    with pipe:
        # A bounded readline keeps a newline-free flood of bytes from growing our memory.
        for raw in iter(lambda: pipe.readline(65536), b""):
            text = decoder.decode(raw)
            capture.add(text)
            if on_line is not None and text:
                try:
                    on_line(redact(text.rstrip("\r\n")))
                except Exception:
                    # Stopping here would stop draining the pipe and block the child; logging
                    # every failure would flood the log once per output line.
                    if failures == 0:
                        logger.exception("on_stdout_line callback failed; output capture continues")
                    failures += 1
        if failures > 1:
            logger.warning("on_stdout_line callback failed on %d lines in total", failures)
        capture.add(decoder.decode(b"", final=True))


def pump_chunks(pipe: IO[bytes], capture: Capture) -> None:
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    with pipe:
        for raw in iter(lambda: pipe.read1(65536), b""):  # type: ignore[attr-defined]
            capture.add(decoder.decode(raw))
        capture.add(decoder.decode(b"", final=True))
