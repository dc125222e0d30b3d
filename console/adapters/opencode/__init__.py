"""OpenCode (`opencode-ai`): its plugin, the hook the plugin runs, install and doctor."""
