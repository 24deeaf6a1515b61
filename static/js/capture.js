// The capture page (/capture/): Gather sends the pasted text to POST
// /api/gather (the session cookie goes along; the CSRF token from the form
// goes in the X-CSRFToken header), shows that the model is working, and lays
// out each draft as a form of the page's formset. A model that declined
// (`refusal` in the answer) is said so, in its own words. Saving is the
// form's own POST, which works without this script.
(function () {
  "use strict";

  var form = document.getElementById("capture-form");
  if (!form) return;
  var button = document.getElementById("gather-button");
  var status = document.getElementById("gather-status");
  var errorBox = document.getElementById("gather-error");
  var refusalBox = document.getElementById("gather-refusal");
  var refusalLead = document.getElementById("gather-refusal-lead");
  var refusalWords = document.getElementById("gather-refusal-words");
  var section = document.getElementById("drafts");
  var list = document.getElementById("draft-list");
  var template = document.getElementById("draft-template");
  var noDrafts = document.getElementById("no-drafts");
  var saveActions = document.getElementById("save-actions");
  var text = document.getElementById("capture-text");
  var total = form.querySelector('input[name="drafts-TOTAL_FORMS"]');
  var csrf = form.querySelector('input[name="csrfmiddlewaretoken"]');

  button.hidden = false;

  function setBusy(busy) {
    button.disabled = busy;
    form.setAttribute("aria-busy", busy ? "true" : "false");
    form.classList.toggle("busy", busy);
    status.textContent = busy
      ? "Reading your text with your model provider\u2026 this can take up to a minute."
      : "";
  }

  function showError(message) {
    errorBox.textContent = message;
    errorBox.hidden = !message;
  }

  // The model's words go in as text, never as markup.
  function showRefusal(words, draftCount) {
    refusalBox.hidden = !words;
    refusalWords.textContent = words || "";
    if (words && draftCount > 0) {
      refusalLead.textContent =
        "The model declined to read part of your text; the drafts below come from the rest. In its own words:";
    } else if (words) {
      refusalLead.textContent = "The model declined to read your text, so no drafts came from it. In its own words:";
    }
  }

  function field(row, name) {
    return row.querySelector('[name$="-' + name + '"]');
  }

  // "2025-03-07T17:00:00+05:30" -> "2025-03-07T17:00": the deadline comes with
  // the user's own offset, which is the time zone the form reads it in.
  function localInput(iso) {
    return iso ? iso.slice(0, 16) : "";
  }

  function addDraft(index, draft) {
    var html = template.innerHTML.replace(/__prefix__/g, String(index));
    var holder = document.createElement("ol");
    holder.innerHTML = html;
    var row = holder.firstElementChild;
    field(row, "description").value = draft.description || "";
    field(row, "assignee_email").value = draft.assigneeEmail || "";
    field(row, "deadline").value = localInput(draft.deadline);
    field(row, "confidence").value = draft.confidence;
    field(row, "source_quote").value = draft.sourceQuote || "";
    field(row, "deadline_text").value = draft.deadlineText || "";
    var badge = row.querySelector("[data-confidence]");
    badge.textContent = draft.confidence + " confidence";
    badge.className = "badge confidence-" + draft.confidence;
    row.querySelector("[data-quote]").textContent = "\u201c" + (draft.sourceQuote || "") + "\u201d";
    if (draft.assigneeName && !draft.assigneeEmail) {
      row.querySelector("[data-assignee-name]").textContent =
        "The text names \u201c" + draft.assigneeName + "\u201d: choose a collaborator or type their e-mail address.";
    } else if (draft.assigneeName) {
      row.querySelector("[data-assignee-name]").textContent = "The text names \u201c" + draft.assigneeName + "\u201d.";
    }
    if (draft.deadlineText) {
      row.querySelector("[data-deadline-text]").textContent =
        "The text says \u201c" + draft.deadlineText + "\u201d. In your time zone; empty for no deadline.";
    }
    list.appendChild(row);
  }

  function showDrafts(drafts, refused) {
    list.innerHTML = "";
    drafts.forEach(function (draft, index) {
      addDraft(index, draft);
    });
    total.value = String(drafts.length);
    // A refusal with no drafts is said by the refusal box alone: "no
    // commitments found" would claim the text was read.
    section.hidden = refused && drafts.length === 0;
    noDrafts.hidden = drafts.length > 0 || refused;
    saveActions.hidden = drafts.length === 0;
    (section.hidden ? refusalBox : section).scrollIntoView({ behavior: "smooth", block: "start" });
  }

  button.addEventListener("click", function () {
    showError("");
    showRefusal("", 0);
    if (!text.value.trim()) {
      showError("Paste some text first.");
      text.focus();
      return;
    }
    setBusy(true);
    fetch(form.getAttribute("data-gather-url"), {
      method: "POST",
      credentials: "same-origin",
      headers: {
        "Content-Type": "application/json",
        Accept: "application/json",
        "X-CSRFToken": csrf.value,
      },
      body: JSON.stringify({ text: text.value }),
    })
      .then(function (response) {
        return response.json().then(
          function (body) {
            return { ok: response.ok, body: body };
          },
          function () {
            return { ok: false, body: { message: "The server answered " + response.status + "." } };
          }
        );
      })
      .then(function (result) {
        setBusy(false);
        if (!result.ok) {
          var details = result.body.details && result.body.details.text;
          showError((result.body.message || "Gathering failed.") + (details ? " " + details : ""));
          return;
        }
        var drafts = result.body.drafts;
        var refusal = result.body.refusal;
        showRefusal(refusal, drafts.length);
        showDrafts(drafts, Boolean(refusal));
        status.textContent =
          drafts.length + " draft" + (drafts.length === 1 ? "" : "s") + " from " + result.body.model +
          (refusal ? ", which declined" + (drafts.length ? " part of the text." : " the text.") : ".");
      })
      .catch(function () {
        setBusy(false);
        showError("Could not reach the server. Check your connection and try again.");
      });
  });
})();
