// Settings, Notifications: after "Send a test", show its result when the
// worker has written it, without a reload. The page marks a test still under
// way with data-status-url (notifications.views.test_nudge_status,
// JSON by the session cookie); this polls it and puts the fragment it
// returns in place, until the test is done. Without this script the page
// says to reload it, and the reload shows the same fragment.
(function () {
  "use strict";

  var box = document.getElementById("test-result");
  if (!box || !box.getAttribute("data-status-url")) return;
  var url = box.getAttribute("data-status-url");
  var polls = 0;
  var MAX_POLLS = 90; // about three minutes: a send's lease runs out in two

  function later() {
    if (polls >= MAX_POLLS) return;
    // Quick at first (a test usually takes a second), then gentler.
    window.setTimeout(poll, polls < 10 ? 1000 : 3000);
  }

  function poll() {
    polls += 1;
    window
      .fetch(url, {
        credentials: "same-origin",
        headers: { Accept: "application/json" },
        cache: "no-store",
      })
      .then(function (response) {
        if (!response.ok) throw new Error("status " + response.status);
        return response.json();
      })
      .then(function (test) {
        box.innerHTML = test.html;
        if (test.done) {
          box.removeAttribute("data-status-url");
        } else {
          later();
        }
      })
      .catch(later);
  }

  later();
})();
