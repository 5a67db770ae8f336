package htmlreport

// pageTemplate is the report page. It loads nothing: no scripts, no
// fonts, no images; the Content-Security-Policy forbids them, so even a
// string that escaped escaping could not run.
const pageTemplate = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
:root { --ok:#2e7d32; --bad:#c62828; --warn:#ef6c00; --run:#f9a825; --rev:#6a1b9a; --mute:#9e9e9e; --ink:#1d2330; --line:#d8dce3; }
* { box-sizing: border-box; }
body { margin: 0; padding: 24px 32px 48px; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--ink); background: #f6f7f9; }
h1 { font-size: 22px; margin: 0 0 4px; overflow-wrap: anywhere; }
h2 { font-size: 16px; margin: 0 0 10px; }
.sub { color: #5a6272; margin: 0 0 18px; overflow-wrap: anywhere; }
code, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12.5px; }
section { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 16px 18px; margin: 0 0 18px; }
.cards { display: flex; flex-wrap: wrap; gap: 12px; background: none; border: 0; padding: 0; }
.card { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 10px 14px; min-width: 150px; }
.card .k { color: #5a6272; font-size: 12px; text-transform: uppercase; letter-spacing: .04em; }
.card .v { font-size: 18px; font-weight: 600; }
.good { color: var(--ok); } .bad { color: var(--bad); } .unknown { color: #5a6272; }
svg { display: block; width: 100%; height: auto; }
svg text { font: 12px system-ui, sans-serif; fill: var(--ink); }
svg .small { font-size: 10.5px; fill: #5a6272; }
.legend { display: flex; gap: 14px; flex-wrap: wrap; margin: 0 0 8px; font-size: 12px; color: #5a6272; }
.legend i { display: inline-block; width: 12px; height: 12px; border-radius: 2px; vertical-align: -2px; margin-right: 4px; }
.succeeded { fill: var(--ok); background: var(--ok); } .failed { fill: var(--bad); background: var(--bad); }
.retried { fill: var(--warn); background: var(--warn); } .running { fill: var(--run); background: var(--run); }
.cancelled, .skipped { fill: var(--mute); background: var(--mute); } .pending { fill: #cfd4dc; background: #cfd4dc; }
.review { fill: var(--rev); background: var(--rev); }
rect.node { fill: #fff; stroke-width: 2; }
rect.node.succeeded { stroke: var(--ok); } rect.node.failed { stroke: var(--bad); } rect.node.running { stroke: var(--run); }
rect.node.pending { stroke: #aab; } rect.node.skipped, rect.node.cancelled { stroke: var(--mute); stroke-dasharray: 4 3; }
.edge { fill: none; stroke: #8a93a3; stroke-width: 1.5; }
.bar { opacity: .9; } .bar-label { fill: #fff; font-size: 11px; font-weight: 600; }
.gate-pass { fill: #b9f6ca; } .gate-fail { fill: #fff; stroke: var(--bad); stroke-width: 1; }
.fix { fill: #ffd180; stroke: #e65100; stroke-width: 1; }
rect.gap { fill: #9aa3b2; fill-opacity: 0.25; stroke: #7a8292; stroke-dasharray: 3 3; }
.legend i.gap-key { background: repeating-linear-gradient(45deg, #d5d9e0, #d5d9e0 3px, #fff 3px, #fff 6px); border: 1px dashed #7a8292; }
.review-ok { fill: #e1bee7; } .review-block { fill: #fff; stroke: #4a148c; }
.grid { stroke: #eceff3; } .axis { stroke: #b6bcc7; }
.cost-bar { fill: #3f6fd8; } .cost-line { fill: none; stroke: #3f6fd8; stroke-width: 2; } .cost-area { fill: #3f6fd8; opacity: .12; }
.budget { stroke: var(--bad); stroke-dasharray: 6 4; }
.charts { display: grid; grid-template-columns: 1fr 1fr; gap: 18px; }
.charts .wide { grid-column: 1 / -1; }
h3 { font-size: 13px; margin: 0 0 6px; color: #3c4352; }
table { border-collapse: collapse; width: 100%; font-size: 13px; }
th, td { text-align: left; vertical-align: top; padding: 6px 8px; border-bottom: 1px solid #eceff3; }
th { font-size: 12px; color: #5a6272; font-weight: 600; }
td.gates div { white-space: nowrap; }
td.num { text-align: right; white-space: nowrap; }
.badge { display: inline-block; padding: 1px 7px; border-radius: 10px; color: #fff; font-size: 12px; }
.pass { color: var(--ok); } .fail { color: var(--bad); font-weight: 700; }
ul.findings { margin: 0; padding-left: 16px; } ul.findings li { overflow-wrap: anywhere; }
.sev-critical, .sev-major { color: var(--bad); font-weight: 600; } .sev-minor { color: #5a6272; }
td.title, td.reason { overflow-wrap: anywhere; max-width: 320px; }
footer { color: #7a8292; font-size: 12px; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
<p class="sub">run <code>{{.Run.ID}}</code>{{with .Run.Plan}} · plan <code>{{.}}</code>{{end}}{{with .Run.Branch}} · branch <code>{{.}}</code>{{end}}{{with .Run.Base}} · base <code>{{.}}</code>{{end}}</p>

<section class="cards" id="summary">
<div class="card"><div class="k">Run</div><div class="v {{if eq .Run.State "succeeded"}}good{{else if or (eq .Run.State "failed") (eq .Run.State "interrupted")}}bad{{end}}">{{.Run.State}}</div></div>
<div class="card"><div class="k">Tasks</div><div class="v">{{.Done}}/{{.Total}} done</div>{{if .Failed}}<div class="bad">{{.Failed}} failed</div>{{end}}{{if .Skipped}}<div class="unknown">{{.Skipped}} skipped or cancelled</div>{{end}}</div>
<div class="card"><div class="k">Wall time</div><div class="v">{{.Duration}}</div></div>
<div class="card"><div class="k">Cost</div><div class="v">{{.Cost}}{{with .Budget}} <span class="unknown">of {{.}}</span>{{end}}</div></div>
<div class="card"><div class="k">Tokens</div><div class="v">{{.Tokens}}</div></div>
<div class="card" id="verification"><div class="k">Receipt</div><div class="v {{.VerifyClass}}">{{.Verification}}</div></div>
</section>

<section id="graph">
<h2>Task graph</h2>
<svg id="graph-svg" viewBox="0 0 {{f .Graph.W}} {{f .Graph.H}}" style="max-width: {{f .Graph.W}}px" role="img" aria-label="task dependency graph">
<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0 0L10 5L0 10z" fill="#8a93a3"/></marker></defs>
{{range .Graph.Edges}}<path class="edge" d="{{.D}}" marker-end="url(#arrow)"><title>{{.From}} → {{.To}}</title></path>
{{end}}{{range .Graph.Nodes}}<g class="task-node"><title>{{.ID}}: {{.Title}}</title><rect class="node {{.State}}" x="{{f .X}}" y="{{f .Y}}" width="150" height="36" rx="6"/><text x="{{f (add .X 10)}}" y="{{f (add .Y 15)}}">{{.Label}}</text><text class="small" x="{{f (add .X 10)}}" y="{{f (add .Y 29)}}">{{.Detail}}</text></g>
{{end}}</svg>
</section>

<section id="gantt">
<h2>Timeline of the clones</h2>
<div class="legend">{{range .Legend}}<span><i class="{{.}}"></i>{{.}}</span>{{end}}<span><i class="gate-pass" style="background:#b9f6ca"></i>gate passed</span><span><i style="background:#fff;border:1px solid #c62828"></i>gate failed</span><span><i style="background:#ffd180;border:1px solid #e65100"></i>fix round</span>{{if .Gantt.Gaps}}<span><i class="gap-key"></i>muster not running (until the resume)</span>{{end}}</div>
<svg id="gantt-svg" viewBox="0 0 {{f .Gantt.W}} {{f .Gantt.H}}" role="img" aria-label="Gantt chart of tasks on executor clones">
{{range .Gantt.Ticks}}<line class="grid" x1="{{f .X}}" x2="{{f .X}}" y1="18" y2="{{f $.Gantt.H}}"/><text class="small" x="{{f .X}}" y="12" text-anchor="middle">{{.Label}}</text>
{{end}}{{range .Gantt.Grid}}<line class="grid" x1="0" x2="{{f $.Gantt.W}}" y1="{{f .}}" y2="{{f .}}"/>
{{end}}{{range .Gantt.Gaps}}<rect class="gap" x="{{f .X}}" y="{{f .Y}}" width="{{f .W}}" height="{{f .H}}"><title>{{.Tip}}</title></rect>
{{end}}{{range .Gantt.Rows}}<text class="mono" x="6" y="{{f .Y}}">{{.Label}}</text>
{{end}}{{range .Gantt.Bars}}<g class="span"><title>{{.Tip}}</title><rect class="bar {{.Class}}" x="{{f .X}}" y="{{f .Y}}" width="{{f .W}}" height="{{f .H}}" rx="3"/>{{if .Label}}<text class="bar-label" x="{{f (add .X 5)}}" y="{{f (add .Y 15)}}">{{.Label}}</text>{{end}}{{range .Marks}}<rect class="mark {{.Class}}" x="{{f .X}}" y="{{f .Y}}" width="{{f .W}}" height="{{f .H}}"><title>{{.Tip}}</title></rect>{{end}}</g>
{{end}}</svg>
</section>

<section id="costs">
<h2>Cost</h2>
<div class="charts">
<div><h3>By clone</h3>
<svg id="cost-clone-svg" viewBox="0 0 {{f .ByClone.W}} {{f .ByClone.H}}" role="img" aria-label="cost by clone">
{{range .ByClone.Bars}}<text class="mono" x="4" y="{{f (add .Y 15)}}">{{.Label}}</text><rect class="cost-bar" x="{{f $.BarX}}" y="{{f (add .Y 3)}}" width="{{f .W}}" height="16" rx="2"/><text class="small" x="{{f (add .W (add $.BarX 6))}}" y="{{f (add .Y 15)}}">{{.Value}}</text>
{{end}}</svg></div>
<div><h3>By model</h3>
<svg id="cost-model-svg" viewBox="0 0 {{f .ByModel.W}} {{f .ByModel.H}}" role="img" aria-label="cost by model">
{{range .ByModel.Bars}}<text class="mono" x="4" y="{{f (add .Y 15)}}">{{.Label}}</text><rect class="cost-bar" x="{{f $.BarX}}" y="{{f (add .Y 3)}}" width="{{f .W}}" height="16" rx="2"/><text class="small" x="{{f (add .W (add $.BarX 6))}}" y="{{f (add .Y 15)}}">{{.Value}}</text>
{{end}}</svg></div>
<div class="wide"><h3>Over time (cumulative, {{.Over.FinalUSD}}{{with .Over.Budget}}; {{.}}{{end}})</h3>
<svg id="cost-time-svg" viewBox="0 0 {{f .Over.W}} {{f .Over.H}}" role="img" aria-label="cumulative cost over time">
{{range .Over.YTicks}}<line class="grid" x1="60" x2="960" y1="{{f .X}}" y2="{{f .X}}"/><text class="small" x="54" y="{{f (add .X 4)}}" text-anchor="end">{{.Label}}</text>
{{end}}{{range .Over.XTicks}}<text class="small" x="{{f .X}}" y="{{f (add $.Over.Base 16)}}" text-anchor="middle">{{.Label}}</text>
{{end}}<line class="axis" x1="60" x2="960" y1="{{f .Over.Base}}" y2="{{f .Over.Base}}"/>
{{if .Over.BudgetY}}<line class="budget" x1="60" x2="960" y1="{{f .Over.BudgetY}}" y2="{{f .Over.BudgetY}}"/>{{end}}
<polygon class="cost-area" points="{{.Over.Area}}"/><polyline class="cost-line" points="{{.Over.Points}}"/>
</svg></div>
</div>
</section>

<section id="tasks">
<h2>Tasks</h2>
<table>
<thead><tr><th>Task</th><th>Title</th><th>State</th><th>Clone</th><th>Attempts</th><th>Fix rounds</th><th>Time</th><th>Commit</th><th>Gates</th><th>Review findings</th><th>Tokens</th><th>Cost</th><th>Reason</th></tr></thead>
<tbody>
{{range .Rows}}<tr id="task-{{.ID}}">
<td><code>{{.ID}}</code></td>
<td class="title">{{.Title}}</td>
<td><span class="badge {{.State}}">{{.State}}</span></td>
<td><code>{{.Slot}}</code></td>
<td class="num">{{.Attempts}}</td>
<td class="num">{{.Rounds}}</td>
<td class="num">{{.Time}}</td>
<td>{{if .Commit}}<code title="{{.Commit}}">{{.CommitShort}}</code>{{end}}{{if .Paths}}<div class="unknown mono">{{range $i, $p := .Paths}}{{if $i}}, {{end}}{{$p}}{{end}}</div>{{end}}</td>
<td class="gates">{{range .Gates}}<div><code>{{.Name}}</code> {{range .Runs}}{{if .Passed}}<span class="pass">✓</span>{{else if .NotCharged}}<span class="unknown" title="pre-existing: fails on the base too; not charged">✗<sub>pre</sub></span>{{else}}<span class="fail">✗</span>{{end}}{{end}}</div>{{end}}</td>
<td>{{if .Findings}}<ul class="findings">{{range .Findings}}<li><span class="sev-{{.Severity}}">{{.Severity}}</span> {{.Title}}{{with .Where}} <code>{{.}}</code>{{end}}{{if .Round}} <span class="unknown">(round {{.Round}})</span>{{end}}</li>{{end}}</ul>{{end}}</td>
<td class="num">{{.Tokens}}</td>
<td class="num">{{.Cost}}</td>
<td class="reason">{{.Reason}}{{if .Attempts}}<div class="logcmd unknown mono" title="everything this task's latest attempt did: prompt, agent output, gates, findings">muster logs {{.ID}} --run {{$.Run.ID}}</div>{{end}}</td>
</tr>
{{end}}</tbody>
</table>
</section>
{{with .Run.Races}}<section id="races"><h2>Races</h2>{{range .}}<h3><code>{{.Task}}</code>: {{if .Winner}}won by <code>{{.Winner}}</code> ({{.How}}{{with .Judge}}, judge <code>{{.}}</code>{{end}}){{with .Reason}}: {{.}}{{end}}{{else}}no winner{{end}} · total {{usd .Usage.CostMicros}}</h3>
<table><thead><tr><th>Candidate</th><th>Attempt</th><th>Gates</th><th>Change</th><th>Cost</th><th>Verdict</th></tr></thead><tbody>
{{range .Candidates}}<tr class="candidate"><td><code>{{.Slot}}</code></td><td class="num">{{.Attempt}}</td><td>{{.GatesOK}} <span class="pass">✓</span> {{.GatesFailed}} <span class="fail">✗</span></td><td class="num">+{{.Stat.Added}} −{{.Stat.Deleted}} in {{.Stat.Files}}</td><td class="num">{{usd .Usage.CostMicros}}</td><td><span class="badge {{.Verdict}}">{{.Verdict}}</span>{{with .Reason}} {{.}}{{end}}</td></tr>
{{end}}</tbody></table>{{end}}</section>{{end}}
{{with .Run.Blocked}}<section id="blocked"><h2>Network refused</h2><p class="unknown">Requests muster's model endpoint or proxy refused; a host an invocation needs goes in <code>allow_hosts</code>.</p><ul>{{range .}}<li><code>{{.Task}}</code> attempt {{.Attempt}} <code>{{.Slot}}</code>: <code>{{.Host}}</code>{{with .Reason}} ({{.}}){{end}}</li>{{end}}</ul></section>{{end}}
{{with .Run.Warnings}}<section id="warnings"><h2>Warnings</h2><ul>{{range .}}<li>{{.}}</li>{{end}}</ul></section>{{end}}
<footer>Made by muster{{with .Generated}} on {{.}}{{end}}. This file is self-contained: it loads nothing from the network.</footer>
</body>
</html>
`
