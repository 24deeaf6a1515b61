"""config.env: typed readers that fail loudly, naming the variable."""

from __future__ import annotations

import pytest

from config.env import ImproperlyConfiguredEnv, env_bool, env_int, env_list, env_str


@pytest.mark.parametrize("raw", ["1", "true", "TRUE", " yes ", "on"])
def test_env_bool_reads_true(monkeypatch, raw):
    monkeypatch.setenv("FLAG", raw)

    assert env_bool("FLAG") is True


@pytest.mark.parametrize("raw", ["0", "false", "No", "off", ""])
def test_env_bool_reads_false(monkeypatch, raw):
    monkeypatch.setenv("FLAG", raw)

    assert env_bool("FLAG", default=True) is False


def test_env_bool_uses_the_default_when_unset(monkeypatch):
    monkeypatch.delenv("FLAG", raising=False)

    assert env_bool("FLAG", default=True) is True
    assert env_bool("FLAG") is False


@pytest.mark.parametrize("raw", ["maybe", "2", "yess", "t"])
def test_env_bool_refuses_anything_else_naming_the_variable(monkeypatch, raw):
    monkeypatch.setenv("FLAG", raw)

    with pytest.raises(ImproperlyConfiguredEnv, match=rf"FLAG must be a boolean.*{raw!r}"):
        env_bool("FLAG")


def test_env_int_reads_an_integer_or_the_default(monkeypatch):
    monkeypatch.setenv("COUNT", " 42 ")
    assert env_int("COUNT", 7) == 42
    monkeypatch.setenv("COUNT", "")
    assert env_int("COUNT", 7) == 7
    monkeypatch.delenv("COUNT")
    assert env_int("COUNT", 7) == 7


@pytest.mark.parametrize("raw", ["forty", "4.2", "1e3", "10s"])
def test_env_int_refuses_a_non_integer_naming_the_variable(monkeypatch, raw):
    monkeypatch.setenv("COUNT", raw)

    with pytest.raises(ImproperlyConfiguredEnv, match=rf"COUNT must be an integer.*{raw!r}"):
        env_int("COUNT", 7)


def test_env_list_splits_on_commas_and_drops_blanks(monkeypatch):
    monkeypatch.setenv("HOSTS", " a.example , ,b.example,")

    assert env_list("HOSTS") == ["a.example", "b.example"]


def test_env_list_default_is_a_copy(monkeypatch):
    monkeypatch.delenv("HOSTS", raising=False)
    default = ["x"]

    value = env_list("HOSTS", default)
    value.append("y")

    assert default == ["x"]


def test_env_str_default(monkeypatch):
    monkeypatch.delenv("NAME_X", raising=False)

    assert env_str("NAME_X", "fallback") == "fallback"
