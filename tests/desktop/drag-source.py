#!/usr/bin/python3
"""A drag source in its own X client, for the desktop tests: a small GTK window at X, Y whose label is
dragged as a file manager drags files (text/uri-list over XDND). Prints "ready" once it is on screen.

    drag-source.py X Y FILE...
"""
import sys
from pathlib import Path

import gi

gi.require_version("Gtk", "3.0")
gi.require_version("Gdk", "3.0")
from gi.repository import Gdk, GLib, Gtk  # noqa: E402

URI_LIST = 0


def main() -> None:
    x, y = int(sys.argv[1]), int(sys.argv[2])
    uris = [Path(f).resolve().as_uri() for f in sys.argv[3:]]
    window = Gtk.Window(title="drag source")
    window.set_default_size(160, 80)
    window.move(x, y)
    box = Gtk.EventBox()
    box.add(Gtk.Label(label=f"{len(uris)} file(s)"))
    box.drag_source_set(
        Gdk.ModifierType.BUTTON1_MASK,
        [Gtk.TargetEntry.new("text/uri-list", 0, URI_LIST)],
        Gdk.DragAction.COPY,
    )
    box.connect("drag-data-get", lambda _w, _ctx, data, _info, _time: data.set_uris(uris))
    box.connect("drag-end", lambda *_: print("dropped", flush=True))
    window.add(box)
    window.connect("destroy", Gtk.main_quit)
    window.show_all()
    GLib.timeout_add(300, lambda: print("ready", flush=True) and False)
    Gtk.main()


if __name__ == "__main__":
    main()
