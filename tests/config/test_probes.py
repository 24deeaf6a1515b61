"""A balancer's or an orchestrator's probe reads the truth from /healthz and
/readyz: over plain HTTP, from an address that is not loopback, with the
pod's IP as its Host, the answer is 200 when the service is ready and 503
when it is not, never a redirect (Kubernetes counts a 3xx as success) and
never a 400 for the Host. The settings are production's
(`settings_for`, DEBUG=0), the rest of the site keeps its HTTPS redirect."""

from __future__ import annotations

import pytest
from django.db.backends.utils import CursorWrapper
from django.test import override_settings

from tests.harness.settings import REAL_KEY, settings_for

BALANCER = "10.42.0.1"  # the kubelet's or the balancer's address
POD_HOSTS = ["10.42.3.17:3000", "10.42.3.17", "commitments.example.com"]
GUARDS = ("HTTPS_ONLY", "ALLOWED_HOSTS", "SECURE_HSTS_SECONDS", "MIDDLEWARE", "REDIS_URL")


@pytest.fixture
def production(tmp_path):
    values = settings_for(
        tmp_path, DEBUG="0", SECRET_KEY=REAL_KEY, ALLOWED_HOSTS="commitments.example.com"
    )
    assert values["HTTPS_ONLY"] is True
    # No REDIS_URL: readiness is the database answering (the embedded default),
    # so a test can make it fail without a Redis.
    with override_settings(**{name: values[name] for name in GUARDS} | {"REDIS_URL": ""}):
        yield values


def probe(client, path, host, method="get"):
    return getattr(client, method)(path, HTTP_HOST=host, REMOTE_ADDR=BALANCER)


@pytest.mark.django_db
@pytest.mark.usefixtures("production")
@pytest.mark.parametrize("host", POD_HOSTS)
@pytest.mark.parametrize("path", ["/healthz", "/readyz"])
def test_a_probe_over_plain_http_from_a_balancer_reads_200_when_ready(client, path, host):
    response = probe(client, path, host)

    assert response.status_code == 200
    assert "Location" not in response
    assert response["Content-Type"] == "application/json"
    assert response.json()["status"] in ("ok", "ready")
    assert "no-store" in response["Cache-Control"]


@pytest.mark.django_db
@pytest.mark.usefixtures("production")
@pytest.mark.parametrize("host", POD_HOSTS)
def test_a_probe_reads_503_when_the_database_does_not_answer(client, monkeypatch, host):
    def refuse(self, sql, params=None):
        raise RuntimeError("connection refused")

    monkeypatch.setattr(CursorWrapper, "execute", refuse)

    response = probe(client, "/readyz", host)

    assert response.status_code == 503
    assert "Location" not in response
    # From off the machine: the status alone, not the checks.
    assert response.json() == {"status": "not ready"}
    # Liveness does not touch the database: the process still serves.
    assert probe(client, "/healthz", host).status_code == 200


@pytest.mark.django_db
@pytest.mark.usefixtures("production")
def test_a_head_probe_is_answered_too(client):
    assert probe(client, "/healthz", "10.42.3.17:3000", method="head").status_code == 200


@pytest.mark.usefixtures("production")
@pytest.mark.parametrize(
    ("path", "host", "status"),
    [
        ("/settings/", "commitments.example.com", 301),
        ("/settings/", "10.42.3.17:3000", 400),
        ("/healthz/", "10.42.3.17:3000", 400),  # only the probe routes themselves
        ("/healthzx", "commitments.example.com", 301),
    ],
)
def test_every_other_route_keeps_its_https_redirect_and_host_check(client, path, host, status):
    assert probe(client, path, host).status_code == status


@pytest.mark.usefixtures("production")
def test_a_probe_route_posted_to_is_not_exempt(client):
    response = client.post("/healthz", HTTP_HOST="commitments.example.com", REMOTE_ADDR=BALANCER)

    assert response.status_code == 301


@pytest.mark.django_db
@pytest.mark.usefixtures("production")
def test_the_readiness_checks_stay_for_a_probe_on_this_machine(client):
    response = client.get("/readyz", HTTP_HOST="10.42.3.17:3000", REMOTE_ADDR="127.0.0.1")

    assert response.status_code == 200
    assert response.json()["checks"]["database"] == {"ok": True}
