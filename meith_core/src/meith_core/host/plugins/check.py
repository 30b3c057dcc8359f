"""`meith plugins check`: vet a plugin before it is published.

Each plugin is loaded on its own into a runtime on a throw-away MEITH_HOME (never started:
nothing it would start runs), then its tools, hooks and source are checked. Every problem is
listed; errors make the check fail, warnings do not.
"""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from typing import Any, Literal

from meith_core.base.home import MeithHome
from meith_core.call.tooldef import NO_TIMEOUT, ToolDefinition
from meith_core.host.plugins.api import declared_range
from meith_core.host.plugins.hookspecs import ENTRY_POINT_GROUP, PROJECT_NAME
from meith_core.host.plugins.imports import scan
from meith_core.host.plugins.manager import PluginRecord
from meith_core.protocol.capabilities import PRIVILEGED, Capability

Level = Literal["error", "warning"]
#: Importing a plugin slower than this slows `meith serve` start-up noticeably.
SLOW_IMPORT_S = 0.2
#: Capabilities whose grants a directory confines (writes and started processes).
SCOPED = frozenset({Capability.WRITES_FILES, Capability.STARTS_PROCESS, Capability.DESTRUCTIVE})
_PATH_NAMES = frozenset(
    {"cwd", "path", "paths", "dir", "directory", "root", "file", "target", "dest", "destination"}
)


@dataclass
class PluginReport:
    plugin: str
    distribution: str | None = None
    version: str | None = None
    import_ms: float | None = None
    tools: list[str] = field(default_factory=list)
    problems: list[tuple[Level, str]] = field(default_factory=list)

    def add(self, level: Level, message: str) -> None:
        self.problems.append((level, message))

    @property
    def ok(self) -> bool:
        return not any(level == "error" for level, _ in self.problems)

    def as_json(self) -> dict[str, Any]:
        return {
            "plugin": self.plugin,
            "distribution": self.distribution,
            "version": self.version,
            "importMs": self.import_ms,
            "tools": self.tools,
            "ok": self.ok,
            "problems": [{"level": lv, "message": m} for lv, m in self.problems],
        }


def _is_path_like(name: str) -> bool:
    lowered = name.lower()
    return lowered in _PATH_NAMES or lowered.endswith(("path", "dir", "directory", "file"))


def _undocumented(schema: dict[str, Any], where: str = "") -> Iterator[str]:
    """Dotted names of properties without a description, nested objects included."""
    for name, prop in (schema.get("properties") or {}).items():
        path = f"{where}{name}"
        if not isinstance(prop, dict):
            continue
        if not str(prop.get("description") or "").strip():
            yield path
        for nested in _subschemas(prop):
            yield from _undocumented(nested, path + ".")


def _subschemas(prop: dict[str, Any]) -> Iterator[dict[str, Any]]:
    if "properties" in prop:
        yield prop
    items = prop.get("items")
    if isinstance(items, dict):
        yield from _subschemas(items)
    for key in ("anyOf", "oneOf", "allOf"):
        for option in prop.get(key) or []:
            if isinstance(option, dict):
                yield from _subschemas(option)


def _has_ref(node: Any) -> bool:
    if isinstance(node, dict):
        return "$ref" in node or "$defs" in node or any(_has_ref(v) for v in node.values())
    if isinstance(node, list):
        return any(_has_ref(v) for v in node)
    return False


