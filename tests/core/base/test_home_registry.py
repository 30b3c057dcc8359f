"""Every meith home of the user and their runtimes' sockets are known."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

from meith_core.base.home_registry import known_homes, known_sockets, register_home


def test_every_home_and_its_sockets_are_known(tmp_path: Path) -> None:
    home = tmp_path / "h"
    (home / "instances").mkdir(parents=True)
    sock_path = tmp_path / "s.sock"
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(sock_path))
    (home / "instances" / "1.json").write_text(json.dumps({"pid": 1, "socketPath": str(sock_path)}))
    register_home(home)
    try:
        assert os.path.realpath(home) in known_homes()
        assert str(sock_path) in known_sockets()
    finally:
        listener.close()
