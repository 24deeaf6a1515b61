"""docs/clients.md's assistant configuration is valid JSON and starts the
console script the package installs, with the two variables it reads."""

from __future__ import annotations

import json
import re
import tomllib

from tests.harness.tree import ROOT


def test_the_mcp_servers_example_names_the_installed_script_and_its_settings():
    text = (ROOT / "docs" / "clients.md").read_text()
    (block,) = re.findall(r"```json\n(.*?)```", text, re.DOTALL)
    server = json.loads(block)["mcpServers"]["commitments"]
    scripts = tomllib.loads((ROOT / "clients" / "python" / "pyproject.toml").read_text())[
        "project"
    ]["scripts"]
    assert scripts[server["command"]] == "commitments_mcp.server:main"
    assert set(server["env"]) == {"COMMITMENTS_URL", "COMMITMENTS_TOKEN"}
