"""Token scopes and client networks (docs/api.md, "Token scopes and client
networks"): a call outside a token's scopes, or from an address outside its
networks, is `403 forbidden` naming the missing scope or the refused address,
judged right after the token (401) and before the rate limit (429) and the body
(400); it writes nothing and does not count as the token's use. The client's
address is taken as the trusted-proxy settings say. Tokens with the defaults,
and tokens minted before scopes existed, call both operations from anywhere."""

from __future__ import annotations

import io
import json
import re

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test.utils import CaptureQueriesContext

from audit.services import Actor
from commitments import services as commitment_services
from commitments.models import Commitment, Status
from integrations import services, tokens
from integrations.models import ApiToken
from tests.harness.api import (
    INBOX,
    SYNC,
    TOKENS_PAGE,
    assert_envelope,
    form_key,
    inbox_body,
    inbox_statements,
    mint_on_the_page,
    rows,
    sign_in,
    sync_statements,
    warm_caches,
)
from tests.harness.commitments import tracked_active
from tests.harness.migrations import latest, migrate, migrate_back

SYNC_BODY = {"externalSystem": "jira", "externalId": "OPS-7", "status": "Completed"}
OFFICE = "203.0.113.0/24"
OUTSIDE = "198.51.100.7"
PROXY = "10.0.0.2"


def limited(user, *, scopes=None, networks=(), name="Limited") -> str:
    return services.api_token_mint(user=user, name=name, scopes=scopes, networks=networks).plaintext


@pytest.fixture
def active(assigner, assignee) -> Commitment:
    """An Active commitment of the assigner's with the reference SYNC_BODY names."""
    return tracked_active(assigner, assignee, "OPS-7")


def post(client, path, body, token, *, REMOTE_ADDR: str = "127.0.0.1", **headers):
    """post_json from a client at REMOTE_ADDR (the peer address the server sees)."""
    raw = body if isinstance(body, str) else json.dumps(body)
    content_type = "text/plain" if isinstance(body, str) else "application/json"
    headers["Authorization"] = f"Bearer {token}"
    return client.post(
        path, data=raw, content_type=content_type, headers=headers, REMOTE_ADDR=REMOTE_ADDR
    )


def _token_updates(queries) -> list[str]:
    return [
        q["sql"]
        for q in queries
        if q["sql"].startswith("UPDATE") and "integrations_apitoken" in q["sql"]
    ]


def assert_refused(client, path, body, token, *, names: str, **headers) -> dict:
    """403 forbidden whose message names `names`; nothing written, not even the
    token's last use."""
    before = rows()
    with CaptureQueriesContext(connection) as queries:
        response = post(client, path, body, token, **headers)
    answer = assert_envelope(response, 403, "forbidden", details=False)
    assert names in answer["message"], answer["message"]
    assert rows() == before
    assert not _token_updates(queries)
    assert ApiToken.objects.get(digest=tokens.digest(token)).last_used_at is None
    return answer


# --- the defaults --------------------------------------------------------------------


def test_a_new_token_has_every_scope_and_no_network_limit(client, assigner, assignee, active):
    token = limited(assigner)
    stored = ApiToken.objects.get()
    assert (stored.scopes, stored.networks) == (["inbox", "sync", "read"], [])
    assert post(client, INBOX, inbox_body(), token, REMOTE_ADDR=OUTSIDE).status_code == 201
    response = post(client, SYNC, SYNC_BODY, token, REMOTE_ADDR="2001:db8::1")
    assert response.status_code == 200 and response.json()["changed"] is True
    read = client.get(
        f"/api/v1/commitments/{active.pk}",
        headers={"Authorization": f"Bearer {token}"},
        REMOTE_ADDR=OUTSIDE,
    )
    assert read.status_code == 200


BEFORE_SCOPES = [("integrations", "0005_token_expiry_and_unique_live_names")]


