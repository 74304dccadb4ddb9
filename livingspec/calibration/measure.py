"""EST-1 against real tokenizers: the counts of the corpus, saved as CSV, and their statistics.

A message's estimate is EST-1's `ceil(utf8_bytes / 4) + 4`; its real size is the tokenizer's
count of the same text plus REAL_FRAME_TOKENS (OpenAI's chat format: 3 tokens per message and 1
for the role). A session's real size is the sum over its rows (`histtrim.counting` with an
exact counter, images left out of both sides) plus REPLY_PRIMING. Measuring needs the extra
`histtrim[tokenizers]`; reading the saved CSVs and computing the statistics does not."""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from histtrim._files import write_atomically
from histtrim.counting import TokenCounter, counted_costs
from histtrim.estimate import estimate_history_tokens, estimate_image_tokens, utf8_len
from histtrim.estimate import text_tokens as estimate_text
from histtrim.messages import FRAME_TOKENS
from livingspec.calibration.corpus import CLASSES, samples, sessions

TOKENIZERS = ("o200k_base", "cl100k_base")
REAL_FRAME_TOKENS = 4
REPLY_PRIMING = 3
RETRY_FACTOR = 2 / 3
"""RUN-2: the reactive recovery trims to two thirds of the current estimate."""

MESSAGES_CSV = "calibration_messages.csv"
SESSIONS_CSV = "calibration_sessions.csv"


@dataclass(frozen=True)
class MessageCount:
    """One sample: its class, bytes, EST-1 text tokens, and each tokenizer's count of it."""

    content_class: str
    index: int
    utf8_bytes: int
    estimate: int
    real: Mapping[str, int]

    def ratio(self, tokenizer: str) -> float:
        """Estimate / real for the sample as a message row (framing included on both sides)."""
        return (self.estimate + FRAME_TOKENS) / (self.real[tokenizer] + REAL_FRAME_TOKENS)

    def text_ratio(self, tokenizer: str) -> float:
        """Estimate / real for the text alone (no framing)."""
        return self.estimate / max(self.real[tokenizer], 1)


@dataclass(frozen=True)
class SessionCount:
    """One whole session: its rows, EST-1's estimate and each tokenizer's real prompt size."""

    name: str
    rows: int
    estimate: int
    real: Mapping[str, int]

    def ratio(self, tokenizer: str) -> float:
        return self.estimate / self.real[tokenizer]


def measure_messages(count: Mapping[str, Callable[[str], int]]) -> list[MessageCount]:
    """Every sample of every class, counted by each `count[tokenizer](text)`."""
    out = []
    for content_class in CLASSES:
        for index, text in enumerate(samples(content_class)):
            out.append(MessageCount(
                content_class,
                index,
                utf8_len(text),
                estimate_text(text),
                {name: counter(text) for name, counter in count.items()},
            ))
    return out


def measure_sessions(counters: Mapping[str, TokenCounter], root: Path | str) -> list[SessionCount]:
    """Every session of the corpus: EST-1 against each counter, images out of both sides."""
    out = []
    for name, rows in sessions(root):
        images = estimate_image_tokens(rows)
        estimate = estimate_history_tokens(rows) - images
        framing = (REAL_FRAME_TOKENS - FRAME_TOKENS) * len(rows) + REPLY_PRIMING
        real = {
            tokenizer: sum(counted_costs(rows, counter)) - images + framing
            for tokenizer, counter in counters.items()
        }
        out.append(SessionCount(name, len(rows), estimate, real))
    return out


# ---------------------------------------------------------------------------- CSV files


def _write_atomic(path: Path, text: str) -> None:
    write_atomically(path, text.encode("utf-8"))


def messages_csv(records: Iterable[MessageCount]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["class", "index", "utf8_bytes", "estimate", *TOKENIZERS])
    for r in records:
        writer.writerow([r.content_class, r.index, r.utf8_bytes, r.estimate,
                         *(r.real[t] for t in TOKENIZERS)])
    return buffer.getvalue()


def sessions_csv(records: Iterable[SessionCount]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["session", "rows", "estimate", *TOKENIZERS])
    for r in records:
        writer.writerow([r.name, r.rows, r.estimate, *(r.real[t] for t in TOKENIZERS)])
    return buffer.getvalue()


def save(folder: Path | str, messages: Sequence[MessageCount], sessions_: Sequence[SessionCount]
         ) -> None:
    """Write both CSV files into `folder`, each atomically."""
    folder = Path(folder)
    _write_atomic(folder / MESSAGES_CSV, messages_csv(messages))
    _write_atomic(folder / SESSIONS_CSV, sessions_csv(sessions_))


def load_messages(path: Path | str) -> list[MessageCount]:
    with open(path, encoding="utf-8", newline="") as stream:
        return [
            MessageCount(row["class"], int(row["index"]), int(row["utf8_bytes"]),
                         int(row["estimate"]), {t: int(row[t]) for t in TOKENIZERS})
            for row in csv.DictReader(stream)
        ]


def load_sessions(path: Path | str) -> list[SessionCount]:
    with open(path, encoding="utf-8", newline="") as stream:
        return [
            SessionCount(row["session"], int(row["rows"]), int(row["estimate"]),
                         {t: int(row[t]) for t in TOKENIZERS})
            for row in csv.DictReader(stream)
        ]


# ---------------------------------------------------------------------------- statistics


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100), linear between the two nearest ranks."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("values: no values")
    position = (len(ordered) - 1) * q / 100
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


@dataclass(frozen=True)
class RatioSummary:
    """The distribution of estimate / real over a group of messages or sessions."""

    group: str
    tokenizer: str
    n: int
    median: float
    p5: float
    p95: float
    worst: float
    """The smallest ratio: the largest under-count."""
    highest: float
    under: float
    """The share the estimate under-counts (ratio < 1)."""

    @classmethod
    def of(cls, group: str, tokenizer: str, ratios: Sequence[float]) -> RatioSummary:
        return cls(group, tokenizer, len(ratios), percentile(ratios, 50), percentile(ratios, 5),
                   percentile(ratios, 95), min(ratios), max(ratios),
                   sum(r < 1 for r in ratios) / len(ratios))


def summarize_messages(
    records: Sequence[MessageCount], tokenizer: str, *, framed: bool = True
) -> list[RatioSummary]:
    """One summary per class, in CLASSES order (`framed=False`: the text alone)."""
    out = []
    for content_class in dict.fromkeys(r.content_class for r in records):
        group = [r for r in records if r.content_class == content_class]
        ratios = [r.ratio(tokenizer) if framed else r.text_ratio(tokenizer) for r in group]
        out.append(RatioSummary.of(content_class, tokenizer, ratios))
    return out


def summarize_sessions(records: Sequence[SessionCount], tokenizer: str) -> RatioSummary:
    return RatioSummary.of("whole sessions", tokenizer, [r.ratio(tokenizer) for r in records])


def overshoot(ratio: float) -> float:
    """CAP-2: how far over the window (as a share of it) a request estimated exactly at the
    window really is, when its estimate / real is `ratio` (0 when it does not under-count)."""
    return max(1 / ratio - 1, 0.0)


def retries_to_fit(ratio: float, fill: float = 1.0) -> int:
    """RUN-2: how many 2/3 retries bring a request estimated at `fill` x the window (1: exactly
    at it) under the real window, when the trim removes estimate and real size alike and the
    estimate / real is `ratio`: the smallest k with fill x (2/3)^k <= ratio."""
    retries, left = 0, fill
    while left > ratio + 1e-12:
        left *= RETRY_FACTOR
        retries += 1
    return retries
