"""The interactive explorer: pick a session, move sliders (budget, ratio, window, max turns,
policy constants, the trims' low-water marks, a provider's prompt cache) and see the turn
map, the kept/dropped table and the trim events. The
view is computed by `explore`, with the same replay the `histtrim review` command runs;
`Explorer` only wires ipywidgets (an optional extra) to it."""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from histtrim.config import ProviderProfile, RuntimeProfile
from histtrim.policy import SPEC, Policy
from histtrim.review.cache import PROVIDERS, CacheModel, price_calls, totals
from histtrim.review.replay import ReplaySettings, SessionReplay, Trim, replay
from histtrim.review.sessions import ReviewSession
from histtrim.turn_sizes import turn_stats


@dataclass(frozen=True)
class TurnRow:
    """One turn of the recorded session and what the replay did with it."""

    turn: int
    messages: int
    tokens: int
    images: int
    kept: bool
    dropped_by: Trim | None


@dataclass(frozen=True)
class ExplorerView:
    """Everything the explorer shows for one setting of the sliders."""

    session: str
    settings: ReplaySettings
    policy: Policy
    budget: int
    replay: SessionReplay
    turns: tuple[TurnRow, ...]
    restored_turns: int
    """Turns restored before the replay: the agent's turn 1 is session turn this + 1."""
    cache: CacheModel | None = None
    """The prompt cache the summary prices the billed requests with (None: not priced)."""

    def turn_map(self) -> str:
        """One character per turn, oldest first: `#` kept, `.` dropped by the token budget,
        `x` dropped by the turn limit, `o` by the recovery from a context overflow."""
        marks = {"token_budget": ".", "turn_limit": "x", "context_overflow": "o"}
        return "".join(
            "#" if row.kept else marks.get(row.dropped_by.reason if row.dropped_by else "", "?")
            for row in self.turns
        )

    def table(self) -> str:
        """The kept/dropped table: per turn its size and, when dropped, which trim did it."""
        lines = [f"{'turn':>4}  {'msgs':>4}  {'tokens':>6}  {'images':>6}  status"]
        for row in self.turns:
            if row.kept:
                status = "kept"
            else:
                trim = row.dropped_by
                status = "dropped" if trim is None else (
                    f"dropped in turn {trim.turn_id + self.restored_turns} ({trim.reason})"
                )
            lines.append(
                f"{row.turn:>4}  {row.messages:>4}  {row.tokens:>6}  {row.images:>6}  {status}"
            )
        return "\n".join(lines)

    def events(self) -> str:
        """The trim events, one line each (as a client would see them)."""
        if not self.replay.trace:
            return "no HistoryTrimmed event"
        return "\n".join(
            f"turn {t.turn_id + self.restored_turns}: HistoryTrimmed {t.reason}: dropped "
            f"{t.dropped_messages} messages ({_turns(t.dropped_turns)}), kept "
            f"{_turns(t.kept_turns)}, tokens {t.tokens_before} -> {t.tokens_after}, "
            f"budget {t.budget}"
            for t in self.replay.trace
        )

    def summary(self) -> str:
        r = self.replay
        return (
            f"{self.session}: budget {self.budget}, window {self.settings.provider.context_window}"
            f" (true {self.settings.hidden_window}); {r.turns} turns replayed, {r.calls} calls, "
            f"{r.trims} trims, {r.dropped_turns} turns dropped, {r.reactive_retries} reactive "
            f"retries, {r.capacity_refusals} refused by the capacity check, "
            f"{r.failed_turns} failed{self._cache_summary()}"
        )

    def _cache_summary(self) -> str:
        if self.cache is None:
            return ""
        priced = totals(price_calls(self.replay.prompts, self.cache))
        return (
            f"; {self.cache.name} cache: {priced.cached_share:.1%} of input cached, input cost "
            f"{priced.relative_cost:.3f}x of no cache"
        )

    def text(self) -> str:
        return "\n".join([self.summary(), "", f"turn map: {self.turn_map()}", "",
                          self.table(), "", self.events()])


def _turns(count: int) -> str:
    return f"{count} turn{'s' * (count != 1)}"


def explore(
    session: ReviewSession,
    *,
    budget: int | None = None,
    ratio: float | None = None,
    window: int = 16_000,
    true_window: int | None = None,
    max_turns: int | None = None,
    policy: Policy = SPEC,
    cache: CacheModel | None = None,
) -> ExplorerView:
    """Replay `session` with these settings and lay out what happened to each turn; with a
    cache model, the summary says what the provider's prompt cache made of the requests."""
    settings = ReplaySettings(
        profile=RuntimeProfile(
            max_context_tokens=budget, context_compact_ratio=ratio, max_history_messages=max_turns
        ),
        provider=ProviderProfile(model="replay-model", context_window=window),
        true_window=true_window,
        record_prompts=cache is not None,
    )
    agent, result = replay(session, policy, settings, label="explorer")
    stats = [s for s in turn_stats(
        session.history(), crumb_present=session.crumb_present, policy=policy
    ) if s.turn > 0]
    total = len(stats)
    droppers: list[Trim | None] = []
    for trim in result.trace:
        droppers.extend([trim] * trim.dropped_turns)
    rows = []
    for k, stat in enumerate(stats):
        kept = k >= total - result.kept_turns
        rows.append(TurnRow(
            stat.turn, stat.messages, stat.tokens, stat.images, kept,
            None if kept or k >= len(droppers) else droppers[k],
        ))
    return ExplorerView(
        session.name, settings, policy, agent.runtime.effective_context_budget(), result,
        tuple(rows),
        total - len(session.turns),
        cache,
    )


