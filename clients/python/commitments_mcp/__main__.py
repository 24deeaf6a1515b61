from commitments_mcp.server import main

main()
