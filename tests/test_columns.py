"""Text shaped for a column by display width (`histtrim.display.columns`): a CJK character
or an emoji takes two columns, so a CJK line is cut, padded and broken where it is seen."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from histtrim.display.columns import COLUMNS, HANG, display_width, fold, pad, truncate
from histtrim.display.tables import text_table
from histtrim.messages import ChatMessage
from livingspec.plotting.tables import row_summary

CJK = "新しいバージョンをリリースしました。ログを送っていただけますか"


def test_wide_characters_take_two_columns() -> None:
    assert display_width("abc") == 3
    assert display_width("新しい") == 6
    assert display_width("😀") == 2
    assert display_width("⚠\ufe0f") == 2  # emoji presentation selector
    assert display_width("e\u0301") == 1  # a combining accent takes none
    assert display_width("a\u200db") == 2


def test_truncate_cuts_by_columns_not_characters() -> None:
    cut = truncate(CJK, 21)
    assert cut.endswith("…") and display_width(cut) <= 21
    assert display_width(cut) >= 20  # as much as fits
    assert truncate("short", 21) == "short"


def test_a_table_of_cjk_text_stays_aligned() -> None:
    table = text_table(["name", "n"], [["新しい", 1], ["ab", 22]])
    lines = str(table).splitlines()
    assert len({display_width(line) for line in lines}) == 1
    assert pad("新", 4) == "新  " and pad("7", 3, right=True) == "  7"


def test_a_row_summary_of_cjk_text_fits_its_width() -> None:
    summary = row_summary(ChatMessage(role="user", content=CJK * 3), width=60)
    assert display_width(summary) <= 60 and summary.endswith("…")


def test_fold_breaks_at_spaces_with_a_visible_hanging_indent() -> None:
    line = "  " + " ".join(f"word{n}" for n in range(40))
    folded = fold(line, 40).split("\n")
    assert len(folded) > 1
    assert all(display_width(part) <= 40 for part in folded)
    assert all(part.startswith("  " + HANG) for part in folded[1:])
    assert " ".join(p.removeprefix("  " + HANG).strip() for p in folded) == line.strip()


@given(st.text(alphabet=st.sampled_from(["a", " ", "新", "😀", "\u0301", "x", "\n"]),
               max_size=400), st.integers(min_value=12, max_value=COLUMNS))
def test_fold_keeps_every_character_and_fits_the_column(text: str, width: int) -> None:
    folded = fold(text, width)
    assert all(display_width(line) <= width for line in folded.split("\n"))
    rejoined = folded.replace(HANG.strip(), "").replace("\n", "").replace(" ", "")
    assert rejoined == text.replace("\n", "").replace(" ", "")
