// routewatch console: local times, live alerts over the API's event stream, and the two actions
// the API has (acknowledge, silence), with the token asked once per tab. No request leaves the
// API's own origin.
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
  async function act(button) {
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