def check_tool(report: PluginReport, tool: ToolDefinition) -> None:
    where = f"tool {tool.name}"
    try:
        descriptor = tool.descriptor(report.plugin)
    except Exception as exc:
        report.add("error", f"{where}: its descriptor cannot be built: {exc}")
        return
    if len(tool.description.split()) < 3:
        report.add(
            "warning", f"{where}: the description is too short to tell an agent when to use it"
        )
    for key in ("inputSchema", "outputSchema"):
        if _has_ref(descriptor.get(key)):
            report.add("error", f"{where}: {key} is not self-contained (it has $ref/$defs)")
    for name in _undocumented(tool.input_schema):
        report.add(
            "error",
            f"{where}: argument {name!r} has no description (Field(description=...)); agents "
            "read it to fill the argument in",
        )
    caps = set(tool.capabilities)
    scoped = caps & SCOPED
    paths = [n for n in (tool.input_schema.get("properties") or {}) if _is_path_like(n)]
    if scoped and paths and tool.grant_scope is None:
        report.add(
            "error",
            f"{where}: takes {', '.join(repr(p) for p in paths)} and declares "
            f"{', '.join(sorted(c.value for c in scoped))}, but does not say how it honours a "
            'grant confined to a directory: check ctx.grant_scope and declare grant_scope="enforced" '
            '(or grant_scope="not-applicable" when its paths never lead to writes or processes)',
        )
    if caps & PRIVILEGED and tool.declared_target is None:
        report.add(
            "error",
            f"{where}: declares {', '.join(sorted(c.value for c in caps & PRIVILEGED))} but not "
            'what it acts on: acts_on="path:ARG" (the path in argument ARG, e.g. "path:cwd"), '
            'acts_on="global" (state every session shares: settings, plugins, the runtime) or '
            'acts_on=ActsOn.object(resolver, what="...") (an existing object\'s own directory). '
            "Undeclared, a grant confined to a directory covers it only through a `cwd` argument",
        )
    if tool.grant_scope is not None and not scoped:
        report.add(
            "warning",
            f"{where}: grant_scope is set but the tool declares none of "
            f"{', '.join(sorted(c.value for c in SCOPED))}",
        )
    if Capability.READ_ONLY in caps and caps & {Capability.WRITES_FILES, Capability.DESTRUCTIVE}:
        report.add("error", f"{where}: declares read-only together with a capability that writes")
    if tool.timeout_ms == NO_TIMEOUT and not tool.is_async:
        report.add(
            "error",
            f"{where}: a sync tool with NO_TIMEOUT can never be stopped (a thread cannot be "
            "cancelled); make it async or give it a timeout",
        )
    elif tool.timeout_ms is not None and 0 < tool.timeout_ms < 1000:
        report.add("warning", f"{where}: timeout_ms={tool.timeout_ms} is under a second")


def check_hooks(report: PluginReport, plugin: Any) -> None:
    """Methods named like hooks but not marked `@hookimpl` are never called."""
    marker = f"{PROJECT_NAME}_impl"
    for name, value in inspect.getmembers(plugin):
        if name.startswith("meith_") and callable(value) and not hasattr(value, marker):
            report.add("error", f"{name} is not marked @hookimpl, so meith never calls it")
    if declared_range(plugin) is None:
        report.add(
            "warning",
            'no MEITH_PLUGIN_API declared; add MEITH_PLUGIN_API = ">=1,<2" to the plugin module '
            "so a host with an incompatible API refuses it with a clear message",
        )


def check_source(report: PluginReport, plugin: Any) -> None:
    module = inspect.getmodule(plugin if inspect.isclass(plugin) else type(plugin)) or (
        inspect.getmodule(plugin)
    )
    if module is None:
        return
    top = sys.modules.get(module.__name__.split(".")[0])
    filename = getattr(top, "__file__", None)
    if not filename:
        return
    root = Path(filename)
    for line in scan(root.parent if root.name == "__init__.py" else root):
        report.add("error", line)


_IMPORT_PROBE = """
import json, sys, time
sys.path[:0] = json.loads(sys.argv[2])
import meith_core.host.runtime  # what `meith serve` has imported before it loads plugins
from importlib.metadata import EntryPoint
began = time.perf_counter()
EntryPoint("probe", sys.argv[1], "meith.plugins").load()
print(time.perf_counter() - began)
"""