@pytest.mark.django_db(transaction=True)
def test_a_token_minted_before_scopes_existed_keeps_working(client, make_user):
    migrate_back(BEFORE_SCOPES)
    try:
        old = MigrationExecutor(connection).loader.project_state(BEFORE_SCOPES).apps
        owner = old.get_model("accounts", "User").objects.create(email="old@example.com")
        plaintext = tokens.generate()
        old.get_model("integrations", "ApiToken").objects.create(
            user=owner,
            name="From before",
            prefix=tokens.display_prefix(plaintext),
            digest=tokens.digest(plaintext),
        )
    finally:
        migrate(latest())
    token = ApiToken.objects.get(name="From before")
    # Both scopes of the time, and not `read`: migrating never widens a token.
    assert (token.scopes, token.networks) == (["inbox", "sync"], [])

    make_user("knight@example.com")
    body = inbox_body(assignerEmail="old@example.com", externalId="OLD-1")
    created = post(client, INBOX, body, plaintext, REMOTE_ADDR=OUTSIDE)
    assert created.status_code == 201, created.content
    commitment = Commitment.objects.get(pk=created.json()["id"])
    commitment_services.commitment_accept(
        actor=Actor.for_user(commitment.assignee), commitment_id=commitment.pk
    )
    sync = {"externalSystem": "jira", "externalId": "OLD-1", "status": "Completed"}
    assert post(client, SYNC, sync, plaintext).json()["status"] == "Completed"


# --- scopes ----------------------------------------------------------------------------


def test_a_token_without_the_inbox_scope_is_refused_on_the_inbox(client, assigner, assignee):
    token = limited(assigner, scopes=["sync"])
    answer = assert_refused(client, INBOX, inbox_body(), token, names="'inbox' scope")
    assert "its scopes: sync" in answer["message"]


def test_a_token_without_the_sync_scope_is_refused_on_sync(client, assigner, active):
    token = limited(assigner, scopes=["inbox"])
    assert_refused(client, SYNC, SYNC_BODY, token, names="'sync' scope")
    active.refresh_from_db()
    assert active.status == Status.ACTIVE


def test_a_token_with_one_scope_makes_that_call(client, assigner, assignee, active):
    inbox_only = limited(assigner, scopes=["inbox"], name="inbox")
    sync_only = limited(assigner, scopes=["sync"], name="sync")
    assert post(client, INBOX, inbox_body(), inbox_only).status_code == 201
    assert post(client, SYNC, SYNC_BODY, sync_only).status_code == 200


# --- client networks -------------------------------------------------------------------


def test_a_call_from_outside_the_networks_is_refused_naming_the_address(client, assigner, assignee):
    token = limited(assigner, networks=[OFFICE])
    assert_refused(client, INBOX, inbox_body(), token, names=OUTSIDE, REMOTE_ADDR=OUTSIDE)


def test_a_call_from_inside_the_networks_is_made(client, assigner, assignee, active):
    token = limited(assigner, networks=["192.0.2.1", OFFICE])
    inside = {"REMOTE_ADDR": "203.0.113.200"}
    assert post(client, INBOX, inbox_body(), token, **inside).status_code == 201
    assert post(client, SYNC, SYNC_BODY, token, REMOTE_ADDR="192.0.2.1").json()["changed"]


def test_ipv6_networks_and_addresses(client, assigner, assignee):
    token = limited(assigner, networks=["2001:DB8:AB::/48"])
    assert ApiToken.objects.get().networks == ["2001:db8:ab::/48"]
    assert_refused(
        client, INBOX, inbox_body(), token, names="2001:db8:ac::1", REMOTE_ADDR="2001:db8:ac::1"
    )
    inside = post(client, INBOX, inbox_body(), token, REMOTE_ADDR="2001:db8:ab::5")
    assert inside.status_code == 201


def test_an_ipv4_client_seen_by_a_dual_stack_socket_matches_its_ipv4_network(
    client, assigner, assignee
):
    token = limited(assigner, networks=[OFFICE])
    mapped = {"REMOTE_ADDR": "::ffff:203.0.113.9"}
    assert post(client, INBOX, inbox_body(), token, **mapped).status_code == 201


def test_an_untrusted_x_forwarded_for_is_ignored(client, assigner, assignee, settings):
    assert settings.ALLAUTH_TRUSTED_PROXY_COUNT == 0  # the default: no proxy trusted
    token = limited(assigner, networks=[OFFICE])
    assert_refused(
        client,
        INBOX,
        inbox_body(),
        token,
        names=OUTSIDE,
        REMOTE_ADDR=OUTSIDE,
        **{"X-Forwarded-For": "203.0.113.9"},
    )


def test_behind_a_trusted_proxy_the_address_it_appended_counts(
    client, assigner, assignee, settings
):
    settings.ALLAUTH_TRUSTED_PROXY_COUNT = 1
    settings.TRUSTED_PROXY_NETWORKS = [f"{PROXY}/32"]
    token = limited(assigner, networks=[OFFICE])
    via_proxy = {"REMOTE_ADDR": PROXY}
    # The client's own claim (first entry) is not believed; what the proxy saw is.
    assert_refused(
        client,
        INBOX,
        inbox_body(),
        token,
        names=OUTSIDE,
        **via_proxy,
        **{"X-Forwarded-For": f"203.0.113.9, {OUTSIDE}"},
    )
    ok = post(client, INBOX, inbox_body(), token, **via_proxy, **{"X-Forwarded-For": "203.0.113.9"})
    assert ok.status_code == 201


