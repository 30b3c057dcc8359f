"""Commit identities: the `git` settings section, and `git_identity_detect`.

Detection never reads credentials: it asks git for `user.name`/`user.email` and parses the
account lines of `gh auth status` / `glab auth status` (which print no token unless asked to).
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping
from typing import Any, Final

import anyio
from pydantic import BaseModel, ConfigDict, Field, field_validator

from meith_core import ErrorCode, ToolError
from meith_plugins_git.process import run_program
from meith_plugins_git.repo import Repo
from meith_plugins_git.runner import READ_ONLY, Git, Profile

ACCOUNT_DETECT_TIMEOUT_S: Final = 3.0
PROFILE_ID_PREFIX: Final = "gitacct_"
SETTINGS_SECTION: Final = "git"


class GitIdentityProfile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, max_length=200, description="Profile id (gitacct_...)")
    label: str = Field(default="", max_length=200)
    name: str = Field(default="", max_length=200)
    email: str = Field(default="", max_length=320)

    @field_validator("name", "email", "label")
    @classmethod
    def _one_line(cls, value: str) -> str:
        if any(ch in value for ch in "\0\n\r<>"):
            raise ValueError("must be one line without NUL, < or >")
        return value


class GitSettings(BaseModel):
    """`settings.json` → `git`."""

    model_config = ConfigDict(extra="forbid")

    identityProfiles: list[GitIdentityProfile] = Field(default_factory=list)
    activeIdentityProfileId: str | None = None
    #: false: git_commit, git_branch switch and git_worktree run no repository hooks either.
    runHooks: bool = True


def git_settings(settings: Mapping[str, Any]) -> GitSettings:
    section = settings.get(SETTINGS_SECTION)
    if section is None:
        return GitSettings()
    try:
        return GitSettings.model_validate(_thaw(section))
    except ValueError as exc:
        raise ToolError(ErrorCode.TOOL_FAILED, f"Invalid git settings: {exc}") from None


def _thaw(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _thaw(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [_thaw(v) for v in value]
    return value


def commit_identity_env(settings: GitSettings) -> dict[str, str]:
    """Author and committer from the active profile; {} lets git's config decide."""
    active = settings.activeIdentityProfileId
    if not active:
        return {}
    profile = next((p for p in settings.identityProfiles if p.id == active), None)
    if profile is None:
        raise ToolError(ErrorCode.TOOL_FAILED, "Active git identity profile no longer exists.")
    name, email = profile.name.strip(), profile.email.strip()
    if not name or not email:
        raise ToolError(
            ErrorCode.TOOL_FAILED, "Active git identity profile requires both a name and email."
        )
    return {
        "GIT_AUTHOR_NAME": name,
        "GIT_AUTHOR_EMAIL": email,
        "GIT_COMMITTER_NAME": name,
        "GIT_COMMITTER_EMAIL": email,
    }


# -- detection --------------------------------------------------------------------------

_GH_LINE: Final = re.compile(r"Logged in to (\S+) (?:account|as) (\S+)")
_GLAB_LINE: Final = re.compile(r"Logged in to (\S+) as (\S+)")
_GLAB_HOST_LINE: Final = re.compile(r"^\s*(\S+?):?\s*$")
_GLAB_PREFIXED: Final = re.compile(r"^\s*(\S+?):\s.*Logged in .*? as (\S+)")


def _clean_user(user: str) -> str:
    return user.strip().strip("()'\"").rstrip(".,")


def parse_gh_status(text: str) -> list[tuple[str, str]]:
    """`(host, user)` pairs from `gh auth status` output."""
    out = []
    for line in text.splitlines():
        match = _GH_LINE.search(line)
        if match:
            out.append((match.group(1), _clean_user(match.group(2))))
    return out


def parse_glab_status(text: str) -> list[tuple[str, str]]:
    """`(host, user)` pairs from `glab auth status` output (either layout glab prints)."""
    out = []
    host: str | None = None
    for line in text.splitlines():
        prefixed = _GLAB_PREFIXED.search(line)
        if prefixed:
            out.append((prefixed.group(1), _clean_user(prefixed.group(2))))
            continue
        match = _GLAB_LINE.search(line)
        if match:
            out.append((match.group(1), _clean_user(match.group(2))))
            continue
        bare = _GLAB_HOST_LINE.match(line)
        if bare and "." in bare.group(1) and not line.startswith((" ", "\t")):
            host = bare.group(1)
        elif host and "Logged in" in line:
            tail = re.search(r" as (\S+)", line)
            if tail:
                out.append((host, _clean_user(tail.group(1))))
    return out