def measure_import(value: str, extra_path: list[str]) -> float | None:
    """Seconds a fresh interpreter takes to import entry point `value` on top of what the
    runtime imports anyway; None when it cannot be measured."""
    try:
        done = subprocess.run(
            [sys.executable, "-c", _IMPORT_PROBE, value, json.dumps(extra_path)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        return float(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 else None
    except (OSError, ValueError, IndexError, subprocess.TimeoutExpired):
        return None


def _record_report(
    record: PluginRecord, others: dict[str, str], extra_path: list[str] | None = None
) -> PluginReport:
    report = PluginReport(record.id, record.distribution, record.version)
    if record.entry_point is not None:
        record.import_s = measure_import(record.entry_point, extra_path or [])
    if record.import_s is not None:
        report.import_ms = round(record.import_s * 1000, 1)
        if record.import_s > SLOW_IMPORT_S:
            report.add(
                "warning",
                f"importing the plugin took {report.import_ms:.0f} ms (over "
                f"{SLOW_IMPORT_S * 1000:.0f} ms slows every meith serve start-up); import heavy "
                "modules inside the tools instead",
            )
    if record.status != "loaded":
        report.add("error", f"does not load: {record.reason}")
        return report
    report.tools = [t.name for t in record.tools]
    if not record.tools:
        report.add("warning", "the plugin provides no tools (fine for an approver-only plugin)")
    for tool in record.tools:
        check_tool(report, tool)
        owner = others.get(tool.name)
        if owner is not None and owner != record.id:
            report.add(
                "error", f"tool {tool.name}: the name is taken by installed plugin {owner!r}"
            )
    check_hooks(report, record.obj)
    check_source(report, record.obj)
    return report


def _installed_tool_owners() -> dict[str, str]:
    """Tool name -> plugin id over every installed plugin (and the built-in core)."""
    from meith_core.host.runtime import Runtime

    with tempfile.TemporaryDirectory() as tmp:
        rt = Runtime(MeithHome(Path(tmp)), plugin_deny=set())
        rt.discover_plugins()
        owners = {
            t.name: r.id
            for r in rt.plugins.records.values()
            if r.status == "loaded"
            for t in r.tools
        }
        rt.audit.close()
    return owners


def check_installed(plugin_ids: list[str] | None) -> list[PluginReport]:
    """Check installed plugins (all of them when `plugin_ids` is None)."""
    from meith_core.host.runtime import Runtime

    installed = sorted({ep.name for ep in entry_points(group=ENTRY_POINT_GROUP)} - {"core"})
    wanted = installed if plugin_ids is None else plugin_ids
    reports: list[PluginReport] = []
    others = _installed_tool_owners()
    for pid in wanted:
        if pid not in installed:
            report = PluginReport(pid)
            report.add(
                "error",
                f"no installed plugin {pid!r} (installed: {', '.join(installed) or 'none'}); "
                "give a project directory to check one that is not installed",
            )
            reports.append(report)
            continue
        with tempfile.TemporaryDirectory() as tmp:
            rt = Runtime(MeithHome(Path(tmp)), plugin_allow={pid}, plugin_deny=set())
            rt.discover_plugins()
            reports.append(_record_report(rt.plugins.records[pid], others))
            rt.audit.close()
    return reports


def check_project(path: Path) -> list[PluginReport]:
    """Check the plugins a project directory (with its pyproject.toml) declares."""
    from meith_core.host.runtime import Runtime

    pyproject = path / "pyproject.toml"
    try:
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        report = PluginReport(str(path))
        report.add("error", f"cannot read {pyproject}: {exc}")
        return [report]
    project = data.get("project", {})
    declared = project.get("entry-points", {}).get(ENTRY_POINT_GROUP, {})
    if not declared:
        report = PluginReport(str(path))
        report.add(
            "error",
            f'{pyproject} declares no [project.entry-points."{ENTRY_POINT_GROUP}"]: meith '
            "would never find the plugin",
        )
        return [report]
    deps = [str(d) for d in project.get("dependencies", [])]
    core_dep = next((d for d in deps if d.replace("_", "-").startswith("meith-core")), None)
    src = path / "src"
    sys.path.insert(0, str(src if src.is_dir() else path))
    reports: list[PluginReport] = []
    others = _installed_tool_owners()
    for pid, value in declared.items():
        with tempfile.TemporaryDirectory() as tmp:
            rt = Runtime(MeithHome(Path(tmp)), load_plugins=False)
            try:
                obj = EntryPoint(pid, value, ENTRY_POINT_GROUP).load()
            except BaseException as exc:
                report = PluginReport(pid, project.get("name"), project.get("version"))
                report.add("error", f"does not load: import failed: {type(exc).__name__}: {exc}")
                reports.append(report)
                continue
            record = rt.load_plugin(pid, obj, version=project.get("version"))
            record.distribution = project.get("name")
            record.entry_point = value
            report = _record_report(record, others, [str(src if src.is_dir() else path)])
            rt.audit.close()
        if core_dep is None:
            report.add("error", "the project does not depend on meith-core")
        elif not any(op in core_dep for op in ("<", "~=", "==")):
            report.add(
                "warning",
                f"dependency {core_dep!r} has no upper bound; a future major meith-core may "
                "change the plugin API (e.g. meith-core>=0.1,<1)",
            )
        reports.append(report)
    return reports
