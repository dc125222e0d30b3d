"""Workspace watcher: every change under a workspace root, classified against the
protected patterns, attributed to the sessions and operations active there, and never
silently lost (see watcher.py for the API, root.py and index.py for how).

Wiring it into the daemon (all calls on the daemon's event loop):

- one ``Attributions`` shared with the session manager and the executor:
  ``begin(root, "session"|"operation", id, label, pid)`` when a session starts or a
  captured operation begins running, ``end(token)`` when it stops;
- one ``WorkspaceWatcher(protected_for=lambda root: config.protected_paths, ...)``;
  ``add_root`` for every root an operation, a session or the config names;
  ``policy_changed()`` after a config reload; ``close()`` on shutdown;
- ``on_event``: keep it quick (append to a queue, one history row per protected event,
  ``FileEvent.to_dict()`` is the row's JSON); the tripwire acts on events whose
  ``protected`` is set and whose ``attribution`` names a session (its ``pid``);
  ``baseline_diff(root, path)`` is the diff for the approval item, and
  ``accept_baseline`` moves the baseline once the operator has seen it;
- an operation's outcome: collect the events attributed to it, and when its process
  exits ``await flush(root)`` *before* ``end(token)``, then ``net_changes(collected)``;
- ``on_status``: badge/degraded banner; ``RootStatus.reasons`` says why.
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
