"""Talking to the MCP server `commitments-mcp` (clients/python/commitments_mcp)
as an assistant does: a real subprocess, over stdio or streamable HTTP, through
the `mcp` SDK's own client. The session runs on an event loop in a thread of
its own (anyio's blocking portal), so a test stays synchronous and reads the
database between calls in its own thread, as Django wants."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from anyio.from_thread import BlockingPortal, start_blocking_portal
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types import CallToolResult, Tool

from tests.harness.services import wait_until

# The console script the client's package installs, beside this interpreter.
COMMAND = str(Path(sys.executable).parent / "commitments-mcp")


def server_environment(url: str, token: str) -> dict[str, str]:
    return {"COMMITMENTS_URL": url, "COMMITMENTS_TOKEN": token}


def stdio_server(url: str, token: str) -> StdioServerParameters:
    """How the client starts `commitments-mcp` over stdio (as an assistant's
    configuration says: the command and its two variables)."""
    return StdioServerParameters(command=COMMAND, env=server_environment(url, token))


@dataclass
class Session:
    portal: BlockingPortal
    client: Client

    def tools(self) -> dict[str, Tool]:
        return {tool.name: tool for tool in self.portal.call(self._list_tools)}

    async def _list_tools(self) -> list[Tool]:
        return (await self.client.list_tools()).tools

    def call(self, name: str, arguments: dict[str, Any]) -> CallToolResult:
        return self.portal.call(self.client.call_tool, name, arguments)

    def answer(self, name: str, arguments: dict[str, Any]) -> Any:
        """A call that must succeed: its JSON answer (the text block, parsed), which
        is also its structured content."""
        result = self.call(name, arguments)
        assert not result.is_error, text_of(result)
        answer = json.loads(text_of(result))
        assert result.structured_content == answer
        return answer

    def refusal(self, name: str, arguments: dict[str, Any]) -> str:
        """A call that must fail as a tool error: its text."""
        result = self.call(name, arguments)
        assert result.is_error, text_of(result)
        return text_of(result)


def text_of(result: CallToolResult) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


@contextmanager
def session(server: StdioServerParameters | str) -> Iterator[Session]:
    """An MCP session with `server` (stdio parameters, or a streamable HTTP URL)."""
    with start_blocking_portal() as portal:
        client = Client(server, read_timeout_seconds=30)
        with portal.wrap_async_context_manager(client) as connected:
            yield Session(portal, connected)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def http_server(url: str, token: str) -> Iterator[str]:
    """`commitments-mcp --http` on a free loopback port; its MCP endpoint's URL."""
    port = free_port()
    proc = subprocess.Popen(
        [COMMAND, "--http", "--port", str(port)],
        env={**os.environ, **server_environment(url, token)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:

        def listening() -> bool:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            with socket.socket() as sock:
                return sock.connect_ex(("127.0.0.1", port)) == 0

        wait_until(listening, timeout=30, what="commitments-mcp --http to listen")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
