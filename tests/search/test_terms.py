"""Search terms for English, Chinese and mixed text."""

from __future__ import annotations

import time

from memfold.search._terms import terms


def test_english_words_are_case_folded_without_function_words_or_plurals() -> None:
    assert terms("What are the best Dishes for my Dogs?") == ("best", "dish", "dog")


def test_plural_endings_are_removed_but_not_from_short_or_ss_words() -> None:
    assert terms("stories tomatoes shoes glass bus is") == (
        "story",
        "tomato",
        "shoe",
        "glass",
        "bus",
    )


def test_chinese_becomes_characters_and_bigrams_without_function_characters() -> None:
    assert terms("我的猫叫年糕") == ("猫", "叫", "年", "糕", "我的", "的猫", "猫叫", "叫年", "年糕")


def test_mixed_chinese_and_english_keep_both_kinds_of_terms() -> None:
    assert terms("用Python写爬虫") == ("用", "python", "写", "爬", "虫", "写爬", "爬虫")


def test_full_width_letters_and_digits_are_normalised() -> None:
    assert terms("ＰｏｓｔｇｒｅＳＱＬ １５") == ("postgresql", "15")


def test_punctuation_and_underscores_split_words() -> None:
    assert terms("gRPC/REST, snake_case!") == ("grpc", "rest", "snake", "case")


def test_empty_and_punctuation_only_text_have_no_terms() -> None:
    assert terms("") == ()
    assert terms("？！…  ,.") == ()


def test_terms_of_a_huge_hostile_text_take_linear_time() -> None:
    hostile = ("a_" * 50_000) + ("猫" * 50_000) + ("x1." * 30_000)
    started = time.perf_counter()
    found = terms(hostile)
    assert time.perf_counter() - started < 5.0
    assert "猫猫" in found
