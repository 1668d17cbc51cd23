// Reversi console: live rollback progress and a self-refreshing approval queue.
// Plain JavaScript, no build step, served by the console itself (no CDN).
"use strict";

function pollRollback(box) {
  const url = box.dataset.url;
  const tick = async () => {
    let body;
    try {
      const answer = await fetch(url, { credentials: "same-origin", cache: "no-store" });
      if (!answer.ok) return setTimeout(tick, 1000);
      body = await answer.json();
    } catch (e) {
      return setTimeout(tick, 1000);
    }
    document.getElementById("bar").max = body.total || 1;
    document.getElementById("bar").value = body.done;
    document.getElementById("counts").textContent =
      `${body.done} of ${body.total} step(s) decided` +
      (body.running.length ? `, running: ${body.running.join(", ")}` : "");
    const list = document.getElementById("decided");
    list.replaceChildren(...body.decided.map((d) => {
      const item = document.createElement("li");
      item.textContent = `step ${d.step} ${d.tool}: ${d.state}` + (d.reason ? ` (${d.reason})` : "");
      return item;
    }));
    const outcome = document.getElementById("outcome");
    if (body.active) {
      outcome.textContent = "running…";
      setTimeout(tick, 400);
      return;
    }
    if (body.error) outcome.textContent = `failed: ${body.error}`;
    else if (body.complete) outcome.textContent = "rollback complete";
    else outcome.textContent = `rollback incomplete: ${body.outstanding} step(s) outstanding`;
    outcome.dataset.done = "true";
    document.getElementById("again").hidden = !!body.complete;
  };
  tick();
}

function pollApprovals(box) {
  const known = box.dataset.ids;
  const tick = async () => {
    try {
      const answer = await fetch(box.dataset.url, { credentials: "same-origin", cache: "no-store" });
      if (answer.ok) {
        const body = await answer.json();
        const ids = body.waiting.map((a) => a.id).sort();
        const before = known ? known.split(",").sort() : [];
        const typing = document.activeElement && document.activeElement.tagName === "INPUT";
        if (ids.join(",") !== before.join(",") && !typing) {
          location.reload();
          return;
        }
      }
    } catch (e) { /* the console went away: try again */ }
    setTimeout(tick, 1000);
  };
  setTimeout(tick, 1000);
}

document.addEventListener("DOMContentLoaded", () => {
  const progress = document.getElementById("progress");
  if (progress) pollRollback(progress);
  const queue = document.getElementById("queue");
  if (queue) pollApprovals(queue);
});
