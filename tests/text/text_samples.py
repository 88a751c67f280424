"""Varied lines for tokenizer tests: every script and normalization case the ALBERT tokenizer must handle."""

import random

FRAGMENTS = (
    "The quick brown fox",
    "jumps over the lazy dog.",
    "Python's str.lower()",
    "``quoted''",
    "it''s",
    "1,000,000",
    "3,",
    "12,5",
    "in 1990, the",
    "²³,",
    "٣,",
    "v1.2.3,",
    "$4,50",
    "100,000,000,000",
    "café",
    "naïve",
    "Ångström",
    "résumé",
    "e\u0301te\u0301",
    "Crème Brûlée",
    "Ça va?",
    "Zoë",
    "ＡＢＣ１２３",
    "ｶﾀｶﾅ",
    "ﬁnance",
    "Ⅻ",
    "①②",
    "x²",
    "H₂O",
    "℃",
    "™",
    "中文字符",
    "日本語のテキスト",
    "한국어",
    "漢字,",
    "「括弧」",
    "😀",
    "👍🏽",
    "🇩🇪",
    "👩‍👩‍👧",
    "❤️",
    "Σίσυφος",
    "ΟΔΟΣ",
    "ὀδυσσεύς",
    "Москва",
    "ЁЛКА",
    "Straße",
    "STRASSE",
    "İstanbul",
    "ǅ",
    "\t",
    "\u3000",
    "\u00a0",
    "  ",
    "\u2003",
    "\u2028",
    "\x1c",
    "\x85",
    "\u200b",
    "\ufeff",
    "\x01",
    "\x07",
    "\x1b",
    "\x7f",
    "\x00",
    "\ud7ff",
    "\U0010fffd",
    "\ue000",
    ",",
    ",,",
    "1,",
    ",1",
    "▁",
    "▁1,",
    "[CLS]",
    "[MASK]",
    "<unk>",
    "<pad>",
)


def varied_lines(count, seed=0):
    """count lines mixing FRAGMENTS with random separators; every 50th line is very long."""
    rng = random.Random(seed)
    lines = []
    for index in range(count):
        size = 400 if index % 50 == 49 else rng.randint(1, 12)
        parts = []
        for _ in range(size):
            parts.append(rng.choice(FRAGMENTS))
            parts.append(rng.choice((" ", "", "  ", "\t", ", ", " \u3000 ")))
        lines.append("".join(parts))
    return lines


# Sentences in scripts whose combining marks carry meaning, and in scripts that write words without spaces:
# what the keep_accents path must keep, character for character, in every tokenizer.
MARKED_LINES = (
    "Tiếng Việt có dấu: Chọn tệp mà bạn muốn mở.",
    "Nhấn nút Lưu để ghi lại các thay đổi, 1,000 lần.",
    "がぎぐげご ドイツ語のガイドをダウンロードしてください。",
    "変更を保存するには、ボタンをクリックします。",
    "हिन्दी भारत की एक प्रमुख भाषा है।",
    "क्या आप फ़ाइल खोलना चाहते हैं?",
    "ภาษาไทยไม่มีช่องว่างระหว่างคำ ผู้ใช้ต้องเลือกไฟล์",
    "한국어 문서를 저장하려면 버튼을 누르세요.",
    "اللغة العربية: اخْتَرِ المَلَفَّ الَّذِي تُرِيدُ فَتْحَهُ.",
    "עִבְרִית: בחר את הקובץ שברצונך לפתוח.",
    "中文文本没有空格，句子以句号结束。",
    "Größe, Übergröße und Maße: ÄÖÜ äöü ß.",
    "e\u0301 e\u0300 a\u0308 n\u0303 (combining) é è ä ñ (precomposed)",
)
