"""`meith ui`: the local web console, a client of the runtime like the CLI.

It connects as the local user (`cli`) and says it is the console, so the runtime asks it about
every session's approval requests (`host.call_approvers`); everything else it reads and edits
exactly as the CLI does. `ui.guard` is its door; `ui.app` its routes; `ui.link` the runtime
connection; `ui.audit_feed` the trail; `ui.serve` the server. The page is plain HTML, CSS and
JavaScript shipped in `ui/static/` (no asset is fetched at run time).
"""
