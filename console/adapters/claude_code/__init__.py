"""Claude Code: its PreToolUse/PermissionRequest hook, install and doctor, reads, attention."""
