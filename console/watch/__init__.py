"""Workspace watcher: every change under a workspace root, classified against the
protected patterns, attributed to the sessions and operations active there, and never
silently lost (see watcher.py for the API, root.py and index.py for how).
"""

from console.watch.attribution import Attributions, AttributionToken
from console.watch.baseline import MAX_BASELINE_BYTES
from console.watch.events import (
    Attribution,
    Degradation,
    FileEvent,
    RootStatus,
    WatchStatus,
    net_changes,
)
from console.watch.names import display_path, is_plain, json_path, path_from_json
from console.watch.scope import DEFAULT_SKIP_IN_GIT, DEFAULT_SKIP_NAMES
from console.watch.watcher import WorkspaceWatcher, normalize_root

__all__ = [
    "DEFAULT_SKIP_IN_GIT",
    "DEFAULT_SKIP_NAMES",
    "MAX_BASELINE_BYTES",
    "Attribution",
    "AttributionToken",
    "Attributions",
    "Degradation",
    "FileEvent",
    "RootStatus",
    "WatchStatus",
    "WorkspaceWatcher",
    "display_path",
    "is_plain",
    "json_path",
    "net_changes",
    "normalize_root",
    "path_from_json",
]
