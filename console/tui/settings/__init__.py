"""What the console is configured with: the config file, themes, keymaps, the bindings
made from the action table, and where the bundled files are."""
