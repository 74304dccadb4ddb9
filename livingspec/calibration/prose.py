"""Human-language calibration samples: English and Spanish prose, CJK text, emoji-heavy chat.

Written for histtrim (no downloaded data set, no copied text): small grammars over everyday
vocabulary, expanded by a seeded `random.Random`, so every sample is the same on every run."""

from __future__ import annotations

import random

_EN_SUBJECTS = (
    "The new release", "Our support team", "The checkout page", "This week's report",
    "The database migration", "Ana", "The marketing plan", "A customer from Lisbon",
    "The nightly backup", "Most of the tests", "The payment provider", "The design review",
    "Every invoice", "The mobile app", "Our warehouse in Porto", "The onboarding guide",
)
_EN_VERBS = (
    "fixed", "broke", "slowed down", "improved", "replaced", "described", "delayed",
    "simplified", "doubled", "reviewed", "explained", "moved", "rewrote", "measured",
)
_EN_OBJECTS = (
    "the login flow", "the refund rules", "two of our biggest orders", "the shipping costs",
    "the search results", "the cache settings", "a long list of complaints",
    "the way we count taxes", "the product photos", "our weekly planning meeting",
    "the error messages", "the price of the annual plan", "the summer schedule",
)
_EN_TAILS = (
    "before the deadline", "without telling anyone", "after a long discussion",
    "because the old version kept timing out", "for customers outside the EU",
    "in less than an hour", "so that new staff can follow it", "during the holiday rush",
    "which surprised everyone", "and nobody noticed until Monday", "at the last minute",
)
_EN_OPENERS = (
    "Honestly,", "As far as I can tell,", "In short,", "Yesterday", "To be fair,",
    "On the other hand,", "Luckily,", "For what it's worth,", "Later that day",
)
_EN_ASIDES = (
    "I think we should write this down somewhere.",
    "Could you check whether that matches what you saw?",
    "Let me know if anything is unclear.",
    "We can talk about it tomorrow morning.",
    "It's not perfect, but it works for now.",
    "That's roughly 12% more than last quarter.",
    "Please don't merge anything until the numbers are back.",
)

_ES_SUBJECTS = (
    "La nueva versión", "El equipo de soporte", "La página de pago", "El informe semanal",
    "La migración de la base de datos", "Ana", "El plan de marketing", "Un cliente de Sevilla",
    "La copia de seguridad nocturna", "Casi todas las pruebas", "El proveedor de pagos",
    "La reunión de diseño", "Cada factura", "La aplicación móvil", "Nuestro almacén de Bilbao",
)
_ES_VERBS = (
    "arregló", "rompió", "ralentizó", "mejoró", "sustituyó", "describió", "retrasó",
    "simplificó", "duplicó", "revisó", "explicó", "trasladó", "reescribió", "midió",
)
_ES_OBJECTS = (
    "el inicio de sesión", "las reglas de devolución", "dos de los pedidos más grandes",
    "los gastos de envío", "los resultados de búsqueda", "la configuración de la caché",
    "una larga lista de quejas", "la forma de calcular los impuestos", "las fotos del catálogo",
    "la reunión de planificación", "los mensajes de error", "el precio del plan anual",
)
_ES_TAILS = (
    "antes de la fecha límite", "sin avisar a nadie", "después de una larga discusión",
    "porque la versión anterior fallaba a menudo", "para los clientes de fuera de la UE",
    "en menos de una hora", "para que el personal nuevo pueda seguirlo",
    "durante la campaña de Navidad", "lo que sorprendió a todos", "y nadie se dio cuenta",
)
_ES_OPENERS = (
    "Sinceramente,", "Por lo que sé,", "En resumen,", "Ayer", "Para ser justos,",
    "Por otro lado,", "Por suerte,", "Además,", "Esa misma tarde",
)
_ES_ASIDES = (
    "¿Podrías comprobar si coincide con lo que viste?",
    "Avísame si algo no está claro.",
    "Lo hablamos mañana por la mañana, ¿vale?",
    "No es perfecto, pero de momento funciona.",
    "Eso es aproximadamente un 12 % más que el trimestre pasado.",
    "¡Por favor, no fusionéis nada hasta que tengamos los números!",
)