def test_a_trusted_client_ip_header_names_the_client(client, assigner, assignee, settings):
    settings.ALLAUTH_TRUSTED_CLIENT_IP_HEADER = "X-Real-IP"
    settings.TRUSTED_PROXY_NETWORKS = ["10.0.0.0/24"]
    token = limited(assigner, networks=[OFFICE])
    via_proxy = {"REMOTE_ADDR": PROXY}
    assert_refused(
        client, INBOX, inbox_body(), token, names=OUTSIDE, **via_proxy, **{"X-Real-IP": OUTSIDE}
    )
    ok = post(client, INBOX, inbox_body(), token, **via_proxy, **{"X-Real-IP": "203.0.113.9"})
    assert ok.status_code == 201


@pytest.mark.parametrize(
    ("setting", "value", "header"),
    [
        ("ALLAUTH_TRUSTED_PROXY_COUNT", 1, "X-Forwarded-For"),
        ("ALLAUTH_TRUSTED_CLIENT_IP_HEADER", "X-Real-IP", "X-Real-IP"),
    ],
)
def test_a_caller_that_reaches_the_app_port_directly_cannot_pick_its_address(
    client, assigner, assignee, settings, setting, value, header
):
    """gunicorn binds every interface: a caller that skips the proxy is judged
    by its own address, whatever it says it is."""
    setattr(settings, setting, value)
    settings.TRUSTED_PROXY_NETWORKS = [f"{PROXY}/32"]
    token = limited(assigner, networks=[OFFICE])
    forged = {"REMOTE_ADDR": OUTSIDE, header: "203.0.113.9"}
    assert_refused(client, INBOX, inbox_body(), token, names=OUTSIDE, **forged)


def test_a_request_that_bypassed_the_trusted_proxies_is_refused_not_crashed(
    client, assigner, assignee, settings
):
    settings.ALLAUTH_TRUSTED_PROXY_COUNT = 2
    settings.TRUSTED_PROXY_NETWORKS = ["127.0.0.0/8"]  # the test client's peer
    token = limited(assigner, networks=[OFFICE])
    assert_refused(
        client,
        INBOX,
        inbox_body(),
        token,
        names="could not be determined",
        **{"X-Forwarded-For": "203.0.113.9"},  # one entry where two proxies add two
    )


def test_a_token_without_networks_never_asks_for_the_address(client, assigner, assignee, settings):
    settings.ALLAUTH_TRUSTED_PROXY_COUNT = 2  # would find no address in this request
    settings.TRUSTED_PROXY_NETWORKS = ["127.0.0.0/8"]
    token = limited(assigner)
    response = post(client, INBOX, inbox_body(), token, **{"X-Forwarded-For": "x"})
    assert response.status_code == 201


# --- the order of checks ---------------------------------------------------------------


def test_the_token_itself_is_judged_first(client, assigner, assignee):
    minted = services.api_token_mint(user=assigner, name="Gone", networks=[OFFICE])
    services.api_token_revoke(actor=Actor.for_user(assigner), token=minted.token)
    response = post(client, INBOX, inbox_body(), minted.plaintext, REMOTE_ADDR=OUTSIDE)
    assert_envelope(response, 401, "unauthorized")


def test_the_network_is_judged_before_the_scope(client, assigner, active):
    token = limited(assigner, scopes=["inbox"], networks=[OFFICE])
    answer = assert_refused(client, SYNC, SYNC_BODY, token, names=OUTSIDE, REMOTE_ADDR=OUTSIDE)
    assert "scope" not in answer["message"]  # an outsider learns nothing of the scopes


@pytest.mark.parametrize("body", ["not json", {"description": ""}])
def test_a_refused_token_is_refused_before_its_body_is_read(client, assigner, body):
    token = limited(assigner, scopes=["sync"])
    assert_refused(client, INBOX, body, token, names="'inbox' scope")


