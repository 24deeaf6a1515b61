"""An MCP server for the commitment tracking service, built on the generated
client (commitments_client): it speaks only the public API. Run it with the
console script `commitments-mcp` (see clients/python/README.md)."""