_ZH = (
    "我们的新版本已经上线了", "客户反馈说结账页面很慢", "请在周五之前完成代码审查",
    "数据库迁移比预计多用了两个小时", "这个问题主要出现在移动端", "测试全部通过了",
    "运费的计算方式需要重新讨论", "明天上午十点开会", "请把日志发给我看看",
    "退款规则对欧盟以外的客户不同", "我觉得这个方案更简单", "库存数据每天晚上同步一次",
)
_JA = (
    "新しいバージョンをリリースしました", "お客様から決済ページが遅いという連絡がありました",
    "金曜日までにコードレビューをお願いします", "データベースの移行に予定より二時間かかりました",
    "この問題は主にスマートフォンで発生します", "テストはすべて成功しました",
    "送料の計算方法をもう一度確認してください", "明日の午前十時に打ち合わせがあります",
    "ログを送っていただけますか", "在庫データは毎晩同期されます",
)
_KO = (
    "새 버전을 배포했습니다", "고객이 결제 페이지가 느리다고 알려 주었습니다",
    "금요일까지 코드 리뷰를 부탁드립니다", "데이터베이스 이전에 두 시간이 더 걸렸습니다",
    "이 문제는 주로 모바일에서 발생합니다", "모든 테스트가 통과했습니다",
    "배송비 계산 방식을 다시 확인해 주세요", "내일 오전 열 시에 회의가 있습니다",
)
_CJK_PUNCT = {  # full-width comma, exclamation and question marks, escaped for the linter
    "zh": ("。", "\uff0c", "\uff01", "\uff1f"),
    "ja": ("。", "、", "\uff01"),
    "ko": (". ", ", ", "! "),
}

_EMOJI = (
    "😀", "😂", "🥲", "😍", "🤔", "😅", "🙏", "👍", "👍🏽", "👏🏻", "🔥", "🚀", "✅", "❌", "⚠️",
    "🎉", "🥳", "💡", "🐛", "📦", "📋", "💬", "❤️", "💯", "🤷‍♀️", "👨‍💻", "👩🏾‍🔬", "🇪🇸", "🇯🇵",
    "☕", "🍕", "🌧️", "😴", "🙈", "✨", "📈", "📉", "🛒", "💸", "⏰",
)
_CHAT_LINES = (
    "omg it finally works", "anyone around?", "brb coffee", "lol same", "shipping it now",
    "who broke main again", "nice!!", "can't reproduce on my machine", "lunch?",
    "ok ok I'll fix it", "qué tal el finde", "me voy ya", "gracias!!", "see you tomorrow",
    "that meeting could have been an email", "prices are up again", "happy friday",
)


def _sentence(
    rng: random.Random, parts: tuple[tuple[str, ...], ...], openers: tuple[str, ...]
) -> str:
    subject, verb, obj, tail = (rng.choice(p) for p in parts)
    text = f"{subject} {verb} {obj} {tail}."
    if rng.random() < 0.3:
        opener = rng.choice(openers)
        text = f"{opener} {text[0].lower()}{text[1:]}" if subject != "Ana" else f"{opener} {text}"
    return text


def _prose(
    rng: random.Random,
    parts: tuple[tuple[str, ...], ...],
    openers: tuple[str, ...],
    asides: tuple[str, ...],
) -> str:
    """One to five paragraphs of one language's sentences, some with an aside."""
    paragraphs = []
    for _ in range(rng.choice((1, 1, 2, 3, 5))):
        sentences = [_sentence(rng, parts, openers) for _ in range(rng.randint(2, 6))]
        if rng.random() < 0.5:
            sentences.insert(rng.randint(0, len(sentences)), rng.choice(asides))
        paragraphs.append(" ".join(sentences))
    return "\n\n".join(paragraphs)


def english(rng: random.Random) -> str:
    """Everyday English about a small shop's work: one to five paragraphs."""
    return _prose(rng, (_EN_SUBJECTS, _EN_VERBS, _EN_OBJECTS, _EN_TAILS), _EN_OPENERS, _EN_ASIDES)


def spanish(rng: random.Random) -> str:
    """The same kind of prose in Spanish (accents, inverted marks)."""
    return _prose(rng, (_ES_SUBJECTS, _ES_VERBS, _ES_OBJECTS, _ES_TAILS), _ES_OPENERS, _ES_ASIDES)


def cjk(rng: random.Random) -> str:
    """Chinese, Japanese or Korean (in turn), sometimes with a file name or number inside."""
    language = rng.choice(("zh", "zh", "ja", "ko"))
    phrases = {"zh": _ZH, "ja": _JA, "ko": _KO}[language]
    punct = _CJK_PUNCT[language]
    out = []
    for _ in range(rng.randint(2, 40)):
        phrase = rng.choice(phrases)
        if rng.random() < 0.15:
            phrase += f" ({rng.choice(('checkout.py', 'v2.3.1', 'API', 'CSV'))})"
        out.append(phrase + rng.choice(punct))
        if rng.random() < 0.1:
            out.append("\n")
    return "".join(out).strip()


def emoji_chat(rng: random.Random) -> str:
    """Short chat lines, each with one to six emoji (ZWJ sequences, skin tones, flags)."""
    lines = []
    for _ in range(rng.randint(1, 25)):
        line = rng.choice(_CHAT_LINES) if rng.random() < 0.8 else ""
        emoji = "".join(rng.choice(_EMOJI) for _ in range(rng.randint(1, 6)))
        lines.append(f"{line} {emoji}".strip())
    return "\n".join(lines)