def test_refused_calls_do_not_spend_the_owners_rate_limit(client, assigner, assignee, settings):
    settings.API_RATE_BURST = 1
    settings.API_RATE_PER_MINUTE = 1
    settings.REDIS_URL = ""  # the buckets in the database
    token = limited(assigner, networks=[OFFICE])
    for _ in range(3):  # a leaked token, tried from elsewhere
        assert_refused(client, INBOX, inbox_body(), token, names=OUTSIDE, REMOTE_ADDR=OUTSIDE)
    office = {"REMOTE_ADDR": "203.0.113.9"}
    assert post(client, INBOX, inbox_body(), token, **office).status_code == 201
    spent = post(client, INBOX, inbox_body(externalId="OPS-43"), token, **office)
    assert_envelope(spent, 429, "rate_limited")


def test_a_refused_call_leaves_the_last_use_as_it_was(client, assigner, assignee):
    token = limited(assigner, scopes=["sync"])
    assert post(client, SYNC, SYNC_BODY, token).status_code == 404  # a use
    used = ApiToken.objects.get().last_used_at
    ApiToken.objects.update(last_used_at=used.replace(year=used.year - 1))
    response = post(client, INBOX, inbox_body(), token)
    assert_envelope(response, 403, "forbidden")
    assert ApiToken.objects.get().last_used_at == used.replace(year=used.year - 1)


# --- query counts: an allowed call costs what it did -----------------------------------


def test_an_allowed_inbox_call_of_a_limited_token_takes_the_inbox_budget(
    client, assigner, assignee, django_assert_num_queries
):
    token = limited(assigner, scopes=["inbox"], networks=["127.0.0.0/8", "2001:db8::/32"])
    assert post(client, INBOX, inbox_body(externalId="warm-up"), token).status_code == 201
    warm_caches()
    with django_assert_num_queries(inbox_statements()):
        assert post(client, INBOX, inbox_body(), token).status_code == 201


def test_an_allowed_sync_of_a_limited_token_takes_the_sync_budget(
    client, assigner, assignee, active, django_assert_num_queries
):
    token = limited(assigner, scopes=["sync"], networks=["127.0.0.1"])
    warm_up = {**SYNC_BODY, "externalId": "none"}
    assert post(client, SYNC, warm_up, token).status_code == 404  # writes last use
    warm_caches()
    with django_assert_num_queries(sync_statements()):
        assert post(client, SYNC, SYNC_BODY, token).json()["changed"] is True


def test_a_refused_call_takes_one_query(client, assigner, assignee, django_assert_num_queries):
    token = limited(assigner, scopes=["sync"])
    with django_assert_num_queries(1):  # the token and its owner; nothing written
        assert post(client, INBOX, inbox_body(), token).status_code == 403


# --- minting ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "stored"),
    [
        (["10.1.2.3"], ["10.1.2.3/32"]),
        (["2001:DB8::1"], ["2001:db8::1/128"]),
        ([" 10.0.0.0/8 ", "10.0.0.0/8"], ["10.0.0.0/8"]),
        (["::ffff:192.0.2.0/120"], ["192.0.2.0/24"]),
    ],
)
def test_networks_are_stored_normalised(assigner, given, stored):
    services.api_token_mint(user=assigner, name="T", networks=given)
    assert ApiToken.objects.get().networks == stored


@pytest.mark.parametrize(
    ("given", "says"),
    [
        ("10.0.0.0/33", "is not an IP network"),
        ("example.com", "is not an IP network"),
        ("10.1.2.3/8", "host bits set: write the network as 10.0.0.0/8"),
    ],
)
def test_a_bad_network_is_refused_with_a_clear_error(assigner, given, says):
    with pytest.raises(Exception, match=says) as error:
        services.api_token_mint(user=assigner, name="T", networks=[given])
    assert error.value.message_dict["networks"]
    assert not ApiToken.objects.exists()


@pytest.mark.parametrize(("given", "says"), [([], "at least one"), (["admin"], "Unknown")])
def test_scopes_must_be_known_and_not_none(assigner, given, says):
    with pytest.raises(Exception, match=says):
        services.api_token_mint(user=assigner, name="T", scopes=given)
    assert not ApiToken.objects.exists()


def test_the_page_mints_with_scopes_and_networks_and_lists_them(client, assigner):
    sign_in(client, assigner)
    page = mint_on_the_page(
        client, "Office sync", scopes=["sync"], networks="203.0.113.0/24\n2001:DB8::/32, 192.0.2.9"
    ).content.decode()
    token = ApiToken.objects.get()
    assert token.scopes == ["sync"]
    assert token.networks == ["203.0.113.0/24", "2001:db8::/32", "192.0.2.9/32"]
    row = re.search(r"<tr>\s*<td[^>]*>Office sync<.*?</tr>", page, re.S).group(0)
    assert '<span class="token-scopes">sync</span>' in row and "inbox" not in row
    for network in token.networks:
        assert f"<code>{network}</code>" in row


