// The Accord, live: every few seconds, fetch its sections (the fragment URL,
// same filters and pages) and swap them in when they changed, unless the
// person is in the middle of something there (focus inside, a reason or a
// note typed, a Decline open). The navigation's count follows. Without this script the
// page is the same, only a reload shows news.
(function () {
  "use strict";
  var live = document.getElementById("accord-live");
  if (!live || !window.fetch) return;
  var url = live.getAttribute("data-fragment-url");
  var seconds = parseInt(live.getAttribute("data-poll-seconds"), 10) || 5;
  var news = document.getElementById("accord-news");

  // CSRF tokens are masked afresh on every render: not a change.
  function normalise(html) {
    return html.replace(/name="csrfmiddlewaretoken" value="[^"]*"/g, "");
  }
  var shown = normalise(live.innerHTML.trim());

  function busy() {
    var active = document.activeElement;
    if (active && active !== document.body && live.contains(active)) return true;
    if (live.querySelector("details[open]")) return true;
    var inputs = live.querySelectorAll("input[name=reason], input[name=note]");
    for (var i = 0; i < inputs.length; i++) {
      if (inputs[i].value) return true;
    }
    return false;
  }

  function updateCount() {
    var root = live.querySelector("[data-waiting]");
    var count = document.getElementById("accord-count");
    if (!root || !count) return;
    var waiting = root.getAttribute("data-waiting");
    count.lastChild.textContent = waiting;
    count.hidden = waiting === "0";
  }

  function poll() {
    if (document.hidden) return schedule();
    // A redirect is not followed: it is the way to sign in (the session has
    // ended), whose page must not land inside the Accord. The page is loaded
    // again instead; it goes to sign in, which says the session has ended.
    fetch(url, {
      credentials: "same-origin",
      redirect: "manual",
      headers: { Accept: "text/html" }
    })
      .then(function (response) {
        if (response.type === "opaqueredirect") {
          window.location.reload();
          throw new Error("signed out");
        }
        if (!response.ok) throw new Error(String(response.status));
        return response.text();
      })
      .then(function (html) {
        var next = normalise(html.trim());
        if (next !== shown && !busy()) {
          live.innerHTML = html;
          shown = next;
          updateCount();
          if (news) news.textContent = "The list was updated.";
        }
      })
      .catch(function () {})
      .then(schedule);
  }

  function schedule() {
    window.setTimeout(poll, seconds * 1000);
  }
  schedule();
})();
