// The aegis approvals page: lists the calls that wait for approval and
// approves or denies them through the endpoints beside it, with the
// approver token in the Authorization header (never in a cookie, so
// that another site's page cannot decide in the approver's name). The
// token comes from the address's fragment (#token=…), which the browser
// never sends, or from the form; it is kept in this page's memory only,
// and the fragment is cleared from the address bar once read. What a
// client sent (tool, arguments) is shown with textContent alone: text,
// never markup.
"use strict";

const base = new URL(".", location.href);
let token = "";
let focusID = "";
let timer = 0;

function readFragment() {
  const h = new URLSearchParams(location.hash.slice(1));
  if (h.get("token")) token = h.get("token");
  if (h.get("id")) focusID = h.get("id");
  if (h.get("token")) {
    h.delete("token");
    const rest = h.toString();
    history.replaceState(null, "", location.pathname + location.search + (rest ? "#" + rest : ""));
  }
}

function setStatus(text, error) {
  const s = document.getElementById("status");
  s.textContent = text;
  s.className = error ? "error" : "";
}

async function api(path, init) {
  const r = await fetch(new URL(path, base), {
    ...init,
    headers: { ...(init && init.headers), Authorization: "Bearer " + token },
    credentials: "omit",
    cache: "no-store",
  });
  let body = null;
  try { body = await r.json(); } catch (e) { body = null; }
  if (r.status === 401 || r.status === 403) {
    showLogin();
  }
  if (!r.ok) {
    const msg = body && body.error && body.error.message ? body.error.message : "HTTP " + r.status;
    throw new Error(msg);
  }
  return body;
}

function showLogin() {
  document.getElementById("login").hidden = false;
}

function age(since, now) {
  const s = Math.max(0, Math.round((Date.parse(now) - Date.parse(since)) / 1000));
  return s < 60 ? s + " s" : Math.floor(s / 60) + " min " + (s % 60) + " s";
}

function cell(tr, text, cls) {
  const td = document.createElement("td");
  td.textContent = text;
  if (cls) td.className = cls;
  tr.appendChild(td);
  return td;
}

// render shows the listing; rows the approver is typing a reason in are
// kept as they are.
function render(l) {
  const tbody = document.querySelector("#calls tbody");
  const keep = new Map();
  for (const tr of tbody.querySelectorAll("tr")) keep.set(tr.dataset.id, tr);
  const rows = [];
  for (const p of l.pending) {
    let tr = keep.get(p.id);
    if (!tr) {
      tr = document.createElement("tr");
      tr.dataset.id = p.id;
      cell(tr, p.tool, "tool");
      cell(tr, p.arguments, "args");
      cell(tr, p.server, "server");
      cell(tr, p.caller, "caller");
      cell(tr, "", "age");
      const td = cell(tr, "", "decide");
      const approve = document.createElement("button");
      approve.type = "button";
      approve.className = "approve";
      approve.textContent = "Approve";
      approve.addEventListener("click", () => decide(p.id, "approve", ""));
      const reason = document.createElement("input");
      reason.className = "reason";
      reason.placeholder = "reason for a denial";
      reason.maxLength = 500;
      reason.setAttribute("aria-label", "reason for a denial");
      const deny = document.createElement("button");
      deny.type = "button";
      deny.className = "deny";
      deny.textContent = "Deny";
      deny.addEventListener("click", () => decide(p.id, "deny", reason.value));
      td.append(approve, reason, deny);
    }
    tr.querySelector("td.age").textContent = age(p.since, l.now) + " (expires " + new Date(p.expires).toLocaleTimeString() + ")";
    tr.classList.toggle("focus", p.id === focusID);
    rows.push(tr);
  }
  tbody.replaceChildren(...rows);
  document.getElementById("calls").hidden = rows.length === 0;
  document.getElementById("empty").hidden = rows.length !== 0;
  const more = l.total > l.pending.length ? " (the oldest " + l.pending.length + " shown)" : "";
  setStatus(l.total + (l.total === 1 ? " call waits" : " calls wait") + more + ".");
}

async function refresh() {
  clearTimeout(timer);
  if (!token) {
    setStatus("An approver token is needed.", true);
    showLogin();
    return;
  }
  try {
    render(await api("pending"));
    document.getElementById("login").hidden = true;
  } catch (e) {
    setStatus("Cannot list the calls: " + e.message, true);
  }
  timer = setTimeout(refresh, 1000);
}

async function decide(id, decision, reason) {
  try {
    await api("decide", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ id, decision, reason }),
    });
    setStatus((decision === "approve" ? "Approved " : "Denied ") + id + ".");
  } catch (e) {
    setStatus("Cannot " + decision + " " + id + ": " + e.message, true);
    return;
  }
  refresh();
}

document.getElementById("login").addEventListener("submit", (ev) => {
  ev.preventDefault();
  token = document.getElementById("token").value.trim();
  refresh();
});
window.addEventListener("hashchange", () => { readFragment(); refresh(); });
readFragment();
refresh();
