// Small progressive enhancements; every page works without them.
(function () {
  "use strict";

  // Copy buttons: <button type="button" class="button copy-button"
  //   data-copy-target="element-id">Copy</button> copies that element's value
  // or text; data-copy-text="..." copies the given text instead.
  function copyText(text) {
    if (navigator.clipboard && window.isSecureContext) {
      return navigator.clipboard.writeText(text);
    }
    // Fallback for plain-HTTP localhost in older browsers.
    var area = document.createElement("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.style.position = "absolute";
    area.style.left = "-9999px";
    document.body.appendChild(area);
    area.select();
    try {
      document.execCommand("copy");
    } finally {
      document.body.removeChild(area);
    }
    return Promise.resolve();
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest("[data-copy-target], [data-copy-text]");
    if (!button) return;
    var text = button.getAttribute("data-copy-text");
    if (text === null) {
      var target = document.getElementById(button.getAttribute("data-copy-target"));
      if (!target) return;
      text = "value" in target && target.value !== undefined ? target.value : target.textContent;
    }
    var label = button.textContent;
    copyText(text.trim()).then(function () {
      button.setAttribute("data-copied", "");
      button.textContent = "Copied";
      window.setTimeout(function () {
        button.removeAttribute("data-copied");
        button.textContent = label;
      }, 2000);
    });
  });

  // Tables in a .table-wrap: each cell knows its column's name (data-label),
  // which app.css shows before the cell when a phone stacks the table.
  document.querySelectorAll(".table-wrap table").forEach(function (table) {
    var heads = table.querySelectorAll("thead th");
    if (!heads.length) return;
    table.querySelectorAll("tbody tr").forEach(function (row) {
      Array.prototype.forEach.call(row.children, function (cell, i) {
        var head = heads[i];
        var name = head && !head.querySelector(".visually-hidden") ? head.textContent.trim() : "";
        if (name && cell.tagName === "TD" && !cell.hasAttribute("data-label")) {
          cell.setAttribute("data-label", name);
        }
      });
    });
  });

  // A table wider than its .table-wrap scrolls there: keyboard users reach the
  // scrolling region (tabindex) and hear what it is (the section's heading).
  function markScrollingTables() {
    document.querySelectorAll(".table-wrap").forEach(function (wrap) {
      if (wrap.scrollWidth > wrap.clientWidth + 1) {
        if (!wrap.hasAttribute("tabindex")) {
          var section = wrap.closest("section");
          var heading = section && section.querySelector("h2, h3");
          wrap.setAttribute("tabindex", "0");
          wrap.setAttribute("role", "region");
          wrap.setAttribute("aria-label", heading ? heading.textContent.trim() : "Table");
        }
      } else if (wrap.getAttribute("tabindex") === "0") {
        wrap.removeAttribute("tabindex");
        wrap.removeAttribute("role");
        wrap.removeAttribute("aria-label");
      }
    });
  }
  markScrollingTables();
  window.addEventListener("resize", markScrollingTables);

  // A choice with a field of its own (New commitment: "On this date and time"
  // and its date): typing in the field chooses it, so the radio shows what
  // will be used (the server counts a typed date anyway).
  document.querySelectorAll(".choice").forEach(function (choice) {
    var radio = choice.querySelector("input[type=radio]");
    var fields = choice.querySelectorAll("input:not([type=radio])");
    if (!radio) return;
    Array.prototype.forEach.call(fields, function (field) {
      var choose = function () {
        if (field.value) radio.checked = true;
      };
      field.addEventListener("input", choose);
      field.addEventListener("change", choose);
    });
  });

  // Time zone pickers marked data-detect-timezone start at the browser's zone.
  document.querySelectorAll("select[data-detect-timezone]").forEach(function (select) {
    var zone;
    try {
      zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
    } catch (e) {
      return;
    }
    if (!zone || select.value !== "UTC") return;
    for (var i = 0; i < select.options.length; i++) {
      if (select.options[i].value === zone) {
        select.value = zone;
        return;
      }
    }
  });
})();
