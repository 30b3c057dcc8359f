// The meith console. Plain JavaScript, no third-party code; every value from the runtime is
// put on the page as text (never as HTML).
"use strict";

const CSRF = document.querySelector('meta[name="meith-csrf"]').content;
// skew: this browser's clock minus the console's, so a request's deadline (the runtime's
// clock) counts down truly here.
const state = { approvals: new Map(), audit: [], sessions: [], revoked: new Set(), selected: 0, logTimer: null, own: null, skew: 0 };

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") node.className = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v);
  }
  for (const c of children) if (c !== null && c !== undefined) node.append(c instanceof Node ? c : String(c));
  return node;
}

async function post(url, body) {
  const resp = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", "x-meith-csrf": CSRF },
    body: JSON.stringify(body || {}),
    credentials: "same-origin",
  });
  let data = {};
  try { data = await resp.json(); } catch (e) { /* not JSON */ }
  if (!resp.ok) throw new Error(data.error || resp.statusText);
  return data;
}

async function getJson(url) {
  const resp = await fetch(url, { credentials: "same-origin" });
  const data = await resp.json();
  if (!resp.ok) throw new Error(data.error || resp.statusText);
  return data;
}

const time = (ms) => (ms ? new Date(ms).toISOString().replace("T", " ").slice(0, 19) : "-");
const short = (id) => (id ? String(id).slice(0, 18) : "-");
const secondsLeft = (req) => Math.max(0, Math.round((req.deadline - Date.now()) / 1000));

// What a button did, said where it was pressed (an element per panel).
function said(id, text, failed) {
  const node = document.getElementById(id);
  node.textContent = text;
  node.className = failed ? "result error" : "result";
}

// -- panels --------------------------------------------------------------------------------

function show(panel) {
  for (const section of document.querySelectorAll(".panel")) section.hidden = section.id !== panel;
  for (const a of document.querySelectorAll("nav a")) a.classList.toggle("active", a.dataset.panel === panel);
  if (panel === "grants") { loadGrants(); loadPlugins(); }
  if (panel === "processes") loadProcesses();
}
window.addEventListener("hashchange", () => show(location.hash.slice(1) || "approvals"));

// -- approvals -----------------------------------------------------------------------------

function renderApprovals() {
  const list = document.getElementById("approval-list");
  list.replaceChildren();
  const items = [...state.approvals.values()];
  const badge = document.getElementById("approval-count");
  badge.hidden = items.length === 0;
  badge.textContent = String(items.length);
  document.title = items.length ? `(${items.length}) meith console` : "meith console";
  if (!items.length) { list.append(el("p", { class: "empty" }, "Nothing waits for an answer.")); return; }
  state.selected = Math.min(state.selected, items.length - 1);
  items.forEach((req, i) => {
    // The runtime's view of the call (`shown`, `command`): whole, only secret values masked.
    // `arguments` holds the same values as JSON (a write's path and content, to diff against).
    const args = typeof req.shown === "string" ? req.shown
      : typeof req.arguments === "string" ? req.arguments : JSON.stringify(req.arguments, null, 1);
    const left = secondsLeft(req);
    const answer = (decision) => () => decide(req.approvalId, decision);
    list.append(el("div", { class: "card" + (i === state.selected ? " selected" : ""), "data-approval": req.approvalId },
      el("strong", {}, `${req.label || req.caller} wants to run ${req.toolName}`),
      el("dl", {},
        el("dt", {}, "Tool"), el("dd", {}, el("code", {}, req.toolName), ` (plugin ${req.plugin})`),
        el("dt", {}, "Capabilities"), el("dd", {}, (req.capabilities || []).join(", ")),
        el("dt", {}, "Directory"), el("dd", {}, el("code", {}, req.cwd || "-")),
        ...(req.runs ? [el("dt", {}, "Runs"), el("dd", { class: "runs" }, req.runs)] : []),
        el("dt", {}, "Caller"), el("dd", {}, `${req.caller}${req.label ? " · " + req.label : ""}`),
        el("dt", {}, "Session"), el("dd", {}, el("code", {}, req.sessionId || "-")),
        ...(req.command ? [el("dt", {}, "Command"), el("dd", {}, el("pre", { class: "command" }, req.command))] : []),
        el("dt", {}, "Arguments (whole; secret values masked)"), el("dd", {}, el("pre", {}, args)),
        el("dt", {}, "Denied in"), el("dd", { class: "countdown" }, `${left} s without an answer`),
      ),
      el("button", { class: "allow", type: "button", "data-decision": "allow_once", onclick: answer("allow_once") }, "Allow once (o)"), " ",
      el("button", { class: "allow", type: "button", "data-decision": "allow_session", onclick: answer("allow_session") }, "Allow for the session (s)"), " ",
      el("button", { class: "deny", type: "button", "data-decision": "deny", onclick: answer("deny") }, "Deny (d)"),
    ));
  });
}

