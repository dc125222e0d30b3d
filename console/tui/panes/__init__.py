"""The terminal pane and what serves it: its daemon link, keys, painting, the split tree
of panes, and the pane widget itself, split by concern into mixins."""
