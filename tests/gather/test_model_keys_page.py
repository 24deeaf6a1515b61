"""Settings, Model keys (/settings/model-keys/): store an OpenAI or an
Anthropic key or both, pick the model and the default, replace and delete
(with a confirmation); only the last four characters are ever shown, and a
key no configured encryption key reads is shown as unreadable, never a 500."""

from __future__ import annotations

import pytest
from cryptography.fernet import Fernet
from django.urls import reverse

from gather import selectors, services
from gather.models import ModelKey
from tests.harness.api import sign_in

pytestmark = pytest.mark.django_db

URL = "/settings/model-keys/"
OPENAI_KEY = "sk-proj-page-openai-secretpart-AB12"
ANTHROPIC_KEY = "sk-ant-page-anthropic-secretpart-CD34"


@pytest.fixture
def signed_in(client, assigner):
    sign_in(client, assigner)  # a fresh sign-in, as storing a key needs
    return client


def test_the_page_is_named_model_keys_and_needs_a_sign_in(client):
    assert reverse("model_keys") == URL
    response = client.get(URL)
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_settings_links_to_the_page(signed_in):
    page = signed_in.get("/settings/").content.decode()
    assert f'href="{URL}"' in page and "Not built yet" not in page


def test_storing_both_keys_shows_only_their_last_four(signed_in, assigner, settings):
    settings.GATHER_DEFAULT_MODELS = {"openai": "small-openai", "anthropic": "small-anthropic"}
    first = signed_in.post(URL, {"provider": "openai", "key": OPENAI_KEY, "model": ""})
    second = signed_in.post(
        URL, {"provider": "anthropic", "key": ANTHROPIC_KEY, "model": "claude-chosen"}
    )
    assert first.status_code == second.status_code == 302

    page = signed_in.get(URL).content.decode()
    assert "…AB12" in page and "…CD34" in page
    for secret in (OPENAI_KEY, ANTHROPIC_KEY, "secretpart", "sk-proj", "sk-ant"):
        assert secret not in page
    assert "small-openai" in page and "claude-chosen" in page
    stored = {key.provider: key for key in ModelKey.objects.filter(user=assigner)}
    assert stored["openai"].key == OPENAI_KEY
    assert (stored["anthropic"].is_default, stored["openai"].is_default) == (True, False)


def test_the_page_requires_csrf(client, assigner):
    from django.test import Client

    strict = Client(enforce_csrf_checks=True)
    strict.force_login(assigner)
    response = strict.post(URL, {"provider": "openai", "key": OPENAI_KEY})
    assert response.status_code == 403
    assert not ModelKey.objects.exists()


def test_storing_a_key_after_an_old_sign_in_asks_for_the_password_again(client, assigner):
    client.force_login(assigner)  # no sign-in recorded: as old as can be
    asked = client.get(URL)  # before the form is shown
    assert asked.status_code == 302
    assert asked["Location"].startswith("/accounts/reauthenticate/")

    response = client.post(URL, {"provider": "openai", "key": OPENAI_KEY})

    assert response.status_code == 302
    assert response["Location"] == asked["Location"]  # refused, back to the form after
    assert not ModelKey.objects.exists()


def test_a_refused_form_never_renders_the_key_back(signed_in):
    response = signed_in.post(URL, {"provider": "mistral", "key": OPENAI_KEY})
    assert response.status_code == 400
    assert OPENAI_KEY not in response.content.decode()
    response = signed_in.post(URL, {"provider": "openai", "key": "has a space AB12"})
    assert response.status_code == 400
    assert "has a space" not in response.content.decode()
    assert not ModelKey.objects.exists()


def test_replacing_a_key_and_switching_the_default(signed_in, assigner):
    signed_in.post(URL, {"provider": "openai", "key": OPENAI_KEY})
    signed_in.post(URL, {"provider": "anthropic", "key": ANTHROPIC_KEY})
    signed_in.post(URL, {"provider": "openai", "key": "sk-replaced-EF56"})

    openai = ModelKey.objects.get(user=assigner, provider="openai")
    assert (openai.key, openai.last4, openai.is_default) == ("sk-replaced-EF56", "EF56", True)

    response = signed_in.post(reverse("model_key_default", args=["anthropic"]))
    assert response.status_code == 302
    assert selectors.model_key_for_gather(user=assigner).provider == "anthropic"

    response = signed_in.post(
        reverse("model_key_model", args=["openai"]), {"openai-model": "gpt-other"}
    )
    assert response.status_code == 302
    assert ModelKey.objects.get(user=assigner, provider="openai").model == "gpt-other"


def test_delete_asks_for_confirmation_then_deletes(signed_in, assigner):
    services.model_key_set(user=assigner, provider="openai", key=OPENAI_KEY)
    delete_url = reverse("model_key_delete", args=["openai"])

    confirm = signed_in.get(delete_url)
    assert confirm.status_code == 200
    page = confirm.content.decode()
    assert "…AB12" in page and OPENAI_KEY not in page and 'method="post"' in page
    assert ModelKey.objects.filter(user=assigner).exists()

    assert signed_in.post(delete_url).status_code == 302
    assert not ModelKey.objects.filter(user=assigner).exists()
    assert signed_in.get(delete_url).status_code == 404


def test_no_one_touches_another_persons_keys(signed_in, assignee):
    services.model_key_set(user=assignee, provider="openai", key=OPENAI_KEY)

    assert signed_in.get(reverse("model_key_delete", args=["openai"])).status_code == 404
    signed_in.post(reverse("model_key_delete", args=["openai"]))
    assert signed_in.post(reverse("model_key_default", args=["openai"])).status_code == 404
    assert "AB12" not in signed_in.get(URL).content.decode()
    assert ModelKey.objects.filter(user=assignee).exists()


def test_an_unreadable_key_is_shown_as_such_and_asks_to_be_entered_again(
    signed_in, assigner, settings
):
    settings.FIELD_ENCRYPTION_KEYS = [Fernet.generate_key().decode()]
    services.model_key_set(user=assigner, provider="openai", key=OPENAI_KEY)
    settings.FIELD_ENCRYPTION_KEYS = [Fernet.generate_key().decode()]

    response = signed_in.get(URL)
    assert response.status_code == 200
    page = response.content.decode()
    assert "Unreadable" in page and "enter it again" in page
    assert signed_in.get(reverse("model_key_delete", args=["openai"])).status_code == 200
    assert selectors.model_key_for_gather(user=assigner) is None

    signed_in.post(URL, {"provider": "openai", "key": "sk-entered-again-GH78"})
    page = signed_in.get(URL).content.decode()
    assert "Unreadable" not in page and "…GH78" in page
    assert selectors.model_key_for_gather(user=assigner).key == "sk-entered-again-GH78"