const DECIDED = { allow_once: "Allowed once", allow_session: "Allowed for the session", deny: "Denied" };

async function decide(approvalId, decision) {
  const req = state.approvals.get(approvalId);
  const what = req ? `${req.label || req.caller}'s ${req.toolName}` : "the request";
  try {
    await post(`/api/approvals/${encodeURIComponent(approvalId)}`, { decision });
    said("approval-result", `${DECIDED[decision]}: ${what}.`);
  } catch (e) { said("approval-result", `Not answered: ${what}: ${e.message}.`, true); }
  state.approvals.delete(approvalId);
  renderApprovals();
}

function addApproval(req) {
  // The request's own time: a page opened late shows what is left, not the whole wait.
  const asked = req.askedAt ? req.askedAt + state.skew : Date.now();
  req.deadline = asked + (req.timeoutMs || 60000);
  state.approvals.set(req.approvalId, req);
  renderApprovals();
  if (document.hidden && "Notification" in window && Notification.permission === "granted") {
    new Notification("meith: approval needed", { body: `${req.label || req.caller} wants to run ${req.toolName}`, tag: req.approvalId });
  }
}

document.addEventListener("keydown", (ev) => {
  if (ev.target.closest("input, select, textarea") || ev.ctrlKey || ev.metaKey || ev.altKey) return;
  if (document.getElementById("approvals").hidden) return;
  const items = [...state.approvals.values()];
  if (!items.length) return;
  const current = items[Math.min(state.selected, items.length - 1)];
  const keys = { o: "allow_once", s: "allow_session", d: "deny" };
  if (keys[ev.key]) { ev.preventDefault(); decide(current.approvalId, keys[ev.key]); }
  else if (ev.key === "j") { state.selected = Math.min(items.length - 1, state.selected + 1); renderApprovals(); }
  else if (ev.key === "k") { state.selected = Math.max(0, state.selected - 1); renderApprovals(); }
});

setInterval(() => {
  for (const node of document.querySelectorAll(".card")) {
    const req = state.approvals.get(node.dataset.approval);
    if (req) node.querySelector(".countdown").textContent = `${secondsLeft(req)} s without an answer`;
  }
}, 1000);

const notifyButton = document.getElementById("notify");
if ("Notification" in window && Notification.permission === "default") {
  notifyButton.hidden = false;
  notifyButton.addEventListener("click", async () => { await Notification.requestPermission(); notifyButton.hidden = true; });
}

// -- audit ---------------------------------------------------------------------------------

function outcomeOf(r) {
  if (r.kind === "coalesced") return `${r.outcome || ""} x${r.count}`;
  return r.outcome || "";
}

function auditMatches(r, f) {
  const has = (value, wanted) => !wanted || String(value || "").toLowerCase().includes(wanted.toLowerCase());
  return has(r.sessionId, f.session) && has(r.label, f.agent) && has(r.toolName, f.tool)
    && (!f.decision || r.decision === f.decision) && has(r.outcome, f.outcome);
}

