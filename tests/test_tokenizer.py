"""A folder's tokenizer, loaded once per process while its files are unchanged."""

from __future__ import annotations

import os
import shutil

import pytest

from kit.checkpoint.tokenizer import load_tokenizer
from kit.errors import KitError
from tests.conftest import TARGET

FILES = ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja")


@pytest.fixture
def folder(tmp_path):
    for name in FILES:
        shutil.copy(TARGET / name, tmp_path / name)
    return tmp_path


def test_an_unchanged_folder_gives_the_tokenizer_already_loaded(folder):
    first = load_tokenizer(folder)
    assert load_tokenizer(str(folder)) is first
    assert first.chat_template and first.encode("hello")


def test_a_rewritten_file_loads_the_tokenizer_anew(folder):
    first = load_tokenizer(folder)
    template = folder / "chat_template.jinja"
    template.write_text("{{ messages[0]['content'] }}")
    os.utime(template, ns=(1, 1))  # another size and mtime, whatever the clock's resolution
    again = load_tokenizer(folder)
    assert again is not first and again.chat_template == "{{ messages[0]['content'] }}"


def test_a_folder_that_is_no_tokenizer_is_one_clear_error(tmp_path):
    (tmp_path / "tokenizer.json").write_text("{not json")
    with pytest.raises(KitError, match="not a tokenizer folder") as e:
        load_tokenizer(tmp_path)
    assert str(tmp_path) in str(e.value)
    with pytest.raises(KitError, match="not a tokenizer folder"):
        load_tokenizer(tmp_path / "missing")
