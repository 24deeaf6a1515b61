"""clients/python builds as a package of its own (`pip install ./clients/python`):
its wheel holds both import packages, the OpenAPI document the MCP server reads
its schemas from, the typing markers and the `commitments-mcp` console script.
(The tests import it from the editable install scripts/_venv.sh makes, which
would not notice a file left out of the wheel.)"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile

from tests.harness.tree import ROOT

PACKAGE = ROOT / "clients" / "python"


def test_the_wheel_holds_the_client_the_server_the_document_and_the_script(tmp_path):
    source = tmp_path / "src"
    shutil.copytree(PACKAGE, source, ignore=shutil.ignore_patterns("*.egg-info", "build"))
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--disable-pip-version-check",
            str(source),
            "--wheel-dir",
            str(tmp_path / "dist"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    (wheel,) = (tmp_path / "dist").glob("commitments_client-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for name in (
        "commitments_client/openapi.json",
        "commitments_client/py.typed",
        "commitments_client/api/inbound_api/inbox_create.py",
        "commitments_mcp/py.typed",
        "commitments_mcp/server.py",
        "commitments_mcp/schemas.py",
    ):
        assert name in names, name
    (entry_points,) = [name for name in names if name.endswith("entry_points.txt")]
    text = zipfile.ZipFile(wheel).read(entry_points).decode()
    assert "commitments-mcp = commitments_mcp.server:main" in text
