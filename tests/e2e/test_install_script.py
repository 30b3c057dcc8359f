"""install.py's decisions that need no virtual environment made: what it refuses and why, and
how it names what it installs. (The installs themselves run in test_readme_walkthrough.py; the
dev environment is the README's test command, which CI runs.)"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def install() -> ModuleType:
    spec = importlib.util.spec_from_file_location("meith_install_script", ROOT / "install.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_python_without_ensurepip_is_told_to_install_python3_venv(
    install: ModuleType, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys
) -> None:
    """Debian's python3 without python3-venv: said before anything is made."""
    real = importlib.util.find_spec
    monkeypatch.setattr(
        install.importlib.util,
        "find_spec",
        lambda name, *a: None if name == "ensurepip" else real(name, *a),
    )
    assert install.main(["--prefix", str(tmp_path / "venv"), "--bin-dir", str(tmp_path)]) == 1
    assert "sudo apt install python3-venv" in capsys.readouterr().err
    assert not (tmp_path / "venv").exists()
    assert install.main(["--dev"]) == 1
    assert "python3-venv" in capsys.readouterr().err


def test_a_python_older_than_the_oldest_supported_is_refused(
    install: ModuleType, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    monkeypatch.setattr(install, "OLDEST", (sys.version_info[0] + 1, 0, 0))
    assert install.main(["--dev"]) == 1
    assert "or newer; this is" in capsys.readouterr().err


def test_dev_takes_no_packages(install: ModuleType) -> None:
    with pytest.raises(SystemExit) as exited:
        install.main(["--dev", "./my-plugin"])
    assert exited.value.code == 2


def test_a_package_argument_is_named_by_its_distribution(
    install: ModuleType, tmp_path: Path
) -> None:
    project = tmp_path / "my-plugin"
    project.mkdir()
    (project / "pyproject.toml").write_text('[project]\nname = "meith-weather"\nversion = "1"\n')
    assert install._dist_of(str(project)) == "meith-weather"
    assert install._dist_of("meith-weather[extra]>=0.2,<1") == "meith-weather"
    assert install._dist_of(str(tmp_path / "no-project")) is None


def _installed(tmp_path: Path) -> tuple[Path, Path, Path]:
    """What `install` leaves, as far as uninstall sees: a venv whose `meith` records how it
    was run, and the link to it."""
    prefix, bin_dir = tmp_path / "venv", tmp_path / "bin"
    (prefix / "bin").mkdir(parents=True)
    (prefix / "pyvenv.cfg").write_text("home = /usr/bin\n")
    ran = tmp_path / "ran"
    meith = prefix / "bin" / "meith"
    meith.write_text(f'#!/bin/sh\necho "$@" > {ran}\n')
    meith.chmod(0o755)
    bin_dir.mkdir()
    (bin_dir / "meith").symlink_to(meith)
    return prefix, bin_dir, ran


def test_uninstall_stops_the_runtimes_and_removes_the_venv_and_the_link(
    install: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    prefix, bin_dir, ran = _installed(tmp_path)
    monkeypatch.setenv("MEITH_HOME", str(tmp_path / "home"))
    argv = ["--uninstall", "--prefix", str(prefix), "--bin-dir", str(bin_dir)]
    assert install.main(argv) == 0
    assert ran.read_text() == "stop --all\n"
    assert not prefix.exists()
    assert not (bin_dir / "meith").is_symlink()
    err = capsys.readouterr().err
    assert f"kept {tmp_path / 'home'}: your grants, plugin approvals" in err
    # Again: nothing left to remove, and it says so.
    assert install.main(argv) == 0
    assert f"no meith environment in {prefix}" in capsys.readouterr().err


def test_uninstall_removes_only_what_install_made(
    install: ModuleType, tmp_path: Path, capsys
) -> None:
    prefix, bin_dir, _ = _installed(tmp_path)
    (bin_dir / "meith").unlink()
    (bin_dir / "meith").write_text("someone else's meith\n")
    not_a_venv = tmp_path / "documents"
    not_a_venv.mkdir()
    argv = ["--uninstall", "--bin-dir", str(bin_dir), "--prefix"]
    assert install.main([*argv, str(not_a_venv)]) == 1
    assert not_a_venv.is_dir()
    assert "is not a virtual environment: nothing removed" in capsys.readouterr().err
    assert install.main([*argv, str(prefix)]) == 0
    assert (bin_dir / "meith").read_text() == "someone else's meith\n"
    assert "is not the link this script made; left as it is" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        install.main(["--uninstall", "./my-plugin"])