function renderAudit() {
  const f = Object.fromEntries(new FormData(document.getElementById("audit-filters")));
  const rows = state.audit.filter((r) => auditMatches(r, f)).slice(-300).reverse();
  document.getElementById("audit-rows").replaceChildren(...rows.map((r) => {
    const cls = [r.decision === "deny" ? "deny" : "", ["interrupted", "running"].includes(r.outcome) ? "interrupted" : "", r.kind === "coalesced" ? "coalesced" : ""].join(" ");
    const tag = r.kind === "coalesced" ? el("span", { class: "tag" }, "coalesced") : ["interrupted", "running"].includes(r.outcome) ? el("span", { class: "tag" }, r.outcome) : null;
    return el("tr", { class: cls, "data-audit-id": r.id || "" },
      el("td", {}, time(r.ts)),
      el("td", {}, `${r.caller || "-"}${r.label ? " · " + r.label : ""}${r.claimedCaller ? " (claimed " + r.claimedCaller + ")" : ""}`),
      el("td", {}, el("code", {}, short(r.sessionId))),
      el("td", {}, r.toolName || r.action || r.kind || "-"),
      el("td", {}, r.decision || "-"),
      el("td", {}, outcomeOf(r), tag),
      el("td", {}, r.reason || ""),
      el("td", {}, r.durationMs !== undefined ? `${Number(r.durationMs).toFixed(1)} ms` : "-"),
    );
  }));
}
document.getElementById("audit-filters").addEventListener("input", renderAudit);

function renderChain(v) {
  const chain = document.getElementById("chain");
  chain.className = "status " + (v.state === "ok" ? "ok" : v.state === "broken" ? "bad" : "");
  if (v.state === "ok") chain.textContent = `chain verified: ${v.records} records, at ${time(v.checkedAt).slice(11)} UTC`;
  else if (v.state === "broken") chain.textContent = `chain BROKEN: ${v.firstProblem ? v.firstProblem.problem : "?"}`;
  else chain.textContent = `chain: ${v.state}`;
}
document.getElementById("verify").addEventListener("click", async () => {
  try { renderChain(await post("/api/audit/verify")); } catch (e) { renderChain({ state: `not checked (${e.message})` }); }
});

// -- sessions ------------------------------------------------------------------------------

function ownsText(owns) {
  if (!owns) return "-";
  if (Array.isArray(owns)) return owns.length ? owns.map((o) => (typeof o === "string" ? o : o.id || JSON.stringify(o))).join(", ") : "-";
  if (typeof owns === "object") {
    const parts = Object.entries(owns).filter(([, v]) => (Array.isArray(v) ? v.length : v)).map(([k, v]) => `${k}: ${Array.isArray(v) ? v.map((o) => (typeof o === "string" ? o : o.id || "?")).join(", ") : v}`);
    return parts.join("; ") || "-";
  }
  return String(owns);
}

function renderSessions() {
  document.getElementById("session-rows").replaceChildren(...state.sessions.map((s) => {
    const last = state.audit.filter((r) => r.sessionId === s.sessionId).slice(-3).reverse().map((r) => `${r.toolName} (${r.outcome})`).join(", ");
    const grants = [...(s.grants || []), ...(s.standingGrants || [])].map((g) => `${g.capabilities.join("+")}${g.tool ? " " + g.tool : ""}${g.cwd ? " in " + g.cwd : ""} [${g.source}]`).join("; ");
    const revoked = state.revoked.has(s.sessionId);
    const own = s.sessionId === state.own;
    return el("tr", { "data-session": s.sessionId },
      el("td", {}, el("code", {}, s.sessionId)), el("td", {}, s.caller), el("td", {}, s.label || "-"),
      el("td", {}, (s.since || "").replace("T", " ").slice(0, 19)), el("td", {}, s.calls),
      el("td", {}, s.workspace ? el("code", {}, s.workspace) : "-"), el("td", {}, grants || "-"), el("td", {}, ownsText(s.owns)), el("td", {}, last || "-"),
      el("td", {}, own ? "this console" : revoked ? "revoked" : el("button", { class: "deny", type: "button", onclick: () => revokeSession(s) }, "Revoke")),
    );
  }));
}

