"""The wire between agents, operators and the daemon: JSON-RPC 2.0, one message per line."""
