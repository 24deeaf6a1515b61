"""`commitments-mcp`: the MCP server, over stdio by default or streamable HTTP
with --http, configured by COMMITMENTS_URL (the service's base URL) and
COMMITMENTS_TOKEN (an API token; its scopes bound what the tools can do).

It is the SDK's low-level server (mcp.server.Server), so each tool's input
schema is exactly the one read from the API's OpenAPI document."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

import mcp_types as types
from commitments_client import AuthenticatedClient
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server

from commitments_mcp.tools import TOOLS, ToolFailure, run

INSTRUCTIONS = (
    "Tools for the commitment tracking service, acting as the person whose API token this "
    "server holds. A commitment is one person (the assigner) asking another (the assignee) "
    "to do something, maybe by a deadline; the assignee accepts or declines, and an accepted "
    "one is completed later. Commitments made through the API carry an external reference "
    "(externalSystem + externalId, e.g. jira / OPS-42) that completing uses."
)


def make_server(client: AuthenticatedClient) -> Server[Any]:
    """The MCP server whose tools call the API through `client`."""

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name=tool.name,
                    title=tool.title,
                    description=tool.description,
                    input_schema=tool.input_schema,
                    annotations=tool.annotations,
                )
                for tool in TOOLS.values()
            ]
        )

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        tool = TOOLS.get(params.name)
        if tool is None:
            return _error(f"There is no tool {params.name!r}; the tools are {', '.join(TOOLS)}.")
        arguments = dict(params.arguments or {})
        try:
            answer = await run(tool, client, arguments)
        except ToolFailure as failure:
            return _error(str(failure))
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=json.dumps(answer, indent=2))],
            structured_content=answer,
        )

    def input_schema(name: str) -> dict[str, Any] | None:
        tool = TOOLS.get(name)
        return None if tool is None else tool.input_schema

    return Server(
        "commitments",
        version="1.0.0",
        instructions=INSTRUCTIONS,
        get_tool_input_schema=input_schema,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


def client_from_environment(environ: dict[str, str] | None = None) -> AuthenticatedClient:
    """The generated client, from COMMITMENTS_URL and COMMITMENTS_TOKEN."""
    environ = dict(os.environ if environ is None else environ)
    missing = [name for name in ("COMMITMENTS_URL", "COMMITMENTS_TOKEN") if not environ.get(name)]
    if missing:
        raise SystemExit(
            f"commitments-mcp: set {' and '.join(missing)} (COMMITMENTS_URL: the service's "
            "base URL, e.g. https://commitments.example.com; COMMITMENTS_TOKEN: an API token "
            "minted on Settings, API tokens)."
        )
    return AuthenticatedClient(
        base_url=environ["COMMITMENTS_URL"].rstrip("/"),
        token=environ["COMMITMENTS_TOKEN"],
        headers={"User-Agent": "commitments-mcp/1.0.0"},
    )


async def _serve_stdio(server: Server[Any]) -> None:
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="commitments-mcp",
        description="MCP server for the commitment tracking service (stdio by default).",
    )
    parser.add_argument(
        "--http", action="store_true", help="serve streamable HTTP instead of stdio"
    )
    parser.add_argument("--host", default="127.0.0.1", help="with --http (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="with --http (default 8000)")
    parser.add_argument("--path", default="/mcp", help="with --http: the endpoint (default /mcp)")
    args = parser.parse_args(argv)
    client = client_from_environment()
    server = make_server(client)
    if args.http:
        import uvicorn

        app = server.streamable_http_app(streamable_http_path=args.path, host=args.host)
        print(
            f"commitments-mcp: streamable HTTP on http://{args.host}:{args.port}{args.path}",
            file=sys.stderr,
            flush=True,
        )
        uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    else:
        import anyio

        anyio.run(_serve_stdio, server)