def _suggestion(
    source: str, label: str, name: str, email: str, detail: str, **extra: str
) -> dict[str, Any]:
    out: dict[str, Any] = {"source": source, "label": label, "name": name, "email": email}
    out.update({k: v for k, v in extra.items() if v})
    out["detail"] = detail
    return out


async def _git_config_get(git: Git, cwd: str, scope: list[str], key: str) -> str:
    try:
        with anyio.fail_after(ACCOUNT_DETECT_TIMEOUT_S):
            done = await git.run(
                ["config"], [*scope, "--get", key], cwd=cwd, profile=READ_ONLY, ok_codes=(0, 1)
            )
    except (TimeoutError, ToolError):
        return ""
    return done.stdout.decode("utf-8", "replace").strip()


async def _cli_status(program: str, env: Mapping[str, str]) -> str:
    path = shutil.which(program, path=env.get("PATH"))
    if path is None:
        return ""
    try:
        with anyio.fail_after(ACCOUNT_DETECT_TIMEOUT_S):
            done = await run_program(
                [path, "auth", "status"], cwd=None, env=env, max_stdout=256 * 1024
            )
    except (TimeoutError, ToolError, OSError):
        return ""
    # Older gh versions print to stderr; only the account lines are ever read.
    return done.stdout.decode("utf-8", "replace") + "\n" + done.stderr.decode("utf-8", "replace")


def _home() -> str:
    return os.path.expanduser("~")


async def detect_identities(git: Git, cwd: str, repo: Repo | None) -> dict[str, Any]:
    suggestions: list[dict[str, Any]] = []
    home = _home()
    name = await _git_config_get(git, home, ["--global"], "user.name")
    email = await _git_config_get(git, home, ["--global"], "user.email")
    suggestions.append(
        _suggestion(
            "global", "Global Git config", name, email, "git config --global user.name/user.email"
        )
    )
    if repo is not None:
        name = await _repo_config_get(repo, "user.name")
        email = await _repo_config_get(repo, "user.email")
        suggestions.append(
            _suggestion("repo", "Current repository", name, email, f"git config in {repo.root}")
        )
    cli_env = {k: v for k, v in git.environment(_PLAIN).items() if not k.startswith("GIT_")}
    cli_env.update({"GH_PROMPT_DISABLED": "1", "NO_COLOR": "1", "GLAB_NO_PROMPT": "1"})
    for host, user in parse_gh_status(await _cli_status("gh", cli_env)):
        suggestions.append(
            _suggestion(
                "github-cli",
                f"GitHub: {user}",
                user,
                f"{user}@users.noreply.github.com",
                f"gh auth status ({host})",
                username=user,
                host=host,
            )
        )
    for host, user in parse_glab_status(await _cli_status("glab", cli_env)):
        suggestions.append(
            _suggestion(
                "gitlab-cli",
                f"GitLab: {user}",
                user,
                f"{user}@users.noreply.gitlab.com",
                f"glab auth status ({host})",
                username=user,
                host=host,
            )
        )
    return {"root": repo.root if repo else None, "suggestions": dedupe(suggestions)}


async def _repo_config_get(repo: Repo, key: str) -> str:
    try:
        with anyio.fail_after(ACCOUNT_DETECT_TIMEOUT_S):
            done = await repo.run(["config"], ["--get", key], profile=READ_ONLY, ok_codes=(0, 1))
    except (TimeoutError, ToolError):
        return ""
    return done.stdout.decode("utf-8", "replace").strip()


_PLAIN: Final = Profile("plain", optional_locks=False, hooks=False)


def dedupe(suggestions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Drop empties, then duplicates by name+email (case-insensitive), first one wins."""
    seen: set[tuple[str, str]] = set()
    out = []
    for item in suggestions:
        name, email = item["name"].strip(), item["email"].strip()
        if not name or not email:
            continue
        key = (name.casefold(), email.casefold())
        if key in seen:
            continue
        seen.add(key)
        out.append(item)
    return out
