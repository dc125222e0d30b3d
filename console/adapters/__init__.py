"""Ready integrations with existing agents."""