async function revokeSession(s) {
  try {
    await post(`/api/sessions/${encodeURIComponent(s.sessionId)}/revoke`);
    state.revoked.add(s.sessionId);
    said("session-result", `Revoked session ${s.sessionId}${s.label ? " (" + s.label + ")" : ""}: its grants ended.`);
  } catch (e) { said("session-result", `Not revoked: ${e.message}`, true); }
  renderSessions();
}

// -- grants and plugins --------------------------------------------------------------------

async function loadGrants() {
  const data = await getJson("/api/grants");
  const error = document.getElementById("grant-error");
  const revoke = (g) => async () => {
    try {
      const r = await post(`/api/grants/${encodeURIComponent(g.id)}/revoke`);
      error.textContent = r.warning || "";
      said("grant-result", `Revoked ${g.id}.`);
    } catch (e) { error.textContent = e.message; }
    loadGrants();
  };
  document.getElementById("grant-rows").replaceChildren(...data.grants.map((g) => el("tr", { "data-grant": g.id },
    el("td", {}, el("code", {}, g.id)), el("td", {}, `${g.caller}${g.agent ? " (" + g.agent + ")" : ""}`),
    el("td", {}, (g.capabilities || []).join(", ")), el("td", {}, g.tool || "*"), el("td", {}, g.cwdPrefix || "*"),
    // As `meith grants list`: a confined grant's processes reach only what it names.
    el("td", { class: "net" }, g.cwdPrefix ? (g.net || []).join(", ") || "none" : "*"),
    el("td", {}, g.uses || "∞"), el("td", {}, g.expiresAt ? time(g.expiresAt) + (g.expired ? " (expired)" : "") : "never"),
    el("td", {}, el("button", { class: "deny", type: "button", onclick: revoke(g) }, "Revoke")),
  )));
}

document.getElementById("grant-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const form = new FormData(ev.target);
  const body = Object.fromEntries(form);
  body.capabilities = form.getAll("capabilities");
  const error = document.getElementById("grant-error");
  try {
    const r = await post("/api/grants", body);
    error.textContent = ""; ev.target.reset(); loadGrants();
    said("grant-result", `Added ${r.grant.id}.`);
  } catch (e) { error.textContent = e.message; }
});

async function loadPlugins() {
  let data;
  try { data = await getJson("/api/plugins"); } catch (e) { return; }
  const error = document.getElementById("plugin-error");
  const act = (p, what, body) => async () => {
    try {
      const r = await post(`/api/plugins/${encodeURIComponent(p.id)}/${what}`, body);
      error.textContent = r.warning || "";
      said("plugin-result", what === "approve" ? `Approved ${p.id}.` : `Revoked the approval of ${p.id}.`);
    } catch (e) { error.textContent = e.message; }
    loadPlugins();
  };
  document.getElementById("plugin-rows").replaceChildren(...data.plugins.map((p) => {
    const a = p.approval;
    const requested = p.requestedCapabilities || [];
    let approved = "no";
    if (a && a.implicit) approved = "built in";
    else if (a) approved = `${(a.capabilities || []).join(", ") || "nothing"}${a.valid ? "" : " — VOID: the plugin changed since it was approved"}`;
    const covers = a && !a.implicit ? `${a.distribution || p.id} ${a.version || ""} and its tool descriptors as approved` : `${p.distribution || p.id} ${p.version || ""} and its ${p.tools.length} tool descriptors`;
    const changes = a && a.changes && a.changes.length ? el("ul", { class: "changes" }, ...a.changes.map((c) => el("li", {}, c))) : null;
    // What `meith plugins approve PLUGIN` would do: all it requests, pinned to what it is now.
    const whole = a && a.valid && requested.every((c) => (a.capabilities || []).includes(c));
    const buttons = [];
    if (p.status === "loaded" && requested.length && !(a && a.implicit) && !whole) {
      buttons.push(el("button", { class: "allow", type: "button", "data-action": "approve", onclick: act(p, "approve", { fingerprint: p.fingerprint }) }, `Approve ${requested.join(", ")}`));
    }
    if (a && !a.implicit) {
      buttons.push(" ", el("button", { class: "deny", type: "button", "data-action": "revoke", onclick: act(p, "revoke") }, "Revoke approval"));
    }
    return el("tr", { "data-plugin": p.id },
      el("td", {}, p.id), el("td", {}, p.version || "-"), el("td", {}, p.status),
      el("td", {}, requested.join(", ") || "-"), el("td", { class: "approved" }, approved, changes ? el("br") : null, changes ? "Changed since: " : null, changes),
      el("td", {}, covers, el("br"), el("code", {}, (a && !a.implicit ? a.fingerprint : p.fingerprint) || "")),
      el("td", {}, ...buttons),
    );
  }));
}

