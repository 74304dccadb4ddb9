"""The calibration of EST-1 (notebook 11): the generated corpus, the saved counts, and the
arithmetic the chapter draws from them for CAP-2 and RUN-2. The saved counts are re-computed
and compared exactly where the extra `histtrim[tokenizers]` is installed."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from histtrim import estimate_history_tokens, text_tokens
from histtrim.adapters.tokenizers import count_text, exact_counter, tokenizers_available
from histtrim.estimate import estimate_image_tokens, utf8_len
from livingspec.calibration.corpus import CLASSES, SAMPLES_PER_CLASS, samples, sessions
from livingspec.calibration.measure import (
    MESSAGES_CSV,
    SESSIONS_CSV,
    TOKENIZERS,
    RatioSummary,
    load_messages,
    load_sessions,
    measure_messages,
    measure_sessions,
    messages_csv,
    overshoot,
    percentile,
    retries_to_fit,
    sessions_csv,
    summarize_messages,
    summarize_sessions,
)

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"

needs_extra = pytest.mark.skipif(
    not tokenizers_available(), reason="needs the optional extra histtrim[tokenizers]"
)


def test_the_corpus_is_deterministic_varied_and_large_enough() -> None:
    assert len(CLASSES) == 8
    for content_class in CLASSES:
        texts = samples(content_class)
        assert texts == samples(content_class)
        assert len(texts) == SAMPLES_PER_CLASS >= 100
        assert len(set(texts)) >= 0.95 * len(texts), content_class
        sizes = sorted(utf8_len(t) for t in texts)
        assert sizes[0] >= 10 and sizes[-1] >= 4 * sizes[len(sizes) // 2] // 3, content_class


def test_the_saved_counts_belong_to_this_corpus() -> None:
    """Without the extra: every saved sample's bytes and EST-1 estimate are re-computed from
    the regenerated corpus, and every saved session's rows and estimate from its rows."""
    saved = load_messages(RESULTS / MESSAGES_CSV)
    expected = [
        (c, i, utf8_len(text), text_tokens(text))
        for c in CLASSES for i, text in enumerate(samples(c))
    ]
    assert [(r.content_class, r.index, r.utf8_bytes, r.estimate) for r in saved] == expected
    saved_sessions = load_sessions(RESULTS / SESSIONS_CSV)
    recomputed = [
        (name, len(rows), estimate_history_tokens(rows) - estimate_image_tokens(rows))
        for name, rows in sessions(ROOT)
    ]
    assert [(s.name, s.rows, s.estimate) for s in saved_sessions] == recomputed
    assert len(saved_sessions) >= 100
    assert all(min(r.real.values()) > 0 for r in saved)


@needs_extra
def test_the_saved_counts_equal_a_fresh_measurement() -> None:
    """With the extra: the CSV files the chapter reads are exactly what the tokenizers give now
    (run `python bench/calibrate.py` after changing the corpus)."""
    counts = {t: (lambda text, t=t: count_text(text, t)) for t in TOKENIZERS}
    assert messages_csv(measure_messages(counts)) == (RESULTS / MESSAGES_CSV).read_text("utf-8")
    fresh = measure_sessions({t: exact_counter(t) for t in TOKENIZERS}, ROOT)
    assert sessions_csv(fresh) == (RESULTS / SESSIONS_CSV).read_text("utf-8")


def test_percentiles_interpolate_between_ranks() -> None:
    values = [4.0, 1.0, 3.0, 2.0, 5.0]
    assert percentile(values, 0) == 1.0
    assert percentile(values, 50) == 3.0
    assert percentile(values, 100) == 5.0
    assert percentile(values, 5) == pytest.approx(1.2)
    assert percentile([7.0], 95) == 7.0
    with pytest.raises(ValueError, match="values"):
        percentile([], 50)


def test_summaries_per_class_in_order() -> None:
    saved = load_messages(RESULTS / MESSAGES_CSV)
    for tokenizer in TOKENIZERS:
        summaries = summarize_messages(saved, tokenizer)
        assert [s.group for s in summaries] == list(CLASSES)
        for s in summaries:
            assert s.n == SAMPLES_PER_CLASS
            assert s.worst <= s.p5 <= s.median <= s.p95 <= s.highest
            assert 0 <= s.under <= 1
    summary = RatioSummary.of("g", "t", [0.5, 1.0, 2.0])
    assert (summary.median, summary.worst, summary.under) == (1.0, 0.5, 1 / 3)
    sess = summarize_sessions(load_sessions(RESULTS / SESSIONS_CSV), "o200k_base")
    assert sess.group == "whole sessions" and sess.n >= 100


def test_cap2_overshoot_of_an_under_count() -> None:
    """CAP-2 admits estimate <= window: with estimate / real = r < 1, the real request can be
    window / r, that is 1/r - 1 of the window over it; an over-count lets nothing through."""
    assert overshoot(0.5) == pytest.approx(1.0)
    assert overshoot(0.8) == pytest.approx(0.25)
    assert overshoot(1.0) == 0.0
    assert overshoot(1.3) == 0.0


def test_run2_retries_needed_for_an_under_count() -> None:
    """RUN-2 trims to 2/3 of the estimate per retry: a request estimated at the window with
    estimate / real = r fits after the smallest k with (2/3)^k <= r."""
    assert retries_to_fit(1.0) == 0
    assert retries_to_fit(1.2) == 0
    assert retries_to_fit(0.9) == 1
    assert retries_to_fit(2 / 3) == 1
    assert retries_to_fit(0.6) == 2
    assert retries_to_fit(0.37) == math.ceil(math.log(0.37) / math.log(2 / 3))
    assert retries_to_fit(0.66, fill=0.97) == 1  # a request a little under the window
    assert retries_to_fit(0.99, fill=0.97) == 0
