"""Marks the original's normalization drops, measured by script on real sentences of several languages, and
the rule that says when they carry meaning."""

import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from albert_tf.text import marks
from albert_tf.text.normalization import preprocess_text

SENTENCES = {
    "Japanese": "ドイツ語のガイドを読みます。 ファイルをダウンロードしてください。",
    "Vietnamese": "Tiếng Việt là ngôn ngữ chính thức của Việt Nam. Hãy chọn tệp mà bạn muốn mở.",
    "Hindi": "हिन्दी भारत की एक प्रमुख भाषा है। फ़ाइल खोलने के लिए मेनू से चुनें।",
    "Thai": "ภาษาไทยเป็นภาษาราชการของประเทศไทย คลิกที่ปุ่มเพื่อเปิดแฟ้ม ผู้ใช้ต้องเลือกตัวเลือก",
    "Arabic": "مُحَمَّد يَكْتُبُ الرِّسَالَة بِالْعَرَبِيَّة",
    "Hebrew": "עִבְרִית הִיא שָׂפָה רִשְׁמִית",
    "German": "Die Größe der Datei wählen Sie über das Menü.",
    "Korean": "한국어는 대한민국의 공용어입니다. 파일을 열려면 메뉴를 선택하십시오.",
    "Chinese": "中文是中华人民共和国的官方语言。 请从菜单中选择文件。",
}
# English documentation prose with two loanwords in 300 words: marks that carry no meaning here.
ENGLISH = (
    "The configuration file lists the packages the installer reads before it starts, and each "
    "package names the files it provides and the services it needs. "
) * 12 + "A café, a naïve résumé."


def test_the_marks_lost_are_counted_by_script_with_examples():
    found = {language: marks.measure([text]) for language, text in SENTENCES.items()}
    assert found["Japanese"]["KATAKANA"].examples[0] == (
        "ドイツ語のガイドを読みます。",
        "トイツ語のカイトを読みます。",
    )
    assert found["Vietnamese"]["LATIN"].examples[:2] == [("Tiếng", "Tieng"), ("Việt", "Viet")]
    assert found["Vietnamese"]["LATIN"].changed == 16 and found["Vietnamese"]["LATIN"].words == 17
    assert found["Hindi"]["DEVANAGARI"].examples[:2] == [("हिन्दी", "हिनदी"), ("प्रमुख", "परमुख")]
    assert found["Thai"]["THAI"].changed == 2 and found["Arabic"]["ARABIC"].changed == 4
    assert found["Hebrew"]["HEBREW"].changed == 4 and found["German"]["LATIN"].examples[0] == (
        "Größe",
        "Große",
    )
    # Hangul decomposes into letters, not marks; Han characters have none: nothing is lost.
    assert found["Korean"]["HANGUL"].changed == 0 and found["Chinese"]["CJK"].changed == 0


def test_marks_carry_meaning_where_a_language_is_written_with_them_not_in_loanwords():
    vietnamese = marks.measure([SENTENCES["Vietnamese"]] * 2 + [ENGLISH])
    assert [s.script for s in marks.meaningful(vietnamese)] == ["LATIN"]
    english = marks.measure([ENGLISH])
    assert english["LATIN"].changed == 3 and english["LATIN"].share < marks.MEANINGFUL_SHARE
    assert marks.meaningful(english) == []
    few = marks.measure([SENTENCES["Hindi"]])  # 3 words: too few to say
    assert few["DEVANAGARI"].share > 0.2 and marks.meaningful(few) == []
    assert (
        marks.meaningful(marks.measure([SENTENCES["Hindi"]] * 4))[0]
        .describe()
        .startswith("DEVANAGARI: 12 of 56 words (21.4%), e.g. हिन्दी → हिनदी, प्रमुख → परमुख, फ़ाइल → फाइल")
    )


def test_measuring_stops_at_the_words_asked_for():
    assert sum(s.words for s in marks.measure([ENGLISH] * 10, max_words=50).values()) == 50


# One word (no whitespace inside), without the quotes the normalization rewrites.
WORDS = st.text(
    alphabet=st.characters(exclude_categories=("Cs",), exclude_characters="`'"), min_size=1, max_size=12
).filter(lambda text: text.split() == [text])


@given(WORDS)
def test_a_word_loses_marks_exactly_when_the_normalization_drops_some(word):
    assert marks.stripped(word) == preprocess_text(word, lower=False)
    assert marks.loses_marks(word) == (marks.stripped(word) != unicodedata.normalize("NFKD", word))