_TARGETS = ["1", "9/10", "7/10", "1/2", "1/3"]
"""The low-water marks the explorer offers (1: the spec, trim just to fit)."""


class Explorer:
    """Sliders and a session picker whose every change re-runs `explore` (ipywidgets)."""

    def __init__(self, sessions: Sequence[ReviewSession]) -> None:
        try:
            import ipywidgets as widgets  # type: ignore[import-untyped]
        except ImportError:
            raise ImportError(
                "the explorer needs ipywidgets (pip install 'histtrim[notebooks]')"
            ) from None
        if not sessions:
            raise ValueError("sessions: at least one session is needed")
        self.sessions = {s.name: s for s in sessions}
        style = {"description_width": "10em"}
        layout = widgets.Layout(width="32em")

        def slider(cls: Any, description: str, **kw: Any) -> Any:
            return cls(description=description, style=style, layout=layout,
                       continuous_update=False, **kw)

        self.controls: dict[str, Any] = {
            "session": widgets.Dropdown(
                options=list(self.sessions), description="session", style=style, layout=layout
            ),
            "budget": slider(widgets.IntSlider, "budget (0: off)", min=0, max=64_000,
                             step=500, value=12_000),
            "ratio": slider(widgets.FloatSlider, "ratio (0: unset)", min=0.0, max=1.0,
                            step=0.05, value=0.0),
            "window": slider(widgets.IntSlider, "declared window", min=2_000, max=200_000,
                             step=1_000, value=16_000),
            "true_window": slider(widgets.IntSlider, "true window", min=2_000, max=200_000,
                                  step=1_000, value=12_000),
            "max_turns": slider(widgets.IntSlider, "max turns", min=1, max=100, value=50),
            "image_tokens": slider(widgets.IntSlider, "tokens per image", min=0, max=3_200,
                                   step=100, value=SPEC.image_tokens),
            "bytes_per_token": slider(widgets.IntSlider, "bytes per token", min=1, max=8,
                                      value=SPEC.bytes_per_token),
            "reactive": widgets.Dropdown(
                options=["1/3", "1/2", "2/3", "3/4", "9/10"], value=str(SPEC.reactive_target),
                description="reactive target", style=style, layout=layout,
            ),
            "token_target": widgets.Dropdown(
                options=_TARGETS, value=str(SPEC.token_trim_target),
                description="token trim target", style=style, layout=layout,
            ),
            "turn_target": widgets.Dropdown(
                options=_TARGETS, value=str(SPEC.turn_trim_target),
                description="turn trim target", style=style, layout=layout,
            ),
            "cache": widgets.Dropdown(
                options=["none", *PROVIDERS], value="none",
                description="prompt cache", style=style, layout=layout,
            ),
        }
        self.output = widgets.HTML()
        """The view as preformatted text (a value, not printed output: nothing leaks)."""
        self.view: ExplorerView | None = None
        for control in self.controls.values():
            control.observe(self.update, names="value")
        self.widget = widgets.VBox([*self.controls.values(), self.output])
        self.update()

    def values(self) -> dict[str, Any]:
        return {name: control.value for name, control in self.controls.items()}

    def compute(self) -> ExplorerView:
        """The view for the current control values (the callback's work, without display)."""
        v = self.values()
        policy = Policy.model_validate({
            **SPEC.model_dump(),
            "image_tokens": int(v["image_tokens"]),
            "bytes_per_token": int(v["bytes_per_token"]),
            "reactive_target": Fraction(v["reactive"]),
            "token_trim_target": Fraction(v["token_target"]),
            "turn_trim_target": Fraction(v["turn_target"]),
        })
        return explore(
            self.sessions[v["session"]],
            budget=int(v["budget"]),
            ratio=float(v["ratio"]) or None,
            window=int(v["window"]),
            true_window=int(v["true_window"]),
            max_turns=int(v["max_turns"]),
            policy=policy,
            cache=PROVIDERS.get(v["cache"]),
        )

    def update(self, change: object = None) -> None:
        """Recompute and redraw (the callback of every control)."""
        self.view = self.compute()
        self.output.value = f"<pre>{html.escape(self.view.text())}</pre>"

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)  # type: ignore[no-untyped-call]