// -- processes -----------------------------------------------------------------------------

async function tool(name, args) {
  const result = await post(`/api/tools/${name}`, args || {});
  if (!result.ok) throw new Error((result.error && result.error.message) || name + " failed");
  return result.content;
}

// A session as the owner column names it: its kind and label when it is live, and its id.
function whose(kind, sessionId) {
  const session = state.sessions.find((s) => s.sessionId === sessionId);
  return `${kind || (session ? session.caller : "session")}${session && session.label ? " · " + session.label : ""} ${short(sessionId)}`;
}

function ownerText(p) {
  const detached = p.detached ? " (detached)" : "";
  if (!p.owner || p.owner === "cli") return `you (cli)${detached}`;
  return whose(p.owner, p.ownerSession) + detached;
}

async function loadProcesses() {
  const error = document.getElementById("process-error");
  error.textContent = "";
  const rows = [];
  try {
    for (const d of (await tool("list_dev_servers")) || []) rows.push({ ...d, kind: "dev server", name: d.name || [d.command, ...(d.args || [])].join(" "), verb: "Stop", done: "Stopped", end: () => tool("stop_dev_server", { devServerId: d.id }) });
  } catch (e) { error.textContent = e.message; }
  try {
    for (const t of (await tool("list_terminals")) || []) rows.push({ ...t, kind: "terminal", name: t.shell, port: null, verb: "Kill", done: "Killed", end: () => tool("kill_terminal", { terminalId: t.id }) });
  } catch (e) { error.textContent = e.message; }
  const end = (p) => async () => {
    try { await p.end(); said("process-result", `${p.done} ${p.kind} ${p.id}.`); }
    catch (e) { said("process-result", `Not ${p.done.toLowerCase()}: ${p.kind} ${p.id}: ${e.message}`, true); }
    loadProcesses();
  };
  document.getElementById("process-rows").replaceChildren(...rows.map((p) => el("tr", { "data-process": p.id },
    el("td", {}, el("code", {}, p.id)), el("td", {}, p.kind), el("td", {}, p.name), el("td", {}, el("code", {}, p.cwd)),
    el("td", { class: "owner" }, ownerText(p)), el("td", { class: "status" }, p.status), el("td", {}, p.port || "-"),
    el("td", {}, el("button", { type: "button", onclick: () => followLog(p.id) }, "Log"), " ",
      ["running", "starting"].includes(p.status) ? el("button", { class: "deny", type: "button", onclick: end(p) }, p.verb) : null),
  )));
  let tabs = [];
  try { tabs = (await tool("get_tabs")) || []; } catch (e) { /* no browser plugin */ }
  if (!Array.isArray(tabs)) tabs = tabs.browserTabs || [];
  document.getElementById("tab-rows").replaceChildren(...tabs.map((t) => el("tr", { "data-tab": t.id },
    el("td", {}, el("code", {}, t.id)), el("td", {}, t.title || ""), el("td", {}, t.url || ""),
    el("td", { class: "owner" }, t.ownerId ? whose(null, t.ownerId) : "unclaimed"),
    el("td", {}, el("button", { type: "button", onclick: () => screenshot(t.id) }, "Screenshot")),
  )));
}
document.getElementById("refresh-processes").addEventListener("click", loadProcesses);

