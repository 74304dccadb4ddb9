"""The README's usage example runs as written and shows a whole-turn trim (KEEP-1, SEEN-1)."""

from __future__ import annotations

import re
from pathlib import Path

from histtrim import BREADCRUMB, TrimResult

README = Path(__file__).resolve().parent.parent / "README.md"


def test_readme_usage_example_runs() -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.DOTALL)
    assert blocks, "README has no python example"
    namespace: dict[str, object] = {"print": lambda *args: None}
    exec(blocks[0], namespace)
    result = namespace["result"]
    assert isinstance(result, TrimResult)
    # KEEP-1: the oldest whole turn (user, tool call, tool result, answer) goes.
    assert (result.dropped_turns, result.dropped_messages, result.kept_turns) == (1, 4, 1)
    assert result.tokens_after <= result.budget_tokens < result.tokens_before
    # SEEN-1: the model sees the breadcrumb right after the system prompt.
    view = namespace["model_view"]
    assert isinstance(view, list)
    assert [row.content for row in view][1] == BREADCRUMB
