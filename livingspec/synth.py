"""Seeded generators of realistic agent sessions (structured items): the review corpus in
`examples/sessions/` is built from them, and the scale benchmark draws thousands.

Four kinds: a coding agent with tool loops, a research agent with pasted screenshots and a
browser tool that declares page screenshots, a support chat with long user messages, and a
session restored with a breadcrumb. `long_coding_session` draws a coding agent of hundreds of
short turns (small tool outputs), the session that meets its budget early and then trims on
every call: what the prompt-cache review measures."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from typing import Literal

from histtrim.carriers import image_marker
from histtrim.messages import (
    BREADCRUMB,
    AssistantToolCalls,
    ChatMessage,
    ConversationMessage,
    ToolCall,
    ToolResultMessage,
    ToolResults,
)

Kind = Literal["coding", "research", "support", "restored"]
KINDS: tuple[Kind, ...] = ("coding", "research", "support", "restored")

_FILES = (
    "shop/checkout/totals.py", "shop/checkout/views.py", "shop/cart/models.py",
    "shop/payments/stripe_client.py", "shop/discounts/rules.py", "tests/test_checkout.py",
    "tests/test_discounts.py", "shop/settings/base.py", "shop/orders/serializers.py",
)
_TASKS = (
    "The checkout tests started failing after yesterday's merge. Can you find out why?",
    "Add a regression test for the rounding of percentage discounts.",
    "Rename `OrderTotal` to `CheckoutTotal` everywhere and keep the old name as an alias.",
    "Why does the payment webhook return 500 for refunds? Check the logs and the client.",
    "Make the cart page show the tax line separately; the product owner asked for it.",
    "Bump the Stripe client to the new API version and fix whatever breaks.",
    "The CI job on Python 3.12 times out. Find the slow test and make it faster.",
    "Our serializer drops the `gift_note` field. Fix it and add a test.",
)
_QUESTIONS = (
    "What is driving the drop in this chart? I pasted it from the quarterly report",
    "Compare these two dashboards: which region lost the most users week over week?",
    "Here is the slide the board saw. Are the numbers consistent with the public filings?",
    "This screenshot is from our analytics tool. Why does the funnel collapse at step 3?",
    "Find two recent papers that measure the same effect and summarize their methods.",
    "Does the figure in this screenshot match what the paper's abstract claims?",
)
_TOPICS = ("late delivery", "double charge", "broken item", "refund not received",
           "address change", "subscription cancellation", "wrong size", "missing invoice")


def _args(values: dict[str, str]) -> str:
    return json.dumps(values, separators=(",", ":"), ensure_ascii=False)


def _words(rng: random.Random, count: int) -> str:
    vocab = (
        "order", "package", "delivery", "the", "customer", "refund", "payment", "card",
        "week", "support", "again", "please", "because", "invoice", "address", "courier",
        "tracking", "number", "item", "box", "damaged", "replacement", "account", "email",
        "yesterday", "still", "nothing", "arrived", "charged", "twice", "bank", "statement",
    )
    return " ".join(rng.choice(vocab) for _ in range(count))


def _frame(rng: random.Random) -> str:
    function = rng.choice(("total", "apply", "round_half_up", "quantize"))
    return f"    {rng.choice(_FILES)}:{rng.randint(10, 400)}: in {function}"


def _pytest_log(rng: random.Random) -> str:
    tests = rng.randint(12, 60)
    failing = rng.randint(1, 3)
    lines = ["============================= test session starts ==============================",
             f"collected {tests} items", ""]
    for name in rng.sample(_FILES, 3):
        lines.append(f"{name} " + "." * rng.randint(5, 25) + "F" * failing + "   [ 42%]")
    for n in range(failing):
        lines += [
            f"________________________ test_total_case_{n} ________________________",
            "    def test_total_includes_tax_and_fee():",
            '        cart = make_cart(items=[("mug", Decimal("9.99"), 3)])',
            '>       assert checkout_total(cart, shipping=Decimal("4.50")) == Decimal("41.31")',
            "E       AssertionError: assert Decimal('41.30') == Decimal('41.31')",
            *(_frame(rng) for _ in range(rng.randint(4, 12))),
        ]
    seconds = rng.uniform(0.5, 9)
    lines.append(f"===== {failing} failed, {tests - failing} passed in {seconds:.2f}s =====")
    return "\n".join(lines)


def _source(rng: random.Random, path: str) -> str:
    lines = [f'"""{path}: checkout arithmetic."""', "from decimal import ROUND_HALF_UP, Decimal"]
    for n in range(rng.randint(10, 45)):
        lines += [
            f"def step_{n}(amount: Decimal, rate: Decimal) -> Decimal:",
            f"    # applied after discount rule {rng.randint(1, 40)}",
            "    return (amount * rate).quantize(Decimal('0.01'), rounding=ROUND_HALF_UP)",
            "",
        ]
    return "\n".join(lines)


def _grep(rng: random.Random, word: str) -> str:
    return "\n".join(
        f"{rng.choice(_FILES)}:{rng.randint(1, 500)}:    total = {word}(cart, rate=TAX_RATE)"
        for _ in range(rng.randint(3, 40))
    )


def _coding_round(rng: random.Random, turn: int, step: int) -> tuple[ToolCall, str]:
    call_id = f"call_{turn}_{step}"
    kind = rng.choice(("run_tests", "read_file", "read_file", "grep", "apply_patch"))
    if kind == "run_tests":
        call = ToolCall(id=call_id, name=kind, arguments=_args({"path": "tests/"}))
        return call, _pytest_log(rng)
    if kind == "read_file":
        path = rng.choice(_FILES)
        return ToolCall(id=call_id, name=kind, arguments=_args({"path": path})), _source(rng, path)
    if kind == "grep":
        word = rng.choice(("checkout_total", "OrderTotal", "quantize", "TAX_RATE"))
        return ToolCall(id=call_id, name=kind, arguments=_args({"pattern": word})), _grep(rng, word)
    path = rng.choice(_FILES)
    diff = f"--- a/{path}\n+++ b/{path}\n@@ -{rng.randint(1, 90)},7 +{rng.randint(1, 90)},7 @@\n"
    call = ToolCall(id=call_id, name=kind, arguments=_args({"path": path, "diff": diff}))
    return call, "patch applied"


def coding_session(rng: random.Random, turns: int) -> list[ConversationMessage]:
    """A coding agent: each turn one to four tool rounds (tests, files, grep, patches)."""
    items: list[ConversationMessage] = [ChatMessage.system(
        "You are Codey, a coding agent in the repository /home/ana/shop (a Django web shop). "
        "Use the tools before you answer; keep answers short and name the files you changed."
    )]
    for turn in range(turns):
        items.append(ChatMessage.user(rng.choice(_TASKS)))
        for step in range(rng.randint(1, 4)):
            call, output = _coding_round(rng, turn, step)
            items.append(AssistantToolCalls(text=None, tool_calls=(call,)))
            items.append(ToolResults(results=(
                ToolResultMessage(tool_call_id=call.id, content=output, tool_name=call.name),
            )))
        items.append(ChatMessage.assistant(
            f"Fixed: {rng.choice(_FILES)} rounded before adding the fee. "
            f"I changed {rng.randint(1, 3)} files and the tests pass now."
        ))
    return items


def research_session(rng: random.Random, turns: int) -> list[ConversationMessage]:
    """A research agent: pasted screenshots (image markers in user turns), web tools, and a
    browser tool whose results declare page screenshots (tool images, EST-3)."""
    items: list[ConversationMessage] = [ChatMessage.system(
        "You are a research assistant. Cite sources; say when a figure cannot be verified."
    )]
    for turn in range(turns):
        shots = rng.choice((0, 1, 1, 2))
        markers = " ".join(
            image_marker(f"https://files.example.com/lea/screenshot-{turn}-{n}.png")
            for n in range(shots)
        )
        items.append(ChatMessage.user(f"{rng.choice(_QUESTIONS)} {markers}".strip()))
        for step in range(rng.randint(0, 3)):
            name = rng.choice(("web_search", "fetch_page", "screenshot_page"))
            call = ToolCall(
                id=f"call_{turn}_{step}", name=name,
                arguments=_args({"query": rng.choice(_QUESTIONS)[:40]}),
            )
            items.append(AssistantToolCalls(text="Let me check the sources.", tool_calls=(call,)))
            if name == "screenshot_page":  # a tool image: declared, never marker text (EST-3)
                pages = tuple(
                    f"https://files.example.com/browser/page-{turn}-{step}-{n}.png"
                    for n in range(rng.choice((1, 1, 2)))
                )
                result = ToolResultMessage(
                    tool_call_id=call.id, tool_name=name, attachments=pages,  # type: ignore[arg-type]
                    content=f"Rendered the page at 1280x{rng.randint(8, 40) * 100}; "
                    f"{len(pages)} screenshot{'s' * (len(pages) > 1)} attached.",
                )
            else:
                page = "\n".join(
                    f"[{n}] {_words(rng, rng.randint(8, 30))}" for n in range(rng.randint(5, 40))
                )
                result = ToolResultMessage(tool_call_id=call.id, content=page, tool_name=name)
            items.append(ToolResults(results=(result,)))
        items.append(ChatMessage.assistant(
            "The drop comes from the EMEA segment; " + _words(rng, rng.randint(30, 120))
        ))
    return items


def support_session(rng: random.Random, turns: int) -> list[ConversationMessage]:
    """A support chat: long pasted user messages, long answers, an order lookup now and then."""
    items: list[ConversationMessage] = [ChatMessage.system(
        "You are the support assistant of Acme Shop. Be polite, look orders up before you "
        "promise anything, and never share another customer's data."
    )]
    for turn in range(turns):
        topic = rng.choice(_TOPICS)
        pasted = "\n".join(
            f"> {_words(rng, rng.randint(10, 25))}" for _ in range(rng.randint(4, 30))
        )
        items.append(ChatMessage.user(
            f"Hello, about my {topic} (order A-{rng.randint(10000, 99999)}): "
            f"{_words(rng, rng.randint(20, 80))}\nHere is the email I got:\n{pasted}"
        ))
        if rng.random() < 0.4:
            call = ToolCall(
                id=f"call_{turn}", name="lookup_order",
                arguments=_args({"order": f"A-{rng.randint(10000, 99999)}"}),
            )
            items.append(AssistantToolCalls(text=None, tool_calls=(call,)))
            items.append(ToolResults(results=(ToolResultMessage(
                tool_call_id=call.id, tool_name=call.name,
                content=f'{{"status": "{rng.choice(("shipped", "refunded", "held"))}", '
                f'"items": {rng.randint(1, 6)}, "carrier": "DHL"}}',
            ),)))
        items.append(ChatMessage.assistant(
            f"I am sorry about the {topic}. " + _words(rng, rng.randint(40, 160))
        ))
    return items


def restored_session(rng: random.Random, turns: int) -> list[ConversationMessage]:
    """A coding session that was trimmed earlier and restored: the breadcrumb follows the
    system row (its slot is named by the session's `crumb_present` flag)."""
    coding = coding_session(rng, turns)
    return [coding[0], ChatMessage.user(BREADCRUMB), *coding[1:]]


_STEPS = (
    "Now do the same for the discount rules.", "Run the tests again.", "Looks good, continue.",
    "Also check the serializer.", "Undo that last change, it broke the cart.",
    "Rename the helper to round_money.", "Add a type hint there.", "What about the fee?",
    "Fix the lint warning in views.py.", "Commit that and move on to the next failure.",
)


def _short_round(rng: random.Random, turn: int, step: int) -> tuple[ToolCall, str]:
    """A small tool round: a few lines of grep, a short file excerpt, a test summary or
    a patch."""
    call_id = f"call_{turn}_{step}"
    kind = rng.choice(("run_tests", "read_file", "grep", "apply_patch", "apply_patch"))
    path = rng.choice(_FILES)
    if kind == "run_tests":
        failing = rng.randint(0, 2)
        lines = [f"collected {rng.randint(12, 60)} items"]
        lines += [f"FAILED tests/test_checkout.py::test_total_case_{n} - AssertionError"
                  for n in range(failing)]
        lines.append(f"===== {failing} failed, {rng.randint(12, 60)} passed "
                     f"in {rng.uniform(0.5, 9):.2f}s =====")
        output = "\n".join(lines)
        arguments = _args({"path": "tests/"})
    elif kind == "read_file":
        start = rng.randint(1, 300)
        output = "\n".join(
            f"{start + n}: return (amount * rate).quantize(Decimal('0.01'))  # rule "
            f"{rng.randint(1, 40)}" for n in range(rng.randint(3, 12))
        )
        arguments = _args({"path": path, "lines": f"{start}-{start + 12}"})
    elif kind == "grep":
        word = rng.choice(("checkout_total", "OrderTotal", "quantize", "TAX_RATE"))
        output = "\n".join(
            f"{rng.choice(_FILES)}:{rng.randint(1, 500)}: total = {word}(cart)"
            for _ in range(rng.randint(2, 8))
        )
        arguments = _args({"pattern": word})
    else:
        line = rng.randint(1, 90)
        arguments = _args({"path": path, "diff": f"@@ -{line},3 +{line},3 @@"})
        output = "patch applied"
    return ToolCall(id=call_id, name=kind, arguments=arguments), output


def long_coding_session(rng: random.Random, turns: int) -> list[ConversationMessage]:
    """A coding agent of many short turns: each a short instruction, one or two small
    tool rounds and a one-line answer (a few hundred tokens a turn)."""
    items: list[ConversationMessage] = [ChatMessage.system(
        "You are Codey, a coding agent in the repository /home/ana/shop (a Django web shop). "
        "Use the tools before you answer; keep answers short and name the files you changed."
    )]
    for turn in range(turns):
        first = turn == 0 or rng.random() < 0.1
        items.append(ChatMessage.user(rng.choice(_TASKS if first else _STEPS)))
        for step in range(rng.randint(1, 2)):
            call, output = _short_round(rng, turn, step)
            items.append(AssistantToolCalls(text=None, tool_calls=(call,)))
            items.append(ToolResults(results=(
                ToolResultMessage(tool_call_id=call.id, content=output, tool_name=call.name),
            )))
        items.append(ChatMessage.assistant(
            f"Done: {rng.choice(_FILES)} updated, {rng.randint(0, 3)} tests still failing."
        ))
    return items


def generate_long(seed: int, turns: int) -> list[ConversationMessage]:
    """One long coding session (`long_coding_session`), the same for the same seed."""
    return long_coding_session(random.Random(f"long-coding:{seed}"), turns)


GENERATORS: dict[Kind, Callable[[random.Random, int], list[ConversationMessage]]] = {
    "coding": coding_session,
    "research": research_session,
    "support": support_session,
    "restored": restored_session,
}


def generate(kind: Kind, seed: int, turns: int) -> list[ConversationMessage]:
    """One session of `kind`, the same for the same seed."""
    return GENERATORS[kind](random.Random(f"{kind}:{seed}"), turns)
