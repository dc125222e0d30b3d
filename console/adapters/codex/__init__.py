"""Codex (`@openai/codex`): its PreToolUse hook, the apply_patch reader, install and doctor."""
