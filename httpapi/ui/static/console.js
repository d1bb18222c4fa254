// agentrt console: a little vanilla JavaScript, no dependencies.
// - times: keep "3 min ago" current (the absolute time is in the title);
// - live: a page with main[data-live=tenant] listens to /ui/live and,
//   on "changed", fetches its own URL's main region (X-Console-Fragment)
//   and swaps it in, unless the person is typing in a form there;
// - the timeline (#timeline[data-live-url]) appends each card its SSE
//   stream sends, resuming after data-cursor;
// - edit forms: JSON fields are checked before sending.
(function () {
  "use strict";

  function ago(date) {
    var s = Math.round((Date.now() - date.getTime()) / 1000);
    var future = s < 0, d = Math.abs(s), t;
    if (d < 10) return "just now";
    if (d < 60) t = d + " s";
    else if (d < 3600) t = Math.floor(d / 60) + " min";
    else if (d < 172800) t = Math.floor(d / 3600) + " h";
    else t = Math.floor(d / 86400) + " days";
    return future ? "in " + t : t + " ago";
  }
  function refreshTimes(root) {
    (root || document).querySelectorAll("time[data-rel]").forEach(function (el) {
      var d = new Date(el.getAttribute("datetime"));
      if (!isNaN(d)) el.textContent = ago(d);
    });
  }

  // busy reports whether the person is using a form in main, or has an
  // edit form open: a refresh then would lose what they typed, or close
  // what they are reading.
  function busy(main) {
    var a = document.activeElement;
    if (a && main.contains(a) && a.form) return true;
    return main.querySelector("form[data-dirty], details[open]") !== null;
  }

  function liveTenant(main) {
    if (!window.EventSource) return;
    var pending = false, loading = false;
    function reload() {
      if (loading) { pending = true; return; }
      if (busy(main)) { pending = true; return; }
      loading = true; pending = false;
      fetch(location.href, { headers: { "X-Console-Fragment": "1" }, credentials: "same-origin" })
        .then(function (r) {
          if (r.status === 401 || r.redirected) { location.reload(); return null; }
          return r.ok ? r.text() : null;
        })
        .then(function (html) {
          if (html !== null && html !== undefined) { main.innerHTML = html; wireForms(main); refreshTimes(main); }
        })
        .finally(function () { loading = false; if (pending) setTimeout(reload, 250); });
    }
    var es = new EventSource("/ui/live");
    es.addEventListener("changed", reload);
    function later() { if (pending) setTimeout(reload, 250); }
    main.addEventListener("focusout", later);
    main.addEventListener("toggle", later, true); // an edit form closed; toggle does not bubble
  }

  function liveTimeline(list) {
    if (!window.EventSource) return;
    var url = list.getAttribute("data-live-url") + "?after=" + encodeURIComponent(list.getAttribute("data-cursor") || "0");
    var status = document.getElementById("live-status");
    var es = new EventSource(url);
    es.addEventListener("card", function (ev) {
      var tpl = document.createElement("template");
      tpl.innerHTML = ev.data.trim();
      var card = tpl.content.firstElementChild;
      if (!card || document.getElementById(card.id)) return;
      card.classList.add("new");
      list.appendChild(card);
      list.setAttribute("data-cursor", ev.lastEventId);
      refreshTimes(card);
      takeStatus(card);
    });
    es.onopen = function () { if (status) status.textContent = "Live: updates appear as they happen."; };
    es.onerror = function () { if (status) status.textContent = "Live: reconnecting…"; };
  }

  // takeStatus shows a turn or task card's status in the request's
  // summary (#request, #request-status), as a reload would.
  function takeStatus(card) {
    var st = card.getAttribute("data-status"), sec = document.getElementById("request");
    var badge = document.querySelector("#request-status .badge");
    if (!st || !sec || !badge) return;
    var tone = /\btone-(\w+)/.exec(card.className);
    sec.setAttribute("data-status", st);
    badge.textContent = st;
    badge.setAttribute("data-status", st);
    badge.className = "badge tone-" + (tone ? tone[1] : "neutral");
  }

  function wireForms(root) {
    root.querySelectorAll("form").forEach(function (f) {
      f.addEventListener("input", function () { f.setAttribute("data-dirty", ""); });
    });
    root.querySelectorAll("form.edit-form").forEach(function (f) {
      f.addEventListener("submit", function (ev) {
        var ok = true;
        f.querySelectorAll("textarea[data-type=json]").forEach(function (t) {
          var msg = "";
          if (t.value.trim() !== "") {
            try { JSON.parse(t.value); } catch (e) { msg = "Not valid JSON: " + e.message; }
          }
          t.setCustomValidity(msg);
          t.setAttribute("aria-invalid", msg ? "true" : "false");
          if (msg) ok = false;
        });
        f.querySelectorAll("input[data-type=integer]").forEach(function (i) {
          var msg = i.value !== "" && !/^-?\d+$/.test(i.value) ? "Enter a whole number." : "";
          i.setCustomValidity(msg);
          if (msg) ok = false;
        });
        if (!ok || !f.checkValidity()) { ev.preventDefault(); f.reportValidity(); }
      });
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    var main = document.getElementById("main");
    refreshTimes();
    setInterval(refreshTimes, 30000);
    if (!main) return;
    wireForms(main);
    if (main.getAttribute("data-live") === "tenant") liveTenant(main);
    var tl = document.getElementById("timeline");
    if (tl && tl.getAttribute("data-live-url")) liveTimeline(tl);
  });
})();
