"""scripts/request: the operator's request from inside the container, which
has no curl (docs/production.md). Run as a process against a real HTTP
server on loopback, on the port PORT names, with the standard library only."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from django.conf import settings

SCRIPT = Path(settings.BASE_DIR) / "scripts" / "request"


class Recorder(BaseHTTPRequestHandler):
    seen: list[dict] = []

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode()
        Recorder.seen.append(
            {"method": self.command, "path": self.path, "headers": dict(self.headers), "body": body}
        )
        status = 503 if self.path == "/readyz" else 201 if self.command == "POST" else 200
        payload = json.dumps({"path": self.path}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = _answer

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def server():
    Recorder.seen = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd.server_address[1]
    httpd.shutdown()
    httpd.server_close()


def request(port: int | None, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PORT"}
    if port is not None:
        env["PORT"] = str(port)
    # As the image runs it: its shebang's python3, no project import.
    return subprocess.run(
        [sys.executable, "-I", str(SCRIPT), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )


def test_it_gets_a_path_on_the_port_and_prints_the_answer(server):
    result = request(server, "/healthz")

    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["200 OK", '{"path": "/healthz"}']
    assert Recorder.seen[0]["method"] == "GET"


def test_a_status_that_is_not_2xx_is_printed_and_fails(server):
    result = request(server, "/readyz")

    assert result.returncode == 1
    assert result.stdout.startswith("503 Service Unavailable\n")


def test_a_body_is_posted_as_json_with_the_headers_given(server):
    result = request(
        server, "-H", "Authorization: Bearer abc", "-d", '{"text": "x"}', "/api/v1/inbox"
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("201 Created")
    (seen,) = Recorder.seen
    assert seen["method"] == "POST"
    assert seen["path"] == "/api/v1/inbox"
    assert seen["headers"]["Authorization"] == "Bearer abc"
    assert seen["headers"]["Content-Type"] == "application/json"
    assert seen["body"] == '{"text": "x"}'


def test_nothing_listening_is_a_clear_error(server):
    from tests.harness.services import free_port

    result = request(free_port(), "/healthz")

    assert result.returncode == 2
    assert "Connection refused" in result.stderr


def test_the_script_is_executable_and_in_the_image():
    assert os.access(SCRIPT, os.X_OK)
    dockerfile = (Path(settings.BASE_DIR) / "Dockerfile").read_text()
    assert "COPY scripts/request ./scripts/request" in dockerfile
    assert SCRIPT.read_text().startswith("#!/usr/bin/env python3\n")