def test_the_form_comes_with_both_scopes_ticked(client, assigner):
    sign_in(client, assigner)
    page = client.get(TOKENS_PAGE).content.decode()
    for scope in ("inbox", "sync"):
        box = re.search(rf'<input type="checkbox" name="scopes" value="{scope}"[^>]*>', page)
        assert box and "checked" in box.group(0)


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"scopes": []}, "Choose at least one scope."),
        ({"scopes": ["inbox"], "networks": "203.0.113.5/24"}, "203.0.113.0/24"),
        ({"scopes": ["inbox"], "networks": "office"}, "is not an IP network"),
    ],
)
def test_the_page_refuses_a_bad_mint_with_the_reason(client, assigner, fields, says):
    sign_in(client, assigner)
    sent = {"name": "T", "form_key": form_key(client), **fields}
    response = client.post(TOKENS_PAGE, sent)
    assert response.status_code == 400
    assert says in response.content.decode()
    assert not ApiToken.objects.exists()


def test_mint_token_takes_scopes_and_networks(assigner):
    out, err = io.StringIO(), io.StringIO()
    call_command(
        "mint_token",
        "lead@example.com",
        "--name",
        "CI",
        "--scope",
        "sync",
        "--network",
        "10.0.0.0/8",
        "--network",
        "2001:db8::/32",
        stdout=out,
        stderr=err,
    )
    plaintext = out.getvalue().strip().splitlines()[-1]
    token = ApiToken.objects.get(digest=tokens.digest(plaintext))
    assert token.scopes == ["sync"]
    assert token.networks == ["10.0.0.0/8", "2001:db8::/32"]
    assert "scopes sync" in err.getvalue() and "10.0.0.0/8 2001:db8::/32" in err.getvalue()


def test_mint_token_without_limits_prints_what_it_always_did(assigner):
    out, err = io.StringIO(), io.StringIO()
    call_command("mint_token", "lead@example.com", "--name", "CI", stdout=out, stderr=err)
    token = ApiToken.objects.get()
    assert (token.scopes, token.networks) == (["inbox", "sync", "read"], [])
    assert err.getvalue().strip() == (
        f"Minted token “CI” ({token.prefix}…, id {token.id}) for lead@example.com. "
        "Store it now: it is not shown again."
    )
    assert out.getvalue().strip() == out.getvalue().strip().splitlines()[-1]


@pytest.mark.parametrize("option", [["--scope", "admin"], ["--network", "10.1.2.3/8"]])
def test_mint_token_refuses_a_bad_scope_or_network(assigner, option):
    with pytest.raises(CommandError):
        call_command(
            "mint_token",
            "lead@example.com",
            "--name",
            "CI",
            *option,
            stdout=io.StringIO(),
            stderr=io.StringIO(),
        )
    assert not ApiToken.objects.exists()


def test_the_admin_shows_scopes_and_networks(staff_client, assigner):
    token = services.api_token_mint(
        user=assigner, name="Jira", scopes=["inbox"], networks=["2001:db8::/32"]
    ).token
    listing = staff_client.get("/admin/integrations/apitoken/").content.decode()
    page = staff_client.get(f"/admin/integrations/apitoken/{token.pk}/change/").content.decode()
    for html in (listing, page):
        assert "2001:db8::/32" in html and "inbox" in html


# --- the OpenAPI document ---------------------------------------------------------------


def test_the_document_tells_of_scopes_and_networks(client, db):
    document = client.get("/api-reference/openapi.json").json()
    scheme = document["components"]["securitySchemes"]["bearerAuth"]["description"]
    assert "scopes" in scheme and "`inbox`" in scheme and "`sync`" in scheme
    assert "CIDR" in scheme and "403 forbidden" in scheme
    for path, scope in (("/api/v1/inbox", "inbox"), ("/api/v1/sync", "sync")):
        forbidden = document["paths"][path]["post"]["responses"]["403"]
        assert f"`{scope}`" in forbidden["description"]
        messages = [
            e["value"]["message"]
            for e in forbidden["content"]["application/json"]["examples"].values()
        ]
        assert any(f"'{scope}' scope" in m for m in messages)
        assert any("not accepted from" in m for m in messages)
