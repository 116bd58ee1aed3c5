// routewatch console: local times, live alerts over the API's event stream, and the actions the
// API has (acknowledge, silence, a remedy's dry run and apply), with the token asked once per
// tab. No request leaves the API's own origin.
"use strict";
(function () {
  const base = document.body.dataset.base || "";
  const status = document.getElementById("status");
  const say = (text) => { status.textContent = text; };

  // -- times: every <time data-ms> in the viewer's local time, with the zone shown ------------
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone || "local time";
  const format = new Intl.DateTimeFormat(undefined, {
    year: "numeric", month: "2-digit", day: "2-digit",
    hour: "2-digit", minute: "2-digit", second: "2-digit", hour12: false, timeZoneName: "short",
  });
  function localTimes(root) {
    for (const t of root.querySelectorAll("time[data-ms]")) {
      const when = new Date(Number(t.dataset.ms));
      t.textContent = format.format(when);
      t.title = t.getAttribute("datetime");
    }
  }
  document.getElementById("zone").textContent = zone;
  localTimes(document);

  // -- actions: POST with the token of this tab (sessionStorage: gone when the tab closes) -----
  const KEY = "routewatch-token";
  function token() {
    let value = sessionStorage.getItem(KEY);
    if (!value) {
      value = window.prompt("The API token (ROUTEWATCH_API_TOKEN), kept in this tab only:");
      if (value) sessionStorage.setItem(KEY, value);
    }
    return value;
  }
  const UNITS = { s: 1000, m: 60000, h: 3600000, d: 86400000 };
  // a remedy's run (docs/remedies.md): its outcome and each step, under the alert
  function showRun(button, run) {
    const out = button.closest("li.alert").querySelector("pre.remedy-run");
    const lines = [`${run.mode === "apply" ? "Apply" : "Dry run"}: ${run.outcome}` +
      (run.refusal ? ` — ${run.refusal}` : "")];
    for (const s of run.steps) lines.push(`${s.n}. [${s.status}] ${s.says}`);
    lines.push(`Audited as run ${run.seq} (${run.actor}).`);
    out.textContent = lines.join("\n");
    out.hidden = false;
  }
  async function remedy(button) {
    const id = button.dataset.alert;
    const apply = button.dataset.action === "apply";
    if (apply && !window.confirm(`Apply the plan of ${id} to the live cluster? (A dry run first shows what it changes.)`)) return;
    const secret = token();
    if (!secret) return;
    say(apply ? `Applying the plan of ${id}…` : `Dry run of the plan of ${id}…`);
    const path = `${base}/alerts/${encodeURIComponent(id)}/remedy?apply=${apply}`;
    const response = await fetch(path, { method: "POST", headers: { Authorization: `Bearer ${secret}` } });
    if (response.status === 401) sessionStorage.removeItem(KEY);
    const body = await response.json().catch(() => ({}));
    if (response.ok || response.status === 409) {
      const run = body.run || body;
      showRun(button, run);
      say(run.refusal || `${apply ? "Apply" : "Dry run"} of ${id}: ${run.outcome}.`);
      return;
    }
    say(body.detail || `The API answered ${response.status}.`);
  }
  async function act(button) {
    if (button.dataset.action === "dry-run" || button.dataset.action === "apply") return remedy(button);
    const id = button.dataset.alert;
    let path = `${base}/alerts/${encodeURIComponent(id)}/ack`;
    if (button.dataset.action === "silence") {
      const text = window.prompt("Silence for how long? (e.g. 8h, 30d)", "8h");
      const m = /^(\d+)([smhd])$/.exec((text || "").trim());
      if (!m) { if (text) say(`'${text}' is not a duration: give a number and s, m, h or d.`); return; }
      path = `${base}/alerts/${encodeURIComponent(id)}/silence?until=${Date.now() + Number(m[1]) * UNITS[m[2]]}`;
    }
    const secret = token();
    if (!secret) return;
    const response = await fetch(path, { method: "POST", headers: { Authorization: `Bearer ${secret}` } });
    if (response.status === 401) sessionStorage.removeItem(KEY);
    if (!response.ok) {
      const body = await response.json().catch(() => ({}));
      say(body.detail || `The API answered ${response.status}.`);
      return;
    }
    say(button.dataset.action === "ack" ? `Acknowledged ${id}.` : `Silenced ${id}.`);
    refresh();
  }
  document.addEventListener("click", (e) => {
    const button = e.target.closest("button[data-action]");
    if (button) act(button);
  });

  // -- live: the open alerts list follows the alert log ---------------------------------------
  const list = document.getElementById("alerts");
  async function refresh() {
    if (!list) return;
    const response = await fetch(list.dataset.fragment, { headers: { Accept: "text/html" } });
    if (!response.ok) return;
    list.innerHTML = await response.text();
    localTimes(list);
    const count = document.getElementById("open-count");
    if (count) count.textContent = list.querySelectorAll("li.alert").length;
  }
  if (list && window.EventSource) {
    const source = new EventSource(`${base}/alerts/stream?after=${list.dataset.liveAfter}`);
    let pending = null;
    const changed = () => {
      if (pending) return;
      pending = setTimeout(() => { pending = null; refresh(); }, 100);
    };
    for (const name of ["opened", "updated", "resolved"]) source.addEventListener(name, changed);
    source.onerror = () => say("The live stream was interrupted; it reconnects by itself.");
    source.onopen = () => { if (status.textContent.startsWith("The live stream")) say(""); };
  }
})();
