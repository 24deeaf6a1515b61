// The Webhooks page (/settings/webhooks/): the result of "Send test event"
// shows when it arrives. Each endpoint's last test is a [data-test-status]
// element naming a JSON status URL of the webhooks app (session cookie, GET);
// while the test is not done, this polls it and puts its sentence in the
// element (role="status", so screen readers hear it). Without this script the
// element shows the state the page was rendered with, and a reload shows the
// result.
(function () {
  "use strict";

  var INTERVAL = 1500; // ms between polls
  var GIVE_UP = 90 * 1000; // a test is sent once; it ends well before this

  function watch(element) {
    var url = element.getAttribute("data-test-status");
    var text = element.querySelector("[data-test-text]");
    var started = Date.now();
    if (!url || !text) return;

    function poll() {
      fetch(url, {
        credentials: "same-origin",
        headers: { Accept: "application/json" },
        cache: "no-store",
      })
        .then(function (response) {
          if (!response.ok) throw new Error("status " + response.status);
          return response.json();
        })
        .then(function (state) {
          text.textContent = state.text;
          element.setAttribute("data-status", state.status);
          if (state.done) {
            element.setAttribute("data-done", "true");
          } else if (Date.now() - started < GIVE_UP) {
            window.setTimeout(poll, INTERVAL);
          }
        })
        .catch(function () {
          // Signed out, gone, or offline: leave the page as it is (a reload shows the state).
        });
    }

    window.setTimeout(poll, INTERVAL);
  }

  document.addEventListener("DOMContentLoaded", function () {
    var pending = document.querySelectorAll('[data-test-status][data-done="false"]');
    for (var i = 0; i < pending.length; i++) watch(pending[i]);
  });
})();
