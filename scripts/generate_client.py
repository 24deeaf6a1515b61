"""Generate the typed Python client (clients/python/commitments_client) from the
OpenAPI document the service serves, with the pinned openapi-python-client
(requirements-dev.lock) and its configuration (clients/python/generator.yaml):

    .venv/bin/python scripts/generate_client.py                # serves the app itself
    .venv/bin/python scripts/generate_client.py --url http://localhost:3000

Without --url the script serves this checkout's application on a free loopback
port for the time of one request (development settings, DEBUG=1) and fetches
GET /api-reference/openapi.json from it over HTTP. The document itself is kept
beside the generated code (commitments_client/openapi.json): the MCP server
reads its tools' input schemas from it. The generated package is committed;
tests/clients/test_client_drift.py regenerates it from the live server into a
temporary folder (--out) and fails if anything differs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
CLIENT = ROOT / "clients" / "python"
CONFIG = CLIENT / "generator.yaml"
PACKAGE = "commitments_client"
DOCUMENT_PATH = "/api-reference/openapi.json"


@contextmanager
def served_here() -> Iterator[str]:
    """This checkout's WSGI application on a free loopback port; its base URL."""
    from wsgiref.simple_server import WSGIRequestHandler, make_server

    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("DEBUG", "1")
    from django.core.wsgi import get_wsgi_application

    class Quiet(WSGIRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

    server = make_server("127.0.0.1", 0, get_wsgi_application(), handler_class=Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


def fetch_document(base_url: str) -> dict[str, object]:
    response = httpx.get(base_url.rstrip("/") + DOCUMENT_PATH, timeout=30)
    response.raise_for_status()
    document = response.json()
    if not isinstance(document, dict) or not str(document.get("openapi", "")).startswith("3."):
        raise SystemExit(f"{base_url}{DOCUMENT_PATH} is not an OpenAPI 3 document")
    return document


def generate(document: dict[str, object], out: Path) -> None:
    """Write the generated package to `out` (replaced whole)."""
    text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    # The generator and its ruff post hooks from this interpreter's environment.
    bin_dir = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", "")}
    with tempfile.TemporaryDirectory() as work:
        spec = Path(work) / "openapi.json"
        spec.write_text(text, encoding="utf-8")
        target = Path(work) / PACKAGE
        subprocess.run(  # noqa: S603 (the pinned generator, our own arguments)
            [
                str(Path(bin_dir) / "openapi-python-client"),
                "generate",
                "--path",
                str(spec),
                "--meta",
                "none",
                "--config",
                str(CONFIG),
                "--output-path",
                str(target),
            ],
            cwd=work,
            env=env,
            check=True,
            capture_output=True,
        )
        (target / "openapi.json").write_text(text, encoding="utf-8")
        (target / "py.typed").write_text("", encoding="utf-8")  # PEP 561: typed for mypy
        if out.exists():
            shutil.rmtree(out)
        shutil.copytree(target, out)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", help="the service's base URL (default: serve this checkout)")
    parser.add_argument(
        "--out", type=Path, default=CLIENT / PACKAGE, help="where to write the package"
    )
    args = parser.parse_args(argv)
    if args.url:
        document = fetch_document(args.url)
    else:
        with served_here() as url:
            document = fetch_document(url)
    generate(document, args.out)
    print(f"generated {args.out}")


if __name__ == "__main__":
    main()