function followLog(processId) {
  const pre = document.getElementById("process-log");
  pre.hidden = false;
  pre.textContent = "";
  said("process-result", `The log of ${processId}, live:`);
  let since = 0;
  clearInterval(state.logTimer);
  const poll = async () => {
    try {
      const content = await tool("get_process_logs", since ? { processId, sinceSeq: since } : { processId, limit: 500 });
      const entries = Array.isArray(content) ? content : content.logs || [];
      for (const e of entries) { pre.append(e.text.endsWith("\n") ? e.text : e.text + "\n"); since = e.seq + 1; }
      pre.scrollTop = pre.scrollHeight;
    } catch (e) { clearInterval(state.logTimer); }
  };
  poll();
  state.logTimer = setInterval(poll, 1000);
}

async function screenshot(tabId) {
  const img = document.getElementById("screenshot");
  try {
    const content = await tool("take_screenshot", { tabId });
    img.src = `/api/artifacts/${encodeURIComponent(content.path.split("/").pop())}`;
    img.hidden = false;
    said("process-result", `Screenshot of tab ${tabId}.`);
  } catch (e) { said("process-result", `No screenshot of tab ${tabId}: ${e.message}`, true); }
}

// -- the event stream ----------------------------------------------------------------------

function runtimeState(connected, error) {
  const node = document.getElementById("runtime");
  node.className = "status " + (connected ? "ok" : "bad");
  node.textContent = connected ? "runtime connected" : `runtime: ${error || "not connected"}`;
}

function onEvent(ev) {
  const msg = JSON.parse(ev.data);
  switch (msg.type) {
    case "snapshot":
      state.skew = msg.now ? Date.now() - msg.now : 0;
      state.approvals.clear();
      for (const req of msg.approvals) addApproval(req);
      state.audit = msg.audit;
      state.revoked = new Set(msg.revoked);
      state.own = (msg.welcome || {}).sessionId || null;
      runtimeState(msg.connected, msg.error);
      renderChain(msg.verification);
      renderAudit();
      renderApprovals();
      break;
    case "approval": addApproval(msg.request); break;
    case "approval_closed": state.approvals.delete(msg.approvalId); renderApprovals(); break;
    case "audit": {
      const r = msg.record;
      if (r.kind === "intent" || r.kind === undefined || r.kind === null) {
        // A call's outcome (or its end as interrupted) replaces its `running` row.
        state.audit = state.audit.filter((a) => !(a.kind === "intent" && a.sessionId === r.sessionId && a.requestId === r.requestId));
      }
      state.audit.push(r);
      if (state.audit.length > 2000) state.audit.splice(0, state.audit.length - 2000);
      renderAudit(); renderSessions();
      break;
    }
    case "sessions": state.sessions = msg.sessions; renderSessions(); break;
    case "revoked": state.revoked.add(msg.sessionId); renderSessions(); break;
    case "verification": renderChain(msg.verification); break;
    case "runtime":
      if (msg.welcome) state.own = msg.welcome.sessionId || null;
      runtimeState(msg.connected, msg.error);
      break;
  }
}

const events = new EventSource("/api/events");
events.addEventListener("message", onEvent);
events.addEventListener("error", () => runtimeState(false, "console stream interrupted (reconnecting)"));
show(location.hash.slice(1) || "approvals");
