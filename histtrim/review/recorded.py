"""Recorded provider usage as the review's truth: the window of the model a session file
names, and how that provider counted a request, fitted to the calls the file recorded.

Review machinery, not the spec. An agent's file records, for each call, the input the
provider counted; the file does not hold everything that was sent (Claude Code leaves out its
system prompt and tool schemas), and the provider's tokenizer is not histtrim's estimate. Both
show in the recorded counts as a line: `recorded = hidden + scale x estimate`, the hidden part
what every request carried that the file does not hold. The replay's provider counts each
request it receives that way (a trimmed request too), refuses what passes the model's window,
and reports the count as usage, as the real provider did."""

from __future__ import annotations

import re
from collections.abc import Sequence
from fractions import Fraction

from pydantic import BaseModel, ConfigDict, Field

from histtrim.agent.providers import RequestCounter
from histtrim.estimate import ToolSchema, estimate_history_tokens
from histtrim.messages import ChatMessage
from histtrim.policy import SPEC, Policy

MODEL_WINDOWS: tuple[tuple[str, int], ...] = (
    (r"claude-(?:opus|sonnet|haiku)-4|claude-3-[57]-|claude-3-(?:opus|haiku)", 200_000),
    (r"gpt-5", 400_000),
    (r"gpt-4\.1", 1_047_576),
    (r"gpt-4o", 128_000),
    (r"(?:^|/)o[34](?:-mini)?(?:$|-)", 200_000),
    (r"gemini-(?:1\.5|2\.0|2\.5|3)", 1_048_576),
)
"""The context window of each model family the route table knows (the providers' published
windows), matched anywhere in the recorded model name (a proxy's alias such as `aide-gpt-5`
names its family too); the first match wins."""


def model_window(model: str | None) -> int | None:
    """The window of a recorded model when the table knows its family, else None."""
    if not model or len(model) > 200:
        return None
    name = model.lower()
    return next((window for pattern, window in MODEL_WINDOWS if re.search(pattern, name)), None)


class RecordedUsage(BaseModel):
    """A session's recorded calls, each as (recorded input, histtrim's estimate of the same
    request), and the line fitted to them."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    calls: tuple[tuple[int, int], ...]
    hidden: int = Field(ge=0)
    """Tokens every request carried that the file does not hold."""
    scale: Fraction = Field(gt=0)
    """The provider's tokens per estimated token of what the file holds."""
    model: str | None = None

    @property
    def recorded(self) -> int:
        return sum(r for r, _ in self.calls)

    @property
    def estimated(self) -> int:
        return sum(e for _, e in self.calls)

    def counter(self, policy: Policy = SPEC) -> RequestCounter:
        """The replayed provider's count of a request: the hidden part plus the scaled
        estimate of its rows (the replay's own tool schemas are in the hidden part: the
        recorded calls counted the real ones)."""
        hidden, scale = self.hidden, self.scale

        def count(rows: Sequence[ChatMessage], schemas: Sequence[ToolSchema]) -> int:
            return hidden + round(scale * estimate_history_tokens(rows, policy=policy))

        return count


def fit_usage(calls: Sequence[tuple[int, int]], model: str | None = None
              ) -> RecordedUsage | None:
    """The least-squares line through (estimate, recorded) in exact fractions, its hidden
    part at least 0 and its scale positive; one distinct estimate: scale 1. None without a
    call that recorded input."""
    kept = tuple((r, e) for r, e in calls if r > 0)
    if not kept:
        return None
    n = len(kept)
    mean_e = Fraction(sum(e for _, e in kept), n)
    mean_r = Fraction(sum(r for r, _ in kept), n)
    spread = sum((e - mean_e) ** 2 for _, e in kept)
    scale = Fraction(1)
    if spread:
        scale = sum((e - mean_e) * (r - mean_r) for r, e in kept) / spread
    if scale <= 0:
        scale = Fraction(1)
    hidden = mean_r - scale * mean_e
    if hidden < 0:  # no room for a hidden part: the line through the origin
        hidden = Fraction(0)
        total_e = sum(e for _, e in kept)
        scale = Fraction(sum(r for r, _ in kept), total_e) if total_e else Fraction(1)
    scale = scale.limit_denominator(10_000) or Fraction(1, 10_000)
    return RecordedUsage(calls=tuple(calls), hidden=round(hidden), scale=scale, model=model)
