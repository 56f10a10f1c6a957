"""Which op of the process each sampled callback fires for: a decision list the dispatcher can pop.

Each sampled callback fires for an op with its own probability p, independently
of the others. Rather than drawing per op, the gaps between the ops a callback
fires for are drawn from a geometric distribution, a chunk of ops at a time,
and written into a list of decisions (False: no sampled callback fires; True:
some do; a marker at the end: the chunk is used up). The callbacks due at each
True wait, in order, in a queue.

Popping a decision is one C call (``list.pop``), so the dispatcher can pop
directly while sampled callbacks are all the slow path is for, and call what it
popped (the hit and end markers are the record-function handlers); otherwise
the record-function hook pops for each op itself. The decisions are process-wide:
threads share one list. Two threads racing at the same decision can swap which
of their two ops a due callback sees; the rate per callback stays p.
"""
from __future__ import annotations

import collections
import math
import random
import threading


class SamplingCountdown:
    """The decisions for the next ops: ``hit`` where some sampled callback fires, False elsewhere,
    ``end`` after the last one. ``hit`` and ``end`` are what the dispatcher calls when it pops them."""

    # Ops decided per fill: about 64 sampled ops per fill, within these bounds (a fill costs
    # about a microsecond per sampled op plus a nanosecond per op).
    MIN_CHUNK, MAX_CHUNK = 256, 16384

    def __init__(self, hit, end):
        self.hit, self.end = hit, end
        self.ticks: list = []
        self.pop = self.ticks.pop           # what the dispatcher calls; stays valid across fills
        self.dues = collections.deque()
        self.entries: tuple = ()
        self.chunk = self.MIN_CHUNK
        self._lock = threading.Lock()
        self._rng = random.Random()

    def _gap(self, p: float) -> int:
        """Ops until a callback of probability ``p`` fires next (>= 1)."""
        return int(math.log(1.0 - self._rng.random()) / math.log1p(-p)) + 1

    def reset(self, entries: tuple) -> None:
        """Start over with ``entries`` (each has ``prob`` and gets ``remaining``).

        Every wait is drawn afresh: the geometric distribution has no memory, so
        this does not change when a callback fires, statistically.
        """
        with self._lock:
            self.entries = entries
            for e in entries:
                e.remaining = self._gap(e.prob)
            rate = sum(e.prob for e in entries)
            self.chunk = min(self.MAX_CHUNK, max(self.MIN_CHUNK, int(64 / rate))) if rate else self.MIN_CHUNK
            if entries:
                self._fill()
            else:
                self.ticks.clear()
                self.dues.clear()

    def _fill(self) -> None:
        n = self.chunk
        picks: dict = {}
        for e in self.entries:
            pos = e.remaining - 1           # 0-based position in this chunk
            while pos < n:
                picks.setdefault(pos, []).append(e)
                pos += self._gap(e.prob)
            e.remaining = pos - n + 1
        ticks = [False] * (n + 1)
        ticks[0] = self.end                 # popped last
        hit = self.hit
        for pos in picks:
            ticks[n - pos] = hit            # position 0 is popped first
        self.dues.clear()
        self.dues.extend(tuple(picks[pos]) for pos in sorted(picks))
        self.ticks[:] = ticks

    def next_due(self) -> tuple:
        """The callbacks due at the ``hit`` just popped."""
        try:
            return self.dues.popleft()
        except IndexError:      # another thread took it (a race at a fill): nothing fires here
            return ()

    def after_end(self) -> tuple:
        """The ``end`` was popped (or the list was found empty): refill, then decide for this op."""
        with self._lock:
            if not self.ticks and self.entries:
                self._fill()
        try:
            v = self.pop()
        except IndexError:
            return ()
        return self.next_due() if v and v is not self.end else ()

    def take(self) -> tuple:
        """Pop this op's decision here (the dispatcher did not) and return the callbacks due."""
        try:
            v = self.pop()
        except IndexError:
            return self.after_end()
        if v is self.end:
            return self.after_end()
        return self.next_due() if v else ()
