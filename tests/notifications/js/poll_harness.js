// Runs static/js/test_nudge.js in Node against a live server: a
// stand-in for the page's DOM (the result box, as the page renders it), the
// real fetch with the session cookie, and quick timers. Prints what the box
// holds once the script stops polling, as JSON.
// Usage: node poll_harness.js SCRIPT BASE_URL STATUS_PATH SESSION_COOKIE
"use strict";
const fs = require("fs");
const vm = require("vm");
const [script, base, statusPath, cookie] = process.argv.slice(2);

const attrs = { "data-status-url": statusPath };
const box = {
  innerHTML: "<p>Waiting for the worker</p>",
  getAttribute: (name) => (name in attrs ? attrs[name] : null),
  removeAttribute: (name) => delete attrs[name],
};
let polls = 0;
let pending = 0;
const win = {
  fetch: (url, options) => {
    polls += 1;
    const headers = Object.assign({}, options.headers, { Cookie: cookie });
    return fetch(new URL(url, base), Object.assign({}, options, { headers }));
  },
  setTimeout: (fn) => {
    pending += 1;
    return setTimeout(() => {
      pending -= 1;
      fn();
    }, 100);
  },
};
const context = {
  window: win,
  document: { getElementById: (id) => (id === "test-result" ? box : null) },
};
vm.runInNewContext(fs.readFileSync(script, "utf8"), context);

const deadline = Date.now() + 20000;
(function wait() {
  if (!("data-status-url" in attrs) || Date.now() > deadline) {
    console.log(JSON.stringify({ html: box.innerHTML, polls, stopped: !("data-status-url" in attrs) }));
    return;
  }
  setTimeout(wait, 50);
})();
