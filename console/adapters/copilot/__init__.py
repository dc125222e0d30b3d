"""Copilot CLI (`@github/copilot`): its preToolUse hook, install and doctor."""
