"""Finding a runtime: which socket a client reaches, from an explicit path to the config file."""

from __future__ import annotations

import json
import os

import pytest

from meith_core import MeithHome
from meith_core.base.instances import resolve_target


def test_target_resolution_prefers_socket_then_instance_then_env_then_newest_then_config(
    tmp_path, monkeypatch
) -> None:
    home = MeithHome(tmp_path / "home").ensure()
    monkeypatch.delenv("MEITH_SOCKET", raising=False)
    assert resolve_target(home).source == "default"
    home.config_path.write_text(json.dumps({"socketPath": "/from/config.sock"}))
    assert resolve_target(home).socket_path == "/from/config.sock"
    # Live instances: the pid must exist and the socket path must be a socket.
    import socket as socketlib

    sockets = []
    for name, started in (("old", 1), ("new", 2)):
        path = str(tmp_path / f"{name}.sock")
        s = socketlib.socket(socketlib.AF_UNIX)
        s.bind(path)
        sockets.append(s)
        home.instances_dir.mkdir(exist_ok=True)
        pid = os.getpid() if name == "new" else os.getppid()
        (home.instances_dir / f"{pid}.json").write_text(
            json.dumps({"pid": pid, "socketPath": path, "startedAt": started, "label": name})
        )
    assert resolve_target(home).socket_path == str(tmp_path / "new.sock")
    assert resolve_target(home, instance="old").socket_path == str(tmp_path / "old.sock")
    assert resolve_target(home, instance=str(os.getpid())).socket_path == str(tmp_path / "new.sock")
    monkeypatch.setenv("MEITH_SOCKET", "/from/env.sock")
    assert resolve_target(home).socket_path == "/from/env.sock"
    assert resolve_target(home, socket_path="/explicit.sock").socket_path == "/explicit.sock"
    with pytest.raises(Exception, match='No live instance matches "ghost"'):
        resolve_target(home, instance="ghost")
    for s in sockets:
        s.close()
