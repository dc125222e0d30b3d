"""Gemini CLI (`@google/gemini-cli`): its BeforeTool hook, install and doctor."""
