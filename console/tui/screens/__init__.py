"""The console's screens; :mod:`console.tui.registry` lists the top-level ones."""
