"""ACP agents (Agent Client Protocol): the console as their client."""
