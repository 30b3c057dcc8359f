"""MkDocs hooks (mkdocs.yml `hooks:`): the site is built from the same Markdown GitHub renders.

- The repository's own front pages join the site without moving: README.md is the home page,
  each plugin's README (its distribution's readme on the package index) a page under `tools/`,
  CHANGELOG.md the changelog.
- Links are written the way GitHub resolves them: relative to the file that holds them. Here
  each link is resolved against its file's real place in the repository; a link to another
  page of the site becomes that page's link (MkDocs then checks it, anchor included), a link to
  any other file of the repository (source code, `bench/`, LICENSE) points at it in
  `repo_url` when mkdocs.yml sets one and is plain text otherwise, and a link to nothing is a
  warning, which fails `mkdocs build --strict`. An image of the site (`docs/images/…` from the
  README) becomes the site's path to it.
- Heading anchors are GitHub's (`slug`), so `page.md#some-heading` means the same on both.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.plugins import get_plugin_logger
from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page

log = get_plugin_logger(__name__)

ROOT = Path(__file__).resolve().parents[1]

#: Repository files that are pages of the site: path in the repository -> path in the site.
EXTRA_PAGES = {
    "README.md": "index.md",
    "meith_plugins_git/README.md": "tools/git.md",
    "meith_plugins_process/README.md": "tools/process.md",
    "meith_plugins_browser/README.md": "tools/browser.md",
    "meith_plugins_files/README.md": "tools/files.md",
    "CHANGELOG.md": "changelog.md",
}

_FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.S | re.M)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
#: `[text](target)` (not an image); the text may hold inline code and span lines.
_LINK = re.compile(r"(?<!!)\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\(([^)\s]+)\)")
#: `![alt](target)`.
_IMAGE = re.compile(r"!\[([^\]]*)\]\(([^)\s]+)\)")
_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)


def slug(heading: str, separator: str = "-") -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, each space a dash
    (tests/docs/test_markdown_links.py checks the same rule on GitHub's side)."""
    text = re.sub(r"<[^>]+>", "", heading)  # the toc extension hands over rendered HTML
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", separator)


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    toc = config.mdx_configs.setdefault("toc", {})
    toc["slugify"] = slug
    return config


def on_files(files: Files, config: MkDocsConfig) -> Files:
    for source, site_path in EXTRA_PAGES.items():
        path = ROOT / source
        if not path.exists():
            log.warning(f"{source} is missing: the site's {site_path} is built from it")
            continue
        files.append(File.generated(config, site_path, abs_src_path=str(path)))
    return files


def _by_real_path(found: Any) -> dict[Path, File]:
    return {Path(f.abs_src_path).resolve(): f for f in found if f.abs_src_path is not None}


def _source_url(config: MkDocsConfig, relative: str, is_dir: bool) -> str | None:
    repo_url = config.repo_url
    if not repo_url:
        return None
    branch = config.extra.get("source_branch", "main")
    kind = "tree" if is_dir else "blob"
    return f"{repo_url.rstrip('/')}/{kind}/{branch}/{relative}"


def _rewrite(markdown: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    if page.file.abs_src_path is None:
        return markdown
    real_dir = Path(page.file.abs_src_path).resolve().parent
    pages = _by_real_path(files.documentation_pages())
    media = _by_real_path(files.media_files())
    site_dir = posixpath.dirname(page.file.src_uri)

    def image(match: re.Match[str]) -> str:
        alt, target = match.group(1), match.group(2)
        if _SCHEME.match(target) or target.startswith("/"):
            return match.group(0)
        found = media.get((real_dir / target).resolve())
        if found is None:
            return match.group(0)  # MkDocs warns about an image it does not have
        return f"![{alt}]({posixpath.relpath(found.src_uri, site_dir or '.')})"

    def link(match: re.Match[str]) -> str:
        text, target = match.group(1), match.group(2)
        if _SCHEME.match(target) or target.startswith(("#", "/")):
            return match.group(0)
        path_part, hash_, anchor = target.partition("#")
        real = (real_dir / path_part).resolve()
        to_page = pages.get(real)
        if to_page is not None:
            relative = posixpath.relpath(to_page.src_uri, site_dir or ".")
            return f"[{text}]({relative}{hash_}{anchor})"
        if not real.exists():
            log.warning(f"{page.file.src_uri} links to {target}, and {real} does not exist")
            return match.group(0)
        try:
            in_repo = real.relative_to(ROOT).as_posix()
        except ValueError:
            log.warning(f"{page.file.src_uri} links to {target}, outside the repository")
            return match.group(0)
        url = _source_url(config, in_repo, real.is_dir())
        return f"[{text}]({url}{hash_}{anchor})" if url else text

    out = []
    at = 0
    for fence in _FENCE.finditer(markdown):
        out.append(_rewrite_prose(markdown[at : fence.start()], link, image))
        out.append(fence.group(0))
        at = fence.end()
    out.append(_rewrite_prose(markdown[at:], link, image))
    return "".join(out)


def _rewrite_prose(text: str, link: Any, image: Any) -> str:
    """Rewrite the links and images of prose, leaving alone what sits inside inline code."""
    return _outside_code(_outside_code(text, _LINK, link), _IMAGE, image)


def _outside_code(text: str, pattern: re.Pattern[str], rewrite: Any) -> str:
    code_spans = [m.span() for m in _INLINE_CODE.finditer(text)]

    def outside_code(match: re.Match[str]) -> str:
        start, end = match.span()
        if any(s <= start and end <= e for s, e in code_spans):
            return match.group(0)
        return str(rewrite(match))

    return pattern.sub(outside_code, text)


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    return _rewrite(markdown, page, config, files)


__all__ = ["EXTRA_PAGES", "on_config", "on_files", "on_page_markdown", "slug"]
