"""Claude Code: its PreToolUse/PermissionRequest hook, install and doctor, and its reads."""
